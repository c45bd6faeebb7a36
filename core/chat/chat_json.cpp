#include "core/chat/chat_json.h"

#include <nlohmann/json.hpp>

namespace runnel::chat_json {

namespace {

jinja::Value to_value(const nlohmann::ordered_json& j) {
  using jinja::Value;
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::List list;
      for (const auto& e : j) list.push_back(to_value(e));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::Dict dict;
      for (const auto& [k, v] : j.items()) dict.set(k, to_value(v));
      return Value(std::move(dict));
    }
    default: return Value::none();  // binary / discarded: not produced by parse()
  }
}

}  // namespace

std::optional<jinja::Value> parse(std::string_view text) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return to_value(j);
}

}  // namespace runnel::chat_json
