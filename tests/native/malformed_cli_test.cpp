// The runnel CLI on bad model files: `inspect` and `run` exit with status 1, print
// nothing on stdout and exactly one stderr line naming the problem.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/core/gguf/malformed_corpus.h"

using namespace runnel;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runnel-cli-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs RUNNEL_BINARY with `args` (paths made by the test: no quoting needed beyond
// single quotes), capturing stdout and stderr in files of `dir`.
Outcome run_cli(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file("stdout.txt");
  const std::string err = dir.file("stderr.txt");
  const std::string cmd =
      std::string("'") + RUNNEL_BINARY + "' " + args + " </dev/null >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  Outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Both commands refuse `model` with one stderr line containing `expected`.
void check_refused(const TempDir& dir, const std::string& model, const std::string& expected) {
  for (const std::string& args : {"inspect '" + model + "'", "run -m '" + model + "' -p hi -n 1"}) {
    INFO("runnel " << args);
    const Outcome o = run_cli(dir, args);
    INFO("stderr: " << o.err);
    INFO("stdout: " << o.out);
    CHECK(o.status == 1);
    CHECK(blank(o.out));
    CHECK(o.err.find(expected) != std::string::npos);
    CHECK(o.err.size() > 1);
    CHECK(o.err.back() == '\n');
    CHECK(o.err.find('\n') == o.err.size() - 1);  // exactly one line
  }
}

}  // namespace

TEST_CASE("the CLI refuses every malformed corpus file with one line", "[cli]") {
  TempDir dir;
  int index = 0;
  for (const MalformedCase& c : malformed_gguf_corpus()) {
    INFO("case: " << c.name);
    const std::string path = dir.file("case" + std::to_string(index++) + ".gguf");
    {
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(c.bytes.data()),
              static_cast<std::streamsize>(c.bytes.size()));
    }
    check_refused(dir, path, c.expected_error_substring);
  }
}

TEST_CASE("the CLI names missing, directory and non-GGUF model paths", "[cli]") {
  TempDir dir;
  check_refused(dir, dir.file("absent.gguf"),
                "cannot open " + dir.file("absent.gguf") + ": No such file or directory");
  std::filesystem::create_directory(dir.file("models"));
  check_refused(dir, dir.file("models"), dir.file("models") + ": is a directory");
  {
    std::ofstream f(dir.file("readme.txt"));
    f << "This is a text file, not a model.\n";
  }
  check_refused(dir, dir.file("readme.txt"),
                dir.file("readme.txt") + ": not a GGUF file (magic 0x54686973 \"This\"");
}
