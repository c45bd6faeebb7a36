// The runnel CLI: help, usage errors, tokenize, inspect, and run on a tiny model
// written by the test (no downloaded model needed).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/config.h"
#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "kernels/kernels.h"
#include "native/cli/load_progress.h"
#include "native/cli/model_loader.h"
#include "native/cpu_topology.h"
#include "native/mmap_store.h"
#include "native/version.h"
#include "tests/core/model/tiny_model.h"
#include "tests/native/scratch_dir.h"
#include "tests/test_isa.h"
#include "tests/test_models.h"

namespace runnel {
namespace {

using test::check_usage_error;
using test::CliResult;
using test::read_all;
using test::runnel_cli;
using test::ScratchDir;

// The kernels the CLI child picks: RUNNEL_ISA from this process's environment (test.sh
// and CI hosts may export one), else automatic.
void select_kernels_like_cli() {
  const char* isa = std::getenv("RUNNEL_ISA");
  REQUIRE(select_kernels(isa ? isa : ""));
}

// The vector test files: inputs separated by a marker line, one output line per input.
std::string expected_ids(const std::string& vocab, const std::string& text) {
  const std::string inp = read_all(vocab + ".inp");
  const std::string out = read_all(vocab + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t start = 0, index = 0;
  for (;;) {
    const size_t end = inp.find(sep, start);
    REQUIRE(end != std::string::npos);
    if (inp.substr(start, end - start) == text) break;
    start = end + sep.size();
    ++index;
  }
  size_t line_start = 0;
  for (size_t i = 0; i < index; ++i) line_start = out.find('\n', line_start) + 1;
  std::string line = out.substr(line_start, out.find('\n', line_start) - line_start);
  line.erase(0, line.find_first_not_of(' '));
  return line;
}

const std::string kGpt2Vocab = std::string(RUNNEL_TEST_DATA) + "/tokenizer/ggml-vocab-gpt-2.gguf";

// Every input of a vector file and its line of reference ids (leading space trimmed).
std::vector<std::pair<std::string, std::string>> vector_cases(const std::string& vocab) {
  const std::string inp = read_all(vocab + ".inp");
  std::istringstream out(read_all(vocab + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::pair<std::string, std::string>> cases;
  for (size_t start = 0, end; (end = inp.find(sep, start)) != std::string::npos;
       start = end + sep.size()) {
    std::string ids;
    REQUIRE(std::getline(out, ids));
    ids.erase(0, ids.find_first_not_of(' '));
    cases.emplace_back(inp.substr(start, end - start), ids);
  }
  return cases;
}

// The tiny model on disk, for commands that load one.
std::string write_tiny_model(const ScratchDir& dir) {
  const test::TinyModel m = test::build_tiny_model({});
  const std::string model = dir.file("tiny.gguf");
  std::ofstream f(model, std::ios::binary);
  f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  return model;
}

// A tiny Q4_K_M model from synth-model: its matrices are repacked where the kernels can.
std::string write_synth_model(const ScratchDir& dir) {
  const std::string model = dir.file("synth.gguf");
  const CliResult r = runnel_cli(dir, "synth-model --shape tiny --type q4_k_m --tokenizer-from '" +
                                          kGpt2Vocab + "' -o '" + model + "'");
  REQUIRE(r.status == 0);
  return model;
}

}  // namespace

TEST_CASE("--help on runnel and on each command exits 0 with usage on stdout", "[cli]") {
  ScratchDir dir;
  for (const std::string args : {"--help", "-h", "run --help", "inspect --help", "tokenize -h"}) {
    INFO("runnel " << args);
    const CliResult r = runnel_cli(dir, args);
    CHECK(r.status == 0);
    CHECK(r.out.rfind("usage: runnel", 0) == 0);
    CHECK(r.err.empty());
  }
  CHECK(runnel_cli(dir, "run --help").out.find("--dump-logits PATH") != std::string::npos);
  const CliResult bare = runnel_cli(dir, "");
  CHECK(bare.status == 1);
  CHECK(bare.err.rfind("usage: runnel", 0) == 0);
}

TEST_CASE("unknown flags and bad values exit 1 with one line naming them", "[cli]") {
  ScratchDir dir;
  check_usage_error(dir, "run -m x.gguf -p hi --bogus", "unknown option '--bogus'");
  check_usage_error(dir, "run -m x.gguf -p hi --temp abc", "--temp: expected a number, got 'abc'");
  check_usage_error(dir, "run -m x.gguf -p hi -n -5", "-n: must be >= -1, got -5");
  check_usage_error(dir, "run -m x.gguf -p hi -n 1.5", "-n: expected an integer, got '1.5'");
  check_usage_error(dir, "run -m x.gguf -p hi -t 0", "-t: must be >= 1, got 0");
  check_usage_error(dir, "run -m x.gguf -p hi --top-p 1.5", "--top-p: must be in (0, 1]");
  check_usage_error(dir, "run -m x.gguf -p", "-p: missing value");
  check_usage_error(dir, "run -p hi", "-m: a model file is required");
  check_usage_error(dir, "run -m x.gguf -p hi --seed=-3",
                    "--seed: expected a non-negative integer, got '-3'");
  check_usage_error(dir, "tokenize -m x.gguf", "give exactly one of -p TEXT and -f PATH");
  check_usage_error(dir, "inspect", "missing argument FILE");
  check_usage_error(dir, "inspect a.gguf b.gguf", "unexpected argument 'b.gguf'");
  check_usage_error(dir, "frobnicate", "unknown command 'frobnicate' (try runnel --help)");
}

TEST_CASE("tokenize --ids gives the reference ids of the gpt-2 vocab", "[cli]") {
  ScratchDir dir;
  const std::string ids = expected_ids(kGpt2Vocab, "Hello world");
  CHECK(ids == "15496 995");  // the vector file's line, read above
  const CliResult r = runnel_cli(dir, "tokenize -m '" + kGpt2Vocab + "' -p 'Hello world' --ids");
  CHECK(r.status == 0);
  CHECK(r.out == ids + "\n");

  // The same text from a file (its exact bytes), in the default `id 'piece'` format.
  {
    std::ofstream f(dir.file("in.txt"), std::ios::binary);
    f << " Hello world";
  }
  const CliResult f =
      runnel_cli(dir, "tokenize -m '" + kGpt2Vocab + "' -f '" + dir.file("in.txt") + "' --no-bos");
  CHECK(f.status == 0);
  CHECK(f.out == "18435 ' Hello'\n995 ' world'\n");
}

TEST_CASE("inspect prints metadata and the tensor table", "[cli]") {
  ScratchDir dir;
  const CliResult v = runnel_cli(dir, "inspect '" + kGpt2Vocab + "'");
  CHECK(v.status == 0);
  CHECK(v.out.find("  tokenizer.ggml.model = \"gpt2\"\n") != std::string::npos);
  CHECK(v.out.find("  tokenizer.ggml.tokens = string[50257] [\"!\", \"\\\"\", \"#\", \"$\", "
                   "\"%\", ...]\n") != std::string::npos);
  CHECK(v.out.find("tensors (0):") != std::string::npos);

  const test::TinyModel m = test::build_tiny_model({});
  {
    std::ofstream f(dir.file("tiny.gguf"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  const CliResult t = runnel_cli(dir, "inspect '" + dir.file("tiny.gguf") + "'");
  CHECK(t.status == 0);
  CHECK(t.out.find("  llama.block_count = 2\n") != std::string::npos);
  CHECK(t.out.find("tensors (20):") != std::string::npos);
  // name, type, dims, offset, bytes: 64 x 16 floats of blk.0.attn_k.weight
  CHECK(t.out.find("blk.0.attn_k.weight") != std::string::npos);
  CHECK(t.out.find("F32    [64, 32]") != std::string::npos);
  CHECK(t.out.find(" 8192\n") != std::string::npos);
}

TEST_CASE("run streams greedy text, prints figures and dumps the first logits", "[cli]") {
  ScratchDir dir;
  const test::TinyModel m = test::build_tiny_model({});
  const std::string model = dir.file("tiny.gguf");
  {
    std::ofstream f(model, std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  const std::string dump = dir.file("logits.bin");
  const CliResult r = runnel_cli(dir, "run -m '" + model +
                                          "' -p 'a b c' -n 6 --temp 0 -t 2 "
                                          "--dump-logits '" +
                                          dump + "'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("load: ") != std::string::npos);
  CHECK(r.err.find("prompt: 4 tokens") != std::string::npos);  // <s> + 3 letters
  CHECK(r.err.find("tok/s") != std::string::npos);

  // The same in-process, with the kernels the CLI picks: greedy tokens and the logits
  // after the prompt.
  select_kernels_like_cli();
  std::unique_ptr<Engine> e = Engine::load(MmapStore::open(model));
  const std::vector<TokenId> prompt = e->tokenizer().encode("a b c", true, false);
  std::unique_ptr<Session> s = e->new_session();
  std::vector<float> first;
  GenerateParams p;
  p.max_tokens = 6;
  p.sampler.temperature = 0;
  p.on_logits = [&](int step, std::span<const float> l) {
    if (step == 0) first.assign(l.begin(), l.end());
  };
  std::string text;
  s->generate(prompt, p, [&](std::string_view piece) {
    text += piece;
    return true;
  });
  REQUIRE(test::select_process_isa());  // back to this process's kernels for other tests
  CHECK(r.out == "a b c" + text + "\n");

  const std::string bytes = read_all(dump);
  REQUIRE(bytes.size() == first.size() * sizeof(float));
  std::vector<float> dumped(first.size());
  std::memcpy(dumped.data(), bytes.data(), bytes.size());
  CHECK(dumped == first);

  const CliResult quiet =
      runnel_cli(dir, "run -m '" + model + "' -p 'a b c' -n 6 --temp 0 --no-display-prompt");
  CHECK(quiet.out == text + "\n");
}

TEST_CASE("run --all-logits dumps the logits of every prompt position", "[cli]") {
  ScratchDir dir;
  const std::string model = write_tiny_model(dir);
  const std::string all = dir.file("all.bin"), one = dir.file("one.bin");
  const std::string run = "run -m '" + model + "' -p 'a b c' -n 3 --temp 0 -t 2 ";
  const CliResult r = runnel_cli(dir, run + "--all-logits --dump-logits '" + all + "'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("prompt: 4 tokens") && Catch::Contains("(all logits)"));
  const CliResult single = runnel_cli(dir, run + "--dump-logits '" + one + "'");
  REQUIRE(single.status == 0);
  CHECK(r.out == single.out);  // the same greedy text

  // [n_prompt, n_vocab]: every row is Session::eval_all's, computed here with the
  // kernels the CLI picks; the last row is the default dump.
  select_kernels_like_cli();
  EngineOptions eo;
  eo.all_logits = true;
  std::unique_ptr<Engine> e = Engine::load(MmapStore::open(model), eo);
  const std::vector<TokenId> prompt = e->tokenizer().encode("a b c", true, false);
  const std::vector<float> expected = e->new_session()->eval_all(prompt);
  REQUIRE(test::select_process_isa());
  const size_t n_vocab = static_cast<size_t>(e->config().n_vocab);
  REQUIRE(prompt.size() == 4);
  const std::string all_bytes = read_all(all), one_bytes = read_all(one);
  REQUIRE(all_bytes.size() == prompt.size() * n_vocab * sizeof(float));
  REQUIRE(one_bytes.size() == n_vocab * sizeof(float));
  std::vector<float> dumped(expected.size()), last(n_vocab);
  std::memcpy(dumped.data(), all_bytes.data(), all_bytes.size());
  std::memcpy(last.data(), one_bytes.data(), one_bytes.size());
  CHECK(dumped == expected);
  // The default dump takes the last position alone through the output matrix; here it
  // is one of four rows (the prompt tile, not the per-token dot): equal up to rounding.
  for (size_t i = 0; i < n_vocab; ++i) {
    INFO("token " << i);
    CHECK(dumped[(prompt.size() - 1) * n_vocab + i] == Approx(last[i]).margin(1e-5).epsilon(1e-5));
  }
  CHECK(std::memcmp(all_bytes.data(), all_bytes.data() + n_vocab * sizeof(float), n_vocab * sizeof(float)) != 0);

  CHECK_THAT(runnel_cli(dir, "run --help").out, Catch::Contains("--all-logits"));
  check_usage_error(dir, run + "--all-logits", "--all-logits: only with --dump-logits PATH");
  check_usage_error(dir, run + "--all-logits --dump-logits x.bin --session s.bin", "--all-logits: not with --session");
}

TEST_CASE("run takes the prompt from -p, -p - (stdin) or -f, as text or as a chat", "[cli]") {
  ScratchDir dir;
  test::TinySpec spec;
  spec.n_ctx_train = 256;  // ChatML markup is a letter a token in the tiny vocabulary
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::string model = dir.file("tiny.gguf");
  {
    std::ofstream f(model, std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  const std::string prompt_file = dir.file("prompt.txt");
  {
    std::ofstream f(prompt_file, std::ios::binary);
    f << "a b c";
  }
  const std::string run = "run -m '" + model + "' -n 6 --temp 0 -t 1 ";
  const CliResult given = runnel_cli(dir, run + "-p 'a b c'");
  REQUIRE(given.status == 0);
  const CliResult from_file = runnel_cli(dir, run + "-f '" + prompt_file + "'");
  CHECK(from_file.out == given.out);
  const CliResult from_stdin = runnel_cli(dir, run + "-p -", "", prompt_file);
  CHECK(from_stdin.out == given.out);
  check_usage_error(dir, run + "-p x -f '" + prompt_file + "'", "-p / -f: give the prompt with exactly one of them");
  check_usage_error(dir, run + "-f '" + dir.file("absent.txt") + "'",
                    "-f: cannot read '" + dir.file("absent.txt") + "'");
  check_usage_error(dir, run + "-p x --system y", "--system: only with --chat");

  // --chat: the reply to the rendered template (the tiny model has none: ChatML), alone.
  const CliResult chat = runnel_cli(dir, run + "--chat --system 'be brief' -p 'a b'");
  INFO(chat.err);
  REQUIRE(chat.status == 0);
  const CliResult templated = runnel_cli(dir, run + "--no-display-prompt -p $'<|im_start|>system\\nbe brief"
                                                    "<|im_end|>\\n<|im_start|>user\\na b<|im_end|>\\n"
                                                    "<|im_start|>assistant\\n'");
  REQUIRE(templated.status == 0);
  CHECK(chat.out == templated.out);
  CHECK(chat.out.find("im_start") == std::string::npos);
}

TEST_CASE("run without --seed picks a random seed and prints it; --seed repeats a run", "[cli]") {
  ScratchDir dir;
  const test::TinyModel m = test::build_tiny_model({});
  const std::string model = dir.file("tiny.gguf");
  {
    std::ofstream f(model, std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  const std::string run = "run -m '" + model + "' -p 'a b c' -n 24 --temp 1.5 --top-k 0 --top-p 1 --min-p 0 -t 1";
  const auto seed_of = [](const std::string& err) {
    const size_t at = err.find(", seed ");
    REQUIRE(at != std::string::npos);
    return std::stoull(err.substr(at + 7));
  };
  const CliResult a = runnel_cli(dir, run), b = runnel_cli(dir, run);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const uint64_t seed_a = seed_of(a.err), seed_b = seed_of(b.err);
  CHECK(seed_a != seed_b);  // 2^-32 to fail by chance
  const CliResult again = runnel_cli(dir, run + " --seed " + std::to_string(seed_a));
  CHECK(seed_of(again.err) == seed_a);
  CHECK(again.out == a.out);
}

TEST_CASE("run refuses requests beyond the context before starting", "[cli]") {
  ScratchDir dir;
  const test::TinyModel m = test::build_tiny_model({});
  const std::string model = dir.file("tiny.gguf");
  {
    std::ofstream f(model, std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  // --keep -1 turns the context shift off: too many tokens are refused up front...
  check_usage_error(dir, "run -m '" + model + "' -p 'a b c' -c 16 -n 100 --keep -1",
                    "prompt (4 tokens) + max_tokens (100) exceeds the context (16)");
  // ...by default the context shifts and generation runs to the end.
  const CliResult shifted = runnel_cli(dir, "run -m '" + model + "' -p 'a b c' -c 16 -n 100 --temp 0");
  CHECK(shifted.status == 0);
  CHECK_THAT(shifted.err, Catch::Contains("generation: 100 tokens") && Catch::Contains("context shifts"));
  // The memory plan: printed by --dry-run; a budget too small is refused with numbers.
  const CliResult plan = runnel_cli(dir, "run -m '" + model + "' -p x --dry-run");
  CHECK(plan.status == 0);
  CHECK_THAT(plan.out, Catch::Contains("memory plan:") && Catch::Contains("kv cache") && Catch::Contains("fits"));
  // serve's plan also gives the most slots (each a KV cache) the budget holds.
  const CliResult slots = runnel_cli(dir, "serve -m '" + model + "' -t 1 -c 64 --dry-run --mem-budget 17M");
  CHECK(slots.status == 0);
  CHECK_THAT(slots.out, Catch::Contains("slots: up to ") && Catch::Contains(" with layers streamed"));
  // The figure depends on the thread count (attention task buffers) and the kernel table
  // (repacked sizes): -t and -c are given, the plan is computed here with the CLI's kernels.
  select_kernels_like_cli();
  MemoryPlanOptions po;
  po.n_ctx = 64;
  po.n_tasks = 1;
  const auto store = MmapStore::open(model);
  const MemoryPlan expected = plan_memory(store->model(), ModelConfig::from_model(store->model()), po);
  // A draft model's plan (below) gets what the target's leaves of the budget.
  const MemoryPlan target = plan_memory(store->model(), ModelConfig::from_model(store->model()), [] {
    MemoryPlanOptions o;
    o.n_ctx = 64;
    o.n_tasks = 1;
    o.n_draft = 8;
    return o;
  }());
  REQUIRE(test::select_process_isa());
  CHECK(expected.streaming_bytes() > (16u << 20));  // the fixed 16 MiB allowance and the tiny model
  check_usage_error(dir, "run -m '" + model + "' -p x -t 1 -c 64 --mem-budget 1M",
                    "the model does not fit the memory budget: " + format_bytes(expected.streaming_bytes()) +
                        " needed even when streaming (kv cache " + format_bytes(expected.kv_bytes) +
                        "), budget 1.0 MiB (--mem-budget); lower -c, use --kv-type q8_0, or raise --mem-budget (see "
                        "--dry-run)");
  // A draft model gets what the target leaves of the budget.
  const CliResult draft = runnel_cli(dir, "run -m '" + model + "' -p x -t 1 -c 64 -n 2 --model-draft '" + model +
                                              "' --mem-budget " + std::to_string(target.total_bytes() + (4 << 20)));
  CHECK(draft.status == 1);
  CHECK_THAT(draft.err, Catch::StartsWith("runnel: error: --model-draft: the model does not fit the memory budget") &&
                            Catch::Contains("(--mem-budget), less " + format_bytes(target.total_bytes()) +
                                            " the target model holds"));
  check_usage_error(dir, "run -m '" + model + "' -p x --kv-type q3", "--kv-type: KV cache type 'q3' is not one of f16, q8_0, q4_0");
  check_usage_error(dir, "run -m '" + model + "' -p 'a b c d e f g h i' -c 8 -n 1",
                    "the prompt is 10 tokens but the context is 8 (leave room for at least one generated token)");
  const CliResult isa = runnel_cli(dir, "run -m '" + model + "' -p hi", "RUNNEL_ISA=bogus");
  CHECK(isa.status == 1);
  CHECK(isa.err == "runnel: error: RUNNEL_ISA: unknown or unsupported ISA 'bogus'\n");
}

TEST_CASE("cli: synth-model writes a loadable model; bench measures it", "[cli]") {
  const ScratchDir dir;
  const std::string model = dir.file("synth.gguf");
  const std::string vocab = std::string(RUNNEL_TEST_DATA) + "/tokenizer/ggml-vocab-gpt-2.gguf";
  const CliResult synth =
      runnel_cli(dir, "synth-model --shape tiny --type q4_k_m --tokenizer-from '" + vocab + "' -o '" + model + "'");
  REQUIRE(synth.status == 0);
  CHECK_THAT(synth.err, Catch::Contains("tiny q4_k_m, 2 layers"));
  // The file parses, has the Q4_K_M mix, and generates.
  auto store = MmapStore::open(model);
  CHECK(store->model().find_tensor("blk.0.attn_q.weight")->type == GgmlType::Q4_K);
  CHECK(store->model().find_tensor("blk.0.ffn_down.weight")->type == GgmlType::Q4_K);
  CHECK(store->model().find_tensor("blk.1.ffn_down.weight")->type == GgmlType::Q6_K);  // last eighth: more bits
  CHECK(store->model().find_tensor("output.weight")->type == GgmlType::Q6_K);
  const CliResult gen = runnel_cli(dir, "run -m '" + model + "' -p 'hello' -n 4 --temp 0");
  CHECK(gen.status == 0);
  CHECK_THAT(gen.err, Catch::Contains("generation: 4 tokens"));

  const CliResult md = runnel_cli(dir, "bench -m '" + model + "' -p 16 -n 4 -r 2 -t 1");
  REQUIRE(md.status == 0);
  CHECK_THAT(md.out, Catch::Contains("| model | size | params | backend | threads | test | t/s |"));
  CHECK_THAT(md.out, Catch::Contains("| pp16 |") && Catch::Contains("| tg4 |"));
  const CliResult jl = runnel_cli(dir, "bench -m '" + model + "' -p 16 -n 4 -r 3 -t 1 -o jsonl");
  REQUIRE(jl.status == 0);
  std::istringstream lines(jl.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    for (const char* field : {"\"model_filename\"", "\"n_threads\":1", "\"n_prompt\"", "\"n_gen\"",
                              "\"avg_ts\"", "\"stddev_ts\"", "\"samples_ts\""}) {
      CHECK_THAT(line, Catch::Contains(field));
    }
    ++n;
  }
  CHECK(n == 2);  // pp16 and tg4
  check_usage_error(dir, "bench -m '" + model + "' -o xml", "-o: expected md or jsonl, got 'xml'");
  // -np: sessions decoded together; t/s counts every session's tokens.
  const CliResult par = runnel_cli(dir, "bench -m '" + model + "' -p 0 -n 4 -np 1,3 -r 2 -t 1 -o jsonl");
  REQUIRE(par.status == 0);
  CHECK_THAT(par.out, Catch::Contains("\"n_gen\":4,\"n_parallel\":1") &&
                          Catch::Contains("\"n_gen\":4,\"n_parallel\":3"));
  const CliResult par_md = runnel_cli(dir, "bench -m '" + model + "' -p 0 -n 4 -np 2 -r 1 -t 1");
  REQUIRE(par_md.status == 0);
  CHECK_THAT(par_md.out, Catch::Contains("| tg4 x2 |"));
  check_usage_error(dir, "bench -m '" + model + "' -np 0", "-np: session counts must be >= 1");
  // -d: each test after that many tokens already in the context, labelled as llama-bench does.
  const CliResult deep = runnel_cli(dir, "bench -m '" + model + "' -p 8 -n 4 -d 0,20 -np 1,2 -r 1 -t 1");
  REQUIRE(deep.status == 0);
  for (const char* label : {"| pp8 |", "| tg4 |", "| tg4 x2 |", "| pp8 @ d20 |", "| tg4 @ d20 |", "| tg4 x2 @ d20 |"}) {
    CHECK_THAT(deep.out, Catch::Contains(label));
  }
  const CliResult deep_jl = runnel_cli(dir, "bench -m '" + model + "' -p 0 -n 4 -d 20 -r 1 -t 1 -o jsonl");
  REQUIRE(deep_jl.status == 0);
  CHECK_THAT(deep_jl.out, Catch::Contains("\"n_depth\":20"));
  check_usage_error(dir, "bench -m '" + model + "' -d -1", "-d: values must be >= 0, got -1");
  const CliResult plan = runnel_cli(dir, "bench -m '" + model + "' -p 16 -n 4 -t 1 --dry-run");
  CHECK(plan.status == 0);
  CHECK_THAT(plan.out, Catch::Contains("memory plan:") && Catch::Contains("fits"));
  CHECK_THAT(plan.out, !Catch::Contains("| pp16 |"));
  const CliResult cpu = runnel_cli(dir, "inspect --cpu", "RUNNEL_ISA=ref");
  CHECK(cpu.status == 0);
  CHECK_THAT(cpu.out, Catch::Contains("physical cores") && Catch::Contains("kernels: ref (forced by RUNNEL_ISA)"));
  check_usage_error(dir, "synth-model --shape llama-70b --type q8_0 --tokenizer-from x -o y",
                    "--shape: expected one of llama-1b, llama-8b, gemma3-1b, qwen3-4b, tiny, tiny-llama, "
                    "tiny-llama-swa, tiny-qwen3, tiny-gemma, tiny-gemma2, tiny-gemma3, tiny-phi3, tiny-bert, "
                    "tiny-nomic-bert, qwen3-30b-a3b, moe-small, tiny-mixtral, tiny-qwen2moe, tiny-qwen3moe, "
                    "tiny-olmoe, tiny-gpt-oss, gpt-oss-20b, got 'llama-70b'");
}

TEST_CASE("runnel embed: JSON embeddings of an embedding model; run and chat refuse it", "[cli]") {
  ScratchDir dir;
  const std::string model = dir.file("tiny-bert.gguf");
  const CliResult synth = runnel_cli(dir, "synth-model --shape tiny-bert --tokenizer-from '" +
                                              std::string(RUNNEL_TEST_DATA) +
                                              "/tokenizer/ggml-vocab-bert-bge.gguf' -o '" + model + "'");
  REQUIRE(synth.status == 0);
  const CliResult r = runnel_cli(dir, "embed -m '" + model + "' -t 1 -p 'Hello world' -p 'the cat sat'");
  REQUIRE(r.status == 0);
  // {"model":"bert","pooling":"cls","normalized":true,"n_embd":256,"data":[{"index":0,"n_tokens":4,...
  CHECK_THAT(r.out, Catch::StartsWith("{\"model\":\"bert\",\"pooling\":\"cls\",\"normalized\":true,"
                                      "\"n_embd\":256,\"data\":[{\"index\":0,\"n_tokens\":4,\"embedding\":["));
  CHECK_THAT(r.out, Catch::Contains("{\"index\":1,\"n_tokens\":5,\"embedding\":["));
  const CliResult raw = runnel_cli(dir, "embed -m '" + model + "' -t 1 -p 'Hello world' --no-normalize");
  REQUIRE(raw.status == 0);
  CHECK_THAT(raw.out, Catch::Contains("\"normalized\":false"));
  check_usage_error(dir, "embed -m '" + model + "'", "-p / -f: give at least one text to embed");
  const std::string refusal = "runnel: error: this is a bert embedding model: it computes embeddings (runnel "
                              "embed, POST /v1/embeddings), it does not generate text\n";
  for (const char* command : {"run -p hi -n 4", "chat"}) {
    const CliResult g = runnel_cli(dir, std::string(command) + " -m '" + model + "' -t 1");
    CHECK(g.status == 1);
    CHECK(g.out.empty());  // nothing echoed first
    CHECK(g.err == refusal);
  }
  const CliResult pooling = runnel_cli(dir, "synth-model --shape tiny-llama --pooling mean --tokenizer-from x -o y");
  CHECK(pooling.status == 1);
  CHECK(pooling.err == "runnel: error: --pooling: only for the embedding shapes tiny-bert and tiny-nomic-bert\n");
}

TEST_CASE("--version and inspect print the version and the git commit", "[cli]") {
  ScratchDir dir;
  const std::string version = version_string();
  CHECK(std::regex_match(version,
                         std::regex(R"(runnel \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,}|unknown)\))")));
  for (const std::string args : {"--version", "version"}) {
    INFO("runnel " << args);
    const CliResult r = runnel_cli(dir, args);
    CHECK(r.status == 0);
    CHECK(r.out == version + "\n");
    CHECK(r.err.empty());
  }
  check_usage_error(dir, "version extra", "unexpected argument 'extra'");
  // Built from a git checkout, the commit is one of its commits (HEAD may have moved on).
  const std::string src = std::string(RUNNEL_TEST_DATA) + "/../..";
  if (std::system(("git -C '" + src + "' rev-parse --git-dir >/dev/null 2>&1").c_str()) == 0) {
    CHECK(git_commit() != "unknown");
    const std::string exists =
        "git -C '" + src + "' cat-file -e '" + std::string(git_commit()) + "^{commit}'";
    CHECK(std::system(exists.c_str()) == 0);
  }
  const CliResult v = runnel_cli(dir, "inspect '" + kGpt2Vocab + "'");
  CHECK(v.status == 0);
  CHECK(v.out.rfind(version + "\nfile: ", 0) == 0);
  const CliResult cpu = runnel_cli(dir, "inspect --cpu");
  CHECK(cpu.out.rfind(version + "\ncpu: ", 0) == 0);
}

TEST_CASE("-t above the logical CPUs is clamped to them with a warning", "[cli]") {
  ScratchDir dir;
  const int n_cpus = logical_cpu_count();
  const std::string n = std::to_string(n_cpus);
  const std::string warning = "runnel: warning: -t 1000 is more than the " + n + " logical CPU" +
                              (n_cpus == 1 ? "" : "s") + "; using " + n + "\n";
  const std::string model = write_tiny_model(dir);
  const CliResult r = runnel_cli(dir, "run -m '" + model + "' -p 'a b' -n 2 --temp 0 -t 1000");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.err.rfind(warning, 0) == 0);
  CHECK_THAT(r.err, Catch::Contains(std::string("(").append(n).append(" thread")));
  // bench resolves its list once: one warning, and the table shows the count used.
  const CliResult b = runnel_cli(dir, "bench -m '" + model + "' -p 4 -n 2 -r 1 -t 1000");
  INFO(b.err);
  CHECK(b.status == 0);
  CHECK(b.err == warning);
  CHECK_THAT(b.out, Catch::Contains("| " + n + " | pp4 |"));
  // Within the CPUs nothing is said.
  const CliResult one = runnel_cli(dir, "bench -m '" + model + "' -p 4 -n 0 -r 1 -t 1");
  CHECK(one.status == 0);
  CHECK(one.err.empty());
}

TEST_CASE("tokenize --no-bos adds no special token: every bert-bge vector through the CLI",
          "[cli]") {
  ScratchDir dir;
  const std::string vocab = std::string(RUNNEL_TEST_DATA) + "/tokenizer/ggml-vocab-bert-bge.gguf";
  const auto cases = vector_cases(vocab);
  REQUIRE(cases.size() == 46);
  const std::string input = dir.file("input.txt");
  for (const auto& [text, ids] : cases) {
    {
      std::ofstream f(input, std::ios::binary);
      f << text;
    }
    INFO("input: '" << text << "'");
    const CliResult r =
        runnel_cli(dir, "tokenize -m '" + vocab + "' -f '" + input + "' --ids --no-bos");
    CHECK(r.status == 0);
    CHECK(r.out == ids + "\n");
  }
  // Without --no-bos the model's own [CLS] ... [SEP] frame the ids.
  const CliResult framed = runnel_cli(dir, "tokenize -m '" + vocab + "' -p 'Hello world' --ids");
  CHECK(framed.out == "101 7592 2088 102\n");
}

TEST_CASE("bench prints no table header before an error", "[cli]") {
  ScratchDir dir;
  const std::string model = write_tiny_model(dir);
  const std::string missing = dir.file("missing.gguf");
  const std::string not_found = "cannot open " + missing + ": No such file or directory";
  check_usage_error(dir, "bench -m '" + missing + "' -p 4 -n 2 -r 1", not_found);
  // A bad file after a good one fails before the good one is measured.
  check_usage_error(dir, "bench -m '" + model + "," + missing + "' -p 4 -n 2 -r 1", not_found);
  check_usage_error(dir, "bench -m '" + model + "' -p x", "-p: expected an integer, got 'x'");
  check_usage_error(dir, "bench -m '" + model + "' -t 0", "-t: thread counts must be >= 1");
  check_usage_error(dir, "bench -m '" + model + "' -p 4 -n 2 -r 1 --kv-type q3",
                    "--kv-type: KV cache type 'q3' is not one of f16, q8_0, q4_0");
}

TEST_CASE("--help indents an option's continuation lines under its first", "[cli]") {
  ScratchDir dir;
  for (const std::string command :
       {"run", "serve", "bench", "tokenize", "inspect", "synth-model", "version"}) {
    INFO("runnel " << command << " --help");
    const CliResult r = runnel_cli(dir, command + " --help");
    REQUIRE(r.status == 0);
    const size_t options = r.out.find("\noptions:\n");
    REQUIRE(options != std::string::npos);
    std::istringstream lines(r.out.substr(options + 10));
    std::string line;
    while (std::getline(lines, line)) {
      INFO(line);
      CHECK((line.rfind("  -", 0) == 0 || line.rfind("      ", 0) == 0));
    }
  }
  // run's --keep has a two-line description: both lines under the option.
  const CliResult run = runnel_cli(dir, "run --help");
  const size_t keep = run.out.find("\n  --keep N\n");
  REQUIRE(keep != std::string::npos);
  std::istringstream after(run.out.substr(keep + 12));
  std::string first, second;
  std::getline(after, first);
  std::getline(after, second);
  CHECK(first.rfind("      ", 0) == 0);
  CHECK(second.rfind("      ", 0) == 0);
  CHECK(second.rfind("  -", 0) != 0);
}

TEST_CASE("bench names a model by its file name, not general.name", "[cli]") {
  ScratchDir dir;
  const std::string model = write_synth_model(dir);
  CHECK(MmapStore::open(model)->model().metadata.find_string("general.name") ==
        "synthetic tiny q4_k_m");
  const CliResult md = runnel_cli(dir, "bench -m '" + model + "' -p 8 -n 0 -r 1 -t 1");
  REQUIRE(md.status == 0);
  CHECK_THAT(md.out, Catch::Contains("\n| synth | ") && !Catch::Contains("synthetic"));
}

TEST_CASE("LoadProgress draws one line in place and ends it", "[cli]") {
  ScratchDir dir;
  const std::string path = dir.file("progress.txt");
  const auto drawn = [&](uint64_t total, bool enabled, bool finish) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    {
      cli::LoadProgress p(f, "m.gguf", total, enabled);
      p.update(0);
      p.update(total / 2);  // within 100 ms of the first: not drawn
      if (finish) p.finish();
    }
    std::fclose(f);
    return read_all(path);
  };
  const std::string full = drawn(uint64_t{3} << 20, true, true);
  CHECK(full.rfind("\rloading m.gguf:   0% (0.0 MiB of 3.0 MiB, 0 MiB/s)\rloading m.gguf: 100% "
                   "(3.0 MiB of 3.0 MiB, ",
                   0) == 0);
  CHECK(full.size() - full.rfind("MiB/s)\n") == 7);  // ends the line once
  CHECK(std::count(full.begin(), full.end(), '\n') == 1);
  // An error mid-load (no finish) still leaves the cursor on a fresh line.
  const std::string cut = drawn(uint64_t{3} << 20, true, false);
  CHECK(cut == "\rloading m.gguf:   0% (0.0 MiB of 3.0 MiB, 0 MiB/s)\n");
  CHECK(drawn(uint64_t{3} << 20, false, true).empty());  // not a terminal
  CHECK(drawn(0, true, true).empty());                   // nothing to read
}

TEST_CASE("load progress counts the bytes repacked, up to the loader's total", "[cli]") {
  ScratchDir dir;
  const std::string model = write_synth_model(dir);
  select_kernels_like_cli();
  std::unique_ptr<MmapStore> store = MmapStore::open(model);
  const uint64_t total = cli::load_repack_bytes(*store, ModelConfig::from_model(store->model()));
  if (kernels().of(GgmlType::Q4_K).repack_x8 != nullptr) CHECK(total > 0);
  uint64_t last = 0;
  int n_calls = 0;
  MmapStore& s = *store;
  s.on_load_progress([&](uint64_t done) {
    CHECK(done > last);
    last = done;
    ++n_calls;
  });
  const std::unique_ptr<Engine> engine = Engine::load(std::move(store));
  s.on_load_progress(nullptr);
  REQUIRE(test::select_process_isa());
  CHECK(last == total);
  CHECK((total == 0) == (n_calls == 0));

  // Not on a terminal (the tests' stderr is a file): no progress line at all.
  const CliResult piped = runnel_cli(dir, "run -m '" + model + "' -p hi -n 1 --temp 0");
  CHECK(piped.status == 0);
  CHECK_THAT(piped.err, !Catch::Contains("loading "));
  // On a terminal (script(1) gives the child a pty for stderr): the line, ended.
  if (total == 0) return;
  if (std::system("script -qec true /dev/null </dev/null >/dev/null 2>&1") != 0) {
    WARN("no script(1) or no pseudo-terminals here: the terminal case is not checked");
    return;
  }
  const std::string tty_err = dir.file("tty.txt");
  const std::string cmd = "script -qec \"'" + std::string(RUNNEL_BINARY) + "' run -m '" + model +
                          "' -p hi -n 1 --temp 0 >/dev/null\" /dev/null >'" + tty_err +
                          "' </dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string shown = read_all(tty_err);
  INFO(shown);
  CHECK_THAT(shown, Catch::Contains("\rloading synth.gguf: ") && Catch::Contains("100% (") &&
                        Catch::Contains(" MiB/s)\r\n"));
}

TEST_CASE("run --chat-template-kwargs sets the template's enable_thinking; bad values are refused",
          "[cli]") {
  ScratchDir dir;
  // tiny-qwen3 carries no chat template: the built-in Qwen3 one renders the chat
  const std::string model = dir.file("qwen3.gguf");
  const CliResult synth = runnel_cli(dir, "synth-model --shape tiny-qwen3 --tokenizer-from '" +
                                              std::string(RUNNEL_TEST_DATA) +
                                              "/tokenizer/ggml-vocab-gpt-2.gguf' -o '" + model + "'");
  REQUIRE(synth.status == 0);
  auto prompt_tokens = [&](const std::string& extra) {
    const CliResult r = runnel_cli(dir, "run -m '" + model + "' --chat -p hi -n 1 --temp 0 " + extra);
    INFO(r.err);
    REQUIRE(r.status == 0);
    const size_t at = r.err.find("prompt: ");
    REQUIRE(at != std::string::npos);
    return std::stoi(r.err.substr(at + 8));
  };
  const int plain = prompt_tokens("");
  // thinking off: the reply opens with an empty <think>\n\n</think>\n\n block
  CHECK(prompt_tokens("--chat-template-kwargs '{\"enable_thinking\": false}'") > plain);
  CHECK(prompt_tokens("--chat-template-kwargs '{\"enable_thinking\": true}'") == plain);
  check_usage_error(dir, "run -m '" + model + "' --chat -p hi --chat-template-kwargs '{\"tools\": 1}'",
                    "'--chat-template-kwargs.tools' is not supported (supported: enable_thinking)");
  check_usage_error(dir, "run -m '" + model + "' --chat -p hi --chat-template-kwargs '{bad'",
                    "--chat-template-kwargs: not valid JSON: {bad");
  check_usage_error(dir, "run -m '" + model + "' -p hi --chat-template-kwargs '{}'",
                    "--chat-template-kwargs: only with --chat");
}

}  // namespace runnel
