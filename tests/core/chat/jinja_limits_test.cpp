// The bounds of one render (core/chat/jinja_value.h): chat templates ship inside model
// files and messages come from clients, so each hostile template here must fail with a
// JinjaError naming the bound, fast (each runs in milliseconds, also under ASan), while
// the real templates render far below every bound. Each hostile template is also a
// regression input of the jinja fuzz target (tests/fuzz/corpus/jinja/regression-limit-*).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/builtin_templates.h"
#include "core/chat/chat_template.h"
#include "core/chat/jinja.h"
#include "core/runtime/engine.h"
#include "core/runtime/request.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

using jinja::Dict;
using jinja::List;
using jinja::Value;

using Globals = std::vector<std::pair<std::string, Value>>;

constexpr int64_t kNow = 1795305600;

std::string render(const std::string& source, const Globals& globals = {}, int64_t* steps = nullptr) {
  return jinja::Template(source).render(globals, kNow, steps);
}

// What render() throws for `source`, or "(rendered)".
std::string error_of(const std::string& source, const Globals& globals = {}) {
  try {
    render(source, globals);
  } catch (const jinja::JinjaError& e) {
    return e.what();
  }
  return "(rendered)";
}

// `n` messages of `n_bytes` each, user and assistant in turn.
Value conversation(int n, size_t n_bytes) {
  List messages;
  for (int i = 0; i < n; ++i) {
    Dict m;
    m.set("role", Value(i % 2 ? "assistant" : "user"));
    m.set("content", Value(std::string(n_bytes, static_cast<char>('a' + i % 26))));
    messages.emplace_back(std::move(m));
  }
  return Value(std::move(messages));
}

Globals chat_globals(Value messages) {
  return {{"messages", std::move(messages)}, {"add_generation_prompt", Value(true)}, {"bos_token", Value("<s>")},
          {"eos_token", Value("</s>")},      {"tools", Value::none()}};
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("jinja limits: range() has at most 100000 items, computed without overflow", "[chat][jinja-limits]") {
  CHECK(error_of("{% for i in range(10**9) %}{% endfor %}") ==
        "chat template: range() would make 1000000000 items; at most 100000 are allowed");
  CHECK(render("{{ range(100000) | length }}") == "100000");
  // stop - start and the last i += step went past 64 bits (undefined behaviour).
  CHECK(render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 10**17) | length }}") == "185");
  CHECK(render("{{ range(9223372036854775806, 9223372036854775807, 10**18) | list }}") ==
        "[9223372036854775806]");
  CHECK(render("{{ range(5, 0, -2) | list }}") == "[5, 3, 1]");
}

TEST_CASE("jinja limits: a string may not outgrow 16 MiB, checked before it is built", "[chat][jinja-limits]") {
  CHECK(error_of("{{ 'x' * 10**12 }}") ==
        "chat template: '*' would make a string of 1 x 1000000000000 bytes; at most 16777216 are allowed at line 1");
  CHECK(render("{{ '' * 10**18 }}|{{ 'ab' * 3 }}|{{ 'ab' * -1 }}") == "|ababab|");
  CHECK(render("{{ ('abc' * 1000000) | length }}") == "3000000");
  CHECK(error_of("{% set s = 'x' * 9000000 %}{{ s + s }}") ==
        "chat template: '+' would make a string of 18000000 bytes; at most 16777216 are allowed");
  CHECK(error_of("{% set s = 'x' * 9000000 %}{{ s ~ s }}") ==
        "chat template: '~' would make a string of 18000000 bytes; at most 16777216 are allowed");
  CHECK(error_of("{% set s = 'x' * 1000000 %}{{ s.replace('x', s) }}") ==
        "chat template: str.replace() would make a string of 17000000 bytes; at most 16777216 are allowed");
  CHECK(error_of("{{ 'a\nb' | indent(10**12) }}") ==
        "chat template: filter 'indent' would make a string of 1000000000000 bytes; at most 16777216 are allowed");
  CHECK(error_of("{{ [1] | tojson(indent=10**12) }}") ==
        "chat template: tojson would make a string of 16777218 bytes; at most 16777216 are allowed");
  CHECK(error_of("{% set s = 'x' * 6000000 %}{{ [s, s, s] | join }}") ==
        "chat template: filter 'join' would make a string of 18000000 bytes; at most 16777216 are allowed");
}

TEST_CASE("jinja limits: a list may not outgrow 100000 items", "[chat][jinja-limits]") {
  CHECK(error_of("{{ ('x' * 200000) | list | length }}") ==
        "chat template: filter 'list' would make a list of 200000 items; at most 100000 are allowed");
  CHECK(error_of("{% for c in 'x' * 200000 %}{% endfor %}") ==
        "chat template: looping over a string would make a list of 200000 items; at most 100000 are allowed");
  CHECK(error_of("{{ (' x' * 150000).split() | length }}") ==
        "chat template: str.split() would make a list of 150000 items; at most 100000 are allowed");
  CHECK(error_of("{% set l = range(100000) %}{{ l + [1] }}") ==
        "chat template: '+' would make a list of 100001 items; at most 100000 are allowed");
  CHECK(error_of("{% set l = range(100000) %}{{ l.append(1) }}") ==
        "chat template: list.append() would make a list of 100001 items; at most 100000 are allowed");
  CHECK(render("{{ ('x' * 100000) | list | length }}") == "100000");
  // Filters that need no list of characters take strings of any length.
  CHECK(render("{% set s = 'ab' * 100000 %}{{ s | first }}{{ s | last }}{{ (s | reverse)[:3] }}") == "abbab");
  CHECK(render("{{ ' a  b c '.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a b c'.split(None, 1) }}{{ 'a,b,c'.split(',', 1) }}") ==
        "['a', 'b', 'c']['a', 'b', '', 'c']['a', 'b c']['a', 'b,c']");
}

TEST_CASE("jinja limits: the rendered text may not outgrow 16 MiB, checked as it grows", "[chat][jinja-limits]") {
  // A 5 MiB message (within a server's 8 MiB body) printed four times.
  const Globals globals = chat_globals(conversation(1, 5u << 20));
  const std::string four = "{% for m in messages %}{% for i in range(4) %}{{ m.content }}{% endfor %}{% endfor %}";
  CHECK(error_of(four, globals) ==
        "chat template: the rendered text would make a string of 20971520 bytes; at most 16777216 are allowed");
  CHECK(render("{% for m in messages %}{{ m.content }}{{ m.content }}{% endfor %}", globals).size() == 10u << 20);
}

TEST_CASE("jinja limits: a render has a step budget, so loops that multiply work end", "[chat][jinja-limits]") {
  const std::string steps = "chat template: rendering takes more than 200000 steps (a loop that runs too long, or "
                            "values too large?)";
  CHECK(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}") == steps);
  CHECK(error_of("{% for i in range(100000) %}{% for j in range(100) %}{{ j in range(1000) }}{% endfor %}{% endfor %}") ==
        steps);
  // Quadratic string building, each copy paid for.
  CHECK(error_of("{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ '" +
                 std::string(70, 'x') + "' %}{% endfor %}") == steps);
  CHECK(error_of("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}") ==
        steps);
  // Scans of a large value inside a loop, and unique's quadratic comparisons.
  CHECK(error_of("{% set s = 'ab' * 8000000 %}{% for i in range(100000) %}{{ 'z' in s }}{% endfor %}") == steps);
  CHECK(error_of("{% set l = range(100000) | list %}{% for i in range(100000) %}{% set t = l | max %}{% endfor %}") ==
        steps);
  CHECK(error_of("{{ range(100000) | unique | length }}") == steps);
  // split() and strip(chars) pay for what they scan (found by the jinja fuzz target: a
  // loop of them over one large string ran for minutes), and a long `chars` is one pass,
  // not one pass per character.
  const auto steps_of = [](const std::string& source) {
    int64_t n = 0;
    render(source, {}, &n);
    return n;
  };
  const std::string big = "{% set s = 'abcdefgh' * 100000 %}";  // 800000 bytes, 6250 steps to build
  const int64_t base_steps = steps_of(big + "{{ s | length }}");
  CHECK(steps_of(big + "{{ s.split() | length }}") - base_steps >= 3 * 6250);  // the call's copy, two passes
  CHECK(steps_of(big + "{{ s.lstrip('abcdefgh') | length }}") - base_steps >= 2 * 6250);  // the call's copy, the scan
  CHECK(steps_of(big + "{{ 'x'.strip(s) }}") - base_steps >= 6250);  // the table of `chars`
  // Recursion that doubles: each call's loop counts.
  CHECK(error_of("{% macro f(n) %}{% for i in range(1000) %}{% endfor %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}"
                 "{% endif %}{% endmacro %}{{ f(40) }}") == steps);
  // A value shared 2**60 times over: str, tojson and == walk every path.
  const std::string dag = "{% set ns = namespace(x=[1], y=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}"
                          "{% set ns.y = [ns.y, ns.y] %}{% endfor %}";
  CHECK(error_of(dag + "{{ ns.x | tojson }}") == steps);
  CHECK(error_of(dag + "{{ ns.x }}") == steps);
  CHECK(error_of(dag + "{{ ns.x == ns.y }}") == steps);
  // The budget grows with the input: 200000 + 32 per unit of the globals' weight.
  int64_t used = 0;
  render("{{ 1 }}", {}, &used);
  CHECK(used == 3);
}

TEST_CASE("jinja limits: a list or namespace cannot hold itself; nesting stops at 256 levels", "[chat][jinja-limits]") {
  // Reference counting never frees a cycle (a leak per request), and str() of one recursed
  // until the stack overflowed.
  CHECK(error_of("{% set l = [] %}{{ l.append(l) }}{{ l }}") ==
        "chat template: list.append() would put the list inside itself at line 1");
  CHECK(error_of("{% set l = [] %}{% set m = [l] %}{{ l.append(m) }}") ==
        "chat template: list.append() would put the list inside itself at line 1");
  CHECK(error_of("{% set ns = namespace(x=1) %}{% set ns.x = [1, {'a': ns}] %}") ==
        "chat template: 'set ns.x' would put the namespace inside itself at line 1");
  CHECK(render("{% set l = [1] %}{% set m = [l, l] %}{{ m.append(l) }}{{ m }}") == "None[[1], [1], [1]]");
  const std::string deep = "{% set ns = namespace(x=[]) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}{% endfor %}";
  const std::string nested = "of a value nested deeper than 256 levels (a list that contains itself?)";
  CHECK(error_of(deep + "{{ ns.x }}") == "chat template: str() " + nested);
  CHECK(error_of(deep + "{{ ns.x | tojson }}") == "chat template: tojson " + nested);
  CHECK(error_of(deep + "{{ ns.x == ns.x[0] }}") == "chat template: == " + nested);
}

TEST_CASE("jinja limits: a chain of 300000 nested lists is freed without deep recursion", "[chat][jinja-limits]") {
  // One stack frame per level overflowed the stack (a template can build such a chain
  // by appending to the innermost list in a loop).
  Value root{List{}};
  Value innermost = root;
  for (int i = 0; i < 300000; ++i) {
    Value next{List{}};
    innermost.as_list().push_back(next);
    innermost = next;
  }
  innermost = Value();
  root = Value();
  CHECK(root.is_undefined());
}

TEST_CASE("jinja limits: integer arithmetic past 64 bits is an error, not undefined behaviour", "[chat][jinja-limits]") {
  const auto overflow = [](const char* op) {
    return std::string("chat template: integer overflow in '") + op + "' (more than 64 bits)";
  };
  CHECK(error_of("{{ 9223372036854775807 + 1 }}") == overflow("+"));
  CHECK(error_of("{{ -9223372036854775807 - 2 }}") == overflow("-"));
  CHECK(error_of("{{ 4294967296 * 4294967296 }}") == overflow("*"));
  CHECK(error_of("{{ 2 ** 64 }}") == overflow("**"));
  CHECK(error_of("{{ -(-9223372036854775807 - 1) }}") == overflow("-"));
  CHECK(error_of("{{ (-9223372036854775807 - 1) // -1 }}") == overflow("//"));
  CHECK(error_of("{{ [9223372036854775807, 1] | sum }}") ==
        "chat template: filter 'sum': integer overflow (more than 64 bits) at line 1");
  CHECK(error_of("{{ 1e300 | int }}") == "chat template: filter 'int': 1e+300 does not fit in 64 bits at line 1");
  CHECK(render("{{ -9223372036854775807 - 1 }} {{ 2 ** 62 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 // -2 }}") ==
        "-9223372036854775808 4611686018427387904 -4 2 -4");
}

TEST_CASE("jinja limits: real templates render far below every bound", "[chat][jinja-limits]") {
  std::vector<std::pair<std::string, std::string>> templates;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(RUNNEL_TEST_DATA) + "/templates")) {
    if (entry.path().extension() == ".jinja") templates.emplace_back(entry.path().filename(), read_text(entry.path()));
  }
  for (const char* name : {"gemma", "phi3", "qwen3", "chatml"}) {
    templates.emplace_back(std::string("built-in ") + name, std::string(builtin_chat_template(name).source));
  }
  REQUIRE(templates.size() >= 15);
  // A render's budget: kRenderBaseSteps + kRenderStepsPerInput * the globals' weight.
  const auto budget_of = [](const Globals& globals) {
    int64_t weight = 0;
    for (const auto& [name, v] : globals) weight += jinja::deep_weight(v);
    return jinja::kRenderBaseSteps + jinja::kRenderStepsPerInput * weight;
  };
  const Globals short_chat = chat_globals(conversation(4, 30));
  const Globals long_chat = chat_globals(conversation(256, 100));
  // The largest request a server takes by default: 256 messages, 8 MiB.
  const Globals largest = chat_globals(conversation(256, 32u << 10));
  CHECK(budget_of(short_chat) < 201000);
  CHECK(budget_of(largest) > 2000000);
  for (const auto& [name, source] : templates) {
    INFO(name);
    int64_t used = 0;
    render(source, short_chat, &used);
    CHECK(used < 1000);  // measured: at most 400
    CHECK(used * 100 < budget_of(short_chat));
    render(source, long_chat, &used);
    CHECK(used * 10 < budget_of(long_chat));  // measured: at most 23000 of 257000
    const std::string out = render(source, largest, &used);
    CHECK(out.size() > (8u << 20));
    CHECK(out.size() < jinja::kMaxStringBytes / 1.9);
    CHECK(used * 5 < budget_of(largest));  // measured: at most 410000 of 2350000
  }
}

TEST_CASE("jinja limits: a model whose template breaks a bound gets a clear refusal per request", "[chat][jinja-limits]") {
  // As `runnel serve` (400, param messages) and `runnel run --chat` report it.
  const test::TinyModel m = test::build_tiny_model({});
  std::vector<GgufFile> files;
  files.push_back(GgufFile::parse(m.bytes, "tiny.gguf"));
  GgufModel model = GgufModel::join(std::move(files));
  GgufValue hostile;
  hostile.type = GgufType::STRING;
  hostile.value = std::string("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  model.metadata.set("tokenizer.chat_template", hostile);
  EngineOptions options;
  options.n_ctx = 32;
  const std::unique_ptr<Engine> engine = Engine::load(
      std::make_unique<SpanStore>(std::move(model), std::vector<std::span<const uint8_t>>{m.bytes}), options);
  const PromptFormat format(*engine);
  REQUIRE(format.has_chat_template());  // it parses; every render fails
  try {
    format.render({{"user", "hi"}});
    FAIL("the template rendered");
  } catch (const RequestError& e) {
    CHECK(e.field() == "messages");
    CHECK(std::string(e.what()).starts_with(
        "the model's chat template refused the messages: chat template: rendering takes more than 2"));
    CHECK(std::string(e.what()).ends_with(" steps (a loop that runs too long, or values too large?)"));
  }
}

}  // namespace runnel
