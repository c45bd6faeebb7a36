#include "native/server/scheduler.h"

#include <chrono>
#include <cstdio>

namespace runnel::server {

Scheduler::Job::Job(Session& session, std::vector<TokenId> prompt, RequestOptions options)
    : session_(session), prompt_(std::move(prompt)), options_(std::move(options)) {
  options_.defer_prompt = true;
}

bool Scheduler::Job::next(std::string& text, std::vector<StepLogprobs>& logprobs) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return done_ || !text_.empty() || !logprobs_.empty(); });
  text = std::move(text_);
  logprobs = std::move(logprobs_);
  text_.clear();
  logprobs_.clear();
  return !(done_ && text.empty() && logprobs.empty());
}

void Scheduler::Job::post(std::string text, std::vector<StepLogprobs> logprobs) {
  if (text.empty() && logprobs.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ += text;
    for (StepLogprobs& lp : logprobs) logprobs_.push_back(std::move(lp));
  }
  ready_.notify_one();
}

void Scheduler::Job::finish(Result result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result_ = std::move(result);
    done_ = true;
  }
  ready_.notify_one();
}

Scheduler::Scheduler(Engine& engine, int max_jobs, std::mutex& compute)
    : engine_(engine), compute_(compute), batch_(engine, max_jobs), thread_([this] { loop(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::shared_ptr<Scheduler::Job> Scheduler::submit(Session& session, std::vector<TokenId> prompt,
                                                  const RequestOptions& options) {
  std::shared_ptr<Job> job(new Job(session, std::move(prompt), options));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
  }
  wake_.notify_one();
  return job;
}

void Scheduler::loop() {
  std::vector<std::shared_ptr<Job>> jobs;  // running
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !jobs.empty(); });
      if (stopping_ && queue_.empty() && jobs.empty()) return;
      for (std::shared_ptr<Job>& j : queue_) jobs.push_back(std::move(j));
      queue_.clear();
    }
    std::lock_guard<std::mutex> compute(compute_);
    round(jobs);
    std::erase_if(jobs, [](const std::shared_ptr<Job>& j) { return j->run_ == nullptr && j->done_; });
  }
}

void Scheduler::round(std::vector<std::shared_ptr<Job>>& jobs) {
  // New jobs: prefix reuse and the fit check; cancelled or cut ones end.
  const bool cut = now_ns() > deadline_ns_;
  for (const std::shared_ptr<Job>& j : jobs) {
    if (!j->run_ && !j->done_) start(*j);
    if (!j->run_) continue;
    if (j->cancelled_ || cut) {
      const std::string rest = j->run_->stop(j->cancelled_ ? FinishReason::Aborted : FinishReason::Cut);
      j->post(rest, j->run_->take_logprobs());
      if (cut && !j->cancelled_) {
        std::fprintf(stderr, "runnel serve: --shutdown-timeout cut a generation after %d tokens\n",
                     j->run_->stats().n_generated);
      }
      end(*j);
    }
  }
  // One chunk of one waiting prompt, and the next token of every decoding job.
  std::vector<Job*> prompts;
  for (const std::shared_ptr<Job>& j : jobs) {
    if (j->run_ && j->session_.n_pending() > 1) prompts.push_back(j.get());
  }
  Job* prompt = prompts.empty() ? nullptr : prompts[next_prompt_++ % prompts.size()];
  std::vector<Job*> decoding;
  std::vector<Session*> pending;
  for (const std::shared_ptr<Job>& j : jobs) {
    if (!j->run_ || j->session_.n_pending() > 1) continue;
    decoding.push_back(j.get());
    if (j->session_.n_pending() == 1) pending.push_back(&j->session_);
  }
  // The decoding jobs' rows ride along the prompt chunk's pass where the batch takes it:
  // they add compute, not another read of the weights.
  const bool mixed = prompt && batch_.takes_prompts() && !pending.empty();
  try {
    if (prompt && !mixed) {
      const int64_t start = now_ns();
      prompt->session_.eval_chunk();
      prompt->prompt_seconds_ += static_cast<double>(now_ns() - start) * 1e-9;
    }
    // Alone, a job steps by itself (and may speculate).
    if (mixed || (decoding.size() > 1 && !pending.empty())) {
      const int64_t start = now_ns();
      batch_.run(pending, mixed ? &prompt->session_ : nullptr);
      if (mixed) prompt->prompt_seconds_ += static_cast<double>(now_ns() - start) * 1e-9;
      ++batched_passes_;
      batched_tokens_ += pending.size();
    }
  } catch (const std::exception& e) {
    for (Job* j : decoding) end(*j, e.what());
    if (prompt) end(*prompt, e.what());
    return;
  }
  if (prompt && prompt->session_.n_pending() == 0) decoding.push_back(prompt);  // its first token
  for (Job* j : decoding) step(*j);
}

void Scheduler::start(Job& job) {
  try {
    job.run_ = std::make_unique<RequestRun>(job.session_, job.prompt_, job.options_);
  } catch (const std::exception& e) {
    Result r;
    r.error = e.what();
    r.n_prompt = static_cast<int>(job.prompt_.size());
    job.finish(std::move(r));
    return;
  }
  if (job.run_->done()) end(job);
}

void Scheduler::step(Job& job) {
  if (job.decode_start_ns_ == 0) job.decode_start_ns_ = now_ns();
  std::string piece;
  bool more = false;
  try {
    more = job.run_->next(piece);
  } catch (const std::exception& e) {
    // A request the engine cannot go on with (logit_bias banning every token its
    // grammar allows): the reply so far ends with the error.
    job.run_->stop(FinishReason::Aborted);
    end(job, e.what());
    return;
  }
  job.post(std::move(piece), job.run_->take_logprobs());
  if (!more) end(job);
}

void Scheduler::end(Job& job, const std::string& error) {
  const RequestRun& run = *job.run_;
  Result r;
  r.n_prompt = run.n_prompt();
  r.n_cached = run.n_cached();
  r.n_generated = run.stats().n_generated;
  r.n_drafted = run.stats().n_drafted;
  r.n_draft_accepted = run.stats().n_draft_accepted;
  r.finish = run.finish_reason();
  r.error = error;
  r.prompt_seconds = job.prompt_seconds_ + run.stats().prompt_ms / 1000;
  r.decode_seconds = job.decode_start_ns_ > 0 ? static_cast<double>(now_ns() - job.decode_start_ns_) * 1e-9 : 0;
  job.run_.reset();
  job.finish(std::move(r));
}

}  // namespace runnel::server
