// Lowers a ParsedGrammar to byte-level elements and refuses left recursion.
#include "core/sampling/grammar.h"

#include <map>

#include "core/sampling/grammar_syntax.h"

namespace runnel {

GrammarError::GrammarError(int line, int column, const std::string& message)
    : std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(column) +
                         ": " + message),
      line_(line),
      column_(column) {}

class GrammarCompiler {
 public:
  GrammarCompiler(std::string_view text, ParsedGrammar parsed)
      : text_(text), parsed_(std::move(parsed)) {}

  Grammar compile() {
    const size_t n_user = parsed_.rules.size();
    g_.rules_.resize(n_user);
    offsets_.resize(n_user);
    for (size_t r = 0; r < n_user; ++r) {
      g_.rules_[r].name = parsed_.rules[r].name;
      offsets_[r] = parsed_.rules[r].offset;
      for (const GrammarSequence& seq : parsed_.rules[r].alternatives) {
        std::vector<GrammarElement> alt;
        for (const GrammarSymbol& sym : seq) lower_symbol(sym, r, alt);
        add_alternative(r, alt);
      }
    }
    g_.root_ = parsed_.root;
    refuse_left_recursion();
    return std::move(g_);
  }

 private:
  std::string_view text_;
  ParsedGrammar parsed_;
  Grammar g_;
  std::vector<size_t> offsets_;  // per lowered rule: the user rule's definition
  std::map<ByteSet, uint32_t> byte_set_ids_;
  std::map<std::vector<CodepointRange>, uint32_t> class_rules_;

  void add_alternative(size_t rule, const std::vector<GrammarElement>& alt) {
    g_.rules_[rule].alternatives.push_back(static_cast<uint32_t>(g_.elements_.size()));
    g_.elements_.insert(g_.elements_.end(), alt.begin(), alt.end());
    g_.elements_.push_back({GrammarOp::kEnd, 0});
  }

  uint32_t byte_set_id(const ByteSet& set) {
    auto [it, inserted] = byte_set_ids_.emplace(set, static_cast<uint32_t>(g_.byte_sets_.size()));
    if (inserted) g_.byte_sets_.push_back(set);
    return it->second;
  }

  void lower_symbol(const GrammarSymbol& sym, size_t rule, std::vector<GrammarElement>& out) {
    switch (sym.kind) {
      case GrammarSymbol::Kind::kRule:
        out.push_back({GrammarOp::kRuleRef, sym.value});
        return;
      case GrammarSymbol::Kind::kToken:
      case GrammarSymbol::Kind::kTokenNot:
        g_.has_token_refs_ = true;
        out.push_back({sym.kind == GrammarSymbol::Kind::kToken ? GrammarOp::kToken
                                                               : GrammarOp::kTokenNot,
                       sym.value});
        return;
      case GrammarSymbol::Kind::kChars:
        break;
    }
    const std::vector<std::vector<ByteSet>> seqs = utf8_sequences(sym.chars);
    if (seqs.size() == 1) {  // one byte sequence (a literal character, an ASCII class): inline
      for (const ByteSet& set : seqs[0]) out.push_back({GrammarOp::kBytes, byte_set_id(set)});
      return;
    }
    auto it = class_rules_.find(sym.chars);
    if (it == class_rules_.end()) {
      const auto id = static_cast<uint32_t>(g_.rules_.size());
      g_.rules_.push_back({g_.rules_[rule].name + "-class" + std::to_string(id), {}});
      offsets_.push_back(offsets_[rule]);
      for (const std::vector<ByteSet>& seq : seqs) {
        std::vector<GrammarElement> alt;
        for (const ByteSet& set : seq) alt.push_back({GrammarOp::kBytes, byte_set_id(set)});
        add_alternative(id, alt);
      }
      it = class_rules_.emplace(sym.chars, id).first;
    }
    out.push_back({GrammarOp::kRuleRef, it->second});
  }

  // A rule that can begin with itself (possibly through rules that match the empty
  // string) would make the matcher's stacks grow forever; llama.cpp refuses it too.
  void refuse_left_recursion() const {
    const size_t n = g_.rules_.size();
    const auto& el = g_.elements_;
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (uint32_t pos : g_.rules_[r].alternatives) {
          while (el[pos].op == GrammarOp::kRuleRef && nullable[el[pos].value]) ++pos;
          if (el[pos].op == GrammarOp::kEnd) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    std::vector<std::vector<uint32_t>> first_refs(n);  // rules r can begin with
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t pos : g_.rules_[r].alternatives) {
        for (; el[pos].op == GrammarOp::kRuleRef; ++pos) {
          first_refs[r].push_back(el[pos].value);
          if (!nullable[el[pos].value]) break;
        }
      }
    }
    // Depth-first search for a cycle; state 1 = on the current path, 2 = done.
    std::vector<uint8_t> state(n, 0);
    std::vector<uint32_t> path;
    for (uint32_t r = 0; r < n; ++r) {
      if (state[r] == 0) find_cycle(r, first_refs, state, path);
    }
  }

  void find_cycle(uint32_t r, const std::vector<std::vector<uint32_t>>& first_refs,
                  std::vector<uint8_t>& state, std::vector<uint32_t>& path) const {
    state[r] = 1;
    path.push_back(r);
    for (uint32_t next : first_refs[r]) {
      if (state[next] == 1) {
        size_t k = path.size() - 1;
        while (path[k] != next) --k;
        std::string chain;
        for (size_t i = k; i < path.size(); ++i) chain += g_.rules_[path[i]].name + " -> ";
        chain += g_.rules_[next].name;
        throw grammar_error_at(text_, offsets_[next],
                               "left recursion (" + chain +
                                   "): expected the recursive rule to match something first");
      }
      if (state[next] == 0) find_cycle(next, first_refs, state, path);
    }
    path.pop_back();
    state[r] = 2;
  }
};

Grammar Grammar::parse(std::string_view text, const TokenTrie* vocab,
                       std::string_view root_rule) {
  return GrammarCompiler(text, parse_gbnf(text, vocab, root_rule)).compile();
}

}  // namespace runnel
