// The runnel sub-commands. Each takes the arguments after its name, writes its
// output to stdout (progress and figures to stderr) and returns the exit status.
// Usage problems throw cli::UsageError; load problems throw GgufError and friends;
// native/main.cpp turns both into one "runnel: error: ..." line and status 1.
#pragma once

#include <string>
#include <vector>

namespace runnel::cli {

int run_command(const std::vector<std::string>& args);
int chat_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);
int tokenize_command(const std::vector<std::string>& args);
int embed_command(const std::vector<std::string>& args);
int serve_command(const std::vector<std::string>& args);
int synth_model_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int perplexity_command(const std::vector<std::string>& args);
int quantize_command(const std::vector<std::string>& args);
int imatrix_command(const std::vector<std::string>& args);

// Applies RUNNEL_ISA (if set) to the kernel selection; throws UsageError if the
// forced ISA is unknown or not supported by this CPU.
void select_kernels_from_env();

}  // namespace runnel::cli
