// Unicode tables (generated from the UCD) and the UTF-8 helpers.
#include "core/tokenizer/unicode.h"

#include <catch2/catch.hpp>

#include "core/tokenizer/byte_encoding.h"
#include "core/tokenizer/utf8.h"

namespace runnel {
namespace {

using G = GeneralCategory;

TEST_CASE("general categories from the UCD", "[tokenizer]") {
  CHECK(unicode_category('A') == G::Lu);
  CHECK(unicode_category('z') == G::Ll);
  CHECK(unicode_category('5') == G::Nd);
  CHECK(unicode_category(0x00E9) == G::Ll);   // é
  CHECK(unicode_category(0x0301) == G::Mn);   // combining acute
  CHECK(unicode_category(0x0663) == G::Nd);   // Arabic-Indic three
  CHECK(unicode_category(0x00BD) == G::No);   // ½
  CHECK(unicode_category(0x2014) == G::Pd);   // em dash
  CHECK(unicode_category(0x20AC) == G::Sc);   // €
  CHECK(unicode_category(0x1F999) == G::So);  // 🦙
  CHECK(unicode_category(0x4E2D) == G::Lo);   // 中 (inside a First/Last range)
  CHECK(unicode_category(0xAC01) == G::Lo);   // Hangul syllable (range)
  CHECK(unicode_category(0x3000) == G::Zs);
  CHECK(unicode_category(0x2028) == G::Zl);
  CHECK(unicode_category(0xE000) == G::Co);  // private use (range)
  CHECK(unicode_category(0x0378) == G::Cn);  // unassigned
  CHECK(unicode_category(0x10FFFF) == G::Cn);
  CHECK(unicode_category(0x110000) == G::Cn);
}

TEST_CASE("codepoint flags and whitespace", "[tokenizer]") {
  CHECK(unicode_flags('a').is_letter());
  CHECK(unicode_flags('~').is_symbol());
  CHECK(unicode_flags('_').is_punctuation());
  CHECK(unicode_flags(0x0301).is_mark());
  CHECK(unicode_flags(0x00AD).is_control());  // soft hyphen is Cf
  CHECK(unicode_flags(0x0378).is_undefined());
  CHECK(unicode_flags(0x110000).is_undefined());
  // \s: exactly Unicode White_Space.
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u,
                     0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    INFO("U+" << std::hex << c);
    CHECK(unicode_is_whitespace(c));
    CHECK(unicode_flags(c).is_whitespace());
  }
  for (uint32_t c : {0x08u, 0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu, 0xFEFFu, 0x61u}) {
    INFO("U+" << std::hex << c);
    CHECK_FALSE(unicode_is_whitespace(c));
  }
  // The ASCII fast path agrees with the tables.
  for (uint32_t c = 0; c < 128; ++c) {
    const GeneralCategory gc = unicode_category(c);
    const CodepointFlags f = unicode_flags(c);
    INFO("U+" << std::hex << c);
    CHECK(f.is_letter() == (gc == G::Lu || gc == G::Ll));
    CHECK(f.is_number() == (gc == G::Nd));
    CHECK(f.is_punctuation() == (gc >= G::Pc && gc <= G::Ps));
    CHECK(f.is_symbol() == (gc >= G::Sc && gc <= G::So));
    CHECK(f.is_control() == (gc == G::Cc));
    CHECK(f.is_separator() == (gc == G::Zs));
  }
}

TEST_CASE("lowercase mapping", "[tokenizer]") {
  CHECK(unicode_tolower('A') == 'a');
  CHECK(unicode_tolower('a') == 'a');
  CHECK(unicode_tolower('1') == '1');
  CHECK(unicode_tolower(0x00C9) == 0x00E9);    // É -> é
  CHECK(unicode_tolower(0x0130) == 'i');       // İ: simple mapping
  CHECK(unicode_tolower(0x0411) == 0x0431);    // Б -> б
  CHECK(unicode_tolower(0x212A) == 'k');       // Kelvin sign
  CHECK(unicode_tolower(0x10400) == 0x10428);  // Deseret
  CHECK(unicode_tolower(0x00DF) == 0x00DF);    // ß has no simple lowercase change
}

TEST_CASE("canonical decomposition", "[tokenizer]") {
  auto nfd = [](std::vector<uint32_t> in) { return unicode_nfd(in); };
  CHECK(nfd({0x00E9}) == std::vector<uint32_t>{'e', 0x0301});
  // Recursive: ǖ = ü + macron = u + diaeresis + macron.
  CHECK(nfd({0x01D6}) == std::vector<uint32_t>{'u', 0x0308, 0x0304});
  // ử (U+1EED) = u + horn + hook above.
  CHECK(nfd({0x1EED}) == std::vector<uint32_t>{'u', 0x031B, 0x0309});
  // Singletons: Angstrom sign -> Å -> A + ring; Kelvin sign -> K.
  CHECK(nfd({0x212B}) == std::vector<uint32_t>{'A', 0x030A});
  CHECK(nfd({0x212A}) == std::vector<uint32_t>{'K'});
  // Hangul: 한 = ᄒ ᅡ ᆫ; 하 has no trailing consonant.
  CHECK(nfd({0xD55C}) == std::vector<uint32_t>{0x1112, 0x1161, 0x11AB});
  CHECK(nfd({0xD558}) == std::vector<uint32_t>{0x1112, 0x1161});
  // Canonical ordering: ḋ + dot below -> d, dot below (220), dot above (230).
  CHECK(nfd({0x1E0B, 0x0323}) == std::vector<uint32_t>{'d', 0x0323, 0x0307});
  CHECK(nfd({'a', 'b'}) == std::vector<uint32_t>{'a', 'b'});
  CHECK(unicode_combining_class(0x0301) == 230);
  CHECK(unicode_combining_class(0x0323) == 220);
  CHECK(unicode_combining_class('a') == 0);
  // What WPM keeps: the first code point of the decomposition.
  CHECK(unicode_decompose_first(0x00E9) == 'e');
  CHECK(unicode_decompose_first(0x1EED) == 'u');
  CHECK(unicode_decompose_first(0xD55C) == 0x1112);
  CHECK(unicode_decompose_first(0x4E2D) == 0x4E2D);
}

TEST_CASE("utf8 decoding keeps every byte", "[tokenizer]") {
  CHECK(utf8_to_codepoints("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99") ==
        std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F999});
  // Each invalid byte is one U+FFFD: a stray continuation, a truncated sequence,
  // a lead byte F8-FF, and a value above U+10FFFF.
  CHECK(utf8_to_codepoints("\x80") == std::vector<uint32_t>{0xFFFD});
  CHECK(utf8_to_codepoints("\xE2\x82") == std::vector<uint32_t>{0xFFFD, 0xFFFD});
  CHECK(utf8_to_codepoints("\xFFx") == std::vector<uint32_t>{0xFFFD, 'x'});
  CHECK(utf8_to_codepoints("\xF4\x90\x80\x80") ==
        std::vector<uint32_t>{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD});
  CHECK(utf8_to_codepoints("\xC3(") == std::vector<uint32_t>{0xFFFD, '('});
  CHECK(utf8_to_codepoints("").empty());

  std::string s;
  for (uint32_t c : {0x24u, 0xA2u, 0x939u, 0x20ACu, 0xD55Cu, 0x10348u}) append_utf8(s, c);
  CHECK(s == "$\xC2\xA2\xE0\xA4\xB9\xE2\x82\xAC\xED\x95\x9C\xF0\x90\x8D\x88");
  CHECK(utf8_to_codepoints(s) == std::vector<uint32_t>{0x24, 0xA2, 0x939, 0x20AC, 0xD55C, 0x10348});
  CHECK(utf8_sequence_length(0x41) == 1);
  CHECK(utf8_sequence_length(0x80) == 1);
  CHECK(utf8_sequence_length(0xC3) == 2);
  CHECK(utf8_sequence_length(0xE2) == 3);
  CHECK(utf8_sequence_length(0xF0) == 4);
}

TEST_CASE("utf8 completeness for streaming", "[tokenizer]") {
  CHECK(utf8_complete_prefix("abc") == 3);
  CHECK(utf8_complete_prefix("ab\xE2\x96") == 2);    // held: 2 of 3 bytes
  CHECK(utf8_complete_prefix("\xF0\x9F\xA6") == 0);  // held: 3 of 4 bytes
  CHECK(utf8_complete_prefix("\xE2\x96\x81") == 3);
  CHECK(utf8_complete_prefix("a\x80") == 2);  // invalid: never completes
  CHECK(utf8_complete_prefix("\xE2(") == 2);
  CHECK(utf8_complete_prefix("\xED\xA0") == 2);  // would be a surrogate
  CHECK(utf8_sanitize("a\x80"
                      "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(utf8_sanitize("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  CHECK(utf8_sanitize("\xE2\x96\x81") == "\xE2\x96\x81");
}

TEST_CASE("GPT-2 byte alphabet", "[tokenizer]") {
  CHECK(gpt2_byte_to_codepoint('!') == '!');
  CHECK(gpt2_byte_to_codepoint(' ') == 0x120);   // Ġ
  CHECK(gpt2_byte_to_codepoint('\n') == 0x10A);  // Ċ
  CHECK(gpt2_byte_to_codepoint(0x00) == 0x100);
  CHECK(gpt2_byte_to_codepoint(0xAD) == 0x143);  // the last one
  for (int b = 0; b < 256; ++b) {
    CHECK(gpt2_codepoint_to_byte(gpt2_byte_to_codepoint(static_cast<uint8_t>(b))) == b);
  }
  CHECK(gpt2_codepoint_to_byte(' ') == -1);
  CHECK(gpt2_codepoint_to_byte(0x144) == -1);
  std::string out;
  gpt2_encode_bytes(" \xC3\xA9", out);
  CHECK(out == "\xC4\xA0\xC3\x83\xC2\xA9");  // "Ġ" "Ã" "©"
}

}  // namespace
}  // namespace runnel
