// runnel tokenize: the token ids of a text under a model's tokenizer. Only headers
// are read, so vocab-only GGUF files work.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "core/tokenizer/tokenizer.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/mmap_store.h"

namespace runnel::cli {
namespace {

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("-f: cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int tokenize_command(const std::vector<std::string>& args) {
  std::string model, text, file;
  bool ids_only = false, no_bos = false, special = false;
  ArgParser p("runnel tokenize -m FILE (-p TEXT | -f PATH) [options]",
              "Prints the tokens of the exact bytes of TEXT (or of the file PATH).");
  p.string_option("-m, --model", &model, "FILE", "GGUF model or vocab-only file");
  p.string_option("-p, --prompt", &text, "TEXT", "text to tokenize");
  p.string_option("-f, --file", &file, "PATH", "file whose bytes to tokenize");
  p.flag("--ids", &ids_only, "print only the ids, space-separated, on one line");
  p.flag("--no-bos", &no_bos,
         "add no special token (BOS, EOS, [CLS], [SEP]) even if the model asks for them");
  p.flag("--special", &special, "parse special-token text (\"<|im_start|>\")");
  if (p.parse_or_print_help(args)) return 0;
  if (model.empty()) throw UsageError("-m: a model file is required");
  if (p.seen("-p") == p.seen("-f")) throw UsageError("give exactly one of -p TEXT and -f PATH");
  if (p.seen("-f")) text = read_file_bytes(file);

  const std::unique_ptr<MmapStore> store = MmapStore::open(model);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_metadata(store->model().metadata);
  // --no-bos turns off every token the model adds (BOS, EOS, BERT's [CLS] and [SEP]),
  // as llama-tokenize's --no-bos does: the ids are the text's alone.
  const std::vector<TokenId> ids = tok->encode(text, !no_bos, special);
  if (ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    return 0;
  }
  for (const TokenId id : ids) {
    const std::string piece = tok->token_to_piece(id, true);
    std::printf("%d '", id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::printf("'\n");
  }
  return 0;
}

}  // namespace runnel::cli
