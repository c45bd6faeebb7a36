// Integer and number ranges as digit rules: [lo, hi] is split by digit count, and each
// same-length range by its first differing digit (as llama.cpp's build_min_max_int).
#include <algorithm>
#include <string>
#include <vector>

#include "core/sampling/json_schema_internal.h"

namespace runnel::json_schema_detail {
namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? sep : "") + parts[i];
  return out;
}

std::string digit_class(char from, char to) {
  return from == to ? std::string("[") + from + "]" : std::string("[") + from + "-" + to + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : std::string("[0-9]{") + std::to_string(n) + "}";
}

bool all_of(std::string_view s, char c) {
  return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

// Digit strings of one length between a and b (a <= b, leading zeros allowed).
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a == b) return std::string("\"") + a + "\"";
  size_t k = 0;
  while (a[k] == b[k]) ++k;
  const std::string prefix = k > 0 ? std::string("\"") + a.substr(0, k) + "\" " : "";
  const size_t n_rest = a.size() - k - 1;
  const std::string a_rest = a.substr(k + 1), b_rest = b.substr(k + 1);
  char mid_from = a[k], mid_to = b[k];
  std::vector<std::string> alts;
  if (!all_of(a_rest, '0')) {
    alts.push_back(std::string("[") + a[k] + "] (" +
                   same_length_range(a_rest, std::string(n_rest, '9')) + ")");
    ++mid_from;
  }
  std::string high;
  if (!all_of(b_rest, '9')) {
    high = std::string("[") + b[k] + "] (" + same_length_range(std::string(n_rest, '0'), b_rest) +
           ")";
    --mid_to;
  }
  if (mid_from <= mid_to) {
    const std::string digits = any_digits(n_rest);
    alts.push_back(digit_class(mid_from, mid_to) + (digits.empty() ? "" : std::string(" ") + digits));
  }
  if (!high.empty()) alts.push_back(high);
  return prefix + "(" + join(alts, " | ") + ")";
}

int64_t pow10(size_t n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Non-negative integers in [lo, hi] without leading zeros; hi < 0: no upper bound.
std::string uint_range(int64_t lo, int64_t hi) {
  const size_t lo_len = std::to_string(lo).size();
  const size_t hi_len = hi < 0 ? kMaxIntegerDigits : std::to_string(hi).size();
  std::vector<std::string> alts;
  for (size_t len = lo_len; len <= hi_len; ++len) {
    const int64_t from = std::max(lo, len == 1 ? 0 : pow10(len - 1));
    const int64_t to = (hi < 0 || len < hi_len) ? pow10(len) - 1 : hi;
    if (from > to) continue;
    alts.push_back(same_length_range(std::to_string(from), std::to_string(to)));
  }
  return alts.size() == 1 ? alts[0] : std::string("(") + join(alts, " | ") + ")";
}

const std::string kAnyFraction =
    "(\".\" [0-9]{1," + std::to_string(kMaxRangedFractionDigits) + "})?";
// A fraction that is not all zeros, of at most kMaxRangedFractionDigits digits: k zeros,
// a non-zero digit, then at most the digits left.
const std::string kNonZeroFraction = [] {
  std::vector<std::string> alts;
  for (int zeros = 0; zeros < kMaxRangedFractionDigits; ++zeros) {
    const int rest = kMaxRangedFractionDigits - 1 - zeros;
    alts.push_back((zeros > 0 ? "\"0\"{" + std::to_string(zeros) + "} " : std::string()) + "[1-9]" +
                   (rest > 0 ? " [0-9]{0," + std::to_string(rest) + "}" : std::string()));
  }
  return "\".\" (" + join(alts, " | ") + ")";
}();
const std::string kZeroFraction =
    "(\".\" \"0\"{1," + std::to_string(kMaxRangedFractionDigits) + "})?";

// Magnitudes m = I.F with p (<) <= m (<) <= q, p >= 0; q absent: no upper bound.
std::string magnitude_range(int64_t p, bool p_open, std::optional<NumberBound> q) {
  std::vector<std::string> alts;
  const int64_t inner_hi = q ? q->value - 1 : -1;
  if (!q || p + 1 <= inner_hi) alts.push_back(uint_range(p + 1, inner_hi) + " " + kAnyFraction);
  if (!q || p < q->value) {
    alts.push_back(std::string("\"") + std::to_string(p) + "\" " + (p_open ? std::string("(") + kNonZeroFraction + ")" : kAnyFraction));
  } else if (p == q->value && !p_open && !q->exclusive) {
    alts.push_back(std::string("\"") + std::to_string(p) + "\" " + kZeroFraction);
  }
  if (q && q->value > p && !q->exclusive) {
    alts.push_back(std::string("\"") + std::to_string(q->value) + "\" " + kZeroFraction);
  }
  return join(alts, " | ");
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // -m, m >= 1
    const int64_t m_lo = (hi && *hi < 0) ? -*hi : 1;
    const int64_t m_hi = lo ? -*lo : -1;
    alts.push_back(std::string("\"-\" ") + uint_range(m_lo, m_hi));
  }
  if (!hi || *hi >= 0) alts.push_back(uint_range(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1));
  return join(alts, " | ");
}

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::vector<std::string> alts;
  // x < 0: "-" m with m > 0 (so "-0" never appears), -hi (<) <= m (<) <= -lo.
  if (!lo || lo->value < 0) {
    const bool hi_negative = hi && hi->value < 0;
    const int64_t m_lo = hi_negative ? -hi->value : 0;
    const bool m_lo_open = hi_negative ? hi->exclusive : true;
    std::optional<NumberBound> m_hi;
    if (lo) m_hi = NumberBound{-lo->value, lo->exclusive};
    const std::string mag = magnitude_range(m_lo, m_lo_open, m_hi);
    if (!mag.empty()) alts.push_back(std::string("\"-\" (") + mag + ")");
  }
  // x >= 0.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    const bool lo_nonneg = lo && lo->value >= 0;
    const std::string mag =
        magnitude_range(lo_nonneg ? lo->value : 0, lo_nonneg ? lo->exclusive : false, hi);
    if (!mag.empty()) alts.push_back(mag);
  }
  return join(alts, " | ");
}

}  // namespace runnel::json_schema_detail
