// Mask cost on real vocabularies: a benchmark that prints figures, not a timed test.
// Run: unit_tests "[.grammar-bench]"   (needs the models/ GGUFs; skips without them)
#include <catch2/catch.hpp>
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "core/sampling/grammar_matcher.h"
#include "tests/core/sampling/grammar_test_util.h"
#include "tests/core/tokenizer/tokenizer_test_util.h"

namespace runnel {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// This thread's CPU time: on a shared, busy machine wall-clock figures mostly measure
// the other processes.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::shared_ptr<const TokenTrie> trie_of(const Tokenizer& tok) {
  std::vector<std::string> bytes(static_cast<size_t>(tok.n_vocab()));
  std::vector<GrammarTokenKind> kinds(bytes.size(), GrammarTokenKind::kText);
  for (TokenId id = 0; id < tok.n_vocab(); ++id) {
    const TokenAttr a = tok.attr(id);
    bytes[static_cast<size_t>(id)] = tok.token_to_piece(id, false);
    if (tok.is_eog(id)) {
      kinds[static_cast<size_t>(id)] = GrammarTokenKind::kEog;
    } else if (a == TokenAttr::Control || a == TokenAttr::Unknown || a == TokenAttr::Unused) {
      kinds[static_cast<size_t>(id)] = GrammarTokenKind::kControl;
    }
  }
  return std::make_shared<const TokenTrie>(std::move(bytes), std::move(kinds));
}

// A nested JSON document (depth 5) with strings, numbers, literals and non-ASCII text.
std::string nested_document() {
  std::string doc = "{\"name\": \"runnel benchmark\", \"version\": 3, \"items\": [";
  for (int i = 0; i < 6; ++i) {
    if (i > 0) doc += ", ";
    doc += "{\"id\": " + std::to_string(1000 + i * 37) +
           ", \"title\": \"Item number " + std::to_string(i) +
           " with a longer description, caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\", \"tags\": "
           "[\"alpha\", \"beta\", \"gamma\"], \"meta\": {\"score\": " +
           std::to_string(i) + ".75, \"ok\": " + (i % 2 ? "true" : "false") +
           ", \"child\": {\"depth\": [1, 2, {\"leaf\": null}]}}}";
  }
  doc += "]}";
  return doc;
}

struct Figures {
  double mean_ms = 0, median_ms = 0, p95_ms = 0, max_ms = 0;
};

// Replays the document's tokens: mask before each, then accept.
Figures replay(GrammarMatcher& m, const std::vector<TokenId>& ids, TokenMask& mask) {
  std::vector<double> ms;
  for (TokenId id : ids) {
    const double t0 = thread_cpu_ms();
    m.allowed_tokens(mask);
    ms.push_back(thread_cpu_ms() - t0);
    REQUIRE(mask.test(id));
    REQUIRE(m.accept_token(id));
  }
  Figures f;
  for (double x : ms) f.mean_ms += x / static_cast<double>(ms.size());
  std::sort(ms.begin(), ms.end());
  f.median_ms = ms[ms.size() / 2];
  f.p95_ms = ms[ms.size() * 95 / 100];
  f.max_ms = ms.back();
  return f;
}

void print(const char* what, const Figures& f) {
  std::printf("    %-34s mean %7.4f  median %7.4f  p95 %7.4f  max %7.3f  ms/token\n", what,
              f.mean_ms, f.median_ms, f.p95_ms, f.max_ms);
}

void bench_vocab(const char* label, const std::string& path) {
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " is not on this machine");
    return;
  }
  const auto tok = tokenizer_test::load_tokenizer(path);
  auto t0 = Clock::now();
  const auto vocab = trie_of(*tok);
  const double trie_ms = ms_since(t0);
  const auto grammar = grammar_test::compile(grammar_test::read_grammar("json.gbnf"));
  const std::vector<TokenId> ids = tok->encode(nested_document(), false, false);

  std::printf("%s: %d tokens, %zu trie nodes (built in %.1f ms); document of %zu tokens\n", label,
              vocab->n_vocab(), vocab->n_nodes(), trie_ms, ids.size());
  TokenMask mask;
  {
    GrammarMatcher m(grammar, vocab);
    print("cache on, first document:", replay(m, ids, mask));
    const GrammarCacheStats s = m.cache_stats();
    m.reset();
    print("cache on, same document again:", replay(m, ids, mask));
    std::printf("    (%zu states, %zu masks computed for %zu tokens)\n", s.n_states, s.mask_misses,
                ids.size());
  }
  {
    GrammarCacheOptions off;
    off.max_cached_masks = 0;
    GrammarMatcher m(grammar, vocab, off);
    print("no mask cache, first document:", replay(m, ids, mask));
    m.reset();
    print("no mask cache, warm transitions:", replay(m, ids, mask));
  }
}

TEST_CASE("grammar mask cost on real vocabularies (json.gbnf, nested document)",
          "[.grammar-bench]") {
  bench_vocab("SmolLM2-135M", RUNNEL_TEST_DATA "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf");
  bench_vocab("gemma-3-270m", RUNNEL_TEST_DATA "/../../models/gemma-3-270m-q4_k_m.gguf");
}

}  // namespace
}  // namespace runnel
