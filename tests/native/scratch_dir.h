// A temporary folder for a test's files, removed with everything in it at the end of
// the test, reading a file whole, and running the runnel binary: what the CLI tests share.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace runnel::test {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "runnel-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// A run of the runnel binary (RUNNEL_BINARY): exit status and both outputs.
struct CliResult {
  int status = -1;
  std::string out, err;
};

// Runs `[env] runnel args <stdin_file` through the shell; args are written by the tests.
inline CliResult runnel_cli(const ScratchDir& dir, const std::string& args, const std::string& env = "",
                            const std::string& stdin_file = "/dev/null") {
  const std::string out = dir.file("out.txt"), err = dir.file("err.txt");
  const std::string cmd = env + " '" + std::string(RUNNEL_BINARY) + "' " + args + " <'" + stdin_file + "' >'" +
                          out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_all(out);
  r.err = read_all(err);
  return r;
}

// A run that must fail with exit status 1, `runnel: error: msg` on stderr and nothing on stdout.
inline void check_usage_error(const ScratchDir& dir, const std::string& args, const std::string& msg) {
  INFO("runnel " << args);
  const CliResult r = runnel_cli(dir, args);
  CHECK(r.status == 1);
  CHECK(r.err == "runnel: error: " + msg + "\n");
  CHECK(r.out.empty());
}

}  // namespace runnel::test
