// Raw Unicode tables generated from the Unicode Character Database by
// scripts/gen_unicode_tables.py into unicode_data.cpp. Use the lookups in
// core/tokenizer/unicode.h; these arrays are their data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace runnel {

// Unicode general categories. The order is fixed by the generator (CATEGORIES).
// clang-format off
enum class GeneralCategory : uint8_t {
  Cn, Cc, Cf, Co, Cs,
  Ll, Lm, Lo, Lt, Lu,
  Mc, Me, Mn,
  Nd, Nl, No,
  Pc, Pd, Pe, Pf, Pi, Po, Ps,
  Sc, Sk, Sm, So,
  Zl, Zp, Zs,
};
// clang-format on

namespace unicode_data {

// A run of code points with one category, from `first` up to the next run's first.
struct CategoryRange {
  uint32_t first;
  GeneralCategory category;
};

struct CaseMapping {
  uint32_t from, to;
};

// `cpt` decomposes canonically (recursively expanded) into
// kDecompositionData[offset .. offset + length).
struct Decomposition {
  uint32_t cpt;
  uint16_t offset;
  uint8_t length;
};

struct CombiningClassRange {
  uint32_t first, last;
  uint8_t ccc;
};

extern const CategoryRange kCategoryRanges[];  // starts at 0, sorted
extern const size_t kCategoryRangeCount;
extern const uint32_t kWhiteSpace[];  // sorted
extern const size_t kWhiteSpaceCount;
extern const CaseMapping kLowercase[];  // sorted by from
extern const size_t kLowercaseCount;
extern const Decomposition kDecompositions[];  // sorted by cpt
extern const size_t kDecompositionCount;
extern const uint32_t kDecompositionData[];
extern const size_t kDecompositionDataCount;
extern const CombiningClassRange kCombiningClasses[];  // sorted, disjoint
extern const size_t kCombiningClassCount;

}  // namespace unicode_data
}  // namespace runnel
