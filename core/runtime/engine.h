// The public C++ API: an Engine is a loaded model (config, tokenizer, weights); a
// Session is one conversation over it (KV cache, position, token history) with the
// generation loop. The CLI, the server and the wasm ABI are thin shells over these.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/model/config.h"
#include "core/model/model.h"
#include "core/runtime/logprobs.h"
#include "core/runtime/speculative.h"
#include "core/host/parallel.h"
#include "core/host/weight_store.h"
#include "core/sampling/sampler.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel {

class Grammar;    // core/sampling/grammar.h
class TokenTrie;  // core/sampling/grammar_token_trie.h

struct EngineOptions {
  int n_ctx = 0;     // tokens a session holds; 0: min(model's context_length, 4096)
  int n_batch = 64;  // tokens per forward pass while evaluating a prompt
  // KV cache element type: F16 (default), Q8_0 or Q4_0 (parse_kv_type).
  GgmlType kv_type = GgmlType::F16;
  // When the context fills during generation: keep the first n_keep tokens, drop the
  // oldest half of the rest and go on (a context shift). -1: stop (ContextFull).
  int n_keep = -1;
  // Sessions keep every position's logits of a batch (Session::eval_all: tests,
  // perplexity); costs n_batch * n_vocab floats.
  bool all_logits = false;
  // Speculative decoding: the most draft tokens a session verifies in one pass
  // (GenerateParams::lookup_ngram); each costs a row of logits. 0: no speculation.
  int n_draft = 0;
  // Where matmuls and attention fan out; null: InlineParallel. One Session runs on
  // it at a time.
  std::shared_ptr<Parallel> parallel;
};

struct GenerateParams {
  int max_tokens = 128;  // -1: until the context is full or end of generation
  SamplerParams sampler;
  bool stop_on_eog = true;  // an end-of-generation token ends the loop (not emitted)
  // Optional: sees the logits of each predicted position before sampling; step 0 is
  // the first position after the prompt, seen even when max_tokens is 0
  // (--dump-logits, logprobs).
  std::function<void(int step, std::span<const float> logits)> on_logits;
  // Optional: constrains the output to a grammar (request.h's compile_grammar). Tokens
  // the grammar does not allow at a step get logit -inf after on_logits has seen the
  // logits; end-of-generation tokens are allowed only where the grammar may end, and
  // the generation ends (EndOfGeneration) where nothing more can follow.
  std::shared_ptr<const Grammar> grammar;
  // >= 0: each generated token's log probability (core/runtime/logprobs.h, from the
  // raw logits) and this many of its step's most likely tokens, in
  // Generation::step_logprobs(). -1: off.
  int logprobs = -1;
  // Speculative decoding with prompt lookup (core/runtime/speculative.h): drafts from
  // the context's earlier text matching its last `lookup_ngram` tokens (or fewer),
  // checked in one pass of up to EngineOptions::n_draft tokens (which must be > 0).
  // Greedy output is the same bits as without; sampled output keeps its distribution.
  // 0: off.
  int lookup_ngram = 0;
  // Another drafter (a DraftModel) instead of prompt lookup; not owned, it must outlive
  // the generation. Needs EngineOptions::n_draft > 0 as lookup does.
  Drafter* drafter = nullptr;
  // The prompt is left pending for the caller to evaluate (Session::eval_chunk, a
  // DecodeBatch), so that a scheduler can interleave it with other sessions' steps;
  // step() evaluates what is still pending. Not with max_tokens 0.
  bool defer_prompt = false;
};

enum class StopReason { MaxTokens, EndOfGeneration, Callback, ContextFull };

struct GenerationStats {
  int n_prompt = 0;     // tokens evaluated for the prompt
  int n_generated = 0;  // tokens sampled and emitted (an end token is not counted)
  double prompt_ms = 0;
  double gen_ms = 0;
  double load_ms = 0;  // the engine's load time
  double grammar_ms = 0;  // of gen_ms: computing and applying grammar masks
  int n_drafted = 0;         // speculative decoding: draft tokens verified
  int n_draft_accepted = 0;  // of them, accepted
  StopReason stop = StopReason::MaxTokens;

  double prompt_tokens_per_s() const { return prompt_ms > 0 ? n_prompt * 1000.0 / prompt_ms : 0; }
  double gen_tokens_per_s() const { return gen_ms > 0 ? n_generated * 1000.0 / gen_ms : 0; }
};

// Receives generated text as it completes (never part of a UTF-8 sequence).
// Returns true to keep generating, false to stop.
using PieceCallback = std::function<bool(std::string_view piece)>;

class Session;
class Generation;
class DecodeBatch;

// The one-line refusal of generation on an embedding model, naming it ("this is a bert
// embedding model: ..."); the server answers it as a 400.
std::string embedding_model_refusal(const ModelConfig& config);

class Engine {
 public:
  // Reads the config (refusing unknown architectures and mis-shaped tensors), builds
  // the tokenizer and the model over `store`. Throws GgufError / std::invalid_argument.
  static std::unique_ptr<Engine> load(std::unique_ptr<WeightStore> store,
                                      const EngineOptions& options = {});
  ~Engine();

  const ModelConfig& config() const { return model_->config(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const EngineOptions& options() const { return options_; }
  int n_ctx() const { return options_.n_ctx; }
  double load_ms() const { return load_ms_; }
  WeightStore& store() { return *store_; }
  const WeightStore& store() const { return *store_; }

  // n_ctx: the session's context, at most the engine's (0: the engine's).
  std::unique_ptr<Session> new_session(int n_ctx = 0);

  // Throws std::invalid_argument (embedding_model_refusal) for an embedding model
  // (bert, nomic-bert): Session::eval, eval_all and every generation call it first.
  void check_generative() const;

  // The vocabulary as the grammar engine sees it: each token's bytes as the
  // detokenizer emits them, end-of-generation tokens as EOG, control tokens as
  // control. Built on first use (~0.4 s for a 262k vocabulary), then shared; safe to
  // call from several threads.
  std::shared_ptr<const TokenTrie> grammar_vocab() const;

 private:
  friend class Session;
  friend class DecodeBatch;
  Engine() = default;

  EngineOptions options_;  // n_ctx resolved, parallel set
  std::unique_ptr<WeightStore> store_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Model> model_;
  double load_ms_ = 0;
  mutable std::once_flag grammar_vocab_once_;
  mutable std::shared_ptr<const TokenTrie> grammar_vocab_;
};

class DecodeBatch;

class Session {
 public:
  // n_ctx as for Engine::new_session; throws std::invalid_argument outside it.
  explicit Session(Engine& engine, int n_ctx = 0);

  // Appends tokens to the history, runs everything not yet in the cache, and returns
  // the logits of the last token [n_vocab] (valid until the next call). Throws
  // std::invalid_argument, before any work, for an empty span, ids outside the
  // vocabulary, or a history that would not fit the context.
  std::span<float> eval(std::span<const TokenId> tokens);

  // Like eval, returning every position's logits [n, n_vocab] (needs all_logits).
  std::vector<float> eval_all(std::span<const TokenId> tokens);

  // Evaluates `prompt` after the history, then samples up to max_tokens tokens,
  // streaming their text to on_piece. Fails before work starts when the prompt or
  // max_tokens do not fit the context (messages carry the numbers).
  GenerationStats generate(const std::vector<TokenId>& prompt, const GenerateParams& params,
                           const PieceCallback& on_piece);

  // The checks generate() starts with, for front ends that act before calling it
  // (echoing the prompt). Returns how many tokens it would generate at most.
  int check_request(const std::vector<TokenId>& prompt, const GenerateParams& params) const;

  // generate() in steps, for front ends that return to an event loop between tokens
  // (the wasm worker): see Generation.
  std::unique_ptr<Generation> start(const std::vector<TokenId>& prompt,
                                    const GenerateParams& params);

  // Sentence embedding of `tokens` [n_embd], L2-normalized unless !normalize (the
  // OpenAI endpoint's and llama-server's default; llama.cpp's own API returns the
  // pooled vector as is). An embedding model (bert, nomic-bert) pools its last layer's
  // outputs as its {arch}.pooling_type says (mean, [CLS] = the first token, or the
  // last token), evaluating the whole input in one batch; a generative model gives
  // the mean of its final-norm hidden states. Uses this session's cache as scratch:
  // the history is cleared first and afterwards. Throws like eval() (empty, ids,
  // context).
  std::vector<float> embed(std::span<const TokenId> tokens, bool normalize = true);

  int position() const { return static_cast<int>(tokens_.size()); }  // tokens in history
  // History tokens not yet run through the model (a deferred prompt, the last sampled
  // token); eval_chunk() runs up to a batch of them.
  int n_pending() const { return position() - n_evaluated_; }
  // Runs the next min(n_pending(), batch size) pending tokens; returns n_pending() after.
  int eval_chunk();
  int n_ctx() const { return kv_.n_ctx(); }
  const std::vector<TokenId>& tokens() const { return tokens_; }
  // For session files (core/runtime/session_file.h): the cache and how many history
  // tokens it holds; restore() replaces the history with `tokens`, the cache entries
  // of the first n_cached given as KvCache::save_positions wrote them. Throws
  // std::invalid_argument if they do not fit this session or the bytes do not match.
  const KvCache& kv_cache() const { return kv_; }
  int n_evaluated() const { return n_evaluated_; }
  // The first n_cached tokens are in kv_bytes; the rest are evaluated on demand.
  void restore(std::vector<TokenId> tokens, int n_cached, const uint8_t* kv_bytes, size_t n_bytes);

  // Context shifts done by generate() so far (EngineOptions::n_keep).
  int n_context_shifts() const { return n_context_shifts_; }
  // Whether a full context shifts (EngineOptions::n_keep >= 0) instead of ending.
  bool shifts_context() const;

  // Hands the input rows of every weight product of this session's passes to `observer`
  // (runnel imatrix); nullptr (the default) stops it. `observer` must outlive its use.
  void set_matmul_observer(MatmulObserver* observer) { scratch_.mm.observer = observer; }

  // Forgets history past the first n_keep tokens (their cache entries stay valid).
  void rewind(int n_keep);
  void reset() { rewind(0); }

 private:
  friend class Generation;
  friend class DecodeBatch;
  void check_fits(size_t n_new, std::string_view what) const;
  void append(std::span<const TokenId> tokens);  // validates, then adds to the history
  void run_pending(bool all_logits, std::vector<float>* all_out);
  // Speculative verification: runs the pending last token and `drafts` after it in one
  // pass whose rows get the bits each would get alone; returns their logits [1 + n,
  // n_vocab] (in the scratch). The history is left as before the drafts, its last token
  // evaluated: accepted drafts rejoin it through Generation, their cache entries valid.
  std::span<float> verify(std::span<const TokenId> drafts);
  void shift_context();

  Engine& engine_;
  KvCache kv_;
  ForwardScratch scratch_;
  std::vector<TokenId> tokens_;  // the history; [0, n_evaluated_) are in the cache
  int n_evaluated_ = 0;
  std::span<float> last_logits_;
  int n_context_shifts_ = 0;
};

// Continuous batching: the one pending token of each of several sessions of an engine
// run in one forward pass, so each weight is read once for all of them. Products are
// computed per token (MatmulScratch::per_token) and each row attends only its own
// session's cache, so every session is left as Session::eval would leave it, to the
// bit. Beside them the pass may run the next chunk of one session's prompt, as
// Session::eval_chunk would, to the bit (its rows first, through the batched products
// where eval_chunk takes them): the decode rows then cost little more than the compute
// of a prompt pass. Sessions must use the engine's context size.
class DecodeBatch {
 public:
  // Room for max_sessions decoding sessions and, where the model allows it
  // (Model::mixes_runs: not a mixture of experts), a prompt chunk of up to the
  // engine's n_batch tokens.
  DecodeBatch(Engine& engine, int max_sessions);
  int max_sessions() const { return max_sessions_; }
  bool takes_prompts() const { return takes_prompts_; }
  // Each session has exactly one pending token; afterwards none, its logits ready.
  // `prompt` (needs takes_prompts()), a session with more than one pending token and
  // not among `sessions`: its next chunk runs in the same pass, as Session::eval_chunk.
  // Throws std::invalid_argument (before any work) otherwise.
  void run(std::span<Session* const> sessions, Session* prompt = nullptr);

 private:
  Engine& engine_;
  int max_sessions_;
  bool takes_prompts_;
  ForwardScratch scratch_;
  std::vector<int32_t> tokens_;
  std::vector<SeqRun> runs_;
};

// One generation, a token per step: Session::start() checks the request (throwing
// like generate()) and evaluates the prompt; each step() samples a token, evaluates
// it when the next one is asked for, and hands out its text. generate() is this loop
// run to the end. The session must not be used otherwise until the generation ends.
class Generation {
 public:
  Generation(Session& session, const std::vector<TokenId>& prompt, const GenerateParams& params);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Produces the next token; `piece` receives its complete text (possibly "", never
  // part of a UTF-8 sequence). Returns false once generation has ended, then `piece`
  // holds any text still pending and stats().stop says why.
  bool step(std::string& piece);
  // Ends the generation early (StopReason::Callback); returns the pending text.
  std::string stop();

  bool done() const { return done_; }
  const GenerationStats& stats() const { return stats_; }
  // With GenerateParams::logprobs >= 0: the log probabilities of the token the last
  // step() generated; null when it generated none (end of generation) or when off.
  const StepLogprobs* step_logprobs() const { return has_logprobs_ ? &logprobs_ : nullptr; }

 private:
  struct GrammarState;  // the matcher and the mask of the next step (generate.cpp)
  // A token chosen ahead of its step (speculation verifies several in one pass), or the
  // end of generation (id -1: the grammar allows nothing more).
  struct Planned {
    TokenId id = -1;
    bool evaluated = false;         // its cache entry came from the verification pass
    bool grammar_complete = false;  // nothing but end-of-generation may follow it
    bool has_logprobs = false;
    StepLogprobs logprobs;
  };
  // Chooses the token for `logits` (step `step`): on_logits, logprobs, the grammar's
  // mask, then the sampler (sample_draft against `draft` when >= 0); appends it to
  // planned_. Returns whether the token is `draft`.
  bool choose(std::span<float> logits, int step, TokenId draft);
  // One round of prompt lookup: drafts, verifies them in one pass and plans the
  // accepted tokens plus the model's next one. False (nothing planned) when there is no
  // draft or no room for one.
  bool speculate();
  // Hands out planned_.front(): it joins the history.
  void emit(std::string& piece);
  // Masks the logits with the grammar; false where it allows no token at all.
  bool constrain(std::span<float> logits);
  // After accepting a token: whether anything but end-of-generation may follow.
  bool grammar_can_continue();

  Session& session_;
  GenerateParams params_;
  Sampler sampler_;
  StreamingDetokenizer detok_;
  std::unique_ptr<GrammarState> grammar_;  // null: unconstrained
  GenerationStats stats_;
  int max_gen_ = 0;
  int step_ = 0;
  bool done_ = false;
  std::vector<float> raw_logits_;  // logprobs: the step's logits before sampling
  StepLogprobs logprobs_;
  bool has_logprobs_ = false;
  std::deque<Planned> planned_;
  std::unique_ptr<PromptLookup> lookup_;  // prompt lookup's drafter, owned
  Drafter* drafter_ = nullptr;            // the drafter in use; null: no speculation
};

}  // namespace runnel
