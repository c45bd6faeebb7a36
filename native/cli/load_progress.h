// The line on stderr while a model loads: "loading FILE: 45% (120/268 MiB, 850 MiB/s)",
// rewritten in place (\r) as the weights are read and repacked, ended with a newline.
// Only on a terminal: redirected stderr (logs, tests, pipes) gets no line at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace runnel::cli {

class LoadProgress {
 public:
  // label: what is loading (the file name); total_bytes: the bytes the load reads
  // (0: the load reads nothing worth a line, e.g. no weight is repacked).
  // enabled: false for no output; on_terminal() is the usual choice.
  LoadProgress(std::FILE* out, std::string label, uint64_t total_bytes, bool enabled);
  // Ends an unfinished line, so an error message starts on a line of its own.
  ~LoadProgress();
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

  // done_bytes so far; redraws at most every kRedrawInterval (the first call always).
  void update(uint64_t done_bytes);
  // The last figures (100%) and the newline.
  void finish();

  // Whether stderr is a terminal.
  static bool on_terminal();

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kRedrawInterval{100};

  void draw();

  std::FILE* out_;
  std::string label_;
  uint64_t total_bytes_;
  bool enabled_;
  uint64_t done_bytes_ = 0;
  Clock::time_point start_ = Clock::now(), last_draw_{};
  bool drawn_ = false, finished_ = false;
  size_t last_width_ = 0;  // a shorter line pads over the end of the longer one before it
};

}  // namespace runnel::cli
