// Continuous batching for `runnel serve`: each request is a job on its slot's session;
// one thread runs them all. Each round it evaluates one chunk of one waiting prompt
// (round robin, so a long prompt does not freeze the streams) and the next token of
// every decoding job in one batched forward pass (core DecodeBatch: each weight read
// once per round, every job getting the bits it would get alone; a mixture of experts
// reads its prompt chunk in a pass of its own), and hands each job's text to the
// connection thread that waits on it. With a single decoding job and no prompt it
// steps that job alone, so prompt lookup (speculation) can run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/runtime/engine.h"
#include "core/runtime/request.h"

namespace runnel::server {

// Monotonic nanoseconds: the server's deadlines, timings and access log.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Scheduler {
 public:
  // What a finished job did.
  struct Result {
    int n_prompt = 0, n_cached = 0, n_generated = 0;
    int n_drafted = 0, n_draft_accepted = 0;
    FinishReason finish = FinishReason::Length;
    std::string error;  // why the generation failed mid-way ("" when it did not)
    double prompt_seconds = 0;  // its prompt's chunks
    double decode_seconds = 0;  // from its first token to its last
  };

  // One request's generation, shared by the scheduler thread and the connection thread.
  class Job {
   public:
    // Waits for the next text (and the log probabilities of the tokens it completes);
    // false once the job is done and everything was taken.
    bool next(std::string& text, std::vector<StepLogprobs>& logprobs);
    // The client went away: the scheduler stops the job (finish reason abort).
    void cancel() { cancelled_ = true; }
    // After next() returned false.
    const Result& result() const { return result_; }

   private:
    friend class Scheduler;
    Job(Session& session, std::vector<TokenId> prompt, RequestOptions options);
    void post(std::string text, std::vector<StepLogprobs> logprobs);
    void finish(Result result);

    Session& session_;
    std::vector<TokenId> prompt_;
    RequestOptions options_;
    std::unique_ptr<RequestRun> run_;  // the scheduler thread's
    int64_t decode_start_ns_ = 0;
    double prompt_seconds_ = 0;
    std::atomic<bool> cancelled_{false};

    std::mutex mutex_;
    std::condition_variable ready_;
    std::string text_;
    std::vector<StepLogprobs> logprobs_;
    bool done_ = false;
    Result result_;
  };

  // Up to max_jobs jobs at once (the server's slots). `compute` is held around each
  // round's forward passes (the embeddings endpoint shares the thread pool).
  Scheduler(Engine& engine, int max_jobs, std::mutex& compute);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts a generation of `prompt` on `session` (which the caller leaves alone until
  // the job is done). Request errors (the fit check) come back as the job's error.
  std::shared_ptr<Job> submit(Session& session, std::vector<TokenId> prompt, const RequestOptions& options);
  // Running jobs are cut (finish reason cut) once the steady clock passes this.
  void cut_after(int64_t deadline_ns) { deadline_ns_ = deadline_ns; }
  // Batched passes so far, and the tokens they decoded (for /metrics).
  uint64_t batched_passes() const { return batched_passes_; }
  uint64_t batched_tokens() const { return batched_tokens_; }

 private:
  void loop();
  void round(std::vector<std::shared_ptr<Job>>& jobs);
  void start(Job& job);
  void step(Job& job);
  void end(Job& job, const std::string& error = "");

  Engine& engine_;
  std::mutex& compute_;
  DecodeBatch batch_;
  std::atomic<int64_t> deadline_ns_{INT64_MAX};
  size_t next_prompt_ = 0;  // round robin over jobs waiting with a prompt
  std::atomic<uint64_t> batched_passes_{0}, batched_tokens_{0};

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Job>> queue_;  // submitted, not yet taken by the thread
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace runnel::server
