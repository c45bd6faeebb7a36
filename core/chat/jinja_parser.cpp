// Template text -> statements. Two steps: split the source into text and tags
// (applying whitespace control: `-` markers, trim_blocks, lstrip_blocks), then parse
// each tag's tokens with a recursive-descent parser following Jinja's precedence:
//   ternary < or < and < not < comparison/in < + - < ~ < * / // % < ** < unary
//   < postfix (. [] () | filter, is test)
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/chat/jinja_ast.h"

namespace runnel::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw JinjaError("chat template: " + what + " at line " + std::to_string(line));
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// ---- step 1: text and tags

struct Piece {
  enum class Kind { Text, Output, Block, Comment } kind = Kind::Text;
  std::string text;  // Text: characters; tags: the inner source
  int line = 1;
  bool strip_before = false;  // {%- {{- {#-
  bool strip_after = false;   // -%} -}} -#}
  bool keep_indent = false;   // {%+ : no lstrip_blocks
};

int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::vector<Piece> split_pieces(std::string_view src) {
  std::vector<Piece> pieces;
  size_t i = 0;
  int line = 1;
  while (i < src.size()) {
    size_t open = src.find('{', i);
    while (open != std::string_view::npos && open + 1 < src.size() && src[open + 1] != '{' &&
           src[open + 1] != '%' && src[open + 1] != '#') {
      open = src.find('{', open + 1);
    }
    if (open == std::string_view::npos || open + 1 >= src.size()) open = src.size();
    if (open > i) {
      pieces.push_back({Piece::Kind::Text, std::string(src.substr(i, open - i)), line});
      line += count_lines(src.substr(i, open - i));
    }
    if (open >= src.size()) break;
    Piece tag;
    tag.line = line;
    const char type = src[open + 1];
    tag.kind = type == '{' ? Piece::Kind::Output : type == '%' ? Piece::Kind::Block : Piece::Kind::Comment;
    const char close = type == '{' ? '}' : type;
    size_t j = open + 2;
    if (j < src.size() && src[j] == '-') {
      tag.strip_before = true;
      ++j;
    } else if (j < src.size() && src[j] == '+') {
      tag.keep_indent = true;
      ++j;
    }
    const size_t inner_begin = j;
    size_t end = std::string_view::npos;
    char quote = 0;
    for (; j + 1 < src.size(); ++j) {
      const char c = src[j];
      if (tag.kind != Piece::Kind::Comment) {
        if (quote) {
          if (c == '\\') ++j;
          else if (c == quote) quote = 0;
          continue;
        }
        if (c == '\'' || c == '"') {
          quote = c;
          continue;
        }
      }
      if (c == close && src[j + 1] == '}') {
        end = j;
        break;
      }
    }
    if (end == std::string_view::npos) {
      fail(line, std::string("unclosed '{") + type + "' tag");
    }
    size_t inner_end = end;
    if (inner_end > inner_begin && src[inner_end - 1] == '-') {
      tag.strip_after = true;
      --inner_end;
    }
    tag.text = std::string(src.substr(inner_begin, inner_end - inner_begin));
    line += count_lines(src.substr(open, end + 2 - open));
    pieces.push_back(std::move(tag));
    i = end + 2;
  }
  return pieces;
}

// Whitespace control as HF transformers configures Jinja (trim_blocks=True,
// lstrip_blocks=True), plus the explicit `-` markers.
void apply_whitespace_control(std::vector<Piece>& pieces) {
  for (size_t k = 0; k < pieces.size(); ++k) {
    Piece& tag = pieces[k];
    if (tag.kind == Piece::Kind::Text) continue;
    const bool is_block = tag.kind != Piece::Kind::Output;
    Piece* before = k > 0 && pieces[k - 1].kind == Piece::Kind::Text ? &pieces[k - 1] : nullptr;
    Piece* after =
        k + 1 < pieces.size() && pieces[k + 1].kind == Piece::Kind::Text ? &pieces[k + 1] : nullptr;
    if (before) {
      std::string& t = before->text;
      if (tag.strip_before) {
        while (!t.empty() && is_space(t.back())) t.pop_back();
      } else if (is_block && !tag.keep_indent) {
        const size_t nl = t.rfind('\n');
        const size_t from = nl == std::string::npos ? 0 : nl + 1;
        const bool line_start = nl != std::string::npos || k == 1;
        if (line_start && t.find_first_not_of(" \t", from) == std::string::npos) t.erase(from);
      }
    }
    if (after) {
      std::string& t = after->text;
      if (tag.strip_after) {
        size_t n = 0;
        while (n < t.size() && is_space(t[n])) ++n;
        t.erase(0, n);
      } else if (is_block) {
        if (t.rfind("\r\n", 0) == 0) t.erase(0, 2);
        else if (!t.empty() && t[0] == '\n') t.erase(0, 1);
      }
    }
  }
}

// ---- step 2: tokens of one tag

struct Token {
  enum class Kind { Name, Number, String, Op, End } kind = Token::Kind::End;
  std::string text;
  Value value;  // Number, String
};

std::vector<Token> tokenize(const std::string& s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::Name, s.substr(i, j - i), {}});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        is_float = true;
        ++j;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      std::string digits;
      for (size_t k = i; k < j; ++k) {
        if (s[k] != '_') digits += s[k];
      }
      Token t{Token::Kind::Number, digits, {}};
      t.value = is_float ? Value(std::strtod(digits.c_str(), nullptr))
                         : Value(static_cast<int64_t>(std::strtoll(digits.c_str(), nullptr, 10)));
      out.push_back(std::move(t));
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string text;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          text += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n': text += '\n'; break;
          case 't': text += '\t'; break;
          case 'r': text += '\r'; break;
          case '\\': text += '\\'; break;
          case '\'': text += '\''; break;
          case '"': text += '"'; break;
          case '0': text += '\0'; break;
          default:
            text += '\\';
            text += e;
        }
      }
      if (j >= s.size()) fail(line, "unterminated string literal");
      out.push_back({Token::Kind::String, "", Value(std::move(text))});
      i = j + 1;
      continue;
    }
    static constexpr std::string_view kTwoChar[] = {"==", "!=", "<=", ">=", "//", "**"};
    std::string op(1, c);
    for (std::string_view two : kTwoChar) {
      if (s.compare(i, 2, two) == 0) op = std::string(two);
    }
    static constexpr std::string_view kOneChar = "()[]{}.,:|~+-*/%<>=!";
    if (op.size() == 1 && kOneChar.find(c) == std::string_view::npos) {
      fail(line, std::string("unexpected character '") + c + "'");
    }
    out.push_back({Token::Kind::Op, op, {}});
    i += op.size();
  }
  out.push_back({Token::Kind::End, "", {}});
  return out;
}

// ---- expressions

class ExprParser {
 public:
  ExprParser(const std::string& source, int line) : tokens_(tokenize(source, line)), line_(line) {}

  bool at_end() const { return peek().kind == Token::Kind::End; }
  bool peek_name(std::string_view n) const { return peek().kind == Token::Kind::Name && peek().text == n; }
  bool peek_op(std::string_view op) const { return peek().kind == Token::Kind::Op && peek().text == op; }

  std::string expect_name(std::string_view what) {
    if (peek().kind != Token::Kind::Name) fail(line_, "expected " + std::string(what));
    return tokens_[pos_++].text;
  }
  void expect_op(std::string_view op) {
    if (!peek_op(op)) fail(line_, "expected '" + std::string(op) + "'" + got());
    ++pos_;
  }
  bool accept_op(std::string_view op) {
    if (!peek_op(op)) return false;
    ++pos_;
    return true;
  }
  bool accept_name(std::string_view n) {
    if (!peek_name(n)) return false;
    ++pos_;
    return true;
  }
  void expect_end() {
    if (!at_end()) fail(line_, "unexpected '" + peek().text + "' in tag");
  }

  ExprPtr expression() {
    const NestingGuard nested(*this);
    ExprPtr e = or_expr();
    if (accept_name("if")) {
      ExprPtr t = make(Expr::Kind::Ternary);
      t->args.push_back(or_expr());
      t->args.push_back(std::move(e));
      t->args.push_back(accept_name("else") ? expression() : nullptr);
      return t;
    }
    return e;
  }

  // `for` loop targets and iterables stop before a trailing `if` filter.
  ExprPtr or_expression() { return or_expr(); }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  std::string got() const { return at_end() ? " at end of tag" : ", got '" + peek().text + "'"; }

  ExprPtr make(Expr::Kind kind, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line_;
    e->name = std::move(name);
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    ExprPtr e = make(Expr::Kind::Binary, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (accept_name("or")) e = binary("or", std::move(e), and_expr());
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (accept_name("and")) e = binary("and", std::move(e), not_expr());
    return e;
  }
  ExprPtr not_expr() {
    if (accept_name("not")) {
      const NestingGuard nested(*this);
      ExprPtr e = make(Expr::Kind::Unary, "not");
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = additive();
    for (;;) {
      static constexpr std::string_view kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      bool matched = false;
      for (std::string_view op : kOps) {
        if (accept_op(op)) {
          e = binary(std::string(op), std::move(e), additive());
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (accept_name("in")) {
        e = binary("in", std::move(e), additive());
      } else if (peek_name("not") && tokens_[pos_ + 1].kind == Token::Kind::Name &&
                 tokens_[pos_ + 1].text == "in") {
        pos_ += 2;
        e = binary("not in", std::move(e), additive());
      } else {
        return e;
      }
    }
  }
  ExprPtr additive() {
    ExprPtr e = concat();
    for (;;) {
      if (accept_op("+")) e = binary("+", std::move(e), concat());
      else if (accept_op("-")) e = binary("-", std::move(e), concat());
      else return e;
    }
  }
  ExprPtr concat() {
    ExprPtr e = multiplicative();
    while (accept_op("~")) e = binary("~", std::move(e), multiplicative());
    return e;
  }
  ExprPtr multiplicative() {
    ExprPtr e = power();
    for (;;) {
      if (accept_op("*")) e = binary("*", std::move(e), power());
      else if (accept_op("//")) e = binary("//", std::move(e), power());
      else if (accept_op("/")) e = binary("/", std::move(e), power());
      else if (accept_op("%")) e = binary("%", std::move(e), power());
      else return e;
    }
  }
  ExprPtr power() {
    ExprPtr e = unary();
    while (accept_op("**")) e = binary("**", std::move(e), unary());
    return e;
  }
  ExprPtr unary() {
    if (accept_op("-")) {
      const NestingGuard nested(*this);
      ExprPtr e = make(Expr::Kind::Unary, "-");
      e->args.push_back(unary());
      return e;
    }
    if (accept_op("+")) {
      const NestingGuard nested(*this);
      return unary();
    }
    return postfix(primary());
  }

  void call_args(Expr& e) {
    // after '(' : positional, then name=value
    if (accept_op(")")) return;
    for (;;) {
      if (peek().kind == Token::Kind::Name && tokens_[pos_ + 1].kind == Token::Kind::Op &&
          tokens_[pos_ + 1].text == "=") {
        std::string key = tokens_[pos_].text;
        pos_ += 2;
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        if (!e.kwargs.empty()) fail(line_, "positional argument after keyword argument");
        e.args.push_back(expression());
      }
      if (accept_op(")")) return;
      expect_op(",");
    }
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (accept_op(".")) {
        ExprPtr a = make(Expr::Kind::Attr, expect_name("an attribute name after '.'"));
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (accept_op("[")) {
        e = subscript(std::move(e));
      } else if (accept_op("(")) {
        ExprPtr c = make(Expr::Kind::Call);
        c->args.push_back(std::move(e));
        call_args(*c);
        e = std::move(c);
      } else if (accept_op("|")) {
        ExprPtr f = make(Expr::Kind::Filter, expect_name("a filter name after '|'"));
        f->args.push_back(std::move(e));
        if (accept_op("(")) call_args(*f);
        e = std::move(f);
      } else if (accept_name("is")) {
        ExprPtr t = make(Expr::Kind::Test);
        t->negated = accept_name("not");
        // `none`, `true`, `false` are test names here, not literals.
        t->name = expect_name("a test name after 'is'");
        t->args.push_back(std::move(e));
        if (accept_op("(")) {
          call_args(*t);
        } else if (!at_end() && (peek().kind == Token::Kind::String || peek().kind == Token::Kind::Number)) {
          t->args.push_back(primary());  // `is equalto 'x'`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr target) {
    // after '[' : index or slice start:stop:step
    ExprPtr parts[3];
    int n_colons = 0;
    if (!peek_op(":")) parts[0] = expression();
    while (n_colons < 2 && accept_op(":")) {
      ++n_colons;
      if (!peek_op(":") && !peek_op("]")) parts[n_colons] = expression();
    }
    expect_op("]");
    if (n_colons == 0) {
      if (!parts[0]) fail(line_, "empty subscript");
      ExprPtr e = make(Expr::Kind::Index);
      e->args.push_back(std::move(target));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    ExprPtr e = make(Expr::Kind::Slice);
    e->args.push_back(std::move(target));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  ExprPtr primary() {
    const Token& t = peek();
    if (t.kind == Token::Kind::Number || t.kind == Token::Kind::String) {
      ExprPtr e = make(Expr::Kind::Literal);
      e->literal = t.value;
      ++pos_;
      // Adjacent string literals concatenate, as in Python.
      while (e->literal.is_string() && peek().kind == Token::Kind::String) {
        e->literal = Value(e->literal.as_string() + peek().value.as_string());
        ++pos_;
      }
      return e;
    }
    if (t.kind == Token::Kind::Name) {
      ++pos_;
      ExprPtr e = make(Expr::Kind::Literal);
      if (t.text == "true" || t.text == "True") e->literal = Value(true);
      else if (t.text == "false" || t.text == "False") e->literal = Value(false);
      else if (t.text == "none" || t.text == "None") e->literal = Value::none();
      else e = make(Expr::Kind::Name, t.text);
      return e;
    }
    if (accept_op("(")) {
      ExprPtr first = expression();
      if (accept_op(")")) return first;
      // A tuple: treated as a list.
      ExprPtr list = make(Expr::Kind::ListLit);
      list->args.push_back(std::move(first));
      while (accept_op(",")) {
        if (peek_op(")")) break;
        list->args.push_back(expression());
      }
      expect_op(")");
      return list;
    }
    if (accept_op("[")) {
      ExprPtr list = make(Expr::Kind::ListLit);
      while (!accept_op("]")) {
        list->args.push_back(expression());
        if (!accept_op(",")) {
          expect_op("]");
          break;
        }
      }
      return list;
    }
    if (accept_op("{")) {
      ExprPtr dict = make(Expr::Kind::DictLit);
      while (!accept_op("}")) {
        dict->args.push_back(expression());
        expect_op(":");
        dict->args.push_back(expression());
        if (!accept_op(",")) {
          expect_op("}");
          break;
        }
      }
      return dict;
    }
    fail(line_, "expected an expression" + got());
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int line_;

  // Expressions nest (parentheses, lists, arguments, `not`, unary minus) at most
  // kMaxNesting deep: the parser and the renderer recurse once per level, and thousands
  // of "(" overflowed the stack (found by fuzzing: tests/fuzz/corpus/jinja/regression-deep-nesting).
  static constexpr int kMaxNesting = 100;
  int depth_ = 0;
  struct NestingGuard {
    explicit NestingGuard(ExprParser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) {
        fail(parser.line_, "expressions nest deeper than " + std::to_string(kMaxNesting) + " levels");
      }
    }
    ~NestingGuard() { --parser.depth_; }
    ExprParser& parser;
  };
};

// ---- statements

class StmtParser {
 public:
  explicit StmtParser(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}

  Body parse_all() {
    std::string end_tag;
    Body body = parse_body({}, end_tag);
    return body;
  }

 private:
  // Parses until one of `stops` (a block tag name); its name goes to end_tag and the
  // parser is left on that tag's piece (tags_ holds its tokens).
  Body parse_body(const std::vector<std::string_view>& stops, std::string& end_tag) {
    Body body;
    while (pos_ < pieces_.size()) {
      Piece& p = pieces_[pos_];
      if (p.kind == Piece::Kind::Text) {
        if (!p.text.empty()) body.push_back(text_stmt(p));
        ++pos_;
        continue;
      }
      if (p.kind == Piece::Kind::Comment) {
        ++pos_;
        continue;
      }
      if (p.kind == Piece::Kind::Output) {
        Stmt s;
        s.kind = Stmt::Kind::Output;
        s.line = p.line;
        ExprParser ep(p.text, p.line);
        s.expr = ep.expression();
        ep.expect_end();
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      // A block tag.
      auto ep = std::make_unique<ExprParser>(p.text, p.line);
      const std::string name = ep->expect_name("a tag name after '{%'");
      for (std::string_view stop : stops) {
        if (name == stop) {
          end_tag = name;
          current_ = std::move(ep);
          return body;
        }
      }
      ++pos_;
      body.push_back(block(name, *ep, p.line));
    }
    if (!stops.empty()) {
      fail(pieces_.empty() ? 1 : pieces_.back().line,
           "unclosed block: expected '{% " + std::string(stops.back()) + " %}' before the end of the template");
    }
    return body;
  }

  static Stmt text_stmt(const Piece& p) {
    Stmt s;
    s.kind = Stmt::Kind::Text;
    s.line = p.line;
    s.text = p.text;
    return s;
  }

  Stmt block(const std::string& name, ExprParser& ep, int line) {
    Stmt s;
    s.line = line;
    if (name == "if") {
      s.kind = Stmt::Kind::If;
      ExprPtr cond = ep.expression();
      ep.expect_end();
      for (;;) {
        std::string end_tag;
        Body b = parse_body({"elif", "else", "endif"}, end_tag);
        s.branches.emplace_back(std::move(cond), std::move(b));
        ExprParser& tag = *current_;
        ++pos_;
        if (end_tag == "endif") {
          tag.expect_end();
          break;
        }
        if (end_tag == "elif") {
          cond = tag.expression();
          tag.expect_end();
          continue;
        }
        tag.expect_end();  // else
        std::string end2;
        Body else_body = parse_body({"endif"}, end2);
        current_->expect_end();
        ++pos_;
        s.branches.emplace_back(nullptr, std::move(else_body));
        break;
      }
      return s;
    }
    if (name == "for") {
      s.kind = Stmt::Kind::For;
      s.vars.push_back(ep.expect_name("a loop variable"));
      while (ep.accept_op(",")) s.vars.push_back(ep.expect_name("a loop variable"));
      if (s.vars.size() > 2) fail(line, "for loops unpack at most two variables");
      if (!ep.accept_name("in")) fail(line, "expected 'in' in for loop");
      s.expr = ep.or_expression();
      if (ep.accept_name("if")) s.filter = ep.or_expression();
      if (ep.accept_name("recursive")) fail(line, "unsupported construct 'recursive' loop");
      ep.expect_end();
      std::string end_tag;
      s.body = parse_body({"else", "endfor"}, end_tag);
      current_->expect_end();
      ++pos_;
      if (end_tag == "else") {
        std::string end2;
        s.else_body = parse_body({"endfor"}, end2);
        current_->expect_end();
        ++pos_;
      }
      return s;
    }
    if (name == "set") {
      s.kind = Stmt::Kind::Set;
      s.text = ep.expect_name("a variable name after 'set'");
      if (ep.accept_op(".")) s.attr = ep.expect_name("an attribute name");
      if (ep.peek_op(",")) fail(line, "unsupported construct 'set' with several targets");
      if (!ep.accept_op("=")) fail(line, "unsupported construct block 'set' (use '{% set x = ... %}')");
      s.expr = ep.expression();
      ep.expect_end();
      return s;
    }
    if (name == "macro") {
      s.kind = Stmt::Kind::Macro;
      s.text = ep.expect_name("a macro name");
      ep.expect_op("(");
      if (!ep.accept_op(")")) {
        for (;;) {
          std::string param = ep.expect_name("a parameter name");
          ExprPtr def = ep.accept_op("=") ? ep.expression() : nullptr;
          s.params.emplace_back(std::move(param), std::move(def));
          if (ep.accept_op(")")) break;
          ep.expect_op(",");
        }
      }
      ep.expect_end();
      std::string end_tag;
      s.body = parse_body({"endmacro"}, end_tag);
      current_->expect_end();
      ++pos_;
      return s;
    }
    if (name == "break" || name == "continue") {
      ep.expect_end();
      s.kind = name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      return s;
    }
    if (name == "generation") {
      // HF's assistant-mask marker: renders its body unchanged.
      ep.expect_end();
      std::string end_tag;
      Body b = parse_body({"endgeneration"}, end_tag);
      current_->expect_end();
      ++pos_;
      s.kind = Stmt::Kind::If;
      ExprPtr always = std::make_unique<Expr>();
      always->literal = Value(true);
      s.branches.emplace_back(std::move(always), std::move(b));
      return s;
    }
    static constexpr std::string_view kKnownEnds[] = {"endif", "endfor", "endmacro", "elif", "else",
                                                      "endgeneration"};
    for (std::string_view end : kKnownEnds) {
      if (name == end) fail(line, "'{% " + name + " %}' without a matching opening tag");
    }
    fail(line, "unsupported tag '" + name + "'");
  }

  std::vector<Piece> pieces_;
  size_t pos_ = 0;
  std::unique_ptr<ExprParser> current_;  // the tokens of the tag that ended a body
};

}  // namespace

Body parse_template(std::string_view source) {
  std::vector<Piece> pieces = split_pieces(source);
  apply_whitespace_control(pieces);
  return StmtParser(std::move(pieces)).parse_all();
}

}  // namespace runnel::jinja
