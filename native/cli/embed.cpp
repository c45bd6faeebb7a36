// runnel embed: the embeddings of one or more texts as JSON, like llama.cpp's
// llama-embedding. An embedding model (bert, nomic-bert) pools as its pooling_type
// says; a generative model gives the mean of its final-norm hidden states. Vectors are
// L2-normalized (as POST /v1/embeddings returns them) unless --no-normalize.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/runtime/engine.h"
#include "core/runtime/request.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"

namespace runnel::cli {

int embed_command(const std::vector<std::string>& args) {
  LoadRequest load;
  std::vector<std::string> texts;
  std::string file;
  bool no_normalize = false;
  ArgParser p("runnel embed -m FILE -p TEXT [-p TEXT ...] [options]",
              "Prints the embedding of each TEXT as JSON: {\"model\", \"pooling\", \"normalized\",\n"
              "\"n_embd\", \"data\": [{\"index\", \"n_tokens\", \"embedding\": [floats]}]}.");
  add_load_options(p, &load);
  p.string_list_option("-p, --prompt", &texts, "TEXT", "a text to embed (repeat for several)");
  p.string_option("-f, --file", &file, "FILE", "embed the whole of FILE as one more text");
  p.flag("--no-normalize", &no_normalize,
         "print the pooled vectors as the model gives them (llama.cpp's API) instead of\n"
         "L2-normalized (the OpenAI endpoint's and llama-embedding's default)");
  p.flag("--dry-run", &load.dry_run, "print the memory plan and exit (status 1 if it does not fit)");
  if (p.parse_or_print_help(args)) return 0;
  check_load_options(p, load);
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UsageError("-f: cannot read '" + file + "'");
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (texts.empty()) throw UsageError("-p / -f: give at least one text to embed");
  select_kernels_from_env();

  LoadedModel loaded = load_model(load);
  if (load.dry_run) return loaded.dry_run_status;
  Engine& engine = *loaded.engine;
  const std::vector<std::vector<TokenId>> inputs = embedding_inputs(engine, texts);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) throw UsageError("text " + std::to_string(i) + " has no tokens to embed");
  }
  std::unique_ptr<Session> session = engine.new_session();
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    data.push_back({{"index", i},
                    {"n_tokens", inputs[i].size()},
                    {"embedding", session->embed(inputs[i], !no_normalize)}});
  }
  const ModelConfig& c = engine.config();
  const nlohmann::ordered_json out = {{"model", c.arch_name},
                              {"pooling", std::string(pooling_name(c.pooling))},
                              {"normalized", !no_normalize},
                              {"n_embd", c.n_embd},
                              {"data", std::move(data)}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace runnel::cli
