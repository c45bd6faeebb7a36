// String content for the JSON Schema converter: regex patterns (ECMAScript syntax, the
// subset llama.cpp's converter supports plus class escapes and unanchored sides) and
// formats. A regex describes the decoded string, the grammar its JSON encoding: every
// regex character set becomes the JSON spellings of its characters (plain characters
// as themselves, quote / backslash / control characters as their escapes).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sampling/json_schema_internal.h"

namespace runnel::json_schema_detail {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 2000;  // the GBNF engine's largest repetition bound

CodeRanges normalize(CodeRanges r) {
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (const auto& [a, b] : r) {
    if (!out.empty() && a <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.emplace_back(a, b);
    }
  }
  return out;
}

CodeRanges intersect(const CodeRanges& x, const CodeRanges& y) {
  CodeRanges out;
  for (const auto& [a, b] : x) {
    for (const auto& [c, d] : y) {
      if (std::max(a, c) <= std::min(b, d)) out.emplace_back(std::max(a, c), std::min(b, d));
    }
  }
  return normalize(out);
}

// All code points but `r` (surrogates are not characters).
CodeRanges complement(const CodeRanges& r) {
  CodeRanges out;
  uint32_t next = 0;
  for (const auto& [a, b] : normalize(r)) {
    if (a > next) out.emplace_back(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return intersect(out, {{0, 0xD7FF}, {0xE000, kMaxCodePoint}});
}

std::string hex(uint32_t v, int n_digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", n_digits, static_cast<unsigned>(v));
  return buf;
}

std::string class_char(uint32_t cp) {
  if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
    return std::string(1, static_cast<char>(cp));
  }
  if (cp < 0x100) return std::string("\\x") + hex(cp, 2);
  if (cp < 0x10000) return std::string("\\u") + hex(cp, 4);
  return std::string("\\U") + hex(cp, 8);
}

std::string json_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return std::string("\\u00") + hex(cp, 2);
  }
}

// The JSON spellings of the characters in `set`: one GBNF expression.
std::string json_chars_gbnf(const CodeRanges& set) {
  static const CodeRanges kPlain = {
      {0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0xD7FF}, {0xE000, kMaxCodePoint}};
  std::vector<std::string> alts;
  const CodeRanges plain = intersect(set, kPlain);
  if (!plain.empty()) alts.push_back(gbnf_class(plain));
  for (const auto& [a, b] : set) {
    for (uint32_t cp = a; cp <= std::min<uint32_t>(b, 0x7F); ++cp) {
      if (cp < 0x20 || cp == '"' || cp == '\\' || cp == 0x7F) {
        alts.push_back(gbnf_literal(json_escape(cp)));
      }
    }
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : "") + alts[i];
  return out + ")";
}

const CodeRanges kDigit = {{'0', '9'}};
const CodeRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodeRanges kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},
                           {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                           {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                           {0xFEFF, 0xFEFF}};

class PatternParser {
 public:
  PatternParser(std::string_view pattern, const std::string& json_char)
      : p_(pattern), json_char_(json_char) {}

  // Top level: each alternative may be anchored by a leading ^ and a trailing $.
  std::string parse() {
    std::vector<std::string> branches;
    do {
      const bool anchored_start = consume('^');
      std::string seq = sequence(true);
      const bool anchored_end = consume('$');
      if (!anchored_start) seq = json_char_ + "* " + seq;
      if (!anchored_end) seq += std::string(" ") + json_char_ + "*";
      branches.push_back(seq);
    } while (consume('|'));
    if (i_ < p_.size()) fail("unbalanced ')'");
    return join_alternatives(branches);
  }

 private:
  struct ClassAtom {
    CodeRanges set;
    bool single;  // one character (may bound a range)
  };

  std::string_view p_;
  const std::string& json_char_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(what + " (at offset " + std::to_string(i_) + ")");
  }
  bool at_end() const { return i_ >= p_.size(); }
  bool consume(char c) {
    if (!at_end() && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  static std::string join_alternatives(const std::vector<std::string>& alts) {
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : "") + alts[i];
    return out + ")";
  }

  std::string alternation() {
    std::vector<std::string> branches = {sequence(false)};
    while (consume('|')) branches.push_back(sequence(false));
    return join_alternatives(branches);
  }

  std::string sequence(bool top) {
    std::string out;
    while (!at_end() && p_[i_] != '|' && p_[i_] != ')') {
      if (top && p_[i_] == '$' && (i_ + 1 == p_.size() || p_[i_ + 1] == '|')) break;
      if (!out.empty()) out += " ";
      out += quantified();
    }
    return out;
  }

  int read_count() {
    if (at_end() || p_[i_] < '0' || p_[i_] > '9') fail("'{' that is not a quantifier");
    long n = 0;
    while (!at_end() && p_[i_] >= '0' && p_[i_] <= '9') {
      n = n * 10 + (p_[i_++] - '0');
      if (n > kMaxRepeat) fail(std::string("a repetition count above ") + std::to_string(kMaxRepeat));
    }
    return static_cast<int>(n);
  }

  std::string quantified() {
    const std::string item = std::string("(") + atom() + ")";
    if (at_end()) return item;
    std::string out;
    const char c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      out = item + c;
    } else if (c == '{') {
      ++i_;
      const int min = read_count();
      std::string bounds = std::to_string(min);
      if (consume(',')) {
        bounds += ",";
        if (!at_end() && p_[i_] != '}') {
          const int max = read_count();
          if (max < min) fail(std::string("a repetition {") + std::to_string(min) + "," + std::to_string(max) + "}");
          bounds += std::to_string(max);
        }
      }
      if (!consume('}')) fail("'{' that is not a quantifier");
      out = item + "{" + bounds + "}";
    } else {
      return item;
    }
    consume('?');  // lazy: the same strings match
    if (!at_end() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || p_[i_] == '{')) {
      fail("a quantifier after a quantifier");
    }
    return out;
  }

  std::string atom() {
    const char c = p_[i_];
    CodeRanges set;
    if (c == '(') {
      ++i_;
      if (consume('?')) {
        if (!consume(':')) fail(std::string("the group '(?") + std::string(p_.substr(i_, 1)) + "' (lookaround or named group)");
      }
      std::string inner = alternation();
      if (!consume(')')) fail("unbalanced '('");
      return inner;
    } else if (c == '[') {
      ++i_;
      set = char_class();
    } else if (c == '.') {
      ++i_;
      set = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});
    } else if (c == '\\') {
      ++i_;
      set = escape(false).set;
    } else if (c == '^' || c == '$') {
      fail(std::string("the anchor '") + c + "' inside the pattern");
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      fail(std::string("'") + c + "' with nothing to repeat");
    } else {
      const uint32_t cp = next_code_point();
      set = {{cp, cp}};
    }
    if (set.empty()) fail("a character class that matches nothing");
    return json_chars_gbnf(set);
  }

  uint32_t next_code_point() {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(p_[k]); };
    const uint8_t b0 = byte(i_);
    const int n = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
    if (i_ + n > p_.size()) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int k = 1; k < n; ++k) cp = cp << 6 | (byte(i_ + k) & 0x3F);
    i_ += n;
    return cp;
  }

  uint32_t hex_escape(int n_digits) {
    if (i_ + n_digits > p_.size()) fail("a short hex escape");
    uint32_t v = 0;
    for (int k = 0; k < n_digits; ++k) {
      const char h = p_[i_++];
      const int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) fail("a short hex escape");
      v = v << 4 | static_cast<uint32_t>(d);
    }
    if (v >= 0xD800 && v <= 0xDFFF) fail("a surrogate escape");
    return v;
  }

  // After a backslash.
  ClassAtom escape(bool in_class) {
    if (at_end()) fail("a trailing backslash");
    const char e = p_[i_++];
    const auto one = [](uint32_t cp) { return ClassAtom{{{cp, cp}}, true}; };
    switch (e) {
      case 'd': return {kDigit, false};
      case 'D': return {complement(kDigit), false};
      case 'w': return {kWord, false};
      case 'W': return {complement(kWord), false};
      case 's': return {kSpace, false};
      case 'S': return {complement(kSpace), false};
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 't': return one('\t');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'x': return one(hex_escape(2));
      case 'b':
        if (in_class) return one('\b');
        fail("the word boundary '\\b'");
      case '0':
        if (!at_end() && p_[i_] >= '0' && p_[i_] <= '9') fail(std::string("the octal escape '\\0") + std::string(1, p_[i_]) + "'");
        return one(0);
      case 'u':
        if (!at_end() && p_[i_] == '{') fail("the escape '\\u{'");
        return one(hex_escape(4));
      default: break;
    }
    const auto u = static_cast<unsigned char>(e);
    if (u >= 0x80) {
      --i_;
      return one(next_code_point());
    }
    if (u > 0x20 && u < 0x7F && !std::isalnum(u) && e != '_') return one(u);
    if (e >= '1' && e <= '9') fail(std::string("the backreference '\\") + e + "'");
    fail(std::string("the escape '\\") + e + "'");
  }

  ClassAtom class_atom() {
    if (consume('\\')) return escape(true);
    const uint32_t cp = next_code_point();
    return {{{cp, cp}}, true};
  }

  // After '['.
  CodeRanges char_class() {
    const bool negate = consume('^');
    CodeRanges set;
    while (true) {
      if (at_end()) fail("an unterminated character class");
      if (consume(']')) break;
      const ClassAtom lo = class_atom();
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        const ClassAtom hi = class_atom();
        if (!lo.single || !hi.single) fail("a range bounded by a class escape");
        if (lo.set[0].first > hi.set[0].first) fail("a reversed range");
        set.emplace_back(lo.set[0].first, hi.set[0].first);
      } else {
        set.insert(set.end(), lo.set.begin(), lo.set.end());
      }
    }
    set = normalize(set);
    return negate ? complement(set) : intersect(set, complement({}));
  }
};

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += std::string("\\x") + hex(u, 2);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string gbnf_class(const CodeRanges& ranges, bool negate) {
  std::string out = negate ? "[^" : "[";
  for (const auto& [a, b] : ranges) {
    out += class_char(a);
    if (b == a) continue;
    if (b > a + 1) out += '-';
    out += class_char(b);
  }
  return out + "]";
}

std::string pattern_gbnf(std::string_view pattern, const std::string& json_char) {
  return PatternParser(pattern, json_char).parse();
}

std::string format_gbnf(std::string_view format) {
  // Dates check the days of each month, 29 February only in leap years.
  static const std::string kDivisibleBy4 = "(\"0\" [048] | [2468] [048] | [13579] [26])";
  static const std::string kDay28 = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
  static const std::string kDate =
      "([0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (" + kDay28 +
      " | \"29\" | \"3\" [01]) | (\"0\" [469] | \"11\") \"-\" (" + kDay28 +
      " | \"29\" | \"30\") | \"02-\" " + kDay28 + ") | ([0-9]{2} (\"0\" [48] | [2468] [048] | " +
      "[13579] [26]) | " + kDivisibleBy4 + " \"00\") \"-02-29\")";
  static const std::string kHour = "([01] [0-9] | \"2\" [0-3])";
  static const std::string kTime = kHour + " \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [+\\-] " +
                                   kHour + " \":\" [0-5] [0-9])";
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return kDate + " \"T\" " + kTime;
  if (format == "uuid") {
    return "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
           "[0-9a-fA-F]{12}";
  }
  return "";
}

}  // namespace runnel::json_schema_detail
