// Allowed-token masks and token-level matching (core/sampling/grammar_matcher.h): the
// mask must equal a brute-force accept_token of every token, and random walks through
// the masks must produce strings the grammar accepts.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "core/sampling/grammar_matcher.h"
#include "tests/core/sampling/grammar_test_util.h"

namespace runnel {
namespace {

using grammar_test::compile;
using grammar_test::make_vocab;
using grammar_test::matches;
using grammar_test::read_grammar;

constexpr int32_t kEos = 0, kImEnd = 1, kThink = 2, kThinkEnd = 3, kEmpty = 4;

// Ids 0..4: two EOG tokens, two control tokens, an empty text token; then every single
// byte (as byte-fallback tokens are); then multi-byte pieces that cross rule boundaries,
// split UTF-8 characters, or are prefixes of one another.
std::vector<std::string> small_vocab_texts() {
  std::vector<std::string> v = {"</s>", "<|im_end|>", "<think>", "</think>", ""};
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s :
       {"{\"", "\":", "\": ", "},", "}", "\"}", " \"", "\",", "\"a", "true", "false", "null", "nul",
        "12", "3.", ".5", "e+", "-0", "[1", "],", "]}", "}\n", "\n ", "  ", "ab", "abc", "x = ",
        " = ", "+ (", "caf\xC3\xA9", "\xC3\xA9", "\xA9\"", "\xE6\x97\xA5", "\xE6\x97",
        "\x97\xA5\xE6", "\xE3\x81\x93\xE3\x82\x93", "\\u00", "\\\"", "\\n", "e4 e5\n", "O-O",
        "- ", "1. ", "Nf3", "x", "ok", "o", "thinking", "</think>", "{}", "[]", "\"\"", "ab\"",
        "0,", "\n\t", "{\"a\": [1, 2]}"}) {
    v.push_back(s);
  }
  return v;
}

std::shared_ptr<const TokenTrie> small_vocab() {
  return make_vocab(small_vocab_texts(), {kEos, kImEnd}, {kThink, kThinkEnd});
}

TokenMask brute_force_mask(const GrammarMatcher& m, const TokenTrie& vocab) {
  TokenMask mask;
  mask.reset(vocab.n_vocab());
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    GrammarMatcher copy = m;
    if (copy.accept_token(id)) mask.set(id);
  }
  return mask;
}

std::vector<int32_t> ids_in(const TokenMask& mask) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < mask.size(); ++id) {
    if (mask.test(id)) ids.push_back(id);
  }
  return ids;
}

int32_t id_of(const TokenTrie& vocab, std::string_view text) {
  for (int32_t id = 5; id < vocab.n_vocab(); ++id) {
    if (vocab.bytes(id) == text) return id;
  }
  FAIL("no token " << text);
  return -1;
}

struct WalkResult {
  int n_finished = 0;
  int n_steps = 0;
};

// Random walks choosing allowed tokens (after a while, preferring ones that close
// things, and EOG when allowed); checks every mask against brute force and every
// finished text against the grammar (and `oracle`, if given).
WalkResult random_walks(const std::shared_ptr<const Grammar>& g,
                        const std::shared_ptr<const TokenTrie>& vocab, int n_walks, int max_steps,
                        bool (*oracle)(const std::string&) = nullptr,
                        GrammarCacheOptions options = {}) {
  const std::vector<std::string> closers = {"}", "]", "\"", ":", "0", "\n", "=", "x", ")",
                                            "ok",  "a", "e4 e5\n", "1. ", "- "};
  WalkResult result;
  std::mt19937 rng(1234);
  for (int walk = 0; walk < n_walks; ++walk) {
    GrammarMatcher m(g, vocab, options);
    std::string text;
    TokenMask mask;
    for (int step = 0; step < max_steps; ++step) {
      m.allowed_tokens(mask);
      const TokenMask expected = brute_force_mask(m, *vocab);
      REQUIRE(ids_in(mask) == ids_in(expected));
      ++result.n_steps;
      const std::vector<int32_t> allowed = ids_in(mask);
      REQUIRE_FALSE(allowed.empty());  // a live state always has a way forward
      int32_t pick = allowed[rng() % allowed.size()];
      if (step > max_steps / 3) {
        if (mask.test(kEos)) {
          pick = kEos;
        } else if (mask.test(kThinkEnd) && rng() % 2 == 0) {
          pick = kThinkEnd;
        } else if (rng() % 10 < 9) {
          for (const std::string& c : closers) {
            const int32_t id = id_of(*vocab, c);
            if (mask.test(id)) {
              pick = id;
              break;
            }
          }
        }
      }
      REQUIRE(m.accept_token(pick));
      if (vocab->kind(pick) == GrammarTokenKind::kEog) break;
      if (vocab->kind(pick) == GrammarTokenKind::kText) text += vocab->bytes(pick);
    }
    if (m.is_finished()) {
      ++result.n_finished;
      INFO(text);
      if (!g->has_token_refs()) CHECK(matches(g, text));
      if (oracle != nullptr) CHECK(oracle(text));
    }
  }
  return result;
}

bool json_oracle(const std::string& text) {
  // nlohmann refuses \u escapes of lone surrogates, which json.gbnf allows.
  if (text.find("\\u") != std::string::npos) return true;
  return nlohmann::json::accept(text);
}

TEST_CASE("the token trie lays out every text token once, in preorder", "[grammar]") {
  const auto vocab = small_vocab();
  std::vector<int> seen(static_cast<size_t>(vocab->n_vocab()), 0);
  std::vector<std::string> path = {""};
  for (size_t i = 0; i < vocab->n_nodes(); ++i) {
    const uint32_t d = vocab->node_depth(i);
    if (i > 0) {
      REQUIRE(d >= 1);
      REQUIRE(d <= path.size());
      path.resize(d);
      path.push_back(path.back() + static_cast<char>(vocab->node_byte(i)));
      // Everything in the subtree extends this node's bytes.
      for (uint32_t j = static_cast<uint32_t>(i) + 1; j < vocab->subtree_end(i); ++j) {
        REQUIRE(vocab->node_depth(j) > d);
      }
    }
    for (const int32_t* t = vocab->node_tokens_begin(i); t != vocab->node_tokens_end(i); ++t) {
      CHECK(vocab->bytes(*t) == path.back());
      ++seen[static_cast<size_t>(*t)];
    }
  }
  for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
    INFO(id);
    CHECK(seen[static_cast<size_t>(id)] == (vocab->is_matchable_text(id) ? 1 : 0));
  }
  CHECK(vocab->find_exact("</think>") == kThinkEnd);  // the control token before the text one
  CHECK(vocab->find_exact("ok") == id_of(*vocab, "ok"));
  CHECK(vocab->find_exact("nothing like it") == -1);
  CHECK(vocab->eog_tokens() == std::vector<int32_t>{kEos, kImEnd});
}

TEST_CASE("masks: tokens across rule boundaries, EOG only where the grammar may end",
          "[grammar]") {
  const auto vocab = small_vocab();
  const auto g = compile(read_grammar("json.gbnf"));
  GrammarMatcher m(g, vocab);
  TokenMask mask;
  m.allowed_tokens(mask);
  CHECK(mask.test(id_of(*vocab, "{\"")));
  CHECK(mask.test(id_of(*vocab, "{}")));
  CHECK(mask.test(id_of(*vocab, "{\"a\": [1, 2]}")));
  CHECK_FALSE(mask.test(id_of(*vocab, "[]")));
  CHECK_FALSE(mask.test(kEos));
  CHECK_FALSE(mask.test(kThink));
  CHECK_FALSE(mask.test(kEmpty));

  REQUIRE(m.accept_token(id_of(*vocab, "{\"")));
  REQUIRE(m.accept_token(id_of(*vocab, "ab")));
  m.allowed_tokens(mask);
  CHECK(mask.test(id_of(*vocab, "\": ")));  // ends the key, crosses into ws and ':'
  CHECK(mask.test(id_of(*vocab, "ab\"")));
  CHECK_FALSE(mask.test(id_of(*vocab, "\"}")));
  CHECK(mask.test(id_of(*vocab, "\xE6\x97")));      // the start of a character
  CHECK_FALSE(mask.test(id_of(*vocab, "\x97\xA5\xE6")));  // the middle of one
  CHECK(mask.test(id_of(*vocab, "\xC3")));   // lead bytes of 2..4-byte characters
  CHECK(mask.test(id_of(*vocab, "\xF4")));
  CHECK_FALSE(mask.test(id_of(*vocab, "\x80")));  // a continuation byte cannot start one
  CHECK_FALSE(mask.test(id_of(*vocab, "\xF5")));  // nor can a byte UTF-8 never uses
  CHECK_FALSE(mask.test(id_of(*vocab, "\x1F")));  // control characters are excluded

  REQUIRE(m.accept_token(id_of(*vocab, "\xE6\x97")));
  m.allowed_tokens(mask);
  CHECK(ids_in(mask) == ids_in(brute_force_mask(m, *vocab)));
  CHECK(mask.test(id_of(*vocab, "\xA5")));
  CHECK_FALSE(mask.test(id_of(*vocab, "a")));

  for (const char* piece : {"\xA5", "\":", "1", "}"}) REQUIRE(m.accept_token(id_of(*vocab, piece)));
  CHECK(m.is_accepting());
  m.allowed_tokens(mask);
  CHECK(mask.test(kEos));
  CHECK(mask.test(kImEnd));
  CHECK(mask.test(id_of(*vocab, "\n")));  // json.gbnf's trailing ws
  CHECK(m.accept_token(kImEnd));
  CHECK(m.is_finished());
  m.allowed_tokens(mask);
  CHECK(mask.count() == 0);
  CHECK_FALSE(m.accept_token(id_of(*vocab, " ")));

  GrammarMatcher fresh(g, vocab);
  CHECK_FALSE(fresh.accept_token(kEos));
  CHECK_FALSE(fresh.accept_token(kEmpty));
  CHECK_FALSE(fresh.accept_token(kThink));
  CHECK_THROWS_AS(fresh.accept_token(vocab->n_vocab()), std::out_of_range);
  CHECK_THROWS_AS(fresh.accept_token(-1), std::out_of_range);
}

TEST_CASE("masks equal brute force along random walks; finished texts match", "[grammar]") {
  const auto vocab = small_vocab();
  struct Case {
    const char* name;
    std::string text;
    bool (*oracle)(const std::string&);
  };
  const Case cases[] = {
      {"json", read_grammar("json.gbnf"), json_oracle},
      {"json_arr", read_grammar("json_arr.gbnf"), nullptr},
      {"arithmetic", read_grammar("arithmetic.gbnf"), nullptr},
      {"chess", read_grammar("chess.gbnf"), nullptr},
      {"list", read_grammar("list.gbnf"), nullptr},
      {"japanese", read_grammar("japanese.gbnf"), nullptr},
      {"bounds", "root ::= (\"ab\" | [0-9]{2,3} | [^a-z0-9\\n]) {1,4} \"\\n\"", nullptr},
      {"any", "root ::= .{0,6} \"ok\"", nullptr},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto g = compile(c.text);
    const WalkResult r = random_walks(g, vocab, 12, 60, c.oracle);
    CHECK(r.n_finished >= 1);
  }
}

TEST_CASE("token references: <[id]>, <text> and !<...>", "[grammar]") {
  const auto vocab = small_vocab();
  const char* by_text = "root ::= <think> thinking </think> \"ok\"\nthinking ::= !</think>*";
  const char* by_id = "root ::= <[2]> thinking <[3]> \"ok\"\nthinking ::= !<[3]>*";
  for (const char* text : {by_text, by_id}) {
    INFO(text);
    const auto g = compile(text, vocab.get());
    CHECK(g->has_token_refs());
    GrammarMatcher m(g, vocab);
    TokenMask mask;
    m.allowed_tokens(mask);
    CHECK(ids_in(mask) == std::vector<int32_t>{kThink});
    CHECK_FALSE(m.accept_token(id_of(*vocab, "<")));  // the text "<think>" is not the token
    REQUIRE(m.accept_token(kThink));
    m.allowed_tokens(mask);
    // Any token but EOG and empty ones: </think> ends the thinking, others go on.
    CHECK(mask.count() == vocab->n_vocab() - 3);
    CHECK(mask.test(kThinkEnd));
    CHECK(mask.test(kThink));
    CHECK(mask.test(id_of(*vocab, "</think>")));  // the text, not the control token
    CHECK(ids_in(mask) == ids_in(brute_force_mask(m, *vocab)));
    REQUIRE(m.accept_token(id_of(*vocab, "thinking")));
    REQUIRE(m.accept_token(id_of(*vocab, "</think>")));
    REQUIRE(m.accept_token(kThinkEnd));
    m.allowed_tokens(mask);
    // "o" is two tokens (a byte token and a piece), "ok" one.
    CHECK(ids_in(mask) == std::vector<int32_t>{id_of(*vocab, "o"), id_of(*vocab, "ok"),
                                               id_of(*vocab, "ok") + 1});
    CHECK(vocab->bytes(id_of(*vocab, "ok") + 1) == "o");
    REQUIRE(m.accept_token(id_of(*vocab, "ok")));
    CHECK(m.is_accepting());
    CHECK(m.accept_token(kEos));
  }
  const auto g = compile(by_text, vocab.get());
  CHECK(random_walks(g, vocab, 6, 40).n_finished >= 1);

  // A control token is never matched by characters, even by "any character".
  GrammarMatcher any(compile("root ::= .*"), vocab);
  TokenMask mask;
  any.allowed_tokens(mask);
  CHECK_FALSE(mask.test(kThink));
  CHECK_FALSE(mask.test(kEmpty));
  CHECK(mask.test(kEos));
  CHECK_FALSE(mask.test(id_of(*vocab, "\x97\xA5\xE6")));  // not UTF-8 from its start
  CHECK(ids_in(mask) == ids_in(brute_force_mask(any, *vocab)));

  // An EOG token named by id is matched as a token.
  GrammarMatcher eos_ref(compile("root ::= \"x\" <[0]> \"y\"", vocab.get()), vocab);
  REQUIRE(eos_ref.accept_token(id_of(*vocab, "x")));
  REQUIRE(eos_ref.accept_token(kEos));
  CHECK_FALSE(eos_ref.is_finished());
  CHECK(eos_ref.accept_token(id_of(*vocab, "y")));

  CHECK_THROWS_WITH(Grammar::parse("root ::= <nope>", vocab.get()),
                    Catch::Contains("expected a single token whose text is <nope>"));
  CHECK_THROWS_WITH(Grammar::parse("root ::= <[999]>", vocab.get()),
                    Catch::Contains("expected a token id below the vocabulary size"));
  CHECK_THROWS_AS(GrammarMatcher(compile("root ::= <[1]>")), std::invalid_argument);
}

TEST_CASE("rollback, reset and copies", "[grammar]") {
  const auto vocab = small_vocab();
  const auto g = compile(read_grammar("json.gbnf"));
  GrammarMatcher m(g, vocab);
  TokenMask start, mid, mask;
  m.allowed_tokens(start);
  REQUIRE(m.accept_token(id_of(*vocab, "{\"")));
  m.allowed_tokens(mid);
  const GrammarMatcher saved = m;
  REQUIRE(m.accept_token(id_of(*vocab, "a")));
  REQUIRE(m.accept_token(id_of(*vocab, "\": ")));
  CHECK(m.n_steps() == 3);
  m.rollback(2);
  CHECK(m.n_steps() == 1);
  m.allowed_tokens(mask);
  CHECK(mask == mid);
  CHECK_THROWS_AS(m.rollback(2), std::out_of_range);
  m.reset();
  m.allowed_tokens(mask);
  CHECK(mask == start);
  GrammarMatcher copy = saved;
  copy.allowed_tokens(mask);
  CHECK(mask == mid);
  // A finished matcher rolls back to before the EOG token.
  GrammarMatcher done(compile("root ::= \"x\""), vocab);
  REQUIRE(done.accept_token(id_of(*vocab, "x")));
  REQUIRE(done.accept_token(kEos));
  done.rollback(1);
  CHECK_FALSE(done.is_finished());
  CHECK(done.is_accepting());
}

TEST_CASE("masks do not depend on the caches", "[grammar]") {
  const auto vocab = small_vocab();
  const auto g = compile(read_grammar("json.gbnf"));
  GrammarCacheOptions no_cache;
  no_cache.max_cached_masks = 0;
  no_cache.max_transition_tables = 1;  // tables dropped at almost every step
  CHECK(random_walks(g, vocab, 4, 60, json_oracle, no_cache).n_finished >= 1);
  GrammarCacheOptions small_cache;
  small_cache.max_cached_masks = 2;
  small_cache.max_transition_tables = 8;
  CHECK(random_walks(g, vocab, 4, 60, json_oracle, small_cache).n_finished >= 1);

  GrammarMatcher m(g, vocab);
  TokenMask a, b;
  m.allowed_tokens(a);
  m.allowed_tokens(b);
  CHECK(a == b);
  CHECK(m.cache_stats().mask_hits == 1);
  CHECK(m.cache_stats().mask_misses == 1);
}

}  // namespace
}  // namespace runnel
