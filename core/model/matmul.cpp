#include "core/model/matmul.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <stdexcept>

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
  // Batched path (null gemm: per-token vec_dot): packed groups of kGemmCols tokens.
  void (*gemm)(int64_t, const void*, size_t, int, const void*, int, float*, size_t) = nullptr;
  const uint8_t* packed = nullptr;  // [groups][pack_bytes]
  size_t pack_bytes = 0;
  // Repacked weights (Matrix::x8): gemm_x8 over the activation rows.
  void (*gemm_x8)(int64_t, const void*, const void*, size_t, const int32_t*, int, float*, size_t) = nullptr;
  const int32_t* a_sums = nullptr;  // [n_tokens][a_sums_stride] or null (x8_act_ints)
  size_t a_sums_stride = 0;
  size_t x8_group_bytes = 0;
};

// Rows [r0, r1) of a repacked job for all tokens: whole groups of kX8Rows rows go
// straight to the output; a group cut by the range is computed aside and copied.
void run_rows_x8(const PreparedJob& p, int n_tokens, int64_t r0, int64_t r1) {
  const Matrix& w = p.job->w;
  float* out = p.job->out;
  const float* bias = p.job->bias;
  const size_t group_bytes = p.x8_group_bytes;
  for (int64_t g = r0 / kX8Rows; g * kX8Rows < r1; ++g) {
    const int64_t g_row = g * kX8Rows;
    const int64_t lo = std::max(r0, g_row);
    const int64_t hi = std::min(r1, g_row + kX8Rows);
    const uint8_t* group = w.data + static_cast<size_t>(g) * group_bytes;
    for (int t0 = 0; t0 < n_tokens; t0 += kGemmCols) {
      const int nc = std::min(kGemmCols, n_tokens - t0);
      const uint8_t* a = p.act + static_cast<size_t>(t0) * p.act_row_bytes;
      const int32_t* sums = p.a_sums ? p.a_sums + static_cast<size_t>(t0) * p.a_sums_stride : nullptr;
      float* y = out + static_cast<int64_t>(t0) * w.n_out;
      if (lo == g_row && hi == g_row + kX8Rows) {
        p.gemm_x8(w.n_in, group, a, p.act_row_bytes, sums, nc, y + g_row, static_cast<size_t>(w.n_out));
      } else {
        float part[kGemmCols][kX8Rows];
        p.gemm_x8(w.n_in, group, a, p.act_row_bytes, sums, nc, &part[0][0], kX8Rows);
        for (int c = 0; c < nc; ++c) {
          for (int64_t r = lo; r < hi; ++r) y[static_cast<int64_t>(c) * w.n_out + r] = part[c][r - g_row];
        }
      }
      if (bias) {
        for (int c = 0; c < nc; ++c) {
          for (int64_t r = lo; r < hi; ++r) y[static_cast<int64_t>(c) * w.n_out + r] += bias[r];
        }
      }
    }
  }
}


// Rows [r0, r1) of one job for all tokens, through the batched product.
void run_rows_gemm(const PreparedJob& p, int n_tokens, int64_t r0, int64_t r1) {
  const Matrix& w = p.job->w;
  float* out = p.job->out;
  const float* bias = p.job->bias;
  const int n_groups = (n_tokens + kGemmCols - 1) / kGemmCols;
  for (int64_t r = r0; r < r1; r += kGemmRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, r1 - r));
    const uint8_t* rows = w.data + static_cast<size_t>(r) * p.w_row_bytes;
    for (int g = 0; g < n_groups; ++g) {
      const int t0 = g * kGemmCols;
      const int nc = std::min(kGemmCols, n_tokens - t0);
      float* y = out + static_cast<int64_t>(t0) * w.n_out + r;
      p.gemm(w.n_in, rows, p.w_row_bytes, nr, p.packed + static_cast<size_t>(g) * p.pack_bytes, nc, y,
             static_cast<size_t>(w.n_out));
      if (bias) {
        for (int c = 0; c < nc; ++c) {
          for (int i = 0; i < nr; ++i) y[static_cast<int64_t>(c) * w.n_out + i] += bias[r + i];
        }
      }
    }
  }
}

// Rows [r0, r1) of one job for all tokens: the first n_gemm through the batched
// product where the job has one, the rest token by token.
void run_rows(const PreparedJob& p, int n_tokens, int n_gemm, int64_t r0, int64_t r1) {
  if (p.gemm_x8) {
    run_rows_x8(p, n_tokens, r0, r1);
    return;
  }
  int t_first = 0;
  if (p.gemm) {
    run_rows_gemm(p, n_gemm, r0, r1);
    t_first = n_gemm;
  }
  const Matrix& w = p.job->w;
  float* out = p.job->out;
  const float* bias = p.job->bias;
  for (int64_t tile = r0; tile < r1 && t_first < n_tokens; tile += kRowTile) {
    const int64_t tile_end = std::min(tile + kRowTile, r1);
    for (int t = t_first; t < n_tokens; ++t) {
      const uint8_t* a = p.act + static_cast<size_t>(t) * p.act_row_bytes;
      float* y = out + static_cast<int64_t>(t) * w.n_out;
      for (int64_t r = tile; r < tile_end; ++r) {
        const float dot = p.vec_dot(w.n_in, w.data + static_cast<size_t>(r) * p.w_row_bytes, a);
        y[r] = bias ? dot + bias[r] : dot;
      }
    }
  }
}

// fn(r0, r1) over rows [0, n_out) split on multiples of kEpilogueRows (whole x8 groups,
// whole vectors for an epilogue's kernels), one range a task, on par.
template <class Fn>
void run_row_ranges(Parallel& par, int64_t n_out, const Fn& fn) {
  const int64_t units = (n_out + kEpilogueRows - 1) / kEpilogueRows;
  const int n_tasks = n_tasks_for(par, units);
  const auto task_fn = [&](int task) {
    const int64_t r0 = tapered_begin(units, task, n_tasks, par.n_threads()) * kEpilogueRows;
    // at least one unit each (n_tasks <= units; tapered shares only from 4 units)
    const int64_t r1 = std::min(n_out, tapered_begin(units, task + 1, n_tasks, par.n_threads()) * kEpilogueRows);
    fn(r0, r1);
  };
  par.run(n_tasks, std::ref(task_fn));  // a reference fits std::function without allocating
}

}  // namespace

namespace {

// int32 of the scratch's act_ints an activation row takes: the Q8_0 block sums of every
// format (a format takes at least a byte per element: n_in / 32 <= row bytes / 32), and
// what every x8_prepare of the selected table asks for (one product may need each).
size_t act_row_ints(size_t max_row_bytes) {
  size_t ints = MatmulScratch::kMaxFormats * (max_row_bytes / 32 + 1);
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& k = kernels().types[id];
    if (!k.x8_prepare) continue;
    ints += max_row_bytes * k.x8_prepared_block_ints / traits(static_cast<GgmlType>(id)).block_size + 1;
  }
  return ints;
}

// A product call's activation ints in the scratch's act_ints, end to end: each maker's
// (x8_act_maker) over each batch of rows once, however many jobs read them.
class ActInts {
 public:
  explicit ActInts(MatmulScratch& scratch) : base_(scratch.act_ints()), room_(scratch.act_ints_size()) {}

  // The ints `maker` makes of n_rows activation rows at `act` (per_row a row), and
  // whether the caller still has to make them; null when they do not fit.
  int32_t* find_or_reserve(X8PrepareFn maker, const uint8_t* act, size_t per_row, int n_rows, bool& fresh) {
    for (int i = 0; i < n_entries_; ++i) {
      const Entry& e = entries_[i];
      if (e.maker == maker && e.act == act && e.per_row == per_row && e.n_rows == n_rows) {
        fresh = false;
        return e.ints;
      }
    }
    const size_t ints = per_row * static_cast<size_t>(n_rows);
    if (n_entries_ == kMaxEntries || ints > room_ - used_) return nullptr;
    int32_t* dst = base_ + used_;
    used_ += ints;
    entries_[n_entries_++] = {maker, act, per_row, n_rows, dst};
    fresh = true;
    return dst;
  }

 private:
  static constexpr int kMaxEntries = static_cast<int>(kMaxRoutedJobs);
  struct Entry {
    X8PrepareFn maker;
    const uint8_t* act;
    size_t per_row;
    int n_rows;
    int32_t* ints;
  };
  int32_t* base_;
  size_t room_;
  size_t used_ = 0;
  Entry entries_[kMaxEntries];
  int n_entries_ = 0;
};

// Makes a job's activation ints: rows of act_row_bytes, per_row ints each.
void make_act_ints(X8PrepareFn maker, int64_t n_in, const uint8_t* act, size_t act_row_bytes, int n_rows,
                   int32_t* ints, size_t per_row) {
  for (int t = 0; t < n_rows; ++t) {
    maker(n_in, act + static_cast<size_t>(t) * act_row_bytes, ints + static_cast<size_t>(t) * per_row);
  }
}

}  // namespace

uint64_t MatmulScratch::bytes(int n_tokens, size_t max_row_bytes, size_t max_pack_bytes) {
  const uint64_t n = static_cast<uint64_t>(n_tokens);
  const uint64_t packed = n_tokens >= kMinGemmTokens ? (n + kGemmCols - 1) / kGemmCols * max_pack_bytes : 0;
  return kMaxFormats * (n * max_row_bytes + packed) + n * act_row_ints(max_row_bytes) * sizeof(int32_t);
}

MatmulScratch::MatmulScratch(int n_tokens, size_t max_row_bytes, size_t max_pack_bytes)
    : slot_bytes_(static_cast<size_t>(n_tokens) * max_row_bytes),
      packed_slot_bytes_(n_tokens >= kMinGemmTokens
                             ? static_cast<size_t>((n_tokens + kGemmCols - 1) / kGemmCols) * max_pack_bytes
                             : 0),
      bytes_(slot_bytes_ * kMaxFormats),
      packed_(packed_slot_bytes_ * kMaxFormats),
      act_ints_(static_cast<size_t>(n_tokens) * act_row_ints(max_row_bytes)) {}

size_t activation_row_bytes(GgmlType weight_type, int64_t n_in) {
  return row_bytes(kernels().of(weight_type).vec_dot_type, n_in);
}

size_t activation_pack_bytes(GgmlType weight_type, int64_t n_in) {
  const KernelTable& table = kernels();
  const TypeKernels& k = table.of(weight_type);
  const TypeKernels& a = table.of(k.vec_dot_type);
  if (!k.gemm || !a.gemm_pack || !a.gemm_pack_bytes) return 0;
  return a.gemm_pack_bytes(n_in);
}

void matmul(Parallel& par, const float* x, int n_tokens, std::span<const MatmulJob> jobs,
            MatmulScratch& scratch, const RowEpilogue* epilogue) {
  if (scratch.observer) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      size_t prev = 0;  // row ranges of one fused tensor share the input: report it once
      while (prev < j && !(jobs[prev].w.tensor == jobs[j].w.tensor && jobs[prev].w.expert == jobs[j].w.expert))
        ++prev;
      if (prev == j) scratch.observer->observe(jobs[j].w, x, n_tokens);
    }
  }
  const KernelTable& table = kernels();
  constexpr size_t kMaxJobs = 4;
  assert(jobs.size() <= kMaxJobs);
  PreparedJob prepared[kMaxJobs];
  GgmlType formats[MatmulScratch::kMaxFormats];
  const uint8_t* format_rows[MatmulScratch::kMaxFormats];
  const uint8_t* format_packed[MatmulScratch::kMaxFormats] = {};  // null: not packed yet
  ActInts act_ints(scratch);
  bool any_x8 = false;
  int n_formats = 0;
  // rows the batched gemm may take (per_token: only a leading prompt chunk's)
  const int n_gemm = scratch.per_token ? std::clamp(scratch.gemm_tokens, 0, n_tokens) : n_tokens;
  const int n_groups = (n_gemm + kGemmCols - 1) / kGemmCols;
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
    int f = 0;
    while (f < n_formats && formats[f] != fmt) ++f;
    if (f == n_formats) {
      // First job with this partner format: quantize the batch once for all of them
      // (F32 rows are already the format; the format still counts for its packed slot).
      assert(n_formats < MatmulScratch::kMaxFormats);
      if (fmt == GgmlType::F32) {
        format_rows[f] = reinterpret_cast<const uint8_t*>(x);
      } else {
        assert(static_cast<size_t>(n_tokens) * p.act_row_bytes <= scratch.slot_bytes());
        uint8_t* dst = scratch.slot(f);
        for (int t = 0; t < n_tokens; ++t) {
          table.of(fmt).quantize_row(x + static_cast<int64_t>(t) * w.n_in,
                                     dst + static_cast<size_t>(t) * p.act_row_bytes, w.n_in);
        }
        format_rows[f] = dst;
      }
      formats[f] = fmt;
      ++n_formats;
    }
    p.act = format_rows[f];
    const TypeKernels& ak = table.of(fmt);
    if (w.x8) {
      // Repacked at load for this kernel family; another family cannot read it.
      if (!k.gemm_x8)
        throw std::logic_error("matmul: repacked weights but the selected kernels have no gemm_x8");
      if (const size_t per_row = x8_act_ints(table, w.type, w.n_in)) {
        const X8PrepareFn maker = x8_act_maker(table, w.type);
        bool fresh = false;
        int32_t* ints = act_ints.find_or_reserve(maker, p.act, per_row, n_tokens, fresh);
        if (!ints) throw std::logic_error("matmul: no room in the scratch for the activations' x8 sums");
        if (fresh) make_act_ints(maker, w.n_in, p.act, p.act_row_bytes, n_tokens, ints, per_row);
        p.a_sums = ints;
        p.a_sums_stride = per_row;
      }
      p.gemm_x8 = k.gemm_x8;
      p.x8_group_bytes = x8_group_bytes(k, w.type, w.n_in);
      any_x8 = true;
    } else if (k.gemm && ak.gemm_pack && n_gemm >= kMinGemmTokens &&
               static_cast<size_t>(n_groups) * ak.gemm_pack_bytes(w.n_in) <=
                   scratch.packed_slot_bytes()) {
      p.pack_bytes = ak.gemm_pack_bytes(w.n_in);
      if (format_packed[f] == nullptr) {
        uint8_t* dst = scratch.packed_slot(f);
        for (int g = 0; g < n_groups; ++g) {
          const int t0 = g * kGemmCols;
          ak.gemm_pack(w.n_in, p.act + static_cast<size_t>(t0) * p.act_row_bytes, p.act_row_bytes,
                       std::min(kGemmCols, n_gemm - t0),
                       dst + static_cast<size_t>(g) * p.pack_bytes);
        }
        format_packed[f] = dst;
      }
      p.gemm = k.gemm;
      p.packed = format_packed[f];
    }
    total_rows += w.n_out;
  }

  const size_t n_jobs = jobs.size();
  if (epilogue) {
    // Row ranges of every job at once, split on multiples of kEpilogueRows (whole x8
    // groups, whole vectors for the epilogue's kernels).
    const int64_t n_out = jobs[0].w.n_out;
    for (const MatmulJob& job : jobs) {
      if (job.w.n_out != n_out)
        throw std::logic_error("matmul: an epilogue needs jobs of one n_out");
    }
    run_row_ranges(par, n_out, [&](int64_t r0, int64_t r1) {
      for (size_t j = 0; j < n_jobs; ++j) run_rows(prepared[j], n_tokens, n_gemm, r0, r1);
      (*epilogue)(r0, r1);
    });
    return;
  }

  // The jobs' rows laid end to end, split in tapered shares: task t owns [begin(t), begin(t+1)).
  const int n_tasks = n_tasks_for(par, total_rows);
  // With repacked jobs the split points fall on whole row groups (the last one is
  // total_rows itself), so no group is computed by two tasks.
  const auto begin = [&](int task) {
    const int64_t b = tapered_begin(total_rows, task, n_tasks, par.n_threads());
    return any_x8 && task < n_tasks ? b / kX8Rows * kX8Rows : b;
  };
  const auto task_fn = [&](int task) {
    int64_t lo = begin(task);
    const int64_t hi = begin(task + 1);
    int64_t job_start = 0;
    for (size_t j = 0; j < n_jobs && lo < hi; ++j) {
      const int64_t job_end = job_start + prepared[j].job->w.n_out;
      if (lo < job_end) {
        const int64_t end = std::min(hi, job_end);
        run_rows(prepared[j], n_tokens, n_gemm, lo - job_start, end - job_start);
        lo = end;
      }
      job_start = job_end;
    }
  };
  par.run(n_tasks, std::ref(task_fn));  // a reference fits std::function without allocating
}

bool matmul_routed(Parallel& par, std::span<const RoutedJob> jobs, MatmulScratch& scratch,
                   const RowEpilogue* epilogue) {
  if (jobs.empty()) return true;
  if (jobs.size() > kMaxRoutedJobs) return false;
  const KernelTable& table = kernels();
  const int64_t n_out = jobs[0].w.n_out;
  MatmulJob plain[kMaxRoutedJobs];
  PreparedJob prepared[kMaxRoutedJobs];
  // per format: its rows used so far; per job: the job whose quantized rows it shares
  GgmlType formats[MatmulScratch::kMaxFormats];
  size_t used[MatmulScratch::kMaxFormats] = {};
  int n_formats = 0;
  uint8_t* quantize_to[kMaxRoutedJobs] = {};  // the first job of its input and format: its slot
  for (size_t j = 0; j < jobs.size(); ++j) {
    const RoutedJob& r = jobs[j];
    if (r.w.n_out != n_out) return false;
    const TypeKernels& k = table.of(r.w.type);
    if (r.w.x8 && !k.gemm_x8) return false;
    const GgmlType fmt = k.vec_dot_type;
    PreparedJob& p = prepared[j];
    plain[j] = MatmulJob{r.w, r.out, r.bias};
    p.job = &plain[j];
    p.act_row_bytes = row_bytes(fmt, r.w.n_in);
    p.w_row_bytes = row_bytes(r.w.type, r.w.n_in);
    p.vec_dot = k.vec_dot;
    if (r.w.x8) {
      p.gemm_x8 = k.gemm_x8;
      p.x8_group_bytes = x8_group_bytes(k, r.w.type, r.w.n_in);
    }
    size_t prev = 0;
    while (prev < j && !(jobs[prev].x == r.x && table.of(jobs[prev].w.type).vec_dot_type == fmt)) ++prev;
    if (prev < j) {
      p.act = prepared[prev].act;
      continue;
    }
    if (fmt == GgmlType::F32) {
      p.act = reinterpret_cast<const uint8_t*>(r.x);
      continue;
    }
    int f = 0;
    while (f < n_formats && formats[f] != fmt) ++f;
    if (f == n_formats) {
      if (n_formats == MatmulScratch::kMaxFormats) return false;
      formats[n_formats++] = fmt;
    }
    const size_t bytes = static_cast<size_t>(r.n_tokens) * p.act_row_bytes;
    if (used[f] + bytes > scratch.slot_bytes()) return false;
    quantize_to[j] = scratch.slot(f) + used[f];  // quantized below, once every job is known to fit
    p.act = quantize_to[j];
    used[f] += bytes;
  }
  // Repacked jobs' activation ints (x8_act_ints), reserved now and made once the rows
  // are quantized below.
  ActInts act_ints(scratch);
  int32_t* ints_to[kMaxRoutedJobs] = {};  // the first job of its rows and maker: its ints
  for (size_t j = 0; j < jobs.size(); ++j) {
    const RoutedJob& r = jobs[j];
    const size_t per_row = r.w.x8 ? x8_act_ints(table, r.w.type, r.w.n_in) : 0;
    if (per_row == 0) continue;
    PreparedJob& p = prepared[j];
    bool fresh = false;
    int32_t* ints = act_ints.find_or_reserve(x8_act_maker(table, r.w.type), p.act, per_row, r.n_tokens, fresh);
    if (!ints) return false;
    p.a_sums = ints;
    p.a_sums_stride = per_row;
    if (fresh) ints_to[j] = ints;
  }
  if (scratch.observer) {  // every job fits: they run now
    for (const RoutedJob& r : jobs) scratch.observer->observe(r.w, r.x, r.n_tokens);
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!quantize_to[j]) continue;
    const RoutedJob& r = jobs[j];
    const TypeKernels& ak = table.of(table.of(r.w.type).vec_dot_type);
    for (int t = 0; t < r.n_tokens; ++t) {
      ak.quantize_row(r.x + static_cast<int64_t>(t) * r.w.n_in,
                      quantize_to[j] + static_cast<size_t>(t) * prepared[j].act_row_bytes, r.w.n_in);
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!ints_to[j]) continue;
    const RoutedJob& r = jobs[j];
    make_act_ints(x8_act_maker(table, r.w.type), r.w.n_in, prepared[j].act, prepared[j].act_row_bytes,
                  r.n_tokens, ints_to[j], prepared[j].a_sums_stride);
  }
  const size_t n_jobs = jobs.size();
  run_row_ranges(par, n_out, [&](int64_t r0, int64_t r1) {
    for (size_t j = 0; j < n_jobs; ++j) run_rows(prepared[j], jobs[j].n_tokens, 0, r0, r1);
    if (epilogue) (*epilogue)(r0, r1);
  });
  return true;
}

}  // namespace runnel
