// runnel bench: prompt-processing and generation speed, measured the way llama-bench
// measures them, so the figures compare with llama.cpp's:
//   pp N: one batch of N tokens evaluated on an empty context (tok/s = N / time)
//   tg N: N single-token decodes on an empty context, no sampling
//   tg N xP (-np P): P sessions decoding N tokens each together, a pass of P rows per
//     step as `runnel serve --slots P` runs them (DecodeBatch), greedy; tok/s counts
//     all P sessions' tokens (llama-batched-bench's S_TG)
// Each test runs once as a warm-up, then -r times; the table gives mean ± sd.
// --mem-bandwidth measures the machine's read bandwidth instead (a STREAM-like sum
// over a buffer much larger than the caches), the roofline for decode.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"
#include "native/mmap_store.h"

namespace runnel::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int> int_list(const char* flag, const std::string& s) {
  std::vector<int> out;
  for (const std::string& item : split_list(s)) {
    const int v = parse_int(flag, item);
    if (v < 0) throw UsageError(std::string(flag) + ": values must be >= 0, got " + item);
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(std::string(flag) + ": expected a comma-separated list of numbers");
  return out;
}

struct Stats {
  double mean = 0, sd = 0;
};

Stats stats_of(const std::vector<double>& xs) {
  Stats s;
  for (double x : xs) s.mean += x;
  s.mean /= static_cast<double>(xs.size());
  if (xs.size() > 1) {
    double var = 0;
    for (double x : xs) var += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(var / static_cast<double>(xs.size() - 1));
  }
  return s;
}

// Random token ids, as llama-bench uses (the speed does not depend on them).
std::vector<TokenId> random_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, n_vocab - 1);
  std::vector<TokenId> t(static_cast<size_t>(n));
  for (TokenId& id : t) id = dist(rng);
  return t;
}

// Seconds for one pp or tg test on a fresh context, after n_depth random tokens (not
// timed) as llama-bench's -d.
double run_test(Engine& engine, int n_depth, int n_prompt, int n_gen, uint32_t seed) {
  auto session = engine.new_session();
  const int n_vocab = engine.config().n_vocab;
  if (n_depth > 0) session->eval(random_tokens(n_depth, n_vocab, seed + 2));
  const Clock::time_point start = Clock::now();
  if (n_prompt > 0) session->eval(random_tokens(n_prompt, n_vocab, seed));
  const std::vector<TokenId> gen = random_tokens(n_gen, n_vocab, seed + 1);
  for (int i = 0; i < n_gen; ++i) session->eval(std::span<const TokenId>(&gen[i], 1));
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds for n_parallel sessions to decode n_gen tokens each in batched passes; each
// starts from one random token (after n_depth of its own, not timed) and samples
// greedily (the sampling is timed too, as in the server; an argmax is ~1/1000 of a pass).
double run_parallel_test(Engine& engine, DecodeBatch& batch, int n_depth, int n_parallel, int n_gen,
                         uint32_t seed) {
  const std::vector<TokenId> first = random_tokens(n_parallel, engine.config().n_vocab, seed);
  GenerateParams params;
  params.max_tokens = n_gen;
  params.sampler.temperature = 0;
  params.stop_on_eog = false;
  params.defer_prompt = true;
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  std::vector<Session*> rows;
  for (int i = 0; i < n_parallel; ++i) {
    sessions.push_back(engine.new_session());
    if (n_depth > 0) {
      sessions.back()->eval(random_tokens(n_depth, engine.config().n_vocab, seed + 2 + static_cast<uint32_t>(i)));
    }
    gens.push_back(sessions.back()->start({first[static_cast<size_t>(i)]}, params));
    rows.push_back(sessions.back().get());
  }
  std::string piece;
  const Clock::time_point start = Clock::now();
  for (int step = 0; step < n_gen; ++step) {
    batch.run(rows);
    for (auto& g : gens) (void)g->step(piece);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// GB/s of summing a buffer of `bytes` with n_threads threads (median of 5).
double read_bandwidth(size_t bytes, int n_threads) {
  const size_t n = bytes / sizeof(uint64_t);
  // Anonymous memory with transparent huge pages asked for, like the repacked weights
  // (MmapStore::copy_space): with 4 KiB pages the page walks alone hold two cores'
  // streaming reads to about two thirds of what the weights are read at.
  void* mem = ::mmap(nullptr, n * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("--mem-bandwidth: cannot allocate " + std::to_string(bytes) + " bytes");
  (void)::madvise(mem, n * sizeof(uint64_t), MADV_HUGEPAGE);
  const std::span<uint64_t> buf(static_cast<uint64_t*>(mem), n);
  for (size_t i = 0; i < n; ++i) buf[i] = i * 2654435761u;
  std::vector<double> rates;
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
  for (int rep = 0; rep < 5; ++rep) {
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < n_threads; ++t) {
      threads.emplace_back([&, t] {
        const size_t begin = n * t / n_threads, end = n * (t + 1) / n_threads;
        uint64_t a = 0, b = 0, c = 0, d = 0;  // independent chains: the loads overlap
        size_t i = begin;
        for (; i + 4 <= end; i += 4) {
          a += buf[i];
          b += buf[i + 1];
          c += buf[i + 2];
          d += buf[i + 3];
        }
        for (; i < end; ++i) a += buf[i];
        sums[t] = a + b + c + d;
      });
    }
    for (std::thread& th : threads) th.join();
    rates.push_back(static_cast<double>(n * sizeof(uint64_t)) / std::chrono::duration<double>(Clock::now() - start).count() / 1e9);
  }
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  if (total == 42) std::fputc(' ', stderr);  // keeps the sums alive
  ::munmap(mem, n * sizeof(uint64_t));
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int bench_command(const std::vector<std::string>& args) {
  std::string models_arg, prompts_arg = "128", gens_arg = "32", depths_arg = "0", threads_arg, parallel_arg = "1",
              output = "md", kv_type = "f16";
  int reps = 5;
  bool mem_bandwidth = false, dry_run = false;
  ArgParser p("runnel bench -m FILE[,FILE] [-p 128] [-n 32] [-d 0] [-t 1,2] [-np 1,4] [-r 5] [-o md|jsonl]",
              "Measures prompt processing (pp: one batch of -p random tokens) and generation (tg: -n\n"
              "single-token decodes) like llama-bench, on an empty context (or after -d random\n"
              "tokens, not timed), after a warm-up run; with -np P > 1, P sessions decoding\n"
              "together (aggregate tok/s).");
  p.string_option("-m, --model", &models_arg, "FILE[,FILE]", "GGUF models");
  p.string_option("-p, --n-prompt", &prompts_arg, "N[,N]", "prompt lengths (default 128; 0 = no pp test)");
  p.string_option("-n, --n-gen", &gens_arg, "N[,N]", "generated lengths (default 32; 0 = no tg test)");
  p.string_option("-d, --n-depth", &depths_arg, "N[,N]",
                  "tokens already in the context when a test starts (default 0)");
  p.string_option("-t, --threads", &threads_arg, "N[,N]",
                  "thread counts (default: physical cores; at most the logical CPUs)");
  p.string_option("-np, --parallel", &parallel_arg, "N[,N]",
                  "sessions decoded together in the tg tests (default 1), as serve --slots N");
  p.int_option("-r, --repetitions", &reps, "runs per test (default 5)");
  p.string_option("-o, --output", &output, "FORMAT", "md (a markdown table, default) or jsonl");
  p.string_option("--kv-type", &kv_type, "TYPE", "KV cache type (default f16)");
  p.flag("--mem-bandwidth", &mem_bandwidth, "measure the machine's read bandwidth (GB/s) instead");
  p.flag("--dry-run", &dry_run, "print each model's memory plan for these tests and exit");
  if (p.parse_or_print_help(args)) return 0;
  if (output != "md" && output != "jsonl") throw UsageError("-o: expected md or jsonl, got '" + output + "'");
  if (reps < 1) throw UsageError("-r: must be >= 1, got " + std::to_string(reps));
  std::vector<int> threads{0};  // 0: physical cores
  if (!threads_arg.empty()) {
    threads = int_list("-t", threads_arg);
    for (int t : threads) {
      if (t < 1) throw UsageError("-t: thread counts must be >= 1");
    }
  }
  select_kernels_from_env();
  for (int& t : threads) t = resolve_thread_count(t);  // the table shows the count used

  if (mem_bandwidth) {
    constexpr size_t kBytes = size_t{1} << 30;  // far beyond any cache
    for (int t : threads) {
      const double gbs = read_bandwidth(kBytes, t);
      if (output == "jsonl") {
        std::printf("%s\n", nlohmann::json{{"test", "read_bandwidth"}, {"n_threads", t}, {"gb_per_s", gbs}}.dump().c_str());
      } else {
        std::printf("read bandwidth, %d thread%s: %.1f GB/s\n", t, t == 1 ? "" : "s", gbs);
      }
    }
    return 0;
  }
  const std::vector<std::string> models = split_list(models_arg);
  if (models.empty()) throw UsageError("-m: at least one model file is required");
  const std::vector<int> prompts = int_list("-p", prompts_arg), gens = int_list("-n", gens_arg);
  const std::vector<int> parallel = int_list("-np", parallel_arg);
  const std::vector<int> depths = int_list("-d", depths_arg);
  int max_depth = 0;
  for (int d : depths) max_depth = std::max(max_depth, d);
  int max_parallel = 1;
  for (int np : parallel) {
    if (np < 1) throw UsageError("-np: session counts must be >= 1");
    max_parallel = std::max(max_parallel, np);
  }
  // Every file opens (headers parsed) before any output: a typo in the last of several
  // models fails at once, and an error is never preceded by the table's header.
  for (const std::string& model : models) (void)MmapStore::open(model);

  // The header comes with the first row, after the first model has loaded.
  bool header_printed = output != "md" || dry_run;
  for (const std::string& model : models) {
    for (int t : threads) {
      int max_prompt = 1;
      for (int n : prompts) max_prompt = std::max(max_prompt, n);
      int max_gen = 1;
      for (int n : gens) max_gen = std::max(max_gen, n);
      LoadRequest lr;
      lr.model = model;
      lr.n_threads = t;
      lr.kv_type = kv_type;
      lr.n_ctx = max_depth + std::max(max_prompt, max_gen) + 16;
      // one forward pass per prompt, as llama-bench's; the depth in batches of up to 512
      lr.n_batch = std::max(max_prompt, std::min(max_depth, 512));
      if (max_parallel > 1) {
        lr.n_sessions = max_parallel;
        lr.decode_batch = max_parallel;
      }
      lr.dry_run = dry_run;
      if (dry_run) {
        std::printf("%s, %d thread%s:\n", model.c_str(), t, t == 1 ? "" : "s");
        (void)load_model(lr);
        continue;
      }
      LoadedModel loaded = load_model(lr);
      Engine& engine = *loaded.engine;
      uint64_t n_params = 0;
      for (const GgufTensorInfo& ti : engine.store().model().tensors) {
        uint64_t e = 1;
        for (uint64_t d : ti.dims) e *= d;
        n_params += e;
      }
      const uint64_t size = loaded.plan.weights_bytes;
      struct Test {
        int n_depth, n_prompt, n_gen, n_parallel;
      };
      std::vector<Test> tests;
      for (int d : depths) {
        for (int n : prompts) {
          if (n > 0) tests.push_back({d, n, 0, 1});
        }
        for (int n : gens) {
          for (int np : parallel) {
            if (n > 0) tests.push_back({d, 0, n, np});
          }
        }
      }
      std::unique_ptr<DecodeBatch> batch;
      if (max_parallel > 1) batch = std::make_unique<DecodeBatch>(engine, max_parallel);
      for (const Test& test : tests) {
        const auto run = [&](uint32_t seed) {
          return test.n_parallel > 1
                     ? run_parallel_test(engine, *batch, test.n_depth, test.n_parallel, test.n_gen, seed)
                     : run_test(engine, test.n_depth, test.n_prompt, test.n_gen, seed);
        };
        (void)run(1);  // warm-up
        std::vector<double> seconds, rates;
        for (int r = 0; r < reps; ++r) {
          const double s = run(static_cast<uint32_t>(r + 2));
          seconds.push_back(s);
          rates.push_back((test.n_prompt + test.n_gen) * test.n_parallel / s);
        }
        const Stats st = stats_of(rates);
        std::string name = test.n_prompt > 0 ? "pp" + std::to_string(test.n_prompt)
                                             : "tg" + std::to_string(test.n_gen);
        if (test.n_parallel > 1) name += " x" + std::to_string(test.n_parallel);
        if (test.n_depth > 0) name += " @ d" + std::to_string(test.n_depth);  // llama-bench's label
        // The file name, not general.name: that is often a training-run label
        // ("Smollm2 135M 8k Lc100K Mix1 Ep2") and says nothing of the quantization.
        const std::string file = std::filesystem::path(model).stem().string();
        if (output == "jsonl") {
          std::vector<int64_t> ns;
          for (double s : seconds) ns.push_back(static_cast<int64_t>(s * 1e9));
          const Stats sns = stats_of(seconds);
          nlohmann::json j = {{"model_filename", model},
                              {"model_type", engine.config().arch_name},
                              {"model_size", size},
                              {"model_n_params", n_params},
                              {"backend", std::string("CPU (runnel ") + std::string(kernels().isa) + ")"},
                              {"n_threads", t},
                              {"n_prompt", test.n_prompt},
                              {"n_gen", test.n_gen},
                              {"n_depth", test.n_depth},
                              {"n_parallel", test.n_parallel},
                              {"type_k", kv_type},
                              {"avg_ns", static_cast<int64_t>(sns.mean * 1e9)},
                              {"stddev_ns", static_cast<int64_t>(sns.sd * 1e9)},
                              {"avg_ts", st.mean},
                              {"stddev_ts", st.sd},
                              {"samples_ns", ns},
                              {"samples_ts", rates}};
          std::printf("%s\n", j.dump().c_str());
        } else {
          if (!header_printed) {
            std::printf("| model | size | params | backend | threads | test | t/s |\n");
            std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
            header_printed = true;
          }
          std::printf("| %s | %.2f GiB | %.2f B | %s | %d | %s | %.2f ± %.2f |\n", file.c_str(),
                      static_cast<double>(size) / (1 << 30), static_cast<double>(n_params) / 1e9,
                      std::string(kernels().isa).c_str(), t, name.c_str(), st.mean, st.sd);
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace runnel::cli
