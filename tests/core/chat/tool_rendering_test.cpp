// Tool definitions and tool conversations rendered by the real templates in
// tests/data/templates. The expected strings follow each template's text (read by hand:
// the Qwen2.5 assistant branch prints '\n<tool_call>\n{"name": "' + name + '",
// "arguments": ' + arguments|tojson + '}\n</tool_call>', and so on).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"

namespace runnel {
namespace {

std::string template_text(const std::string& name) {
  std::ifstream in(std::string(RUNNEL_TEST_DATA) + "/templates/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatOptions weather_tools() {
  ChatOptions o;
  o.tools = {{"get_weather", "Get the weather",
              R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]})"}};
  return o;
}

// system, user, assistant calling get_weather (no content), the tool's answer, the
// assistant's reply, user.
std::vector<ChatMessage> weather_conversation() {
  return {
      {"system", "You are a bot."},
      {"user", "Weather in Paris?"},
      {"assistant", "", {{"get_weather", R"({"city": "Paris", "days": 2})", "call00001"}}},
      {"tool", R"({"temp": 20})", {}, "call00001", "get_weather"},
      {"assistant", "It is 20 degrees."},
      {"user", "Thanks"},
  };
}

}  // namespace

TEST_CASE("tools: templates' caps are found by probing, as llama.cpp's are", "[tools]") {
  const auto caps = [](const char* file) { return ChatTemplate::parse(template_text(file), "<s>", "</s>").caps(); };
  // Qwen2.5 prints `arguments | tojson` and skips an empty/None content.
  CHECK(caps("Qwen-Qwen2.5-7B-Instruct.jinja").object_arguments);
  CHECK(caps("Qwen-Qwen2.5-7B-Instruct.jinja").null_tool_call_content);
  // DeepSeek-R1 concatenates the arguments as a string, and renders calls only when
  // content is None.
  CHECK_FALSE(caps("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja").object_arguments);
  CHECK(caps("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja").null_tool_call_content);
  // SmolLM2 never shows tool calls: strings, and "" for content (None + str would fail).
  CHECK_FALSE(caps("HuggingFaceTB-SmolLM2-135M-Instruct.jinja").object_arguments);
  CHECK_FALSE(caps("HuggingFaceTB-SmolLM2-135M-Instruct.jinja").null_tool_call_content);
  CHECK(caps("mistralai-Mistral-Nemo-Instruct-2407.jinja").object_arguments);
  CHECK(caps("meta-llama-Llama-3.1-8B-Instruct.jinja").object_arguments);
}

TEST_CASE("tools: Qwen2.5 renders tools, calls and tool responses", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("Qwen-Qwen2.5-7B-Instruct.jinja"), "", "<|im_end|>");
  CHECK(t.apply(weather_conversation(), true, weather_tools()) ==
        "<|im_start|>system\nYou are a bot.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}, \"required\": [\"city\"]}}}\n"
        "</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
        "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n{\"temp\": 20}\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nIt is 20 degrees.<|im_end|>\n"
        "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n");

  // Parallel calls with content before them; consecutive tool messages share one user turn.
  const std::vector<ChatMessage> parallel = {
      {"user", "Paris and Rome?"},
      {"assistant", "Checking both.",
       {{"get_weather", R"({"city":"Paris"})", "a"}, {"get_weather", R"({"city":"Rome"})", "b"}}},
      {"tool", "20", {}, "a"},
      {"tool", "25", {}, "b"},
  };
  CHECK(t.apply(parallel, false) ==
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nParis and Rome?<|im_end|>\n"
        "<|im_start|>assistant\nChecking both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
        "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n20\n</tool_response>\n<tool_response>\n25\n</tool_response><|im_end|>\n");
}

TEST_CASE("tools: Mistral Nemo renders [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS]", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("mistralai-Mistral-Nemo-Instruct-2407.jinja"), "<s>", "</s>");
  CHECK(t.apply(weather_conversation(), true, weather_tools()) ==
        "<s>[INST]Weather in Paris?[/INST]"
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}, \"id\": \"call00001\"}]</s>"
        "[TOOL_RESULTS]{\"content\": {\"temp\": 20}, \"call_id\": \"call00001\"}[/TOOL_RESULTS]"
        "It is 20 degrees.</s>"
        "[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}, "
        "\"required\": [\"city\"]}}}][/AVAILABLE_TOOLS][INST]You are a bot.\n\nThanks[/INST]");
  // The template's own check: Mistral ids are 9 characters.
  std::vector<ChatMessage> bad = weather_conversation();
  bad[2].tool_calls[0].id = "call_1";
  CHECK_THROWS_WITH(t.apply(bad, true, weather_tools()), "Tool call IDs should be alphanumeric strings with length 9!");
}

TEST_CASE("tools: Llama 3.1 renders a call as JSON and the result as ipython", "[tools]") {
  ChatTemplate t = ChatTemplate::parse(template_text("meta-llama-Llama-3.1-8B-Instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>");
  const std::vector<ChatMessage> m = {
      {"user", "Weather in Paris?"},
      {"assistant", "", {{"get_weather", R"({"city": "Paris"})", "call00001"}}},
      {"tool", "20 degrees", {}, "call00001"},
  };
  // No tools: the plain system header; the call as {"name", "parameters"} closed by
  // <|eot_id|>; a string result goes through tojson (a string is iterable in Jinja).
  CHECK(t.apply(m, true) ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
        "<|start_header_id|>ipython<|end_header_id|>\n\n\"20 degrees\"<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Llama 3.1 takes one call per message.
  std::vector<ChatMessage> two = m;
  two[1].tool_calls.push_back({"get_weather", R"({"city": "Rome"})", "call00002"});
  CHECK_THROWS_WITH(t.apply(two, true), "This model only supports single tool-calls at once!");
}

TEST_CASE("tools: Hermes 3 takes string arguments as they are", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"), "<|begin_of_text|>", "<|im_end|>");
  const std::vector<ChatMessage> m = {
      {"user", "Hi"},
      {"assistant", "", {{"get_weather", R"({"city":"Paris"})", "x"}}},
      {"tool", "20", {}, "x", "get_weather"},
  };
  const std::string out = t.apply(m, false, weather_tools());
  // Object arguments go through tojson (", " and ": " separators).
  CHECK(out.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n") !=
        std::string::npos);
  // The last message: no newline after </tool_response>.
  CHECK(out.substr(out.size() - 62) == "<|im_start|>tool\n<tool_response>\n20\n</tool_response><|im_end|>");
  // A parameter without a description prints as empty: undefined|trim is "" in Jinja.
  CHECK(out.find("city(str): ") != std::string::npos);
}

TEST_CASE("tools: DeepSeek-R1 renders calls from None content and string arguments", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "<s>", "</s>");
  const std::vector<ChatMessage> m = {
      {"user", "Hi"},
      {"assistant", "", {{"get_weather", R"({"city": "Paris"})", "x"}}},
  };
  CHECK(t.apply(m, false).find("<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>") !=
        std::string::npos);
}

TEST_CASE("tools: Qwen3 renders reasoning_content of the last turn and tool calls", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("Qwen-Qwen3-0.6B.jinja"), "", "<|im_end|>");
  ChatMessage call{"assistant", "", {{"get_weather", R"({"city": "Paris"})", "x"}}};
  call.reasoning_content = "Need the weather.";
  const std::vector<ChatMessage> m = {{"user", "Weather?"}, call, {"tool", "20", {}, "x"}};
  CHECK(t.apply(m, true) ==
        "<|im_start|>user\nWeather?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nNeed the weather.\n</think>\n\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n20\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("tools: a template without tool support still renders a tool conversation", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("HuggingFaceTB-SmolLM2-135M-Instruct.jinja"), "", "<|im_end|>");
  const std::vector<ChatMessage> m = {
      {"system", "S"}, {"user", "U"}, {"assistant", "", {{"f", "{}", "x"}}}, {"tool", "R", {}, "x"}};
  CHECK(t.apply(m, false, weather_tools()) ==
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"
        "<|im_start|>tool\nR<|im_end|>\n");
}

TEST_CASE("tools: invalid JSON in arguments or parameters is an error naming it", "[tools]") {
  const ChatTemplate t = ChatTemplate::parse(template_text("Qwen-Qwen2.5-7B-Instruct.jinja"));
  const std::vector<ChatMessage> m = {{"user", "U"}, {"assistant", "", {{"f", "{oops", "x"}}}};
  CHECK_THROWS_WITH(t.apply(m, false), "chat template: the arguments of tool call 'f' is not valid JSON: {oops");
  ChatOptions o;
  o.tools = {{"g", "", "[1,"}};
  CHECK_THROWS_WITH(t.apply({{"user", "U"}}, true, o), "chat template: the parameters of tool 'g' is not valid JSON: [1,");
}

}  // namespace runnel
