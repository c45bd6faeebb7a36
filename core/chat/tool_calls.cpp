#include "core/chat/tool_calls.h"

#include <array>

#include "core/chat/json_scan.h"

namespace runnel {

namespace {

using json_scan::State;

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// How many bytes at the end of `text` could be the start of `marker` (held back while
// streaming until the next piece decides).
size_t held_marker_prefix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (marker.substr(0, n) == text.substr(text.size() - n)) return n;
  }
  return 0;
}

// `s` without a UTF-8 sequence cut off at its end (a delta never splits a character).
std::string_view whole_utf8(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    return len > back ? s.substr(0, s.size() - back) : s;
  }
  return s;
}

// OpenAI-like ids; Mistral's templates insist on 9 alphanumerics.
std::string call_id(uint64_t seed, size_t index, ToolCallFormat format) {
  static constexpr std::string_view kChars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  std::string id = format == ToolCallFormat::Mistral ? "" : "call_";
  const size_t n = format == ToolCallFormat::Mistral ? 9 : 24;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) {  // splitmix64
      x += 0x9E3779B97F4A7C15ull;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      x = z ^ (z >> 31);
    }
    id += kChars[(x >> (8 * (i % 8))) % kChars.size()];
  }
  return id;
}

// One parse of `text`; `partial`: the text may still grow, so undecided text is held back
// and unfinished calls show what is certain of them so far.
class ReplyParser {
 public:
  ReplyParser(std::string_view text, const ChatSyntax& syntax, bool partial)
      : t_(text), syntax_(syntax), partial_(partial) {}

  ChatReply run() {
    const std::string_view rest = split_reasoning();
    if (!syntax_.tool_calls) {
      add_content(rest);
    } else {
      read_calls(rest);
    }
    out_.content = finish_text(content_);
    out_.reasoning = finish_text(out_.reasoning);
    for (size_t i = 0; i < out_.tool_calls.size(); ++i) {
      ChatToolCall& c = out_.tool_calls[i];
      if (c.id.empty()) c.id = call_id(syntax_.id_seed, i, syntax_.format);
      if (partial_) c.arguments = std::string(whole_utf8(c.arguments));
    }
    return std::move(out_);
  }

 private:
  void read_calls(std::string_view rest) {
    switch (syntax_.format) {
      case ToolCallFormat::Hermes: marked_calls(rest, "<tool_call>", "</tool_call>", false, true); break;
      case ToolCallFormat::Phi4: marked_calls(rest, "<|tool_call|>", "<|/tool_call|>", true, true); break;
      case ToolCallFormat::Mistral: marked_calls(rest, "[TOOL_CALLS]", "", true, false); break;
      case ToolCallFormat::Llama3: llama3(rest); break;
      case ToolCallFormat::Generic: generic(rest); break;
    }
  }

  std::string finish_text(std::string_view s) const {
    s = trim(s);
    return std::string(partial_ ? whole_utf8(s) : s);
  }

  // Text that may still turn out to start `marker` is held back while streaming.
  void add_content(std::string_view s, std::string_view marker = {}) {
    if (partial_ && !marker.empty()) s.remove_suffix(held_marker_prefix(s, marker));
    content_ += s;
  }

  // The reply after its think block; the block's text goes to reasoning.
  std::string_view split_reasoning() {
    if (!syntax_.reasoning) return t_;
    size_t body = 0;
    if (!syntax_.thinking_open) {
      const size_t b = json_scan::skip_whitespace(t_, 0);
      const std::string_view start = t_.substr(b);
      if (start.substr(0, kThinkOpen.size()) == kThinkOpen) {
        body = b + kThinkOpen.size();
      } else if (partial_ && kThinkOpen.substr(0, start.size()) == start) {
        return {};  // may still become "<think>"
      } else {
        return t_;
      }
    }
    const size_t end = t_.find(kThinkClose, body);
    if (end == std::string_view::npos) {
      std::string_view r = t_.substr(body);
      if (partial_) r.remove_suffix(held_marker_prefix(r, kThinkClose));
      out_.reasoning = std::string(r);
      return {};
    }
    out_.reasoning = std::string(t_.substr(body, end - body));
    return t_.substr(end + kThinkClose.size());
  }

  enum class Read { Call, NotACall, Pending };
  struct CallRead {
    Read kind;
    size_t end = 0;
  };

  // A call object {"name": ..., <args_key>: {...}, "id"?: ...} at `pos`. Pending: the text
  // ends inside it; the call is shown (name, arguments so far) once its name is complete
  // and its arguments object has begun, when `stream_args`.
  CallRead call_object(std::string_view t, size_t pos, bool stream_args,
                       std::initializer_list<std::string_view> args_keys = {"arguments"}) {
    const json_scan::ObjectScan o = json_scan::scan_object(t, pos);
    if (o.state == State::Invalid) return {Read::NotACall};
    const json_scan::Member* name = o.find("name");
    const json_scan::Member* args = nullptr;
    for (std::string_view k : args_keys) {
      if (!args) args = o.find(k);
    }
    const auto text_of = [&](const json_scan::Member* m) {
      return t.substr(m->value_begin, m->value_end - m->value_begin);
    };
    std::optional<std::string> name_text;
    if (name && name->complete) name_text = json_scan::decode_string(text_of(name));
    if (o.state == State::Incomplete) {
      if (!partial_) return {Read::NotACall};
      if (stream_args && name_text && args && t[args->value_begin] == '{') {
        out_.tool_calls.push_back({*name_text, std::string(text_of(args)), ""});
      }
      return {Read::Pending};
    }
    if (!name_text || !args) return {Read::NotACall};
    std::string arguments(text_of(args));
    if (arguments[0] == '"') {  // arguments sent as a JSON string holding the object
      const std::optional<std::string> inner = json_scan::decode_string(arguments);
      const std::string_view inner_trimmed = inner ? trim(*inner) : std::string_view();
      if (inner_trimmed.empty() || inner_trimmed[0] != '{' ||
          json_scan::scan_value(inner_trimmed, 0).end != inner_trimmed.size() ||
          json_scan::scan_value(inner_trimmed, 0).state != State::Complete) {
        return {Read::NotACall};
      }
      arguments = std::string(inner_trimmed);
    } else if (arguments[0] != '{') {
      return {Read::NotACall};
    }
    std::string id;
    if (const json_scan::Member* m = o.find("id"); m && m->complete) {
      id = json_scan::decode_string(text_of(m)).value_or("");
    }
    out_.tool_calls.push_back({*name_text, std::move(arguments), std::move(id)});
    return {Read::Call, o.end};
  }

  // Calls in `value` at `pos`: an object, or (allow_array) a list of them. Calls are
  // added only when all of them are well-formed (or, streaming, while they may still be).
  CallRead call_value(std::string_view t, size_t pos, bool allow_array, bool stream_args) {
    if (pos >= t.size()) return {partial_ ? Read::Pending : Read::NotACall};
    const size_t n_before = out_.tool_calls.size();
    const auto not_a_call = [&] {
      out_.tool_calls.resize(n_before);
      return CallRead{Read::NotACall};
    };
    if (t[pos] == '{') {
      const CallRead r = call_object(t, pos, stream_args);
      if (r.kind == Read::NotACall) return not_a_call();
      return r;
    }
    if (!allow_array || t[pos] != '[') return {Read::NotACall};
    const json_scan::Scan whole = json_scan::scan_value(t, pos);
    if (whole.state == State::Invalid || (whole.state == State::Incomplete && !partial_)) return not_a_call();
    size_t i = json_scan::skip_whitespace(t, pos + 1);
    while (i < t.size() && t[i] != ']') {
      if (t[i] != '{') return not_a_call();
      const CallRead r = call_object(t, i, stream_args);
      if (r.kind == Read::NotACall) return not_a_call();
      if (r.kind == Read::Pending) return r;
      i = json_scan::skip_whitespace(t, r.end);
      if (i < t.size() && t[i] == ',') i = json_scan::skip_whitespace(t, i + 1);
    }
    if (i >= t.size()) return {Read::Pending};
    return {Read::Call, i + 1};
  }

  // open-marker, calls, close-marker (optional at the end), repeated; text around them
  // is content. A marker followed by something that is not a call is content too.
  void marked_calls(std::string_view t, std::string_view open, std::string_view close, bool allow_array,
                    bool stream_args) {
    size_t pos = 0;
    while (true) {
      const size_t k = t.find(open, pos);
      if (k == std::string_view::npos) {
        add_content(t.substr(pos), open);
        return;
      }
      add_content(t.substr(pos, k - pos));
      const size_t j = json_scan::skip_whitespace(t, k + open.size());
      const CallRead r = call_value(t, j, allow_array, stream_args);
      if (r.kind == Read::Pending) return;
      if (r.kind == Read::NotACall) {
        add_content(t.substr(k));
        return;
      }
      const size_t e = json_scan::skip_whitespace(t, r.end);
      const std::string_view after = t.substr(e);
      if (!close.empty() && after.substr(0, close.size()) == close) {
        pos = e + close.size();
      } else if (partial_ && !close.empty() && close.substr(0, after.size()) == after) {
        return;  // the close marker may be arriving
      } else {
        pos = r.end;  // no close marker: what follows is content
      }
    }
  }

  // {"name": ..., "parameters": {...}} (one or more, ';'-separated) as the whole reply, or
  // content then <|python_tag|> and a call or Python code (the built-in python tool).
  void llama3(std::string_view t) {
    constexpr std::string_view kPythonTag = "<|python_tag|>";
    size_t j = json_scan::skip_whitespace(t, 0);
    if (j < t.size() && t[j] == '{') {
      const size_t n_before = out_.tool_calls.size();
      while (j < t.size() && t[j] == '{') {
        const CallRead r = call_object(t, j, true, {"parameters", "arguments"});
        if (r.kind == Read::Pending) return;
        if (r.kind == Read::NotACall) {
          out_.tool_calls.resize(n_before);
          add_content(t, kPythonTag);
          return;
        }
        j = json_scan::skip_whitespace(t, r.end);
        if (j < t.size() && t[j] == ';') j = json_scan::skip_whitespace(t, j + 1);
      }
      t = t.substr(j);
    }
    const size_t k = t.find(kPythonTag);
    if (k == std::string_view::npos) {
      add_content(t, kPythonTag);
      return;
    }
    add_content(t.substr(0, k));
    const size_t b = json_scan::skip_whitespace(t, k + kPythonTag.size());
    if (b < t.size() && t[b] == '{') {
      const CallRead r = call_object(t, b, true, {"parameters", "arguments"});
      if (r.kind != Read::NotACall) {
        if (r.kind == Read::Call) add_content(t.substr(r.end));
        return;
      }
    }
    std::string_view code = t.substr(b);
    while (!code.empty() && is_space(code.back())) code.remove_suffix(1);
    if (code.empty() && partial_) return;
    std::string arguments = "{\"code\": \"" + json_scan::escape_string(code);
    if (!partial_) arguments += "\"}";
    out_.tool_calls.push_back({"python", std::move(arguments), ""});
  }

  // The whole reply as {"tool_calls": [...]}, {"tool_call": {...}} or {"response": ...}.
  void generic(std::string_view t) {
    const size_t j = json_scan::skip_whitespace(t, 0);
    if (j >= t.size() || t[j] != '{') {
      add_content(t);
      return;
    }
    const json_scan::ObjectScan o = json_scan::scan_object(t, j);
    if (o.state == State::Incomplete && partial_) return;  // undecided until it closes
    if (o.state == State::Complete && json_scan::skip_whitespace(t, o.end) == t.size()) {
      const auto text_of = [&](const json_scan::Member* m) {
        return t.substr(m->value_begin, m->value_end - m->value_begin);
      };
      if (const json_scan::Member* m = o.find("tool_calls")) {
        if (call_value(t, m->value_begin, true, false).kind == Read::Call) return;
      } else if (const json_scan::Member* m = o.find("tool_call")) {
        if (call_value(t, m->value_begin, false, false).kind == Read::Call) return;
      } else if (const json_scan::Member* m = o.find("response")) {
        const std::string_view v = text_of(m);
        content_ += v[0] == '"' ? json_scan::decode_string(v).value_or(std::string(v)) : std::string(v);
        return;
      }
    }
    add_content(t);
  }

  std::string_view t_;
  const ChatSyntax& syntax_;
  bool partial_;
  std::string content_;
  ChatReply out_;
};

// `b` minus its first `a.size()` bytes when `a` is a prefix of it, else nothing (a held
// or streamed text never shrinks; if a parse disagrees, nothing is sent for it).
std::string extension(const std::string& a, const std::string& b) {
  if (b.size() <= a.size() || b.compare(0, a.size(), a) != 0) return {};
  return b.substr(a.size());
}

}  // namespace

std::string_view tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Generic: return "generic";
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3: return "llama3";
    case ToolCallFormat::Mistral: return "mistral";
    case ToolCallFormat::Phi4: return "phi4";
  }
  return "generic";
}

ToolCallFormat detect_tool_call_format(std::string_view src) {
  const auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (has("[TOOL_CALLS]")) return ToolCallFormat::Mistral;
  if (has("<tool_call>")) return ToolCallFormat::Hermes;
  if (has("<|tool_call|>")) return ToolCallFormat::Phi4;
  if (has("<|python_tag|>") || has("<|start_header_id|>ipython<|end_header_id|>")) {
    return ToolCallFormat::Llama3;
  }
  return ToolCallFormat::Generic;
}

ChatSyntax chat_syntax_for(std::string_view template_source, std::string_view prompt) {
  ChatSyntax s;
  s.format = detect_tool_call_format(template_source);
  s.reasoning = template_source.find(kThinkOpen) != std::string_view::npos;
  const size_t open = prompt.rfind(kThinkOpen);
  const size_t close = prompt.rfind(kThinkClose);
  s.thinking_open = s.reasoning && open != std::string_view::npos &&
                    (close == std::string_view::npos || close < open) &&
                    trim(prompt.substr(open + kThinkOpen.size())).empty();
  return s;
}

ChatReply parse_chat_reply(std::string_view text, const ChatSyntax& syntax) {
  return ReplyParser(text, syntax, false).run();
}

ChatReplyDelta ChatReplyStream::feed(std::string_view piece) {
  text_ += piece;
  return advance(ReplyParser(text_, syntax_, true).run());
}

ChatReplyDelta ChatReplyStream::finish() { return advance(reply()); }

ChatReplyDelta ChatReplyStream::advance(const ChatReply& now) {
  ChatReplyDelta d;
  d.content = extension(sent_.content, now.content);
  d.reasoning = extension(sent_.reasoning, now.reasoning);
  sent_.content += d.content;
  sent_.reasoning += d.reasoning;
  for (size_t i = 0; i < now.tool_calls.size(); ++i) {
    const ChatToolCall& c = now.tool_calls[i];
    if (i >= sent_.tool_calls.size()) {
      d.tool_calls.push_back({i, c.id, c.name, c.arguments});
      sent_.tool_calls.push_back(c);
      continue;
    }
    std::string more = extension(sent_.tool_calls[i].arguments, c.arguments);
    if (more.empty()) continue;
    sent_.tool_calls[i].arguments += more;
    d.tool_calls.push_back({i, "", "", std::move(more)});
  }
  return d;
}

}  // namespace runnel
