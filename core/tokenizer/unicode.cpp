#include "core/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace runnel {
namespace {

using unicode_data::kCategoryRangeCount;
using unicode_data::kCategoryRanges;

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Hangul syllable decomposition constants (Unicode ch. 3.12).
constexpr uint32_t kHangulBase = 0xAC00, kLeadBase = 0x1100, kVowelBase = 0x1161,
                   kTrailBase = 0x11A7;
constexpr uint32_t kVowelCount = 21, kTrailCount = 28;
constexpr uint32_t kHangulCount = 19 * kVowelCount * kTrailCount;

// CodepointFlags category bit of each GeneralCategory, in enum order.
constexpr uint16_t kCategoryBits[] = {
    CodepointFlags::kUndefined,                                  // Cn
    CodepointFlags::kControl,     CodepointFlags::kControl,      // Cc Cf
    CodepointFlags::kControl,     CodepointFlags::kControl,      // Co Cs
    CodepointFlags::kLetter,      CodepointFlags::kLetter,       // Ll Lm
    CodepointFlags::kLetter,      CodepointFlags::kLetter,       // Lo Lt
    CodepointFlags::kLetter,                                     // Lu
    CodepointFlags::kMark,        CodepointFlags::kMark,         // Mc Me
    CodepointFlags::kMark,                                       // Mn
    CodepointFlags::kNumber,      CodepointFlags::kNumber,       // Nd Nl
    CodepointFlags::kNumber,                                     // No
    CodepointFlags::kPunctuation, CodepointFlags::kPunctuation,  // Pc Pd
    CodepointFlags::kPunctuation, CodepointFlags::kPunctuation,  // Pe Pf
    CodepointFlags::kPunctuation, CodepointFlags::kPunctuation,  // Pi Po
    CodepointFlags::kPunctuation,                                // Ps
    CodepointFlags::kSymbol,      CodepointFlags::kSymbol,       // Sc Sk
    CodepointFlags::kSymbol,      CodepointFlags::kSymbol,       // Sm So
    CodepointFlags::kSeparator,   CodepointFlags::kSeparator,    // Zl Zp
    CodepointFlags::kSeparator,                                  // Zs
};
static_assert(sizeof(kCategoryBits) / sizeof(kCategoryBits[0]) ==
              static_cast<size_t>(GeneralCategory::Zs) + 1);

uint16_t category_bits(GeneralCategory gc) {
  return kCategoryBits[static_cast<size_t>(gc)];
}

GeneralCategory lookup_category(uint32_t cpt) {
  const auto* end = kCategoryRanges + kCategoryRangeCount;
  // The last run whose first code point is <= cpt.
  const auto* it = std::upper_bound(
      kCategoryRanges, end, cpt,
      [](uint32_t c, const unicode_data::CategoryRange& r) { return c < r.first; });
  return (it - 1)->category;
}

bool lookup_whitespace(uint32_t cpt) {
  const auto* begin = unicode_data::kWhiteSpace;
  const auto* end = begin + unicode_data::kWhiteSpaceCount;
  return std::binary_search(begin, end, cpt);
}

// Flags of the 128 ASCII code points, computed once at compile time from the same
// rules (ASCII is most of most text).
struct AsciiFlags {
  std::array<uint16_t, 128> bits{};
  constexpr AsciiFlags() {
    for (uint32_t c = 0; c < 128; ++c) {
      uint16_t b = 0;
      if (c < 0x20 || c == 0x7F) {
        b = CodepointFlags::kControl;
      } else if (c == ' ') {
        b = CodepointFlags::kSeparator;
      } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
        b = CodepointFlags::kLetter;
      } else if (c >= '0' && c <= '9') {
        b = CodepointFlags::kNumber;
      } else if (c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '`' ||
                 c == '|' || c == '~') {
        b = CodepointFlags::kSymbol;
      } else {
        b = CodepointFlags::kPunctuation;
      }
      if ((c >= 0x09 && c <= 0x0D) || c == ' ') b |= CodepointFlags::kWhitespace;
      bits[c] = b;
    }
  }
};
constexpr AsciiFlags kAscii;

const unicode_data::Decomposition* find_decomposition(uint32_t cpt) {
  const auto* begin = unicode_data::kDecompositions;
  const auto* end = begin + unicode_data::kDecompositionCount;
  const auto* it = std::lower_bound(
      begin, end, cpt, [](const unicode_data::Decomposition& d, uint32_t c) { return d.cpt < c; });
  return (it != end && it->cpt == cpt) ? it : nullptr;
}

}  // namespace

GeneralCategory unicode_category(uint32_t cpt) {
  if (cpt > kMaxCodepoint) return GeneralCategory::Cn;
  return lookup_category(cpt);
}

CodepointFlags unicode_flags(uint32_t cpt) {
  if (cpt < 128) return CodepointFlags{kAscii.bits[cpt]};
  if (cpt > kMaxCodepoint) return CodepointFlags{CodepointFlags::kUndefined};
  uint16_t bits = category_bits(lookup_category(cpt));
  if (lookup_whitespace(cpt)) bits |= CodepointFlags::kWhitespace;
  return CodepointFlags{bits};
}

bool unicode_is_whitespace(uint32_t cpt) {
  if (cpt < 128) return kAscii.bits[cpt] & CodepointFlags::kWhitespace;
  return lookup_whitespace(cpt);
}

uint32_t unicode_tolower(uint32_t cpt) {
  if (cpt < 128) return (cpt >= 'A' && cpt <= 'Z') ? cpt + 32 : cpt;
  const auto* begin = unicode_data::kLowercase;
  const auto* end = begin + unicode_data::kLowercaseCount;
  const auto* it = std::lower_bound(
      begin, end, cpt, [](const unicode_data::CaseMapping& m, uint32_t c) { return m.from < c; });
  return (it != end && it->from == cpt) ? it->to : cpt;
}

uint8_t unicode_combining_class(uint32_t cpt) {
  if (cpt < 0x300) return 0;
  const auto* begin = unicode_data::kCombiningClasses;
  const auto* end = begin + unicode_data::kCombiningClassCount;
  const auto* it = std::upper_bound(
      begin, end, cpt,
      [](uint32_t c, const unicode_data::CombiningClassRange& r) { return c < r.first; });
  if (it == begin) return 0;
  --it;
  return cpt <= it->last ? it->ccc : 0;
}

void unicode_decompose(uint32_t cpt, std::vector<uint32_t>& out) {
  if (cpt < 0xC0) {  // nothing below U+00C0 decomposes
    out.push_back(cpt);
    return;
  }
  if (cpt >= kHangulBase && cpt < kHangulBase + kHangulCount) {
    const uint32_t s = cpt - kHangulBase;
    out.push_back(kLeadBase + s / (kVowelCount * kTrailCount));
    out.push_back(kVowelBase + (s % (kVowelCount * kTrailCount)) / kTrailCount);
    if (s % kTrailCount != 0) out.push_back(kTrailBase + s % kTrailCount);
    return;
  }
  const auto* d = find_decomposition(cpt);
  if (d == nullptr) {
    out.push_back(cpt);
    return;
  }
  out.insert(out.end(), unicode_data::kDecompositionData + d->offset,
             unicode_data::kDecompositionData + d->offset + d->length);
}

uint32_t unicode_decompose_first(uint32_t cpt) {
  if (cpt < 0xC0) return cpt;
  if (cpt >= kHangulBase && cpt < kHangulBase + kHangulCount) {
    return kLeadBase + (cpt - kHangulBase) / (kVowelCount * kTrailCount);
  }
  const auto* d = find_decomposition(cpt);
  return d ? unicode_data::kDecompositionData[d->offset] : cpt;
}

std::vector<uint32_t> unicode_nfd(const std::vector<uint32_t>& cpts) {
  std::vector<uint32_t> out;
  out.reserve(cpts.size());
  for (uint32_t c : cpts) unicode_decompose(c, out);
  // Canonical ordering: within each run of non-starters, a stable sort by class.
  size_t i = 0;
  while (i < out.size()) {
    if (unicode_combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && unicode_combining_class(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j, [](uint32_t a, uint32_t b) {
      return unicode_combining_class(a) < unicode_combining_class(b);
    });
    i = j;
  }
  return out;
}

}  // namespace runnel
