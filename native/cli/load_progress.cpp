#include "native/cli/load_progress.h"

#include <unistd.h>

#include <algorithm>

#include "core/runtime/memory_plan.h"

namespace runnel::cli {

LoadProgress::LoadProgress(std::FILE* out, std::string label, uint64_t total_bytes, bool enabled)
    : out_(out),
      label_(std::move(label)),
      total_bytes_(total_bytes),
      enabled_(enabled && total_bytes > 0) {}

LoadProgress::~LoadProgress() {
  if (drawn_ && !finished_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

bool LoadProgress::on_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

void LoadProgress::update(uint64_t done_bytes) {
  if (!enabled_ || finished_) return;
  done_bytes_ = done_bytes;
  const Clock::time_point now = Clock::now();
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  draw();
}

void LoadProgress::finish() {
  if (!enabled_ || finished_) return;
  done_bytes_ = std::max(done_bytes_, total_bytes_);
  draw();
  std::fputc('\n', out_);
  std::fflush(out_);
  finished_ = true;
}

void LoadProgress::draw() {
  constexpr double kMiB = 1024.0 * 1024.0;
  // total_bytes_ is the loader's estimate: never show more than 100%.
  const uint64_t done = std::min(done_bytes_, total_bytes_);
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double mib_per_s = seconds > 0 ? static_cast<double>(done) / kMiB / seconds : 0;
  char figures[128];
  std::snprintf(figures, sizeof figures, ": %3d%% (%s of %s, %.0f MiB/s)",
                static_cast<int>(100 * done / total_bytes_), format_bytes(done).c_str(),
                format_bytes(total_bytes_).c_str(), mib_per_s);
  const std::string line = "loading " + label_ + figures;
  const size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
  std::fprintf(out_, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
  std::fflush(out_);
  last_width_ = line.size();
  drawn_ = true;
}

}  // namespace runnel::cli
