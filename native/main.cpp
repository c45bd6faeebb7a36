// runnel: the command-line front end. Dispatches to native/cli and turns every error
// into one line on stderr and exit status 1.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/version.h"

namespace {

constexpr const char* kUsage =
    "usage: runnel COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  run       generate text from a prompt (runnel run -m FILE -p TEXT)\n"
    "  chat      an interactive conversation with a chat model (runnel chat -m FILE)\n"
    "  inspect   print a GGUF file's metadata and tensors (runnel inspect FILE)\n"
    "  tokenize  print the tokens of a text (runnel tokenize -m FILE -p TEXT)\n"
    "  embed     print the embeddings of texts as JSON (runnel embed -m FILE -p TEXT [-p TEXT ...])\n"
    "  serve     serve the model over the OpenAI API (runnel serve -m FILE [--port 8080])\n"
    "  bench     prompt and generation speed, like llama-bench (runnel bench -m FILE -p 128 -n 32)\n"
    "  perplexity  perplexity on a text, KL divergence, like llama-perplexity (runnel perplexity -m FILE -f TEXT)\n"
    "  quantize  quantize a GGUF like llama-quantize (runnel quantize IN.gguf OUT.gguf Q4_K_M)\n"
    "  imatrix   collect an importance matrix for quantize --imatrix, like llama-imatrix\n"
    "            (runnel imatrix -m FILE -f TEXT -o imatrix.gguf)\n"
    "  synth-model  write a synthetic 1B/8B-shaped GGUF for benchmarks\n"
    "  version   print the version and the git commit it was built from (also --version)\n"
    "\n"
    "`runnel COMMAND --help` describes a command's options.\n"
    "RUNNEL_ISA=ref|avx2|avx512|neon forces the kernel set.\n";

// Messages must stay on one line whatever produced them.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

int version_command(const std::vector<std::string>& args) {
  runnel::cli::ArgParser p("runnel version | runnel --version",
                           "Prints the version and the git commit runnel was built from.");
  p.parse(args);
  const std::string text = p.help_requested() ? p.help_text() : runnel::version_string() + "\n";
  std::fputs(text.c_str(), stdout);
  return 0;
}

int dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "run") return runnel::cli::run_command(args);
  if (command == "chat") return runnel::cli::chat_command(args);
  if (command == "inspect") return runnel::cli::inspect_command(args);
  if (command == "tokenize") return runnel::cli::tokenize_command(args);
  if (command == "embed") return runnel::cli::embed_command(args);
  if (command == "serve") return runnel::cli::serve_command(args);
  if (command == "synth-model") return runnel::cli::synth_model_command(args);
  if (command == "bench") return runnel::cli::bench_command(args);
  if (command == "perplexity") return runnel::cli::perplexity_command(args);
  if (command == "quantize") return runnel::cli::quantize_command(args);
  if (command == "imatrix") return runnel::cli::imatrix_command(args);
  if (command == "version" || command == "--version") return version_command(args);
  throw runnel::cli::UsageError("unknown command '" + command + "' (try runnel --help)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  const std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return dispatch(command, args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "runnel: error: %s\n", one_line(e.what()).c_str());
    return 1;
  } catch (...) {
    std::fflush(stdout);
    std::fprintf(stderr, "runnel: error: unexpected failure\n");
    return 1;
  }
}
