// Pre-tokenizer splits. The expected words come from an independent reference:
// each pre-tokenizer's regex list exactly as llama.cpp states it, run with
// Python's `regex` module (real Unicode classes) and applied in sequence with
// matches and the gaps between them becoming pieces; regexes without \p{..} see
// non-ASCII whitespace as \v, as llama.cpp's std::wregex path does.
#include "core/tokenizer/pretokenize.h"

#include <catch2/catch.hpp>

namespace runnel {
namespace {

struct SplitCase {
  const char* pre;
  const char* text;
  std::vector<std::string> words;
};

// clang-format off
const SplitCase kCases[] = {
    {"gpt-2", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " 2024", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'", "RE", "'", " ok", "?"}},
    {"gpt-2", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n", "\t", "and", "\r", "\n", "newlines", "  "}},
    {"gpt-2", "1234567 89 3.14159 ١٢٣ x",
     {"1234567", " 89", " 3", ".", "14159", " ١٢٣", " x"}},
    {"gpt-2", "don't DON'T You'll we'VE 'tis",
     {"don", "'t", " DON", "'", "T", " You", "'ll", " we", "'", "VE", " '", "tis"}},
    {"gpt-2", "  ends with spaces   ",
     {" ", " ends", " with", " spaces", "   "}},
    {"gpt-2", "tab\tsep\xE3\x80\x80""ideographic\xC2\xA0""nbsp \xE2\x80\x83""em",
     {"tab", "\t", "sep", "\xE3\x80\x80", "ideographic", "\xC2\xA0", "nbsp", " ", "\xE2\x80\x83", "em"}},
    {"gpt-2", "emoji 🦙🚀 and symbols $+<=>^`| @#% a/b//c",
     {"emoji", " 🦙🚀", " and", " symbols", " $+<=>^`|", " @#%", " a", "/", "b", "//", "c"}},
    {"llama-bpe", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " ", "202", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'RE", "'", " ok", "?"}},
    {"llama-bpe", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n", "\tand", "\r\n", "newlines", "  "}},
    {"llama-bpe", "1234567 89 3.14159 ١٢٣ x",
     {"123", "456", "7", " ", "89", " ", "3", ".", "141", "59", " ", "١٢٣", " x"}},
    {"llama-bpe", "don't DON'T You'll we'VE 'tis",
     {"don", "'t", " DON", "'T", " You", "'ll", " we", "'VE", " '", "tis"}},
    {"llama-bpe", "  ends with spaces   ",
     {" ", " ends", " with", " spaces", "   "}},
    {"llama-bpe", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}\n"}},
    {"llama-bpe", "tab\tsep\xE3\x80\x80""ideographic\xC2\xA0""nbsp \xE2\x80\x83""em",
     {"tab", "\tsep", "\xE3\x80\x80""ideographic", "\xC2\xA0""nbsp", " ", "\xE2\x80\x83""em"}},
    {"qwen2", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " ", "2", "0", "2", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'RE", "'", " ok", "?"}},
    {"qwen2", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n", "\tand", "\r\n", "newlines", "  "}},
    {"qwen2", "1234567 89 3.14159 ١٢٣ x",
     {"1", "2", "3", "4", "5", "6", "7", " ", "8", "9", " ", "3", ".", "1", "4", "1", "5", "9", " ", "١", "٢", "٣", " x"}},
    {"qwen2", "don't DON'T You'll we'VE 'tis",
     {"don", "'t", " DON", "'T", " You", "'ll", " we", "'VE", " '", "tis"}},
    {"qwen2", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}\n"}},
    {"seed-coder", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}", "\n"}},
    {"seed-coder", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n", "\tand", "\r\n", "newlines", "  "}},
    {"gpt-4o", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I'm", " here", ",", " it's", " ", "202", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY'RE", "'", " ok", "?"}},
    {"gpt-4o", "Café naïve ÉCOLE ÀbC éÉ straße e\xCC\x81""té",
     {"Café", " naïve", " É", "COLE", " Àb", "C", " éÉ", " straße", " e", "\xCC\x81""té"}},
    {"gpt-4o", "don't DON'T You'll we'VE 'tis",
     {"don't", " DON'T", " You'll", " we'VE", " '", "tis"}},
    {"gpt-4o", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}\n"}},
    {"gpt-4o", "1234567 89 3.14159 ١٢٣ x",
     {"123", "456", "7", " ", "89", " ", "3", ".", "141", "59", " ", "١٢٣", " x"}},
    {"tekken", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " ", "2", "0", "2", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'RE", "'", " ok", "?"}},
    {"tekken", "Café naïve ÉCOLE ÀbC éÉ straße e\xCC\x81""té",
     {"Café", " naïve", " É", "COLE", " Àb", "C", " éÉ", " straße", " e", "\xCC\x81""té"}},
    {"tekken", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}\n"}},
    {"default", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'", "m", " here", ",", " it", "'", "s", " ", "202", "4", "...", " ", "\"", "quotes", "\"", " and", " ", "'", "THEY", "'", "RE", "'", " ok", "?"}},
    {"default", "1234567 89 3.14159 ١٢٣ x",
     {"123", "456", "7", " ", "89", " ", "3", ".", "141", "59", " ", "١٢٣", " x"}},
    {"default", "wait...what?! (yes) [no] {maybe} «quote» — dash",
     {"wait", "...", "what", "?!", " ", "(", "yes", ")", " ", "[", "no", "]", " ", "{", "maybe", "}", " ", "«", "quote", "»", " ", "—", " dash"}},
    {"default", "emoji 🦙🚀 and symbols $+<=>^`| @#% a/b//c",
     {"emoji", " 🦙🚀", " and", " symbols", " ", "$+<=>^", "`", "|", " ", "@#%", " a", "/", "b", "//", "c"}},
    {"falcon", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'", "m", " here", ",", " it", "'", "s", " ", "202", "4", "...", " ", "\"", "quotes", "\"", " and", " ", "'", "THEY", "'", "RE", "'", " ok", "?"}},
    {"falcon", "1234567 89 3.14159 ١٢٣ x",
     {"123", "456", "7", " 89", " 3", ".", "141", "59", " ١٢٣", " x"}},
    {"falcon", "emoji 🦙🚀 and symbols $+<=>^`| @#% a/b//c",
     {"emoji", " 🦙🚀", " and", " symbols", " ", "$+<=>^`|", " ", "@#%", " a", "/", "b", "//", "c"}},
    {"falcon", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+", "b", ";", " ", "//", "comment", "\n", "\t", "if", "(", "x", "){", "return", ";}", "\n"}},
    {"smollm", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " ", "2", "0", "2", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'", "RE", "'", " ok", "?"}},
    {"smollm", "1234567 89 3.14159 ١٢٣ x",
     {"1", "2", "3", "4", "5", "6", "7", " ", "8", "9", " ", "3", ".", "1", "4", "1", "5", "9", " ", "١", "٢", "٣", " x"}},
    {"smollm", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n", "\t", "and", "\r", "\n", "newlines", "  "}},
    {"deepseek-coder", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'", "m", " here", ",", " it", "'", "s", " ", "2", "0", "2", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'", "RE", "'", " ok", "?"}},
    {"deepseek-coder", "中文字符和日本語のかなカナ 한국어",
     {"中文字符和日本語のかなカナ", " ", "한국어"}},
    {"deepseek-coder", "1234567 89 3.14159 ١٢٣ x",
     {"1", "2", "3", "4", "5", "6", "7", " ", "8", "9", " ", "3", ".", "1", "4", "1", "5", "9", " ", "١", "٢", "٣", " x"}},
    {"deepseek-coder", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n", "\n", "\tand", "\r", "\n", "newlines", "  "}},
    {"deepseek-coder", "tab\tsep\xE3\x80\x80""ideographic\xC2\xA0""nbsp \xE2\x80\x83""em",
     {"tab", "\tsep", "\xE3\x80\x80""ideographic", "\xC2\xA0""nbsp", " ", "\xE2\x80\x83""em"}},
    {"deepseek-llm", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'", "m", " here", ",", " it", "'", "s", " ", "2024", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'", "RE", "'", " ok", "?"}},
    {"deepseek-llm", "Café naïve ÉCOLE ÀbC éÉ straße e\xCC\x81""té",
     {"Caf", "é", " na", "ï", "ve", " É", "COLE", " À", "bC", " éÉ", " stra", "ß", "e", " e", "\xCC\x81", "t", "é"}},
    {"deepseek-llm", "中文字符和日本語のかなカナ 한국어",
     {"中文字符和日本語のかなカナ", " ", "한국어"}},
    {"deepseek-llm", "1234567 89 3.14159 ١٢٣ x",
     {"1234567", " ", "89", " ", "3", ".", "14159", " ", "١٢٣", " x"}},
    {"deepseek-llm", "  ends with spaces   ",
     {" ", " ends", " with", " spaces", "   "}},
    {"deepseek-llm", "tab\tsep\xE3\x80\x80""ideographic\xC2\xA0""nbsp \xE2\x80\x83""em",
     {"tab", "\tsep", "\xE3\x80\x80""ideographic", "\xC2\xA0""nbsp", " ", "\xE2\x80\x83""em"}},
    {"deepseek-llm", "wait...what?! (yes) [no] {maybe} «quote» — dash",
     {"wait", "...", "what", "?!", " (", "yes", ")", " [", "no", "]", " {", "maybe", "}", " «", "quote", "» ", "—", " dash"}},
    {"deepseek-v3", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'m", " here", ",", " it", "'s", " ", "202", "4", "...", " \"", "quotes", "\"", " and", " '", "THEY", "'RE", "'", " ok", "?"}},
    {"deepseek-v3", "中文字符和日本語のかなカナ 한국어",
     {"中文字符和日本語のかなカナ", " 한국어"}},
    {"deepseek-v3", "1234567 89 3.14159 ١٢٣ x",
     {"123", "456", "7", " ", "89", " ", "3", ".", "141", "59", " ", "١٢٣", " x"}},
    {"deepseek-v3", "x:=a+b; //comment\n\tif(x){return;}\n",
     {"x", ":=", "a", "+b", ";", " //", "comment", "\n", "\tif", "(x", "){", "return", ";}\n"}},
    {"deepseek-v3", "Café naïve ÉCOLE ÀbC éÉ straße e\xCC\x81""té",
     {"Café", " naïve", " ÉCOLE", " ÀbC", " éÉ", " straße", " e\xCC\x81""té"}},
    {"poro-chat", "Hello, world. How are you?! Fine… 。ok (paren) a|b 12 345",
     {"Hello", ",", " world", ".", " How", " are", " you", "?!", " Fine", "… 。", "ok", " (", "paren", ")", " a", "|", "b", " 12", " 345"}},
    {"poro-chat", "  multiple   spaces\n\n\tand\r\nnewlines  ",
     {" ", " multiple", "  ", " spaces", "\n\n\t", "and", "\r\n", "newlines", "  "}},
    {"viking", "Hello, world. How are you?! Fine… 。ok (paren) a|b 12 345",
     {"Hello", ",", " world", ".", " How", " are", " you", "?!", " Fine", "… 。", "ok", " (", "paren", ")", " a", "|", "b", " ", "1", "2", " ", "3", "4", "5"}},
    {"chameleon", "IMGIMGABCZ <sentinel:12> IMGIMGABCDEZ    four  two\ttab",
     {"IMGIMGABCZ", " ", "<", "sentinel", ":", "1", "2", ">", " IMGIMGABCDEZ", "    ", "four", "  ", "two", "\t", "tab"}},
    {"chameleon", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello", " world", "!", " I", "'", "m", " here", ",", " it", "'", "s", " ", "2", "0", "2", "4", ".", ".", ".", " ", "\"", "quotes", "\"", " and", " ", "'", "THEY", "'", "RE", "'", " ok", "?"}},
    {"superbpe", "1234567 89 3.14159 ١٢٣ x",
     {"1", "234", "567", " ", "89", " ", "3", ".", "14", "159", " ", "١٢٣", " x"}},
    {"superbpe", "Hello world! I'm here, it's 2024... \"quotes\" and 'THEY'RE' ok?",
     {"Hello world! I'm here, it's ", "2", "024", "... \"quotes\" and 'THEY'RE' ok?"}},
};
// clang-format on

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  const std::optional<PreTokenizerSpec> spec = find_pre_tokenizer(pre);
  REQUIRE(spec.has_value());
  return pre_tokenize(text, spec->steps);
}

TEST_CASE("pre-tokenizers split like llama.cpp's regexes", "[tokenizer]") {
  for (const SplitCase& c : kCases) {
    INFO(c.pre << ": \"" << c.text << "\"");
    CHECK(split(c.pre, c.text) == c.words);
  }
}

TEST_CASE("pre-tokenizer names resolve to the right regex lists", "[tokenizer]") {
  CHECK_FALSE(find_pre_tokenizer("no-such-pre").has_value());
  CHECK_FALSE(find_pre_tokenizer("").has_value());
  // Aliases share their family's splits and flags.
  const char* text = "Hello 12345 world's";
  CHECK(split("llama3", text) == split("llama-bpe", text));
  CHECK(split("dbrx", text) == split("llama-bpe", text));
  CHECK(split("stablelm2", text) == split("qwen2", text));
  CHECK(split("starcoder", text) == split("smollm", text));
  CHECK(split("jina-v1-en", text) == split("gpt-2", text));
  CHECK(find_pre_tokenizer("llama-bpe")->ignore_merges);
  CHECK(find_pre_tokenizer("llama-bpe")->add_bos);
  CHECK_FALSE(find_pre_tokenizer("gpt-2")->ignore_merges);
  CHECK(find_pre_tokenizer("gpt-2")->clean_spaces);
  CHECK_FALSE(find_pre_tokenizer("smollm")->clean_spaces);
  CHECK(find_pre_tokenizer("chatglm-bpe")->no_bos);
}

TEST_CASE("pre-tokenize edge cases", "[tokenizer]") {
  CHECK(split("gpt-2", "").empty());
  CHECK(split("llama-bpe", " ") == std::vector<std::string>{" "});
  // Invalid UTF-8 bytes each become U+FFFD, as llama.cpp decodes them.
  CHECK(split("gpt-2", "a\xFF\x80") == std::vector<std::string>{"a", "\xEF\xBF\xBD\xEF\xBF\xBD"});
  // superbpe cuts digit runs in threes from the right with an empty-match regex.
  CHECK(split("superbpe", "1234567") == std::vector<std::string>{"1", "234", "567"});
  CHECK(split("superbpe", "123456") == std::vector<std::string>{"123", "456"});
  CHECK(split("superbpe", "12") == std::vector<std::string>{"12"});
  // [0-9]{3} leaves a short tail to merge with the text after it.
  CHECK(split("default", "12345ab") == std::vector<std::string>{"123", "45", "ab"});
  CHECK(split("falcon", "x12345") == std::vector<std::string>{"x", "123", "45"});
}

}  // namespace
}  // namespace runnel
