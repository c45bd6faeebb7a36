// Chat templates: the real templates in tests/data/templates rendered to the strings
// their models' documented formats give (as HF transformers renders them), the Jinja
// subset on small inline templates, and refusals that name the construct.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/chat/jinja.h"
#include "core/gguf/gguf.h"

namespace runnel {
namespace {

using jinja::Dict;
using jinja::List;
using jinja::Value;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string template_file(const std::string& name) {
  return read_text(std::string(RUNNEL_TEST_DATA) + "/templates/" + name);
}

// 2026-11-22 00:00:00 UTC, for templates that print today's date.
constexpr int64_t kNow = 1795305600;

struct Case {
  const char* file;
  const char* conversation;  // "full": system, user, assistant, user; "user": one user turn
  const char* bos;
  const char* eos;
  bool throws;           // the template refuses the conversation (expected = message)
  const char* expected;  // exact rendering with add_generation_prompt = true
};

const Case kCases[] = {
    {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", "full", "<|im_start|>", "<|im_end|>", false,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there, how can I help?<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"},
    {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", "user", "<|im_start|>", "<|im_end|>", false,
     "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n  Hello!  <|im_end|>\n<|im_start|>assistant\n"},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "full", "", "<|im_end|>", false,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there, how can I help?<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "user", "", "<|im_end|>", false,
     "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n  Hello!  <|im_end|>\n<|im_start|>assistant\n"},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "full", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", false,
     "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there, how can I help?<｜end▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>\n"},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "user", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", false,
     "<｜begin▁of▁sentence｜><｜User｜>  Hello!  <｜Assistant｜><think>\n"},
    {"google-gemma-2-2b-it.jinja", "full", "<bos>", "<eos>", true,
     "System role not supported"},
    {"google-gemma-2-2b-it.jinja", "user", "<bos>", "<eos>", false,
     "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n"},
    {"google-gemma-3-270m-it.jinja", "full", "<bos>", "<eos>", false,
     "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\nHi there, how can I help?<end_of_turn>\n<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"},
    {"google-gemma-3-270m-it.jinja", "user", "<bos>", "<eos>", false,
     "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", "full", "<|begin_of_text|>", "<|eot_id|>", false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there, how can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", "user", "<|begin_of_text|>", "<|eot_id|>", false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "full", "<|begin_of_text|>", "<|eot_id|>", false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 22 Nov 2026\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there, how can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "user", "<|begin_of_text|>", "<|eot_id|>", false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 22 Nov 2026\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "full", "<s>", "<|endoftext|>", false,
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n<|assistant|>\nHi there, how can I help?<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "user", "<s>", "<|endoftext|>", false,
     "<|user|>\n  Hello!  <|end|>\n<|assistant|>\n"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "full", "<s>", "</s>", false,
     "<s>[INST]Hello![/INST]Hi there, how can I help?</s>[INST]You are a helpful assistant.\n\nWhat is 2+2?[/INST]"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "user", "<s>", "</s>", false,
     "<s>[INST]  Hello!  [/INST]"},
};

std::vector<ChatMessage> conversation(const std::string& which) {
  if (which == "user") return {{"user", "  Hello!  "}};
  return {{"system", "You are a helpful assistant."},
          {"user", "Hello!"},
          {"assistant", "Hi there, how can I help?"},
          {"user", "What is 2+2?"}};
}

std::string render(const std::string& source, std::vector<std::pair<std::string, Value>> globals = {}) {
  return jinja::Template(source).render(globals, kNow);
}

}  // namespace

TEST_CASE("chat: real templates render their documented formats", "[chat]") {
  for (const Case& c : kCases) {
    INFO(c.file << " / " << c.conversation);
    ChatTemplate t = ChatTemplate::parse(template_file(c.file), c.bos, c.eos);
    t.set_now(kNow);
    if (c.throws) {
      REQUIRE_THROWS_WITH(t.apply(conversation(c.conversation), true), c.expected);
    } else {
      CHECK(t.apply(conversation(c.conversation), true) == c.expected);
    }
  }
}

TEST_CASE("chat: every template file is covered", "[chat]") {
  // A template added to tests/data/templates needs its expected strings here.
  const char* kFiles[] = {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja",
                          "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "google-gemma-2-2b-it.jinja",
                          "google-gemma-3-270m-it.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                          "meta-llama-Llama-3.2-3B-Instruct.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
                          "mistralai-Mistral-Nemo-Instruct-2407.jinja"};
  for (const char* f : kFiles) {
    int n = 0;
    for (const Case& c : kCases) n += std::string(c.file) == f;
    INFO(f);
    CHECK(n == 2);
  }
}

TEST_CASE("chat: generation prompt is added only when asked", "[chat]") {
  ChatTemplate t = ChatTemplate::parse(template_file("HuggingFaceTB-SmolLM2-135M-Instruct.jinja"));
  const std::vector<ChatMessage> m = {{"system", "S"}, {"user", "U"}};
  CHECK(t.apply(m, false) == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
  CHECK(t.apply(m, true) == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat: Gemma refuses roles that do not alternate, with the template's message", "[chat]") {
  for (const char* f : {"google-gemma-2-2b-it.jinja", "google-gemma-3-270m-it.jinja"}) {
    INFO(f);
    ChatTemplate t = ChatTemplate::parse(template_file(f), "<bos>", "<eos>");
    REQUIRE_THROWS_AS(t.apply({{"user", "a"}, {"user", "b"}}, true), ChatTemplateError);
    REQUIRE_THROWS_WITH(t.apply({{"user", "a"}, {"user", "b"}}, true),
                        "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

namespace {

Value weather_tools() {
  Dict city;
  city.set("type", "string");
  city.set("description", "City name");
  Dict days;
  days.set("type", "integer");
  days.set("description", "How many days");
  Dict props;
  props.set("city", Value(city));
  props.set("days", Value(days));
  Dict params;
  params.set("type", "object");
  params.set("properties", Value(props));
  params.set("required", Value(List{Value("city")}));
  Dict fn;
  fn.set("name", "get_weather");
  fn.set("description", "Get the weather");
  fn.set("parameters", Value(params));
  Dict tool;
  tool.set("type", "function");
  tool.set("function", Value(fn));
  return Value(List{Value(tool)});
}

std::vector<std::pair<std::string, Value>> tool_globals() {
  Dict user;
  user.set("role", "user");
  user.set("content", "Weather in Paris?");
  return {{"messages", Value(List{Value(user)})},
          {"add_generation_prompt", Value(true)},
          {"bos_token", Value("<|begin_of_text|>")},
          {"eos_token", Value("<|im_end|>")},
          {"tools", weather_tools()}};
}

}  // namespace

TEST_CASE("chat: tool-use templates (macros, recursion, tojson, items)", "[chat]") {
  CHECK(render(template_file("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"), tool_globals()) ==
        "<|begin_of_text|><|im_start|>system\nYou are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. You may call one or more functions to assist with the user query. Don't make assumptions about what values to plug into functions. Here are the available tools: <tools> {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"get_weather(city: str, days: int) - Get the weather\n\n    Args:\n        city(str): City name        days(int): How many days\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"description\": \"City name\"}, \"days\": {\"type\": \"integer\", \"description\": \"How many days\"}}, \"required\": [\"city\"]}} </tools>Use the following pydantic model json schema for each tool call you will make: {\"properties\": {\"name\": {\"title\": \"Name\", \"type\": \"string\"}, \"arguments\": {\"title\": \"Arguments\", \"type\": \"object\"}}, \"required\": [\"name\", \"arguments\"], \"title\": \"FunctionCall\", \"type\": \"object\"}}\nFor each function call return a json object with function name and arguments within <tool_call></tool_call> XML tags as follows:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-dict>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render(template_file("Qwen-Qwen2.5-7B-Instruct.jinja"), tool_globals()) == "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"description\": \"City name\"}, \"days\": {\"type\": \"integer\", \"description\": \"How many days\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render(template_file("meta-llama-Llama-3.1-8B-Instruct.jinja"), tool_globals()) == "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Get the weather\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\",\n                    \"description\": \"City name\"\n                },\n                \"days\": {\n                    \"type\": \"integer\",\n                    \"description\": \"How many days\"\n                }\n            },\n            \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("chat: from_model uses the GGUF template and the tokenizer's BOS/EOS", "[chat]") {
  const std::string bytes = read_text(std::string(RUNNEL_TEST_DATA) + "/tokenizer/ggml-vocab-llama-spm.gguf");
  GgufFile file = GgufFile::parse(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "vocab");
  GgufMetadata md = file.metadata();
  const auto tok = Tokenizer::from_metadata(md);
  SECTION("no template: ChatML") {
    GgufMetadata plain = md;
    if (plain.has("tokenizer.chat_template")) {
      // (the vocab file carries none; keep the test honest if that changes)
      SUCCEED("vocab file has a template");
      return;
    }
    const ChatTemplate t = ChatTemplate::from_model(plain, *tok);
    CHECK(t.source() == kChatMlTemplate);
    CHECK(t.apply({{"user", "hi"}}, true) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  }
  SECTION("template from metadata") {
    GgufValue v;
    v.type = GgufType::STRING;
    v.value = std::string("{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}");
    md.set("tokenizer.chat_template", v);
    const ChatTemplate t = ChatTemplate::from_model(md, *tok);
    CHECK(t.bos_token() == tok->token_text(tok->bos()));
    CHECK(t.apply({{"user", "x"}}, false) == tok->token_text(tok->bos()) + "[x]" + tok->token_text(tok->eos()));
  }
}

TEST_CASE("chat: the real SmolLM2 GGUF's template", "[chat][real]") {
  const char* path = std::getenv("RUNNEL_MODEL");
  if (!path) {
    WARN("RUNNEL_MODEL is not set: skipping");
    return;
  }
  const std::string bytes = read_text(path);
  GgufFile file = GgufFile::parse(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "model");
  const auto tok = Tokenizer::from_metadata(file.metadata());
  const ChatTemplate t = ChatTemplate::from_model(file.metadata(), *tok);
  CHECK(t.source() == template_file("HuggingFaceTB-SmolLM2-135M-Instruct.jinja"));
  CHECK(t.apply({{"user", "Hi"}}, true) ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("jinja: expressions and operators", "[chat]") {
  CHECK(render("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}") ==
        "7|9|3|-4|1|2|1024");
  CHECK(render("{{ 7 / 2 }}|{{ 1.0 }}|{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 2.5e-5 }}") ==
        "3.5|1.0|0.30000000000000004|1e+20|2.5e-05");
  CHECK(render("{{ 'a' ~ 1 ~ none }}|{{ 'ab' + 'cd' }}|{{ 'x' * 3 }}|{{ [1] + [2] }}") == "a1None|abcd|xxx|[1, 2]");
  CHECK(render("{{ true and 'y' }}|{{ 0 or 'z' }}|{{ not '' }}|{{ 1 if false else 2 }}|{{ 'q' if false }}|") ==
        "y|z|True|2||");
  CHECK(render("{{ 'ell' in 'hello' }}|{{ 3 in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 'z' not in 'abc' }}") ==
        "True|False|True|True");
  CHECK(render("{{ [1, 2, 3][1:] }}|{{ [1, 2, 3][-1] }}|{{ 'abcdef'[::2] }}|{{ 'abc'[::-1] }}|{{ [1,2][5] }}") ==
        "[2, 3]|3|ace|cba|");
  CHECK(render("{{ {'a': 1, 'b': [true, none]} | tojson }}") == "{\"a\": 1, \"b\": [true, null]}");
  CHECK(render("{{ {'a': 'é\"\n'} | tojson(indent=2) }}") == "{\n  \"a\": \"é\\\"\\n\"\n}");
  CHECK(render("{{ 'adjacent' ' strings' }}") == "adjacent strings");
}

TEST_CASE("jinja: undefined values render empty and are falsy", "[chat]") {
  CHECK(render("[{{ nothing }}][{{ nothing.attr }}][{% if nothing %}x{% endif %}]") == "[][][]");
  CHECK(render("{{ x is defined }}|{{ x is undefined }}|{{ none is none }}|{{ x | default('d') }}") ==
        "False|True|True|d");
  CHECK(render("{{ '' | default('d', true) }}|{{ 'v' | default('d') }}") == "d|v");
}

TEST_CASE("jinja: loops, loop variables, scoping, namespace", "[chat]") {
  CHECK(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}") ==
        "11,22,33");
  CHECK(render("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}") == "a=1;b=2;");
  CHECK(render("{% for k, v in {'a': 1} | items %}{{ k }}{{ v }}{% endfor %}") == "a1");
  CHECK(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{% endfor %}") == "24");
  CHECK(render("{% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "012");
  CHECK(render("{% for x in range(4) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}") == "02");
  CHECK(render("{% for x in [1, 2] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}") == "-2;1-;");
  // set inside a loop does not leak; namespace attributes do.
  CHECK(render("{% set c = 0 %}{% for x in [1, 2] %}{% set c = c + x %}{% endfor %}{{ c }}") == "0");
  CHECK(render("{% set ns = namespace(c=0) %}{% for x in [1, 2] %}{% set ns.c = ns.c + x %}{% endfor %}{{ ns.c }}") ==
        "3");
  CHECK(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}") == "5");
}

TEST_CASE("jinja: filters and methods", "[chat]") {
  CHECK(render("{{ '  a b  ' | trim }}|{{ 'Ab' | upper }}|{{ 'Ab' | lower }}|{{ 'hello world' | title }}|"
               "{{ 'hELLO' | capitalize }}") == "a b|AB|ab|Hello World|Hello");
  CHECK(render("{{ 'a-b-c' | replace('-', '+') }}|{{ [1, 2, 3] | length }}|{{ [3, 1] | first }}|{{ [3, 1] | last }}|"
               "{{ ['a', 'b'] | join(', ') }}") == "a+b+c|3|3|1|a, b");
  CHECK(render("{{ '  x ' .strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}|"
               "{{ 'abc'.endswith('bc') }}|{{ 'x</think>y'.split('</think>')[-1] }}") ==
        "x|['a', 'b', '', 'c']|['a', 'b']|True|True|y");
  CHECK(render("{{ {'a': 1}.get('a') }}|{{ {'a': 1}.get('b', 2) }}|{{ {'a': 1}.keys() }}") == "1|2|['a']");
  CHECK(render("{% set l = [] %}{% set _ = l.append(3) %}{{ l }}") == "[3]");
  CHECK(render("{{ [{'r': 'u', 'n': 1}, {'r': 's', 'n': 2}] | selectattr('r', 'equalto', 's') | map(attribute='n') | list }}") ==
        "[2]");
  CHECK(render("{{ ['a', 'code_interpreter'] | reject('equalto', 'code_interpreter') | join(',') }}") == "a");
  CHECK(render("{{ '<b>' | e }}|{{ 3 | string }}|{{ '42' | int + 1 }}|{{ [2, 1, 2] | unique | list }}|"
               "{{ [3, 1, 2] | sort }}") == "&lt;b&gt;|3|43|[2, 1]|[1, 2, 3]");
  CHECK(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A') }}") ==
        "22 Nov 2026|2026-11-22 00:00:00 Sunday");
}

TEST_CASE("jinja: macros with defaults, keyword arguments and recursion", "[chat]") {
  CHECK(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
               "{{ greet('A') }} {{ greet('B', punct='?') }}") == "Hi A! Hi B?");
  CHECK(render("{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}") ==
        "3210");
}

TEST_CASE("jinja: whitespace control (trim_blocks, lstrip_blocks, - markers)", "[chat]") {
  CHECK(render("a\n  {% if true %}\n  b\n  {% endif %}\nc") == "a\n  b\nc");
  CHECK(render("a  {{- ' b ' -}}  c") == "a b c");
  CHECK(render("x\n{#- comment -#}\ny") == "xy");
  CHECK(render("{% for x in [1, 2] %}\n{{ x }}\n{% endfor %}") == "1\n2\n");
  CHECK(render("a {%+ if true %}b{% endif %}") == "a b");
}

TEST_CASE("jinja: unsupported constructs fail to load, naming the construct", "[chat]") {
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{{ x | wordcount }}"), Catch::Contains("unsupported filter 'wordcount'"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{% include 'x' %}"), Catch::Contains("unsupported tag 'include'"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{% if x %}a"), Catch::Contains("unclosed block"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{{ x is prime }}"), Catch::Contains("unsupported test 'prime'"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("line1\n{{ 'abc }}"), Catch::Contains("line 2"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{% endfor %}"), Catch::Contains("without a matching opening tag"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{{ 1 + }}"), Catch::Contains("expected an expression"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{{ x"), Catch::Contains("unclosed"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse("{% set x %}y{% endset %}"), Catch::Contains("block 'set'"));
}

TEST_CASE("jinja: runtime errors are ChatTemplateError, never a wrong rendering", "[chat]") {
  const auto apply = [](const char* src) { return ChatTemplate::parse(src).apply({{"user", "u"}}, true); };
  REQUIRE_THROWS_AS(apply("{{ 'a' + 1 }}"), ChatTemplateError);
  REQUIRE_THROWS_WITH(apply("{{ 'a' + 1 }}"), Catch::Contains("unsupported operand types for +: string and integer"));
  REQUIRE_THROWS_WITH(apply("{{ raise_exception('bad ' + messages[0].role) }}"), "bad user");
  REQUIRE_THROWS_WITH(apply("{{ undefined_fn() }}"), Catch::Contains("unknown function 'undefined_fn'"));
  REQUIRE_THROWS_WITH(apply("{{ 1 // 0 }}"), Catch::Contains("division by zero"));
  REQUIRE_THROWS_WITH(apply("{% for m in 5 %}{% endfor %}"), Catch::Contains("cannot loop over a integer"));
}

// Found by fuzzing (tests/fuzz/corpus/chat_messages/regression-macro-recursion): a tool
// schema that sends Hermes' recursive json_to_python_type macro round forever overflowed
// the stack. Macro calls nest at most 64 deep, like Python's RecursionError.
// Thousands of "(" (tests/fuzz/corpus/jinja/regression-deep-nesting) or unary minuses
// overflowed the parser's stack; expressions nest at most 100 levels.
TEST_CASE("jinja: expressions nested too deep fail to load, naming the limit", "[chat]") {
  const auto nested = [](int depth, const std::string& open, const std::string& close) {
    std::string s = "{{ ";
    for (int i = 0; i < depth; ++i) s += open;
    s += "1";
    for (int i = 0; i < depth; ++i) s += close;
    return s + " }}";
  };
  REQUIRE_THROWS_WITH(ChatTemplate::parse(nested(4000, "(", ")")),
                      Catch::Contains("expressions nest deeper than 100 levels"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse(nested(4000, "[", "]")), Catch::Contains("nest deeper than 100"));
  REQUIRE_THROWS_WITH(ChatTemplate::parse(nested(8000, "-", "")), Catch::Contains("nest deeper than 100"));
  CHECK(ChatTemplate::parse(nested(40, "(", ")")).apply({{"user", "u"}}, true) == "1");
  CHECK(ChatTemplate::parse(nested(41, "-", "")).apply({{"user", "u"}}, true) == "-1");
}

TEST_CASE("jinja: endless macro recursion is an error, bounded recursion renders", "[chat]") {
  const auto apply = [](const char* src) { return ChatTemplate::parse(src).apply({{"user", "u"}}, true); };
  REQUIRE_THROWS_WITH(apply("{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}"),
                      Catch::Contains("macro 'f' calls nest deeper than 64"));
  CHECK(apply("{% macro down(n) %}{{ n }}{% if n > 0 %}{{ down(n - 1) }}{% endif %}{% endmacro %}{{ down(63) }}")
            .ends_with("210"));
  REQUIRE_THROWS_AS(apply("{% macro down(n) %}{% if n > 0 %}{{ down(n - 1) }}{% endif %}{% endmacro %}{{ down(64) }}"),
                    ChatTemplateError);
}

}  // namespace runnel
