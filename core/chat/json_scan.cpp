#include "core/chat/json_scan.h"

#include <nlohmann/json.hpp>

namespace runnel::json_scan {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

Scan scan_string(std::string_view t, size_t pos) {
  size_t i = pos + 1;  // after '"'
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"') return {State::Complete, i + 1};
    if (static_cast<unsigned char>(c) < 0x20) return {State::Invalid, i};
    if (c != '\\') {
      ++i;
      continue;
    }
    if (i + 1 >= t.size()) return {State::Incomplete, t.size()};
    const char e = t[i + 1];
    if (e == 'u') {
      for (size_t k = 0; k < 4; ++k) {
        if (i + 2 + k >= t.size()) return {State::Incomplete, t.size()};
        if (!is_hex(t[i + 2 + k])) return {State::Invalid, i + 2 + k};
      }
      i += 6;
    } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos) {
      i += 2;
    } else {
      return {State::Invalid, i + 1};
    }
  }
  return {State::Incomplete, t.size()};
}

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; at the end of the text a number may
// still grow, so it is Incomplete there.
Scan scan_number(std::string_view t, size_t pos) {
  size_t i = pos;
  const auto at_end = [&] { return i >= t.size(); };
  const auto digits = [&]() -> bool {  // one or more
    if (at_end() || !is_digit(t[i])) return false;
    while (!at_end() && is_digit(t[i])) ++i;
    return true;
  };
  if (t[i] == '-') ++i;
  if (at_end()) return {State::Incomplete, t.size()};
  if (t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return {State::Invalid, i};
  }
  if (!at_end() && t[i] == '.') {
    ++i;
    if (at_end()) return {State::Incomplete, t.size()};
    if (!digits()) return {State::Invalid, i};
  }
  if (!at_end() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (!at_end() && (t[i] == '+' || t[i] == '-')) ++i;
    if (at_end()) return {State::Incomplete, t.size()};
    if (!digits()) return {State::Invalid, i};
  }
  if (at_end()) return {State::Incomplete, t.size()};
  return {State::Complete, i};
}

Scan scan_literal(std::string_view t, size_t pos, std::string_view word) {
  for (size_t k = 0; k < word.size(); ++k) {
    if (pos + k >= t.size()) return {State::Incomplete, t.size()};
    if (t[pos + k] != word[k]) return {State::Invalid, pos + k};
  }
  return {State::Complete, pos + word.size()};
}

Scan scan_array(std::string_view t, size_t pos) {
  size_t i = skip_whitespace(t, pos + 1);
  if (i >= t.size()) return {State::Incomplete, t.size()};
  if (t[i] == ']') return {State::Complete, i + 1};
  while (true) {
    const Scan v = scan_value(t, i);
    if (v.state != State::Complete) return v;
    i = skip_whitespace(t, v.end);
    if (i >= t.size()) return {State::Incomplete, t.size()};
    if (t[i] == ']') return {State::Complete, i + 1};
    if (t[i] != ',') return {State::Invalid, i};
    i = skip_whitespace(t, i + 1);
    if (i >= t.size()) return {State::Incomplete, t.size()};
  }
}

}  // namespace

size_t skip_whitespace(std::string_view text, size_t pos) {
  while (pos < text.size() && is_ws(text[pos])) ++pos;
  return pos;
}

Scan scan_value(std::string_view t, size_t pos) {
  if (pos >= t.size()) return {State::Incomplete, t.size()};
  const char c = t[pos];
  if (c == '{') {
    const ObjectScan o = scan_object(t, pos);
    return {o.state, o.end};
  }
  if (c == '[') return scan_array(t, pos);
  if (c == '"') return scan_string(t, pos);
  if (c == '-' || is_digit(c)) return scan_number(t, pos);
  if (c == 't') return scan_literal(t, pos, "true");
  if (c == 'f') return scan_literal(t, pos, "false");
  if (c == 'n') return scan_literal(t, pos, "null");
  return {State::Invalid, pos};
}

const Member* ObjectScan::find(std::string_view key) const {
  for (const Member& m : members) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

ObjectScan scan_object(std::string_view t, size_t pos) {
  ObjectScan out{State::Incomplete, t.size(), {}};
  const auto done = [&](State s, size_t at) {
    out.state = s;
    out.end = s == State::Incomplete ? t.size() : at;
    return out;
  };
  size_t i = skip_whitespace(t, pos + 1);
  if (i >= t.size()) return done(State::Incomplete, i);
  if (t[i] == '}') return done(State::Complete, i + 1);
  while (true) {
    if (t[i] != '"') return done(State::Invalid, i);
    const Scan k = scan_string(t, i);
    if (k.state != State::Complete) return done(k.state, k.end);
    std::string key = decode_string(t.substr(i, k.end - i)).value_or("");
    i = skip_whitespace(t, k.end);
    if (i >= t.size()) return done(State::Incomplete, i);
    if (t[i] != ':') return done(State::Invalid, i);
    i = skip_whitespace(t, i + 1);
    if (i >= t.size()) return done(State::Incomplete, i);
    const Scan v = scan_value(t, i);
    if (v.state == State::Invalid) return done(State::Invalid, v.end);
    out.members.push_back({std::move(key), i, v.end, v.state == State::Complete});
    if (v.state == State::Incomplete) return done(State::Incomplete, v.end);
    i = skip_whitespace(t, v.end);
    if (i >= t.size()) return done(State::Incomplete, i);
    if (t[i] == '}') return done(State::Complete, i + 1);
    if (t[i] != ',') return done(State::Invalid, i);
    i = skip_whitespace(t, i + 1);
    if (i >= t.size()) return done(State::Incomplete, i);
  }
}

std::optional<std::string> decode_string(std::string_view literal) {
  const nlohmann::json j = nlohmann::json::parse(literal, nullptr, /*allow_exceptions=*/false);
  if (!j.is_string()) return std::nullopt;
  return j.get<std::string>();
}

std::string escape_string(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace runnel::json_scan
