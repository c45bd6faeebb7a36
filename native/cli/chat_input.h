// The input side of `runnel chat`: lines from standard input that Ctrl-C can interrupt,
// joined into messages (a line ending in a backslash continues on the next line).
#pragma once

#include <string>

namespace runnel::cli {

// While one lives, SIGINT (Ctrl-C) sets a flag instead of ending the process; the
// previous action comes back when it goes. Installed with SA_RESTART, so a write to
// the terminal in progress is finished, not failed. The handler also writes a byte to
// a pipe (the self-pipe trick), so a wait for input that polls wake_fd() wakes up even
// when Ctrl-C came just before the wait began. The flag and the pipe's write end are
// the one piece of global state: a signal handler can reach nothing else.
class SigintCatcher {
 public:
  SigintCatcher();
  ~SigintCatcher();
  SigintCatcher(const SigintCatcher&) = delete;
  SigintCatcher& operator=(const SigintCatcher&) = delete;

  bool pending() const;  // Ctrl-C since the last clear()
  void clear();
  int wake_fd() const { return read_fd_; }  // readable after a Ctrl-C, until clear()

 private:
  int read_fd_ = -1;
};

enum class InputStatus {
  Line,         // a line, without its newline
  End,          // end of input (Ctrl-D at an empty prompt, end of a pipe or file)
  Interrupted,  // Ctrl-C while waiting; the partial line is dropped
};

// Lines from a file descriptor (standard input), read with poll + read so that a
// Ctrl-C while waiting returns Interrupted. Text after the last newline is a last
// line at end of input; a trailing '\r' is dropped.
class LineReader {
 public:
  LineReader(int fd, SigintCatcher& sigint) : fd_(fd), sigint_(sigint) {}
  InputStatus read_line(std::string& line);

 private:
  int fd_;
  SigintCatcher& sigint_;
  std::string buffer_;  // read but not yet returned
  bool at_end_ = false;
};

// One message: lines ending in '\' are joined to the next with a newline (the
// backslash dropped), like llama-cli's multi-line input. `continuation` is written to
// stdout before each further line (nothing when empty). End of input in the middle of
// a message returns what was read as a Line.
InputStatus read_message(LineReader& reader, std::string& message, const char* continuation);

}  // namespace runnel::cli
