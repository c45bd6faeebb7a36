// The runnel CLI: help, usage errors, tokenize, inspect, and run on a tiny model
// written by the test (no downloaded model needed).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/model/config.h"
#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "kernels/kernels.h"
#include "native/mmap_store.h"
#include "tests/core/model/tiny_model.h"
#include "tests/test_isa.h"

namespace runnel {
namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runnel-cli-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct CliResult {
  int status = -1;
  std::string out, err;
};

// Runs `[env] runnel args` through the shell; args are written by the tests.
CliResult runnel_cli(const ScratchDir& dir, const std::string& args, const std::string& env = "") {
  const std::string out = dir.file("out.txt"), err = dir.file("err.txt");
  const std::string cmd = env + " '" + std::string(RUNNEL_BINARY) + "' " + args + " </dev/null >'" +
                          out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_all(out);
  r.err = read_all(err);
  return r;
}

// The kernels the CLI child picks: RUNNEL_ISA from this process's environment (test.sh
// and CI hosts may export one), else automatic.
void select_kernels_like_cli() {
  const char* isa = std::getenv("RUNNEL_ISA");
  REQUIRE(select_kernels(isa ? isa : ""));
}

void check_usage_error(const ScratchDir& dir, const std::string& args, const std::string& msg) {
  INFO("runnel " << args);
  const CliResult r = runnel_cli(dir, args);
  CHECK(r.status == 1);
  CHECK(r.err == "runnel: error: " + msg + "\n");
  CHECK(r.out.empty());
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
  // The figure depends on the thread count (attention task buffers) and the kernel table
  // (repacked sizes): -t and -c are given, the plan is computed here with the CLI's kernels.
  select_kernels_like_cli();
  MemoryPlanOptions po;
  po.n_ctx = 64;
  po.n_tasks = 1;
  const auto store = MmapStore::open(model);
  const MemoryPlan expected = plan_memory(store->model(), ModelConfig::from_model(store->model()), po);
  REQUIRE(test::select_process_isa());
  CHECK(expected.streaming_bytes() > (16u << 20));  // the fixed 16 MiB allowance and the tiny model
  check_usage_error(dir, "run -m '" + model + "' -p x -t 1 -c 64 --mem-budget 1M",
                    "the model does not fit the memory budget: " + format_bytes(expected.streaming_bytes()) +
                        " needed even when streaming (kv cache " + format_bytes(expected.kv_bytes) +
                        "), budget 1.0 MiB (--mem-budget); lower -c, use --kv-type q8_0, or raise --mem-budget (see "
                        "--dry-run)");
  check_usage_error(dir, "run -m '" + model + "' -p x --kv-type q3", "--kv-type: KV cache type 'q3' is not one of f16, q8_0, q4_0");
  check_usage_error(dir, "run -m '" + model + "' -p 'a b c d e f g h i' -c 8 -n 1",
                    "prompt is 10 tokens but the context is 8");
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
  const CliResult plan = runnel_cli(dir, "bench -m '" + model + "' -p 16 -n 4 -t 1 --dry-run");
  CHECK(plan.status == 0);
  CHECK_THAT(plan.out, Catch::Contains("memory plan:") && Catch::Contains("fits"));
  CHECK_THAT(plan.out, !Catch::Contains("| pp16 |"));
  const CliResult cpu = runnel_cli(dir, "inspect --cpu", "RUNNEL_ISA=ref");
  CHECK(cpu.status == 0);
  CHECK_THAT(cpu.out, Catch::Contains("physical cores") && Catch::Contains("kernels: ref (forced by RUNNEL_ISA)"));
  check_usage_error(dir, "synth-model --shape llama-70b --type q8_0 --tokenizer-from x -o y",
                    "--shape: expected llama-1b, llama-8b or tiny, got 'llama-70b'");
}

}  // namespace runnel
