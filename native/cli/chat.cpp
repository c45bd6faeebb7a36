// runnel chat: an interactive conversation, as llama-cli's conversation mode. The
// messages go through the model's chat template every turn; one Session keeps the
// conversation's cache, so RequestRun evaluates only what the turn added.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/runtime/engine.h"
#include "core/runtime/request.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/chat_input.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"
#include "native/cli/sampler_options.h"

namespace runnel::cli {
namespace {

struct ChatCommandOptions {
  LoadRequest load;  // n_keep -1: a full context ends the reply
  std::string system;
  std::string template_kwargs;  // --chat-template-kwargs
  ChatOptions template_options;  // parsed from it
  int n_predict = -1;
  SamplerParams sampler;
  GrammarOptions grammar_options;
  std::shared_ptr<const Grammar> grammar;  // compiled from them: every reply is constrained
  std::shared_ptr<Drafter> drafter;        // --model-draft's, for every reply
};

void check_ranges(const ChatCommandOptions& o, const ArgParser& p) {
  check_load_options(p, o.load);
  if (o.n_predict < -1) throw UsageError("-n: must be >= -1, got " + std::to_string(o.n_predict));
  check_sampler_options(o.sampler);
  check_grammar_options(p, o.grammar_options);
}

constexpr const char* kCommandHelp =
    "/clear      forget the conversation (the system message stays)\n"
    "/save FILE  write the conversation's messages to FILE as JSON\n"
    "/load FILE  replace the conversation with the messages in FILE\n"
    "/help       this list\n"
    "/exit       quit (so does Ctrl-D at an empty prompt)\n"
    "A line ending in \\ continues on the next line; start a message with // to begin it with /.\n"
    "Ctrl-C stops a reply; at the prompt it drops the line, and a second one in a row quits.\n";

void write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Notes and figures go to stderr (dim on a terminal), so stdout holds only replies.
void note(const std::string& text) {
  std::fflush(stdout);
  static const bool dim = ::isatty(STDERR_FILENO) != 0;
  std::fprintf(stderr, dim ? "\033[2m%s\033[0m\n" : "%s\n", text.c_str());
}

// The conversation as a JSON array of {"role", "content"} objects, as OpenAI's
// messages.
void save_messages(const std::string& path, const std::vector<ChatMessage>& messages) {
  nlohmann::json list = nlohmann::json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  // Text typed in another encoding than UTF-8 is saved with U+FFFD, not refused.
  out << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.close();
  if (!out) throw std::runtime_error("/save: cannot write '" + path + "'");
}

std::vector<ChatMessage> load_messages(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("/load: cannot read '" + path + "'");
  const nlohmann::json list = nlohmann::json::parse(in, nullptr, false);
  const std::string expected =
      "/load: '" + path + "' is not a JSON array of {\"role\", \"content\"} strings";
  if (!list.is_array()) throw std::runtime_error(expected);
  std::vector<ChatMessage> messages;
  for (const nlohmann::json& m : list) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      throw std::runtime_error(expected + " (message " + std::to_string(messages.size()) + ": " +
                               m.dump() + ")");
    }
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return messages;
}

class Chat {
 public:
  Chat(Engine& engine, const ChatCommandOptions& options, const SamplerParams& sampler,
       SigintCatcher& sigint)
      : options_(options),
        sampler_(sampler),
        sigint_(sigint),
        format_(engine),
        session_(engine.new_session()) {
    if (!format_.has_chat_template()) {
      throw std::runtime_error("this model has no usable chat template: " +
                               format_.chat_template_error());
    }
    clear();
  }

  // Handles a /command; returns false for /exit.
  bool command(const std::string& line);
  // Adds the user's message, streams the reply and adds it too.
  void reply(const std::string& text);

 private:
  void clear() {
    const bool keep_system = !messages_.empty() && messages_.front().role == "system";
    messages_.resize(keep_system ? 1 : 0);
    if (messages_.empty() && !options_.system.empty())
      messages_.push_back({"system", options_.system});
  }
  RequestOptions request_for(int n_prompt) const;
  void print_figures(const RequestRun& run) const;

  const ChatCommandOptions& options_;
  SamplerParams sampler_;
  SigintCatcher& sigint_;
  const PromptFormat format_;
  std::unique_ptr<Session> session_;
  std::vector<ChatMessage> messages_;
  uint64_t n_turns_ = 0;
};

bool Chat::command(const std::string& line) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  arg.erase(0, arg.find_first_not_of(' '));
  arg.erase(arg.find_last_not_of(' ') + 1);
  try {
    if (name == "/exit" || name == "/quit") return false;
    if (name == "/help") {
      write_out(kCommandHelp);
    } else if (name == "/clear") {
      clear();
      note(messages_.empty() ? "(conversation cleared)"
                             : "(conversation cleared; the system message stays)");
    } else if ((name == "/save" || name == "/load") && arg.empty()) {
      note(name + ": give a file name, e.g. " + name + " chat.json");
    } else if (name == "/save") {
      save_messages(arg, messages_);
      note("(saved " + std::to_string(messages_.size()) + " messages to " + arg + ")");
    } else if (name == "/load") {
      messages_ = load_messages(arg);
      note("(loaded " + std::to_string(messages_.size()) + " messages from " + arg + ")");
    } else {
      note("unknown command " + name + " (/help lists them)");
    }
  } catch (const std::exception& e) {
    note(e.what());  // a failed command leaves the conversation as it was
  }
  return true;
}

// -n caps a reply; near the end of the context (without --keep's shifting) the reply
// may still run until the context is full instead of refusing the turn.
RequestOptions Chat::request_for(int n_prompt) const {
  RequestOptions request;
  request.sampler = sampler_;
  request.sampler.seed = sampler_.seed + n_turns_;  // each turn its own draw; all from --seed
  request.max_tokens = options_.n_predict;
  request.grammar = options_.grammar;
  request.lookup_ngram = options_.load.lookup_ngram;
  request.drafter = options_.drafter;
  if (request.max_tokens > session_->n_ctx() - n_prompt && !session_->shifts_context())
    request.max_tokens = -1;
  return request;
}

void Chat::reply(const std::string& text) {
  messages_.push_back({"user", text});
  std::unique_ptr<RequestRun> run;
  try {
    PromptInput input = PromptInput::from_messages(messages_);
    input.chat_options = options_.template_options;
    const std::vector<TokenId> prompt = format_.tokens(input);
    sigint_.clear();  // a Ctrl-C from here on stops this reply
    run = std::make_unique<RequestRun>(*session_, prompt,
                                       request_for(static_cast<int>(prompt.size())));
  } catch (const RequestError& e) {
    messages_.pop_back();
    if (e.code() == "context_length_exceeded") {
      note("the conversation no longer fits: " + std::string(e.what()) +
           "; /clear starts a new one (or restart with a larger -c)");
    } else {
      note(e.what());
    }
    return;
  }
  ++n_turns_;
  std::string reply, piece;
  for (bool more = !run->done(); more;) {
    more = run->next(piece);
    if (more && sigint_.pending()) {
      piece += run->stop(FinishReason::Aborted);
      more = false;
    }
    reply += piece;
    write_out(piece);
  }
  sigint_.clear();
  write_out("\n");
  // The reply as generated: rendered back into the template, it tokenizes (up to its
  // end-of-turn token, which the history lacks) as the cache holds it.
  messages_.push_back({"assistant", reply});
  print_figures(*run);
}

void Chat::print_figures(const RequestRun& run) const {
  const GenerationStats& s = run.stats();
  char line[256];
  std::snprintf(line, sizeof line,
                "[prompt: %d new tokens (%d cached), %.1f tok/s | reply: %d tokens, %.1f tok/s",
                s.n_prompt, run.n_cached(), s.prompt_tokens_per_s(), s.n_generated,
                s.gen_tokens_per_s());
  std::string text = line;
  switch (run.finish_reason()) {
    case FinishReason::Aborted:
      text += " | stopped]";
      break;
    case FinishReason::Length:
      text += " | cut at -n " + std::to_string(options_.n_predict) + "]";
      break;
    case FinishReason::ContextFull:
      text += " | context full]\nthe context (" + std::to_string(session_->n_ctx()) +
              " tokens) is full: /clear starts a new conversation";
      break;
    default:
      text += "]";
      break;
  }
  note(text);
}

}  // namespace

int chat_command(const std::vector<std::string>& args) {
  ChatCommandOptions o;
  ArgParser p(
      "runnel chat -m FILE [options]",
      "Chats with the model in FILE through its chat template: type a message, read the streamed\n"
      "reply; /help lists the commands.");
  add_load_options(p, &o.load);
  p.string_option("--system", &o.system, "TEXT", "a system message that starts the conversation");
  p.string_option("--chat-template-kwargs", &o.template_kwargs, "JSON",
                  "template variables, e.g. '{\"enable_thinking\": false}' (Qwen3)");
  p.int_option(
      "-n, --n-predict", &o.n_predict,
      "tokens per reply at most (default -1 = until the end of the turn or a full context)");
  add_sampler_options(p, &o.sampler);
  add_grammar_options(p, &o.grammar_options);
  add_speculation_options(p, &o.load);
  p.int_option(
      "--keep", &o.load.n_keep,
      "when the context fills during a reply, keep the first N tokens and drop the oldest half\n"
      "of the rest (default -1 = end the reply; /clear then starts over)");
  if (p.parse_or_print_help(args)) return 0;
  check_ranges(o, p);
  if (!o.template_kwargs.empty()) o.template_options = parse_chat_template_kwargs(o.template_kwargs);
  select_kernels_from_env();

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  LoadedModel loaded = load_model(o.load);
  Engine& engine = *loaded.engine;
  engine.check_generative();  // an embedding model cannot chat: one line, before the prompt
  o.grammar = load_grammar(engine, o.grammar_options);
  const std::unique_ptr<Engine> draft_engine = load_draft_model(o.load, engine, loaded.held_bytes());
  const std::unique_ptr<Session> draft_session = draft_engine ? draft_engine->new_session() : nullptr;
  if (draft_session) o.drafter = std::make_shared<DraftModel>(*draft_session, o.load.n_draft);
  SamplerParams sampler = o.sampler;
  sampler.seed = resolve_seed(sampler.seed);
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  SigintCatcher sigint;
  Chat chat(engine, o, sampler, sigint);
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  std::fprintf(stderr, "load: %.1f ms (%d threads, %s kernels, context %d, seed %llu)\n", load_ms,
               loaded.n_threads, std::string(kernels().isa).c_str(), engine.n_ctx(),
               static_cast<unsigned long long>(sampler.seed));
  if (terminal) note("/help lists the commands; Ctrl-C stops a reply; Ctrl-D or /exit quits");

  LineReader reader(STDIN_FILENO, sigint);
  bool interrupted_last = false;  // Ctrl-C twice in a row at the prompt quits
  for (;;) {
    if (terminal) write_out("> ");
    std::string message;
    const InputStatus status = read_message(reader, message, terminal ? "... " : "");
    if (status == InputStatus::End) {
      if (terminal) write_out("\n");
      return 0;
    }
    if (status == InputStatus::Interrupted) {
      write_out("\n");
      if (interrupted_last) return 0;
      note("(Ctrl-C again, Ctrl-D or /exit quits)");
      interrupted_last = true;
      continue;
    }
    interrupted_last = false;
    if (message.find_first_not_of(" \t\n") == std::string::npos) continue;
    if (message[0] == '/' && message.compare(0, 2, "//") != 0) {
      if (!chat.command(message)) return 0;
      continue;
    }
    chat.reply(message[0] == '/' ? message.substr(1) : message);
  }
}

}  // namespace runnel::cli
