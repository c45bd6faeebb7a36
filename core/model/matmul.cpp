#include "core/model/matmul.h"

#include <algorithm>
#include <cassert>
#include <functional>

#include "kernels/kernels.h"

namespace runnel {
namespace {

// Weight rows a task keeps hot while the batch's tokens stream past them.
constexpr int64_t kRowTile = 8;

struct PreparedJob {
  const MatmulJob* job;
  const uint8_t* act;  // [n_tokens][act_row_bytes] in the partner format
  size_t act_row_bytes;
  size_t w_row_bytes;
  float (*vec_dot)(int64_t, const void*, const void*);
};

// Rows [r0, r1) of one job for all tokens.
void run_rows(const PreparedJob& p, int n_tokens, int64_t r0, int64_t r1) {
  const Matrix& w = p.job->w;
  float* out = p.job->out;
  const float* bias = p.job->bias;
  for (int64_t tile = r0; tile < r1; tile += kRowTile) {
    const int64_t tile_end = std::min(tile + kRowTile, r1);
    for (int t = 0; t < n_tokens; ++t) {
      const uint8_t* a = p.act + static_cast<size_t>(t) * p.act_row_bytes;
      float* y = out + static_cast<int64_t>(t) * w.n_out;
      for (int64_t r = tile; r < tile_end; ++r) {
        const float dot = p.vec_dot(w.n_in, w.data + static_cast<size_t>(r) * p.w_row_bytes, a);
        y[r] = bias ? dot + bias[r] : dot;
      }
    }
  }
}

}  // namespace

MatmulScratch::MatmulScratch(int n_tokens, size_t max_row_bytes)
    : slot_bytes_(static_cast<size_t>(n_tokens) * max_row_bytes),
      bytes_(slot_bytes_ * kMaxFormats) {}

size_t activation_row_bytes(GgmlType weight_type, int64_t n_in) {
  return row_bytes(kernels().of(weight_type).vec_dot_type, n_in);
}

void matmul(Parallel& par, const float* x, int n_tokens, std::span<const MatmulJob> jobs,
            MatmulScratch& scratch) {
  const KernelTable& table = kernels();
  constexpr size_t kMaxJobs = 4;
  assert(jobs.size() <= kMaxJobs);
  PreparedJob prepared[kMaxJobs];
  GgmlType formats[MatmulScratch::kMaxFormats];
  const uint8_t* format_rows[MatmulScratch::kMaxFormats];
  int n_formats = 0;
  int64_t total_rows = 0;

  for (size_t j = 0; j < jobs.size(); ++j) {
    const Matrix& w = jobs[j].w;
    const TypeKernels& k = table.of(w.type);
    const GgmlType fmt = k.vec_dot_type;
    PreparedJob& p = prepared[j];
    p.job = &jobs[j];
    p.act_row_bytes = row_bytes(fmt, w.n_in);
    p.w_row_bytes = row_bytes(w.type, w.n_in);
    p.vec_dot = k.vec_dot;
    if (fmt == GgmlType::F32) {
      p.act = reinterpret_cast<const uint8_t*>(x);  // float rows are already the format
    } else {
      int f = 0;
      while (f < n_formats && formats[f] != fmt) ++f;
      if (f == n_formats) {
        // First job with this partner format: quantize the batch once for all of them.
        assert(n_formats < MatmulScratch::kMaxFormats);
        assert(static_cast<size_t>(n_tokens) * p.act_row_bytes <= scratch.slot_bytes());
        uint8_t* dst = scratch.slot(f);
        for (int t = 0; t < n_tokens; ++t) {
          table.of(fmt).quantize_row(x + static_cast<int64_t>(t) * w.n_in,
                                     dst + static_cast<size_t>(t) * p.act_row_bytes, w.n_in);
        }
        formats[f] = fmt;
        format_rows[f] = dst;
        ++n_formats;
      }
      p.act = format_rows[f];
    }
    total_rows += w.n_out;
  }

  // The jobs' rows laid end to end, split evenly: task t owns [begin(t), begin(t+1)).
  const int n_tasks = n_tasks_for(par, total_rows);
  const size_t n_jobs = jobs.size();
  const auto task_fn = [&](int task) {
    int64_t lo = split_begin(total_rows, task, n_tasks);
    const int64_t hi = split_begin(total_rows, task + 1, n_tasks);
    int64_t job_start = 0;
    for (size_t j = 0; j < n_jobs && lo < hi; ++j) {
      const int64_t job_end = job_start + prepared[j].job->w.n_out;
      if (lo < job_end) {
        const int64_t end = std::min(hi, job_end);
        run_rows(prepared[j], n_tokens, lo - job_start, end - job_start);
        lo = end;
      }
      job_start = job_end;
    }
  };
  par.run(n_tasks, std::ref(task_fn));  // a reference fits std::function without allocating
}

}  // namespace runnel
