// A Jinja interpreter for the subset chat templates use (see core/chat/README.md for
// the list). Parsing checks every tag, filter and test name against that subset, so
// a template either loads and renders as Jinja would, or fails to load naming the
// construct it does not support.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/chat/jinja_value.h"

namespace runnel::jinja {

struct Stmt;

class Template {
 public:
  // Throws JinjaError for syntax errors and unsupported constructs.
  explicit Template(std::string_view source);

  // Renders with these global variables (plus the builtins range, namespace,
  // raise_exception, strftime_now). Throws JinjaError for runtime errors and
  // raise_exception(), and for a render beyond the bounds of jinja_value.h (steps, sizes).
  // `now` is the Unix time strftime_now formats (UTC); `steps_used` (optional) receives
  // the Budget steps the render took.
  std::string render(const std::vector<std::pair<std::string, Value>>& globals, int64_t now,
                     int64_t* steps_used = nullptr) const;

 private:
  std::shared_ptr<const std::vector<Stmt>> body_;
};

}  // namespace runnel::jinja
