// runnel run's output constraints through the CLI: --grammar / --grammar-file on the
// tiny model, --json-schema on SmolLM2, and their errors.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/core/model/tiny_model.h"
#include "tests/native/scratch_dir.h"
#include "tests/test_models.h"

namespace runnel {
namespace {

using test::check_usage_error;
using test::CliResult;
using test::runnel_cli;
using test::ScratchDir;

}  // namespace

TEST_CASE("run --grammar / --grammar-file constrain the output; bad grammars name line and column",
          "[cli][grammar]") {
  ScratchDir dir;
  const test::TinyModel m = test::build_tiny_model({});
  const std::string model = dir.file("tiny.gguf");
  {
    std::ofstream f(model, std::ios::binary);
    f.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
  }
  // The tiny vocabulary: " a".." z", "a".."k". A finite language ends the run by itself.
  const std::string gbnf = "root ::= \" \" [a-e] [f-h]{1,4} \" z\"";
  const std::regex reply("^a b c [a-e][f-h]{1,4} z\n$");
  for (const char* sampling : {"--temp 0", "--temp 1.5 --top-k 0 --seed 5", "--temp 1.5 --top-k 0 --seed 9"}) {
    const CliResult r = runnel_cli(dir, "run -m '" + model + "' -p 'a b c' -n 20 " + sampling + " --grammar '" +
                                            gbnf + "'");
    INFO(sampling << ": " << r.err);
    REQUIRE(r.status == 0);
    CHECK(std::regex_match(r.out, reply));
    CHECK(r.err.find("ms/token (masks)") != std::string::npos);
  }
  // chat constrains every reply (stdin piped: stdout holds only the replies).
  const std::string input = dir.file("turns.txt");
  std::ofstream(input) << "a b\n";  // one turn: the tiny context holds no second
  const CliResult chat =
      runnel_cli(dir, "chat -m '" + model + "' -n 20 --temp 0 --grammar '" + gbnf + "'", "", input);
  INFO(chat.err);
  REQUIRE(chat.status == 0);
  CHECK(std::regex_match(chat.out, std::regex("^ [a-e][f-h]{1,4} z\n$")));

  const std::string file = dir.file("g.gbnf");
  std::ofstream(file) << "# one of two words\nroot ::= word\nword ::= \"abc\" | \" hi\"\n";
  const CliResult from_file = runnel_cli(dir, "run -m '" + model + "' -p 'a b c' -n 20 --grammar-file '" + file + "'");
  INFO(from_file.err);
  REQUIRE(from_file.status == 0);
  CHECK((from_file.out == "a b cabc\n" || from_file.out == "a b c hi\n"));

  std::ofstream(file) << "root ::= word\nword ::= \"abc\" | [z-a]\n";
  check_usage_error(dir, "run -m '" + model + "' -p hi --grammar-file '" + file + "'",
                    "--grammar-file " + file +
                        ": line 2, column 19: expected a range whose end is not below its start, found U+007A-U+0061");
  check_usage_error(dir, "run -m '" + model + "' -p hi --grammar 'root ::= [a-z'",
                    "--grammar: line 1, column 14: expected ']' to close the character class that starts at "
                    "line 1, column 10");
  check_usage_error(dir, "run -m '" + model + "' -p hi --grammar 'root ::= x' --json-schema '{}'",
                    "--grammar and --json-schema: give at most one of them");
  check_usage_error(dir, "run -m '" + model + "' -p hi --grammar ''", "--grammar: must not be empty");
  check_usage_error(dir, "run -m '" + model + "' -p hi --grammar-file '" + dir.file("none.gbnf") + "'",
                    "--grammar-file: cannot read '" + dir.file("none.gbnf") + "'");
  check_usage_error(dir, "chat -m '" + model + "' --grammar 'root ::= [a-z'",
                    "--grammar: line 1, column 14: expected ']' to close the character class that starts at "
                    "line 1, column 10");
  const CliResult help = runnel_cli(dir, "run --help");
  CHECK(help.out.find("--grammar TEXT") != std::string::npos);
  CHECK(help.out.find("--grammar-file FILE") != std::string::npos);
  CHECK(help.out.find("--json-schema JSON") != std::string::npos);
  CHECK(runnel_cli(dir, "chat --help").out.find("--json-schema JSON") != std::string::npos);
}

TEST_CASE("run --json-schema JSON|@FILE gives JSON valid under the schema (SmolLM2)", "[cli][grammar]") {
  const std::string model = test::kSmolLm2Path;
  if (!std::filesystem::exists(model)) {
    WARN("skipped: no model at " << model);
    return;
  }
  ScratchDir dir;
  const std::string schema =
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},)"
      R"( "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false})";
  const std::string file = dir.file("schema.json");
  std::ofstream(file) << schema;
  for (const std::string& flag : {"'" + schema + "'", "@'" + file + "'"}) {
    const CliResult r = runnel_cli(dir, "run -m '" + model + "' --chat -p 'Describe a person as JSON.' -n 200 "
                                        "--temp 0 --json-schema " + flag);
    INFO(r.err);
    REQUIRE(r.status == 0);
    const nlohmann::json doc = nlohmann::json::parse(r.out);  // the reply alone, and a newline
    CHECK(doc.is_object());
    CHECK(doc.size() == 2);
    CHECK(doc.at("name").is_string());
    CHECK(doc.at("name").get<std::string>().size() <= 20);
    CHECK(doc.at("age").is_number_integer());
  }
  check_usage_error(dir, "run -m '" + model + "' -p hi --json-schema '{bad'",
                    "--json-schema: the schema is not valid JSON");
  check_usage_error(dir, "run -m '" + model + "' -p hi --json-schema @'" + dir.file("none.json") + "'",
                    "--json-schema: cannot read '" + dir.file("none.json") + "'");
}

}  // namespace runnel
