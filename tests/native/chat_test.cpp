// runnel chat, driven through a pseudo-terminal as a person would (prompts, a streamed
// reply, Ctrl-C, Ctrl-D) and through a pipe, on a tiny model written by the test.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/core/model/tiny_model.h"
#include "tests/native/scratch_dir.h"

namespace runnel {
namespace {

using Clock = std::chrono::steady_clock;

using test::read_all;
using test::ScratchDir;

// The tiny model with room for a few ChatML turns (its markup is a token a letter) and
// a vocabulary with every letter, so replies can show text.
std::string write_chat_model(const ScratchDir& dir) {
  test::TinySpec spec;
  spec.n_ctx_train = 512;
  spec.n_vocab = 60;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::string path = dir.file("tiny.gguf");
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(m.bytes.data()),
          static_cast<std::streamsize>(m.bytes.size()));
  return path;
}

// Greedy replies that show letters: the tiny model answers ChatML markup (mostly <unk>
// in its vocabulary) with more <unk>, which prints nothing; the penalty moves it on.
const std::string kGreedyArgs = "-n 8 --temp 0 --repeat-penalty 10 -t 1";

struct PipedResult {
  int status = -1;
  std::string out, err;
};

// `runnel chat ARGS` with `input` on a pipe (no terminal anywhere).
PipedResult chat_piped(const ScratchDir& dir, const std::string& args, const std::string& input) {
  const std::string in = dir.file("in.txt"), out = dir.file("out.txt"), err = dir.file("err.txt");
  {
    std::ofstream f(in, std::ios::binary);
    f << input;
  }
  const std::string cmd = "cat '" + in + "' | '" + std::string(RUNNEL_BINARY) + "' chat " + args +
                          " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  PipedResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_all(out);
  r.err = read_all(err);
  return r;
}

// `runnel ARGS...` on the slave side of a pseudo-terminal: its stdin, stdout and
// stderr are the terminal, with the kernel's defaults (echo, line editing, Ctrl-C as
// SIGINT, "\n" written as "\r\n"). Every wait has a timeout, so a hang fails the test.
class PtyChild {
 public:
  explicit PtyChild(const std::vector<std::string>& args) {
    std::vector<std::string> argv_text = {RUNNEL_BINARY};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~PtyChild() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  PtyChild(const PtyChild&) = delete;
  PtyChild& operator=(const PtyChild&) = delete;

  void type(const std::string& keys) {
    REQUIRE(::write(master_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
  }

  // What the terminal shows until `marker` (included); the rest stays for later.
  std::string read_until(const std::string& marker, int timeout_ms = 30000) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t at;
    while ((at = shown_.find(marker)) == std::string::npos) {
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (left <= 0 || !read_some(left)) {
        FAIL("no '" << marker << "' within " << timeout_ms
                    << " ms; the terminal shows: " << shown_);
      }
    }
    std::string text = shown_.substr(0, at + marker.size());
    shown_.erase(0, at + marker.size());
    return text;
  }

  // The exit status once the program ends (reading what it still writes).
  int wait_exit(int timeout_ms = 30000) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (Clock::now() > deadline)
        FAIL("no exit within " << timeout_ms << " ms; the terminal shows: " << shown_);
      read_some(20);
    }
  }

  // CPU seconds the program has used (utime + stime of /proc/PID/stat): it grows
  // while a reply is generated, not while the program waits at the prompt.
  double cpu_seconds() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
    long utime = 0, stime = 0;
    fields >> utime >> stime;
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }

 private:
  // Appends what arrives within timeout_ms; false once the terminal is closed.
  bool read_some(int timeout_ms) {
    pollfd p = {master_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return true;
    char chunk[4096];
    const ssize_t n = ::read(master_, chunk, sizeof chunk);
    if (n <= 0) return false;  // EIO: every slave descriptor closed (the program ended)
    shown_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string shown_;  // read but not yet returned
};

struct TurnFigures {
  int n_new = -1, n_cached = -1, n_reply = -1;
  bool stopped = false;
};

// "[prompt: 56 new tokens (0 cached), ... | reply: 8 tokens, ..."
TurnFigures figures_of(const std::string& shown) {
  const std::regex re(
      R"(\[prompt: (\d+) new tokens \((\d+) cached\), [0-9.]+ tok/s \| reply: (\d+) tokens)");
  std::smatch m;
  INFO(shown);
  REQUIRE(std::regex_search(shown, m, re));
  return {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]),
          shown.find("| stopped]") != std::string::npos};
}

// The reply in what a turn showed: after the echoed input line, before the figures.
std::string reply_of(const std::string& shown, const std::string& typed) {
  const size_t start = shown.find(typed + "\r\n");
  const size_t end = shown.find("\r\n\033[2m[prompt: ");
  INFO(shown);
  REQUIRE(start != std::string::npos);
  REQUIRE(end != std::string::npos);
  return std::regex_replace(shown.substr(start + typed.size() + 2, end - start - typed.size() - 2),
                            std::regex("\r\n"), "\n");
}

// A turn at the prompt: type the message, read up to the next prompt.
std::string turn(PtyChild& chat, const std::string& message) {
  chat.type(message + "\n");
  return chat.read_until("\n> ");
}

// The piped replies, one a line (the tiny model writes no newlines itself).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE(
    "chat on a terminal: prompts, streamed replies, prefix reuse, /clear, /save, /load, Ctrl-D",
    "[cli]") {
  ScratchDir dir;
  const std::string model = write_chat_model(dir);
  const std::string args = "-m '" + model + "' " + kGreedyArgs + " --system 'be brief'";
  // What a pipe gets for the same conversations: the replies the terminal must show.
  const PipedResult two = chat_piped(dir, args, "a b\nc d\n");
  REQUIRE(two.status == 0);
  const PipedResult fresh = chat_piped(dir, args, "c d\n");
  const PipedResult three = chat_piped(dir, args, "a b\nc d\ne f\n");
  REQUIRE(lines_of(two.out).size() == 2);
  REQUIRE(lines_of(fresh.out).size() == 1);
  REQUIRE(lines_of(three.out).size() == 3);
  CHECK(lines_of(two.out)[0] != "");  // the penalty gets the tiny model to letters

  PtyChild chat({"chat", "-m", model, "-n", "8", "--temp", "0", "--repeat-penalty", "10", "-t", "1",
                 "--system", "be brief"});
  const std::string banner = chat.read_until("> ");
  CHECK_THAT(banner, Catch::Contains("seed ") && Catch::Contains("/help lists the commands"));

  // Turn 1 evaluates the whole rendered prompt; turn 2 only what it adds after it.
  const std::string shown1 = turn(chat, "a b");
  const TurnFigures t1 = figures_of(shown1);
  CHECK(t1.n_cached == 0);
  CHECK(t1.n_reply > 0);
  CHECK(reply_of(shown1, "a b") == lines_of(two.out)[0]);
  const std::string shown2 = turn(chat, "c d");
  const TurnFigures t2 = figures_of(shown2);
  CHECK(t2.n_cached >= t1.n_new);
  CHECK(reply_of(shown2, "c d") == lines_of(two.out)[1]);

  // /save writes the messages as JSON, the system message first.
  const std::string saved = dir.file("conversation.json");
  CHECK_THAT(turn(chat, "/save " + saved), Catch::Contains("(saved 5 messages to " + saved + ")"));
  const nlohmann::json messages = nlohmann::json::parse(read_all(saved));
  REQUIRE(messages.size() == 5);
  CHECK(messages[0] == nlohmann::json({{"role", "system"}, {"content", "be brief"}}));
  CHECK(messages[1] == nlohmann::json({{"role", "user"}, {"content", "a b"}}));
  CHECK(messages[2] == nlohmann::json({{"role", "assistant"}, {"content", lines_of(two.out)[0]}}));
  CHECK(messages[3] == nlohmann::json({{"role", "user"}, {"content", "c d"}}));
  CHECK(messages[4] == nlohmann::json({{"role", "assistant"}, {"content", lines_of(two.out)[1]}}));

  // /clear keeps the system message only: "c d" now gets a first turn's reply.
  CHECK_THAT(turn(chat, "/clear"),
             Catch::Contains("(conversation cleared; the system message stays)"));
  const std::string shown3 = turn(chat, "c d");
  CHECK(reply_of(shown3, "c d") == lines_of(fresh.out)[0]);
  const TurnFigures t3 = figures_of(shown3);
  CHECK(t3.n_cached > 0);  // the system message's tokens
  CHECK(t3.n_cached < t1.n_new);

  // /load brings the saved conversation back: the next turn continues it.
  CHECK_THAT(turn(chat, "/load " + saved),
             Catch::Contains("(loaded 5 messages from " + saved + ")"));
  CHECK(reply_of(turn(chat, "e f"), "e f") == lines_of(three.out)[2]);
  CHECK_THAT(turn(chat, "/load " + dir.file("absent.json")),
             Catch::Contains("/load: cannot read '" + dir.file("absent.json") + "'"));
  CHECK_THAT(turn(chat, "/help"),
             Catch::Contains("/save FILE") && Catch::Contains("Ctrl-C stops a reply"));
  CHECK_THAT(turn(chat, "/frobnicate"),
             Catch::Contains("unknown command /frobnicate (/help lists them)"));

  chat.type("\x04");  // Ctrl-D at an empty prompt
  CHECK(chat.wait_exit() == 0);
}

TEST_CASE("chat: Ctrl-C stops a reply and returns to the prompt; twice at the prompt it quits",
          "[cli]") {
  ScratchDir dir;
  const std::string model = write_chat_model(dir);
  // --keep 0 shifts the context instead of ending the reply, and at this temperature the
  // tiny model does not pick its end token: the reply goes on until stopped.
  PtyChild chat(
      {"chat", "-m", model, "-n", "-1", "--keep", "0", "--temp", "1.5", "--top-k", "0", "-t", "1"});
  chat.read_until("> ");
  chat.type("a b\n");
  // The reply is under way once the program burns CPU time (it is idle at the prompt);
  // a Ctrl-C before it read the line would be a Ctrl-C at the prompt.
  const double cpu_at_prompt = chat.cpu_seconds();
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  while (chat.cpu_seconds() < cpu_at_prompt + 0.2) {
    if (Clock::now() > deadline) FAIL("the reply did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  chat.type("\x03");
  const TurnFigures stopped = figures_of(chat.read_until("\n> "));
  CHECK(stopped.stopped);
  CHECK(stopped.n_reply > 0);

  // Still running, the stopped reply kept in the conversation.
  const std::string saved = dir.file("stopped.json");
  CHECK_THAT(turn(chat, "/save " + saved), Catch::Contains("(saved 2 messages"));
  const nlohmann::json messages = nlohmann::json::parse(read_all(saved));
  REQUIRE(messages.size() == 2);
  CHECK(messages[1]["role"] == "assistant");

  // At the prompt: the first Ctrl-C gives a new prompt and says how to quit; the second quits.
  chat.type("\x03");
  CHECK_THAT(chat.read_until("\n> "), Catch::Contains("(Ctrl-C again, Ctrl-D or /exit quits)"));
  chat.type("\x03");
  CHECK(chat.wait_exit() == 0);
}

TEST_CASE("chat on a pipe: no prompts, replies alone on stdout, multi-line messages, /exit",
          "[cli]") {
  ScratchDir dir;
  const std::string model = write_chat_model(dir);
  const std::string saved = dir.file("piped.json");
  const PipedResult r = chat_piped(dir, "-m '" + model + "' " + kGreedyArgs,
                                   "a b\nc d\\\ne f\n\n/save " + saved + "\n/exit\nnot read\n");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("> ") == std::string::npos);
  CHECK(lines_of(r.out).size() == 2);  // a reply a line; the blank line is no turn
  CHECK_THAT(r.err, Catch::Contains("load: ") && Catch::Contains("(saved 4 messages"));
  CHECK(r.err.find("\033[") == std::string::npos);  // no dimming off a terminal
  const std::regex figures(R"(\((\d+) cached\))");
  std::vector<int> cached;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), figures), end; it != end; ++it) {
    cached.push_back(std::stoi((*it)[1]));
  }
  REQUIRE(cached.size() == 2);
  CHECK(cached[0] == 0);
  CHECK(cached[1] > 0);
  const nlohmann::json messages = nlohmann::json::parse(read_all(saved));
  REQUIRE(messages.size() == 4);
  CHECK(messages[2]["content"] == "c d\ne f");  // the backslash joined the lines
  CHECK(messages[3]["content"] == lines_of(r.out)[1]);
}

TEST_CASE("chat says when the conversation outgrows the context and /clear makes room", "[cli]") {
  ScratchDir dir;
  const std::string model = write_chat_model(dir);
  // A turn is ~56 tokens of ChatML here: one fits in 80, two do not.
  const PipedResult r =
      chat_piped(dir, "-m '" + model + "' -c 80 " + kGreedyArgs, "a b\nc d\n/clear\nc d\n");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("the conversation no longer fits: ") &&
                        Catch::Contains("context is 80") &&
                        Catch::Contains("/clear starts a new one"));
  CHECK(lines_of(r.out).size() == 2);  // the turns before the refusal and after /clear

  const PipedResult usage = chat_piped(dir, "-n 4", "");
  CHECK(usage.status == 1);
  CHECK(usage.err == "runnel: error: -m: a model file is required\n");
  const PipedResult bad = chat_piped(dir, "-m '" + model + "' --top-p 0", "");
  CHECK(bad.err == "runnel: error: --top-p: must be in (0, 1]\n");
}

}  // namespace
}  // namespace runnel
