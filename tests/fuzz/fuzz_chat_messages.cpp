// Untrusted messages through the real chat templates of tests/data/templates: a chat
// completions body (messages, tools, chat_template_kwargs) validated by the server's
// parser, then rendered with and without the generation prompt. Input: byte 0 picks the
// template, the rest is the body. Expected failures: ApiError (a body the server
// refuses) and ChatTemplateError (a template's raise_exception, e.g. roles that do not
// alternate); anything else escaping, a sanitizer report, a timeout or an OOM is a finding.
#include <filesystem>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "native/server/api.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::vector<runnel::ChatTemplate> load_templates() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(runnel::fuzz::data_path("templates"))) {
    if (entry.path().extension() == ".jinja") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());  // the same template for the same byte, every run
  std::vector<runnel::ChatTemplate> out;
  for (const std::string& path : paths) {
    out.push_back(runnel::ChatTemplate::parse(runnel::fuzz::read_file(path), "<s>", "</s>"));
    out.back().set_now(1700000000);
  }
  return out;
}

const std::vector<runnel::ChatTemplate>& templates() {
  static const std::vector<runnel::ChatTemplate> kTemplates = load_templates();
  return kTemplates;
}

}  // namespace

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)templates();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  if (size == 0) return 0;
  const ChatTemplate& t = templates()[data[0] % templates().size()];
  try {
    const server::GenerationRequest r =
        server::parse_generation_request(fuzz::as_text(data + 1, size - 1), /*chat=*/true, /*n_vocab=*/1000);
    ChatOptions options = r.chat_options;
    (void)t.apply(r.messages, true, options);
    options.tools = r.tools.tools;
    (void)t.apply(r.messages, false, options);
  } catch (const server::ApiError&) {
  } catch (const ChatTemplateError&) {
  }
  return 0;
}
