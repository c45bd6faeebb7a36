#include "core/sampling/grammar_utf8.h"

#include <algorithm>
#include <map>

namespace runnel {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

// Splits [lo, hi] until both ends have the same encoded length and every byte
// position ranges independently (the classic regex-engine split), then emits the
// per-position byte ranges.
void split_range(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteSet>>& out) {
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      split_range(lo, boundary, out);
      split_range(boundary + 1, hi, out);
      return;
    }
  }
  const std::string a = encode_utf8(lo), b = encode_utf8(hi);
  for (size_t i = 1; i < a.size(); ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_range(lo, lo | m, out);
        split_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_range(lo, (hi & ~m) - 1, out);
        split_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::vector<ByteSet> seq(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    seq[i].set_range(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  }
  out.push_back(std::move(seq));
}

}  // namespace

std::string encode_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> pieces;
  for (CodepointRange r : ranges) {
    r.hi = std::min(r.hi, kMaxCodepoint);
    if (r.lo > r.hi) continue;
    if (r.lo < kSurrogateLo && r.hi > kSurrogateHi) {
      pieces.push_back({r.lo, kSurrogateLo - 1});
      pieces.push_back({kSurrogateHi + 1, r.hi});
    } else if (r.lo >= kSurrogateLo && r.hi <= kSurrogateHi) {
      continue;
    } else if (r.lo >= kSurrogateLo && r.lo <= kSurrogateHi) {
      pieces.push_back({kSurrogateHi + 1, r.hi});
    } else if (r.hi >= kSurrogateLo && r.hi <= kSurrogateHi) {
      pieces.push_back({r.lo, kSurrogateLo - 1});
    } else {
      pieces.push_back(r);
    }
  }
  std::sort(pieces.begin(), pieces.end());
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : pieces) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (const CodepointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return normalize_ranges(std::move(out));
}

std::vector<std::vector<ByteSet>> utf8_sequences(const std::vector<CodepointRange>& ranges) {
  std::vector<std::vector<ByteSet>> split;
  for (const CodepointRange& r : ranges) split_range(r.lo, r.hi, split);
  // Merge sequences with the same tail: their first-byte sets are disjoint (a lead
  // byte fixes the length and the tails are equal), so the union is exact.
  std::vector<std::vector<ByteSet>> merged;
  std::map<std::vector<ByteSet>, size_t> by_tail;
  for (auto& seq : split) {
    std::vector<ByteSet> tail(seq.begin() + 1, seq.end());
    auto [it, inserted] = by_tail.emplace(std::move(tail), merged.size());
    if (inserted) {
      merged.push_back(std::move(seq));
    } else {
      merged[it->second][0].add(seq[0]);
    }
  }
  return merged;
}

}  // namespace runnel
