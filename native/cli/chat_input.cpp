// Interruptible line input for `runnel chat` (chat_input.h).
#include "native/cli/chat_input.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <system_error>

namespace runnel::cli {
namespace {

std::atomic<bool> g_sigint{false};
std::atomic<int> g_wake_fd{-1};  // the self-pipe's write end
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the SIGINT handler's state must be lock-free atomics");

struct sigaction g_previous_action;

extern "C" void on_sigint(int) {
  const int saved_errno = errno;
  g_sigint.store(true);
  const char byte = 1;
  [[maybe_unused]] const ssize_t n =
      ::write(g_wake_fd.load(), &byte, 1);  // full pipe: already awake
  errno = saved_errno;
}

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

SigintCatcher::SigintCatcher() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) fail("cannot catch Ctrl-C (pipe)");
  read_fd_ = fds[0];
  g_wake_fd.store(fds[1]);
  g_sigint.store(false);
  struct sigaction action = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &action, &g_previous_action) != 0)
    fail("cannot catch Ctrl-C (sigaction)");
}

SigintCatcher::~SigintCatcher() {
  ::sigaction(SIGINT, &g_previous_action, nullptr);
  ::close(g_wake_fd.exchange(-1));
  ::close(read_fd_);
}

bool SigintCatcher::pending() const {
  return g_sigint.load();
}

void SigintCatcher::clear() {
  g_sigint.store(false);
  char drain[64];
  while (::read(read_fd_, drain, sizeof drain) > 0) {
  }
}

InputStatus LineReader::read_line(std::string& line) {
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos || (at_end_ && !buffer_.empty())) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline == std::string::npos ? buffer_.size() : newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return InputStatus::Line;
    }
    if (at_end_) return InputStatus::End;
    pollfd wait[2] = {{fd_, POLLIN, 0}, {sigint_.wake_fd(), POLLIN, 0}};
    if (::poll(wait, 2, -1) < 0) {
      if (errno == EINTR) continue;
      fail("reading standard input");
    }
    if (sigint_.pending()) {
      sigint_.clear();
      buffer_.clear();  // the line being typed (the terminal drops its own copy too)
      return InputStatus::Interrupted;
    }
    if (wait[0].revents == 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // EIO: the terminal went away (its other end closed), as good as the end.
    if (n < 0 && errno != EIO) fail("reading standard input");
    if (n <= 0) {
      at_end_ = true;
    } else {
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
}

InputStatus read_message(LineReader& reader, std::string& message, const char* continuation) {
  message.clear();
  std::string line;
  for (bool first = true;; first = false) {
    if (!first && continuation[0] != '\0') {
      std::fputs(continuation, stdout);
      std::fflush(stdout);
    }
    const InputStatus status = reader.read_line(line);
    if (status == InputStatus::Interrupted) return status;
    if (status == InputStatus::End) return first ? status : InputStatus::Line;
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    message += line;
    if (!continues) return InputStatus::Line;
    message += '\n';
  }
}

}  // namespace runnel::cli
