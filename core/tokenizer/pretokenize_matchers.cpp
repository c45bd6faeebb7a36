// The hand-written regex matchers of pretokenize.h.
//
// Each returns what std::regex (ECMAScript: alternatives in order, greedy
// quantifiers that backtrack) finds at `pos` for the regex llama.cpp uses, with
// llama.cpp's character classes:
//   \p{L} \p{N} \p{P} \p{M}  the Unicode general categories;
//   \p{S}                    Unicode S except '~' (llama.cpp's ASCII stand-in for S
//                            leaves it out, so its regexes never see '~' as S);
//   \s                       White_Space;
//   explicit ranges          compare code points, but a non-ASCII White_Space
//                            character reads as \v there (llama.cpp maps it so).
// gpt2 and llama3 follow llama.cpp's own hand-coded versions of those regexes.
#include "core/tokenizer/pretokenize.h"
#include "core/tokenizer/unicode.h"

namespace runnel::split {
namespace {

using Flags = CodepointFlags;

bool is_ascii_alpha(uint32_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_cr_lf(uint32_t c) {
  return c == '\r' || c == '\n';
}
// [^\s\p{L}\p{N}] for a code point inside the fragment.
bool is_other(Flags f) {
  return f.bits != 0 && !f.is_whitespace() && !f.is_letter() && !f.is_number();
}
bool is_symbol_regex(uint32_t c, Flags f) {
  return f.is_symbol() && c != '~';
}
// The code point an explicit-range class compares (non-ASCII whitespace -> \v).
uint32_t range_cpt(uint32_t c, Flags f) {
  return (c > 0x7F && f.is_whitespace()) ? 0x0B : c;
}

// Class predicates, in the (code point, flags) form run() takes.
bool is_ws(uint32_t, Flags f) {
  return f.is_whitespace();
}
bool is_letter(uint32_t, Flags f) {
  return f.is_letter();
}
bool is_number(uint32_t, Flags f) {
  return f.is_number();
}
bool is_punct(uint32_t, Flags f) {
  return f.is_punctuation();
}
bool is_ascii_digit(uint32_t c, Flags) {
  return c >= '0' && c <= '9';
}

// Length of the run of `pred` characters at pos, counting at most `limit` (a
// bounded quantifier must not rescan a long run at every position).
template <typename Pred>
size_t run(const FragmentView& v, size_t pos, Pred pred, size_t limit = kNoMatch) {
  size_t p = pos;
  while (p < v.end && p - pos < limit && pred(v.cpt(p), v.flag(p))) ++p;
  return p - pos;
}

// `prefix? class+` where the optional prefix is tried first (it may overlap class).
template <typename Prefix, typename Class>
size_t optional_prefix_run(const FragmentView& v, size_t pos, Prefix prefix, Class cls) {
  if (prefix(v.cpt(pos), v.flag(pos))) {
    const size_t n = run(v, pos + 1, cls);
    if (n > 0) return 1 + n;
  }
  const size_t n = run(v, pos, cls);
  return n > 0 ? n : kNoMatch;
}

// `'s|'t|'re|'ve|'m|'ll|'d` at pos; `fold` lowercases the letters first.
size_t contraction(const FragmentView& v, size_t pos, uint32_t (*fold)(uint32_t)) {
  if (v.cpt(pos) != '\'' || pos + 1 >= v.end) return 0;
  const uint32_t a = fold(v.cpt(pos + 1));
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= v.end) return 0;
  const uint32_t b = fold(v.cpt(pos + 2));
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}
uint32_t same(uint32_t c) {
  return c;
}
uint32_t ascii_lower(uint32_t c) {
  return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

// The whitespace tail shared by the llama3 family:
//   \s*[\r\n]+ | \s+(?!\S) | \s+
// A run ending in a newline takes everything up to its last \r or \n; a run
// followed by more text leaves its last character to prefix the next word.
size_t whitespace_llama3(const FragmentView& v, size_t pos) {
  size_t n = 0, last_newline_end = 0;
  while (v.flag(pos + n).is_whitespace()) {
    if (is_cr_lf(v.cpt(pos + n))) last_newline_end = n + 1;
    ++n;
  }
  if (last_newline_end > 0) return last_newline_end;
  if (n > 1 && pos + n < v.end) return n - 1;
  return n > 0 ? n : kNoMatch;
}

// ` ?[^\s\p{L}\p{N}]+` followed by any of `tail` characters (e.g. "\r\n").
size_t punct_with_tail(const FragmentView& v, size_t pos, std::u32string_view tail) {
  const size_t start = pos + (v.cpt(pos) == ' ' ? 1 : 0);
  if (!is_other(v.flag(start))) return kNoMatch;
  size_t p = start;
  while (is_other(v.flag(p))) ++p;
  while (p < v.end && tail.find(static_cast<char32_t>(v.cpt(p))) != std::u32string_view::npos) ++p;
  return p - pos;
}

// (?:'[sS]|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+tail|ws
size_t llama3_like(const FragmentView& v, size_t pos, size_t max_digits, std::u32string_view tail) {
  if (const size_t n = contraction(v, pos, unicode_tolower)) return n;
  const uint32_t c = v.cpt(pos);
  const Flags f = v.flag(pos);
  if (!is_cr_lf(c) && !f.is_number() && (f.is_letter() || v.flag(pos + 1).is_letter())) {
    size_t p = pos + 1;
    while (v.flag(p).is_letter()) ++p;
    return p - pos;
  }
  if (f.is_number()) {
    return run(v, pos, is_number, max_digits);
  }
  if (const size_t n = punct_with_tail(v, pos, tail); n != kNoMatch) return n;
  return whitespace_llama3(v, pos);
}

// The cased-word alternatives of gpt-4o / tekken, as llama.cpp rewrites them:
//   [^\r\n\p{L}\p{N}]?U*W+ | [^\r\n\p{L}\p{N}]?U+W*
// with U = a letter that is not a-z and W = a letter that is not A-Z (so a
// non-ASCII letter is both). Returns the end of the match or kNoMatch.
bool is_upperish(uint32_t c, Flags f) {
  return f.is_letter() && !(c >= 'a' && c <= 'z');
}
bool is_lowerish(uint32_t c, Flags f) {
  return f.is_letter() && !(c >= 'A' && c <= 'Z');
}

size_t upper_star_lower_plus(const FragmentView& v, size_t p) {
  const size_t u_end = p + run(v, p, is_upperish);
  for (size_t k = u_end;; --k) {  // U* gives back one character at a time
    if (k < v.end && is_lowerish(v.cpt(k), v.flag(k))) return k + run(v, k, is_lowerish);
    if (k == p) return kNoMatch;
  }
}

size_t upper_plus_lower_star(const FragmentView& v, size_t p) {
  const size_t u_end = p + run(v, p, is_upperish);
  if (u_end == p) return kNoMatch;
  return u_end + run(v, u_end, is_lowerish);
}

size_t cased_word_end(const FragmentView& v, size_t pos) {
  const uint32_t c = v.cpt(pos);
  const Flags f = v.flag(pos);
  const bool prefix = !is_cr_lf(c) && !f.is_letter() && !f.is_number();
  const size_t start = prefix ? pos + 1 : pos;  // without the prefix, a non-letter fails
  size_t end = upper_star_lower_plus(v, start);
  if (end == kNoMatch) end = upper_plus_lower_star(v, start);
  return end;
}

size_t gpt4o_like(const FragmentView& v, size_t pos, bool contractions, size_t max_digits) {
  size_t end = cased_word_end(v, pos);
  if (end != kNoMatch) {
    if (contractions) end += contraction(v, end, ascii_lower);
    return end - pos;
  }
  if (v.flag(pos).is_number()) {
    return run(v, pos, is_number, max_digits);
  }
  if (const size_t n = punct_with_tail(v, pos, U"\r\n/"); n != kNoMatch) return n;
  return whitespace_llama3(v, pos);
}

// Exact class of [\p{P}\$\+<=>\^~\|]: Unicode punctuation plus ASCII symbols.
bool is_default_punct(uint32_t c, Flags f) {
  return f.is_punctuation() || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
         c == '^' || c == '~' || c == '|';
}

bool is_ascii_punct_or_symbol(uint32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

struct Range {
  uint32_t first, last;
};

template <size_t N>
bool in_ranges(const Range (&ranges)[N], uint32_t c) {
  for (const Range& r : ranges) {
    if (c >= r.first && c <= r.last) return true;
  }
  return false;
}

// deepseek-llm's letter class: the cased letters of several scripts.
constexpr Range kCasedLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},
    {0x00D8, 0x00F6},   {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},
    {0x0295, 0x02AF},   {0x0370, 0x0373},   {0x0376, 0x0377},   {0x037B, 0x037D},
    {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},   {0x038C, 0x038C},
    {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr Range kWidePunct[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0xFF01, 0xFF0F},
                                {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};
// [一-龥ࠀ-一가-퟿]
constexpr Range kCjkHangul[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]
constexpr Range kCjkKana[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};
// The characters [^(\s|.,!?…。，、।۔،)] excludes besides \s.
constexpr Range kPoroStops[] = {
    {'(', '('},       {')', ')'},       {'|', '|'},       {'.', '.'},       {',', ','},
    {'!', '!'},       {'?', '?'},       {0x2026, 0x2026}, {0x3002, 0x3002}, {0xFF0C, 0xFF0C},
    {0x3001, 0x3001}, {0x0964, 0x0964}, {0x06D4, 0x06D4}, {0x060C, 0x060C}};

// End of the run of `pred` characters containing pos (pos must be one of them),
// remembered in the view so that later positions of the same run cost nothing.
template <typename Pred>
size_t memo_run_end(const FragmentView& v, size_t pos, Pred pred) {
  if (pos < v.memo_begin || pos >= v.memo_end) {
    v.memo_begin = pos;
    v.memo_end = pos + run(v, pos, pred);
  }
  return v.memo_end;
}

}  // namespace

size_t gpt2(const FragmentView& v, size_t pos) {
  if (const size_t n = contraction(v, pos, same)) return n;
  const uint32_t c = v.cpt(pos);
  const size_t start = pos + (c == ' ' ? 1 : 0);  // the optional leading space
  const Flags f = v.flag(start);
  if (f.is_letter()) return start - pos + run(v, start, is_letter);
  if (f.is_number()) return start - pos + run(v, start, is_number);
  if (is_other(f))
    return start - pos + run(v, start, [](uint32_t, Flags g) { return is_other(g); });
  // \s+(?!\S), and (as llama.cpp's version also does) a lone \s before text.
  const size_t n = run(v, pos, is_ws);
  if (n > 1 && pos + n < v.end) return n - 1;
  return n > 0 ? n : 1;
}

size_t llama3(const FragmentView& v, size_t pos) {
  return llama3_like(v, pos, 3, U"\r\n");
}
size_t qwen2(const FragmentView& v, size_t pos) {
  return llama3_like(v, pos, 1, U"\r\n");
}
size_t seed_coder(const FragmentView& v, size_t pos) {
  return llama3_like(v, pos, 1, U"");
}
size_t gpt4o(const FragmentView& v, size_t pos) {
  return gpt4o_like(v, pos, true, 3);
}
size_t tekken(const FragmentView& v, size_t pos) {
  return gpt4o_like(v, pos, false, 1);
}

// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ |
//  ?[\p{P}\p{S}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
size_t deepseek_v3_words(const FragmentView& v, size_t pos) {
  const uint32_t c = v.cpt(pos);
  if (is_ascii_punct_or_symbol(c) && is_ascii_alpha(v.cpt(pos + 1))) {
    return 1 + run(v, pos + 1, [](uint32_t d, Flags) { return is_ascii_alpha(d); });
  }
  auto letter_or_mark = [](uint32_t, Flags f) { return f.is_letter() || f.is_mark(); };
  auto word_prefix = [](uint32_t d, Flags f) {
    return f.bits != 0 && !is_cr_lf(d) && !f.is_letter() && !f.is_punctuation() &&
           !is_symbol_regex(d, f);
  };
  if (const size_t n = optional_prefix_run(v, pos, word_prefix, letter_or_mark); n != kNoMatch) {
    return n;
  }
  auto punct_or_symbol = [](uint32_t d, Flags f) {
    return f.is_punctuation() || is_symbol_regex(d, f);
  };
  const size_t start = pos + (c == ' ' ? 1 : 0);
  if (const size_t n = run(v, start, punct_or_symbol); n > 0) {
    size_t p = start + n;
    while (p < v.end && is_cr_lf(v.cpt(p))) ++p;
    return p - pos;
  }
  return whitespace_llama3(v, pos);
}

size_t punct_run(const FragmentView& v, size_t pos) {
  const size_t n = run(v, pos, is_default_punct);
  return n > 0 ? n : kNoMatch;
}

size_t punct_run_falcon(const FragmentView& v, size_t pos) {
  const size_t n =
      run(v, pos, [](uint32_t c, Flags f) { return c == '`' || is_default_punct(c, f); });
  return n > 0 ? n : kNoMatch;
}

size_t number_run(const FragmentView& v, size_t pos) {
  const size_t n = run(v, pos, is_number);
  return n > 0 ? n : kNoMatch;
}

size_t number_single(const FragmentView& v, size_t pos) {
  return v.flag(pos).is_number() ? 1 : kNoMatch;
}

size_t number_up_to_3(const FragmentView& v, size_t pos) {
  const size_t n = run(v, pos, is_number, 3);
  return n > 0 ? n : kNoMatch;
}

size_t ascii_digits_3(const FragmentView& v, size_t pos) {
  return run(v, pos, is_ascii_digit, 3) == 3 ? 3 : kNoMatch;
}

size_t newline(const FragmentView& v, size_t pos) {
  return is_cr_lf(v.cpt(pos)) ? 1 : kNoMatch;
}

size_t space_letters(const FragmentView& v, size_t pos) {
  return optional_prefix_run(v, pos, is_ws, is_letter);
}

size_t space_punct(const FragmentView& v, size_t pos) {
  return optional_prefix_run(v, pos, is_ws, is_punct);
}

size_t cjk_hangul(const FragmentView& v, size_t pos) {
  const size_t n =
      run(v, pos, [](uint32_t c, Flags f) { return in_ranges(kCjkHangul, range_cpt(c, f)); });
  return n > 0 ? n : kNoMatch;
}

size_t cjk_kana(const FragmentView& v, size_t pos) {
  const size_t n =
      run(v, pos, [](uint32_t c, Flags f) { return in_ranges(kCjkKana, range_cpt(c, f)); });
  return n > 0 ? n : kNoMatch;
}

size_t cased_letters(const FragmentView& v, size_t pos) {
  return optional_prefix_run(
      v, pos, is_ws, [](uint32_t c, Flags f) { return in_ranges(kCasedLetters, range_cpt(c, f)); });
}

size_t wide_punct(const FragmentView& v, size_t pos) {
  return optional_prefix_run(
      v, pos, is_ws, [](uint32_t c, Flags f) { return in_ranges(kWidePunct, range_cpt(c, f)); });
}

size_t trailing_space(const FragmentView& v, size_t pos) {
  if (!v.flag(pos).is_whitespace()) return kNoMatch;
  const size_t end = memo_run_end(v, pos, is_ws);
  return end == v.end ? end - pos : kNoMatch;
}

size_t poro(const FragmentView& v, size_t pos) {
  return optional_prefix_run(
      v, pos, [](uint32_t c, Flags) { return c == ' '; },
      [](uint32_t c, Flags f) { return !f.is_whitespace() && !in_ranges(kPoroStops, c); });
}

// <sentinel:[0-9]+>
size_t chameleon_sentinel(const FragmentView& v, size_t pos) {
  static constexpr char32_t kHead[] = U"<sentinel:";
  size_t p = pos;
  for (const char32_t* h = kHead; *h; ++h, ++p) {
    if (v.cpt(p) != *h) return kNoMatch;
  }
  const size_t digits = run(v, p, is_ascii_digit);
  if (digits == 0 || v.cpt(p + digits) != '>') return kNoMatch;
  return p + digits + 1 - pos;
}

// (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z
size_t chameleon_image(const FragmentView& v, size_t pos) {
  static constexpr char32_t kHead[] = U"IMGIMG";
  size_t p = pos;
  for (const char32_t* h = kHead; *h; ++h, ++p) {
    if (v.cpt(p) != *h) return kNoMatch;
  }
  const size_t n = run(
      v, p, [](uint32_t c, Flags) { return c >= 'A' && c <= 'I'; }, 4);
  // Giving back letters cannot help: the character after fewer of them is A-I.
  if (n == 0 || v.cpt(p + n) != 'Z') return kNoMatch;
  return p + n + 1 - pos;
}

// ([\t\n]|    |  )
size_t chameleon_spaces(const FragmentView& v, size_t pos) {
  const uint32_t c = v.cpt(pos);
  if (c == '\t' || c == '\n') return 1;
  const size_t spaces = run(
      v, pos, [](uint32_t d, Flags) { return d == ' '; }, 4);
  if (spaces >= 4) return 4;
  if (spaces >= 2) return 2;
  return kNoMatch;
}

// [\p{P}!-/:-@\[-`{-~]
size_t chameleon_punct(const FragmentView& v, size_t pos) {
  const uint32_t c = v.cpt(pos);
  return (v.flag(pos).is_punctuation() || is_ascii_punct_or_symbol(c)) ? 1 : kNoMatch;
}

// (?=(\d{3})+(?!\d)): an empty match where the digits that follow, up to the next
// non-digit, are a non-zero multiple of three (cuts 1234567 as 1|234|567).
size_t digit_groups(const FragmentView& v, size_t pos) {
  if (!is_ascii_digit(v.cpt(pos), {})) return kNoMatch;
  const size_t n = memo_run_end(v, pos, is_ascii_digit) - pos;
  return (n >= 3 && n % 3 == 0) ? 0 : kNoMatch;
}

}  // namespace runnel::split
