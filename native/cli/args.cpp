#include "native/cli/args.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>

namespace runnel::cli {
namespace {

std::vector<std::string> split_names(std::string_view names) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string_view::npos) comma = names.size();
    std::string_view n = names.substr(start, comma - start);
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
    if (!n.empty()) out.emplace_back(n);
    start = comma + 1;
  }
  return out;
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// A help description under its option: every line, not just the first, indented.
std::string indented(const std::string& help) {
  constexpr const char* kIndent = "      ";
  std::string out = kIndent;
  for (const char c : help) {
    out += c;
    if (c == '\n') out += kIndent;
  }
  return out + "\n";
}

}  // namespace

int parse_int(std::string_view name, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError(std::string(name) + ": expected an integer, got " + quoted(text));
  }
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    throw UsageError(std::string(name) + ": " + text + " is out of range");
  }
  return static_cast<int>(v);
}

uint64_t parse_u64(std::string_view name, const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError(std::string(name) + ": expected a non-negative integer, got " + quoted(text));
  }
  return v;
}

float parse_float(std::string_view name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
    throw UsageError(std::string(name) + ": expected a number, got " + quoted(text));
  }
  return v;
}

ArgParser::ArgParser(std::string usage, std::string summary)
    : usage_(std::move(usage)), summary_(std::move(summary)) {
  add("-h, --help", Kind::Flag, &help_, "", "show this help and exit");
}

void ArgParser::add(std::string_view names, Kind kind, void* out, std::string value_name,
                    std::string help) {
  options_.push_back(Option{split_names(names), kind, out, std::move(value_name), std::move(help)});
}

void ArgParser::flag(std::string_view names, bool* out, std::string help) {
  add(names, Kind::Flag, out, "", std::move(help));
}
void ArgParser::string_option(std::string_view names, std::string* out, std::string value_name,
                              std::string help) {
  add(names, Kind::String, out, std::move(value_name), std::move(help));
}

void ArgParser::string_list_option(std::string_view names, std::vector<std::string>* out,
                                   std::string value_name, std::string help) {
  add(names, Kind::StringList, out, std::move(value_name), std::move(help));
}
void ArgParser::int_option(std::string_view names, int* out, std::string help) {
  add(names, Kind::Int, out, "N", std::move(help));
}
void ArgParser::u64_option(std::string_view names, uint64_t* out, std::string help) {
  add(names, Kind::U64, out, "N", std::move(help));
}
void ArgParser::float_option(std::string_view names, float* out, std::string help) {
  add(names, Kind::Float, out, "X", std::move(help));
}
void ArgParser::positional(std::string name, std::string* out, std::string help) {
  positionals_.push_back(Positional{std::move(name), out, std::move(help)});
}

ArgParser::Option* ArgParser::find(std::string_view name) {
  for (Option& o : options_) {
    for (const std::string& n : o.names) {
      if (n == name) return &o;
    }
  }
  return nullptr;
}

const ArgParser::Option* ArgParser::find(std::string_view name) const {
  return const_cast<ArgParser*>(this)->find(name);
}

bool ArgParser::seen(std::string_view name) const {
  const Option* o = find(name);
  return o && o->seen;
}

void ArgParser::store(const Option& opt, std::string_view name, const std::string& value) {
  switch (opt.kind) {
    case Kind::Flag:
      *static_cast<bool*>(opt.out) = true;
      break;
    case Kind::String:
      *static_cast<std::string*>(opt.out) = value;
      break;
    case Kind::StringList:
      static_cast<std::vector<std::string>*>(opt.out)->push_back(value);
      break;
    case Kind::Int:
      *static_cast<int*>(opt.out) = parse_int(name, value);
      break;
    case Kind::U64:
      *static_cast<uint64_t*>(opt.out) = parse_u64(name, value);
      break;
    case Kind::Float:
      *static_cast<float*>(opt.out) = parse_float(name, value);
      break;
  }
}

void ArgParser::parse(const std::vector<std::string>& args) {
  size_t n_positional = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (n_positional >= positionals_.size()) {
        throw UsageError("unexpected argument " + quoted(arg));
      }
      *positionals_[n_positional++].out = arg;
      continue;
    }
    // "--name=value" carries its value inline.
    const size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, eq);
    Option* opt = find(name);
    if (!opt) throw UsageError("unknown option " + quoted(name));
    opt->seen = true;
    if (opt->kind == Kind::Flag) {
      if (eq != std::string::npos) throw UsageError(name + ": takes no value");
      store(*opt, name, "");
      continue;
    }
    if (eq != std::string::npos) {
      store(*opt, name, arg.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      store(*opt, name, args[++i]);
    } else {
      throw UsageError(name + ": missing value");
    }
  }
  if (help_) return;
  if (n_positional < positionals_.size()) {
    throw UsageError("missing argument " + positionals_[n_positional].name);
  }
}

std::string ArgParser::help_text() const {
  std::string s = "usage: " + usage_ + "\n\n" + summary_ + "\n";
  if (!positionals_.empty()) {
    s += "\narguments:\n";
    for (const Positional& p : positionals_) s += "  " + p.name + "\n" + indented(p.help);
  }
  s += "\noptions:\n";
  for (const Option& o : options_) {
    std::string line = "  ";
    for (size_t i = 0; i < o.names.size(); ++i) line += (i ? ", " : "") + o.names[i];
    if (!o.value_name.empty()) line += " " + o.value_name;
    s += line + "\n" + indented(o.help);
  }
  return s;
}

bool ArgParser::parse_or_print_help(const std::vector<std::string>& args) {
  parse(args);
  if (help_) std::fputs(help_text().c_str(), stdout);
  return help_;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("-f: cannot read '" + path + "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace runnel::cli
