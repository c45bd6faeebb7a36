// A small command-line parser for the runnel commands: options are declared with a
// destination and a help line, then parse() fills them. Any problem (unknown flag,
// missing or malformed value) throws UsageError with a one-line message naming the
// flag and the offending text: "--temp: expected a number, got 'abc'".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace runnel::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  // usage: "runnel run -m FILE -p TEXT [options]"; summary: one sentence.
  ArgParser(std::string usage, std::string summary);

  // names: "-n, --n-predict" (any number of comma-separated spellings).
  void flag(std::string_view names, bool* out, std::string help);
  void string_option(std::string_view names, std::string* out, std::string value_name,
                     std::string help);
  // Every occurrence appends its value to *out (repeatable: -p A -p B).
  void string_list_option(std::string_view names, std::vector<std::string>* out, std::string value_name,
                          std::string help);
  void int_option(std::string_view names, int* out, std::string help);
  void u64_option(std::string_view names, uint64_t* out, std::string help);
  void float_option(std::string_view names, float* out, std::string help);
  // A bare argument (the n-th one in order of declaration).
  void positional(std::string name, std::string* out, std::string help);

  // Fills the destinations from args (without the program and command names).
  // "--name=value" and "--name value" both work. -h/--help is always known.
  void parse(const std::vector<std::string>& args);

  bool help_requested() const { return help_; }
  // parse(), then on -h/--help prints help_text() to stdout and returns true (the
  // command then exits 0).
  bool parse_or_print_help(const std::vector<std::string>& args);
  // Whether an option (any of its spellings) appeared on the command line.
  bool seen(std::string_view name) const;
  std::string help_text() const;

 private:
  enum class Kind { Flag, String, StringList, Int, U64, Float };
  struct Option {
    std::vector<std::string> names;
    Kind kind;
    void* out;
    std::string value_name;
    std::string help;
    bool seen = false;
  };
  struct Positional {
    std::string name;
    std::string* out;
    std::string help;
  };

  void add(std::string_view names, Kind kind, void* out, std::string value_name, std::string help);
  Option* find(std::string_view name);
  const Option* find(std::string_view name) const;
  static void store(const Option& opt, std::string_view name, const std::string& value);

  std::string usage_, summary_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  bool help_ = false;
};

// Number parsing with the messages above; name is the flag as the user wrote it.
int parse_int(std::string_view name, const std::string& text);
uint64_t parse_u64(std::string_view name, const std::string& text);
float parse_float(std::string_view name, const std::string& text);

// A -f text as llama.cpp's perplexity and imatrix tools read it: the file's bytes less
// one trailing newline (UsageError "-f: cannot read 'PATH'").
std::string read_text_file(const std::string& path);

}  // namespace runnel::cli
