#include "jobspec/parser.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "jobspec/diag.h"

namespace drover::jobspec {

const Attribute* Body::FindAttribute(const std::string& attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) {
      return &a;
    }
  }
  return nullptr;
}

namespace {

enum class Tok {
  kEof,
  kError,  // an error was recorded; every loop stops on it
  kIdent,
  kNumber,
  kOQuote,   // `"`: the scanner stands at the template's first character
  kHeredoc,  // `<<EOF`: heredoc_ describes the body
  kLBrace,
  kRBrace,
  kLBrack,
  kRBrack,
  kLParen,
  kRParen,
  kComma,
  kColon,
  kQuestion,
  kDot,
  kEllipsis,
  kArrow,
  kAssign,
  kOp,  // text holds the operator
};

struct Token {
  Tok kind = Tok::kEof;
  std::string text;
  Range range;
  bool newline_before = false;
};

struct HeredocInfo {
  size_t body_begin = 0;
  size_t body_end = 0;
  size_t after = 0;   // offset just past the closing marker
  size_t indent = 0;  // leading whitespace removed from each line (`<<-` only)
  bool flush = false;
};

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsIdentChar(char c) {
  return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '-';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Length of the UTF-8 sequence at s[i], or 0 when it is not well-formed.
size_t Utf8Length(absl::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t min = 0;
  if (b < 0x80) {
    return 1;
  } else if ((b & 0xE0) == 0xC0) {
    n = 2;
    min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    min = 0x800;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) {
    return 0;
  }
  uint32_t cp = b & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string name, absl::string_view src) : name_(std::move(name)), src_(src) {}

  absl::Status Start() {
    if (absl::Status s = CheckSource(); !s.ok()) {
      return s;
    }
    Advance();
    return status_;
  }

  absl::Status CheckSource() {
    if (src_.size() > kMaxSourceBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": file is ", src_.size(), " bytes; the limit is ", kMaxSourceBytes));
    }
    for (size_t i = 0; i < src_.size();) {
      const size_t n = Utf8Length(src_, i);
      if (n == 0) {
        AdvanceTo(i);
        return DiagError(name_, {Here(), Here()}, "Invalid character encoding",
                         "All input files must be UTF-8 encoded.");
      }
      i += n;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Body> ParseTopBody() {
    Body body = ParseBody(/*top=*/true);
    if (!status_.ok()) {
      return status_;
    }
    return body;
  }

  // The whole source as one template without quotes (templatefile()).
  absl::StatusOr<ExprPtr> ParseWholeTemplate() {
    ExprPtr e = NewExpr(ExprKind::kTemplate, {Here(), Here()});
    ScanTemplate(*e, /*quoted=*/false, src_.size(), 0);
    if (!status_.ok()) {
      return status_;
    }
    e->range.end = Here();
    return e;
  }

  absl::StatusOr<ExprPtr> ParseOnlyExpression() {
    ExprPtr e = ParseExpr();
    if (status_.ok() && tok_.kind != Tok::kEof) {
      Fail(tok_.range, "Extra characters after expression",
           "An expression was successfully parsed, but extra characters were found after it.");
    }
    if (!status_.ok()) {
      return status_;
    }
    return e;
  }

 private:
  // --- Diagnostics -------------------------------------------------------------------

  void Fail(const Range& range, absl::string_view summary, absl::string_view detail) {
    if (status_.ok()) {
      status_ = DiagError(name_, range, summary, detail);
    }
    tok_.kind = Tok::kError;
  }
  bool failed() const { return !status_.ok(); }

  // --- Scanner -----------------------------------------------------------------------

  Pos Here() const { return Pos{line_, static_cast<int>(pos_ - line_start_) + 1, pos_}; }
  char PeekChar(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  bool AtEnd() const { return pos_ >= src_.size(); }
  void Bump() {
    if (src_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }
  void AdvanceTo(size_t target) {
    while (pos_ < target && pos_ < src_.size()) {
      Bump();
    }
  }

  // Skips blanks and comments; reports whether a newline was among them.
  bool SkipTrivia() {
    bool newline = false;
    while (!AtEnd()) {
      const char c = PeekChar();
      if (c == ' ' || c == '\t' || c == '\r') {
        Bump();
      } else if (c == '\n') {
        newline = true;
        Bump();
      } else if (c == '#' || (c == '/' && PeekChar(1) == '/')) {
        while (!AtEnd() && PeekChar() != '\n') {
          Bump();
        }
      } else if (c == '/' && PeekChar(1) == '*') {
        const Pos begin = Here();
        Bump();
        Bump();
        while (!AtEnd() && !(PeekChar() == '*' && PeekChar(1) == '/')) {
          newline = newline || PeekChar() == '\n';
          Bump();
        }
        if (AtEnd()) {
          Fail({begin, Here()}, "Unterminated block comment",
               "There is no closing marker for this multi-line comment.");
          return newline;
        }
        Bump();
        Bump();
      } else {
        break;
      }
    }
    return newline;
  }

  // Lexes the next token in expression/body mode into tok_.
  void Advance() {
    if (failed()) {
      tok_.kind = Tok::kError;
      return;
    }
    const bool newline = SkipTrivia();
    if (failed()) {
      return;
    }
    tok_ = Token{};
    tok_.newline_before = newline;
    const Pos begin = Here();
    auto finish = [&](Tok kind, size_t length) {
      tok_.kind = kind;
      tok_.text = std::string(src_.substr(pos_, length));
      for (size_t i = 0; i < length; ++i) {
        Bump();
      }
      tok_.range = {begin, Here()};
    };
    if (AtEnd()) {
      tok_.kind = Tok::kEof;
      tok_.range = {begin, begin};
      return;
    }
    const char c = PeekChar();
    const char n = PeekChar(1);
    if (IsIdentStart(c)) {
      size_t len = 1;
      while (IsIdentChar(PeekChar(len))) {
        ++len;
      }
      finish(Tok::kIdent, len);
      return;
    }
    if (IsDigit(c)) {
      size_t len = 1;
      while (IsDigit(PeekChar(len))) {
        ++len;
      }
      if (PeekChar(len) == '.' && IsDigit(PeekChar(len + 1))) {
        len += 2;
        while (IsDigit(PeekChar(len))) {
          ++len;
        }
      }
      if (PeekChar(len) == 'e' || PeekChar(len) == 'E') {
        size_t exp = len + 1;
        if (PeekChar(exp) == '+' || PeekChar(exp) == '-') {
          ++exp;
        }
        if (IsDigit(PeekChar(exp))) {
          len = exp;
          while (IsDigit(PeekChar(len))) {
            ++len;
          }
        }
      }
      finish(Tok::kNumber, len);
      return;
    }
    switch (c) {
      case '"':
        finish(Tok::kOQuote, 1);
        return;
      case '{':
        finish(Tok::kLBrace, 1);
        return;
      case '}':
        finish(Tok::kRBrace, 1);
        return;
      case '[':
        finish(Tok::kLBrack, 1);
        return;
      case ']':
        finish(Tok::kRBrack, 1);
        return;
      case '(':
        finish(Tok::kLParen, 1);
        return;
      case ')':
        finish(Tok::kRParen, 1);
        return;
      case ',':
        finish(Tok::kComma, 1);
        return;
      case ':':
        finish(Tok::kColon, 1);
        return;
      case '?':
        finish(Tok::kQuestion, 1);
        return;
      case '.':
        if (n == '.' && PeekChar(2) == '.') {
          finish(Tok::kEllipsis, 3);
        } else {
          finish(Tok::kDot, 1);
        }
        return;
      case '=':
        if (n == '=') {
          finish(Tok::kOp, 2);
        } else if (n == '>') {
          finish(Tok::kArrow, 2);
        } else {
          finish(Tok::kAssign, 1);
        }
        return;
      case '!':
        finish(Tok::kOp, n == '=' ? 2 : 1);
        return;
      case '<':
        if (n == '<') {
          LexHeredoc(begin);
          return;
        }
        finish(Tok::kOp, n == '=' ? 2 : 1);
        return;
      case '>':
        finish(Tok::kOp, n == '=' ? 2 : 1);
        return;
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
        finish(Tok::kOp, 1);
        return;
      case '&':
      case '|':
        if (n == c) {
          finish(Tok::kOp, 2);
          return;
        }
        break;
      default:
        break;
    }
    const size_t len = std::max<size_t>(1, Utf8Length(src_, pos_));
    const std::string shown(src_.substr(pos_, len));
    for (size_t i = 0; i < len; ++i) {
      Bump();
    }
    Fail({begin, Here()}, "Invalid character",
         absl::StrCat("This character is not used within the language: \"", shown, "\"."));
  }

  // At `<<`: reads the marker line and finds the closing marker.
  void LexHeredoc(const Pos& begin) {
    Bump();
    Bump();
    HeredocInfo info;
    if (PeekChar() == '-') {
      info.flush = true;
      Bump();
    }
    size_t len = 0;
    while (IsIdentChar(PeekChar(len))) {
      ++len;
    }
    if (len == 0 || !IsIdentStart(PeekChar())) {
      Fail({begin, Here()}, "Invalid heredoc introducer",
           "A heredoc is introduced by <<, an identifier and a newline, like <<EOT.");
      return;
    }
    const std::string marker(src_.substr(pos_, len));
    AdvanceTo(pos_ + len);
    if (PeekChar() == '\r') {
      Bump();
    }
    if (PeekChar() != '\n') {
      Fail({begin, Here()}, "Invalid heredoc introducer",
           "The heredoc marker must be followed directly by a newline.");
      return;
    }
    Bump();
    info.body_begin = pos_;
    // Finds the first line whose text, without surrounding blanks, is the marker.
    size_t line_begin = pos_;
    bool found = false;
    while (line_begin < src_.size()) {
      size_t line_end = src_.find('\n', line_begin);
      if (line_end == absl::string_view::npos) {
        line_end = src_.size();
      }
      absl::string_view text = src_.substr(line_begin, line_end - line_begin);
      const size_t first = text.find_first_not_of(" \t");
      const size_t last = text.find_last_not_of(" \t\r");
      if (first != absl::string_view::npos && text.substr(first, last - first + 1) == marker) {
        info.body_end = line_begin;
        info.after = line_begin + last + 1;
        found = true;
        break;
      }
      line_begin = line_end + 1;
    }
    if (!found) {
      Fail({begin, Here()}, "Unterminated template string",
           absl::StrCat("No closing marker was found for the heredoc \"", marker, "\"."));
      return;
    }
    if (info.flush) {
      size_t indent = absl::string_view::npos;
      for (size_t i = info.body_begin; i < info.body_end;) {
        size_t end = src_.find('\n', i);
        if (end == absl::string_view::npos || end > info.body_end) {
          end = info.body_end;
        }
        absl::string_view text = src_.substr(i, end - i);
        const size_t first = text.find_first_not_of(" \t\r");
        if (first != absl::string_view::npos) {
          indent = std::min(indent, first);
        }
        i = end + 1;
      }
      info.indent = indent == absl::string_view::npos ? 0 : indent;
    }
    heredoc_ = info;
    tok_.kind = Tok::kHeredoc;
    tok_.range = {begin, Here()};
  }

  // --- Bodies ------------------------------------------------------------------------

  bool Enter(const Range& range) {
    if (++depth_ > kMaxNesting) {
      Fail(range, "Nesting too deep",
           absl::StrCat("Blocks, brackets, interpolations and chains of operators may nest at "
                        "most ",
                        kMaxNesting, " levels deep."));
      return false;
    }
    return true;
  }
  void Leave() { --depth_; }

  Body ParseBody(bool top) {
    Body body;
    body.range.begin = tok_.range.begin;
    std::set<std::string> seen;
    while (!failed()) {
      if (tok_.kind == Tok::kEof) {
        if (!top) {
          Fail(tok_.range, "Unclosed configuration block",
               "There is no closing brace for this block before the end of the file.");
        }
        break;
      }
      if (tok_.kind == Tok::kRBrace && !top) {
        break;
      }
      Token name = tok_;
      if (tok_.kind == Tok::kOQuote) {
        // `"/bin" = "/bin"`: HCL1's quoted argument names, which Nomad's agent
        // configuration files use (chroot_env, meta keys with dots).
        ExprPtr quoted = ParseQuotedTemplate();
        if (failed()) {
          break;
        }
        if (quoted->parts.size() != 1 || quoted->parts[0].expr != nullptr ||
            tok_.kind != Tok::kAssign) {
          Fail(quoted->range, "Invalid argument name",
               "A quoted argument name must be a plain string followed by an equals sign.");
          break;
        }
        name.kind = Tok::kIdent;
        name.text = quoted->parts[0].literal;
        name.range = quoted->range;
      } else if (tok_.kind != Tok::kIdent) {
        Fail(tok_.range, "Argument or block definition required",
             "An argument or block definition is required here.");
        break;
      } else {
        Advance();
      }
      if (tok_.kind == Tok::kAssign) {
        Advance();
        Attribute attr;
        attr.name = name.text;
        attr.name_range = name.range;
        attr.expr = ParseExpr();
        if (failed()) {
          break;
        }
        attr.range = {name.range.begin, attr.expr->range.end};
        if (!seen.insert(attr.name).second) {
          Fail(attr.name_range, "Attribute redefined",
               absl::StrCat("The argument \"", attr.name,
                            "\" was already set. Each argument may be set only once."));
          break;
        }
        RequireLineEnd("Missing newline after argument",
                       "An argument definition must end with a newline.");
        body.attributes.push_back(std::move(attr));
      } else {
        Block block = ParseBlock(name);
        if (failed()) {
          break;
        }
        body.blocks.push_back(std::move(block));
      }
    }
    body.range.end = tok_.range.begin;
    return body;
  }

  void RequireLineEnd(absl::string_view summary, absl::string_view detail) {
    if (failed() || tok_.newline_before || tok_.kind == Tok::kEof || tok_.kind == Tok::kRBrace) {
      return;
    }
    Fail(tok_.range, summary, detail);
  }

  Block ParseBlock(const Token& type) {
    Block block;
    block.type = type.text;
    block.type_range = type.range;
    block.range.begin = type.range.begin;
    while (!failed() && tok_.kind != Tok::kLBrace) {
      if (tok_.kind == Tok::kIdent) {
        block.labels.push_back(tok_.text);
        block.label_ranges.push_back(tok_.range);
        Advance();
      } else if (tok_.kind == Tok::kOQuote) {
        ExprPtr label = ParseQuotedTemplate();
        if (failed()) {
          break;
        }
        if (label->kind != ExprKind::kTemplate ||
            (!label->parts.empty() &&
             (label->parts.size() != 1 || label->parts[0].expr != nullptr))) {
          Fail(label->range, "Invalid block label",
               "Block labels must be plain strings; interpolation is not allowed here.");
          break;
        }
        block.labels.push_back(label->parts.empty() ? "" : label->parts[0].literal);
        block.label_ranges.push_back(label->range);
      } else {
        Fail(tok_.range, "Invalid block definition",
             absl::StrCat("Either a quoted string block label or an opening brace (\"{\") is "
                          "expected here; an argument is defined with an equals sign, like \"",
                          type.text, " = ...\"."));
        break;
      }
    }
    if (failed()) {
      return block;
    }
    const Range open = tok_.range;
    if (!Enter(open)) {
      return block;
    }
    Advance();
    block.body = ParseBody(/*top=*/false);
    Leave();
    if (failed()) {
      return block;
    }
    block.range.end = tok_.range.end;
    Advance();  // `}`
    RequireLineEnd("Missing newline after block definition",
                   "A block definition must end with a newline.");
    return block;
  }

  // --- Expressions -------------------------------------------------------------------

  ExprPtr NewExpr(ExprKind kind, const Range& range) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->range = range;
    return e;
  }

  ExprPtr ParseExpr() {
    if (!Enter(tok_.range)) {
      return nullptr;
    }
    ExprPtr cond = ParseBinary(0);
    if (!failed() && tok_.kind == Tok::kQuestion) {
      Advance();
      ExprPtr yes = ParseExpr();
      if (!failed() && tok_.kind != Tok::kColon) {
        Fail(tok_.range, "Missing false expression in conditional",
             "The conditional operator (...?...:...) requires a false expression, delimited by "
             "a colon.");
      }
      Advance();
      ExprPtr no = ParseExpr();
      if (failed()) {
        Leave();
        return nullptr;
      }
      ExprPtr e = NewExpr(ExprKind::kConditional, {cond->range.begin, no->range.end});
      e->operands.push_back(std::move(cond));
      e->operands.push_back(std::move(yes));
      e->operands.push_back(std::move(no));
      cond = std::move(e);
    }
    Leave();
    return failed() ? nullptr : std::move(cond);
  }

  static int Precedence(const std::string& op) {
    if (op == "||")
      return 1;
    if (op == "&&")
      return 2;
    if (op == "==" || op == "!=")
      return 3;
    if (op == "<" || op == "<=" || op == ">" || op == ">=")
      return 4;
    if (op == "+" || op == "-")
      return 5;
    if (op == "*" || op == "/" || op == "%")
      return 6;
    return 0;
  }

  // A chain of operators or traversals builds a left-deep tree: each link counts
  // against kMaxNesting like a bracket, so evaluation depth stays bounded.
  ExprPtr ParseBinary(int min_precedence) {
    ExprPtr lhs = ParseUnary();
    int links = 0;
    while (!failed() && tok_.kind == Tok::kOp) {
      const int precedence = Precedence(tok_.text);
      if (precedence == 0 || precedence <= min_precedence) {
        break;
      }
      const std::string op = tok_.text;
      Advance();
      ExprPtr rhs = ParseBinary(precedence);
      if (failed()) {
        return nullptr;
      }
      ExprPtr e = NewExpr(ExprKind::kBinary, {lhs->range.begin, rhs->range.end});
      e->name = op;
      e->operands.push_back(std::move(lhs));
      e->operands.push_back(std::move(rhs));
      lhs = std::move(e);
      if (!Enter(lhs->range)) {
        return nullptr;
      }
      ++links;
    }
    depth_ -= links;
    return failed() ? nullptr : std::move(lhs);
  }

  ExprPtr ParseUnary() {
    if (tok_.kind == Tok::kOp && (tok_.text == "!" || tok_.text == "-")) {
      const Token op = tok_;
      if (!Enter(op.range)) {
        return nullptr;
      }
      Advance();
      ExprPtr operand = ParseUnary();
      Leave();
      if (failed()) {
        return nullptr;
      }
      ExprPtr e = NewExpr(ExprKind::kUnary, {op.range.begin, operand->range.end});
      e->name = op.text;
      e->operands.push_back(std::move(operand));
      return e;
    }
    return ParsePostfix();
  }

  // Applies `.name`, `.0`, `[index]` traversals to `e`; stops at anything else.
  ExprPtr ParseTraversals(ExprPtr e, bool allow_splat) {
    int links = 0;
    while (!failed()) {
      if (links > 0 && !Enter(e->range)) {
        return nullptr;
      }
      ++links;
      if (tok_.kind == Tok::kDot) {
        Advance();
        if (tok_.kind == Tok::kIdent) {
          ExprPtr g = NewExpr(ExprKind::kGetAttr, {e->range.begin, tok_.range.end});
          g->name = tok_.text;
          g->operands.push_back(std::move(e));
          e = std::move(g);
          Advance();
        } else if (tok_.kind == Tok::kNumber) {
          ExprPtr key = NumberLiteral(tok_);
          ExprPtr g = NewExpr(ExprKind::kIndex, {e->range.begin, tok_.range.end});
          g->operands.push_back(std::move(e));
          g->operands.push_back(std::move(key));
          e = std::move(g);
          Advance();
        } else if (tok_.kind == Tok::kOp && tok_.text == "*" && allow_splat) {
          const Pos end = tok_.range.end;
          Advance();
          e = ParseSplat(std::move(e), end);
        } else {
          Fail(tok_.range, "Invalid attribute name", "An attribute name is required after a dot.");
        }
      } else if (tok_.kind == Tok::kLBrack && !tok_.newline_before) {
        Advance();
        if (tok_.kind == Tok::kOp && tok_.text == "*" && allow_splat) {
          Advance();
          if (tok_.kind != Tok::kRBrack) {
            Fail(tok_.range, "Missing close bracket on splat index",
                 "The star for a full splat operator must be immediately followed by a "
                 "closing bracket (\"]\").");
            return nullptr;
          }
          const Pos end = tok_.range.end;
          Advance();
          e = ParseSplat(std::move(e), end);
          continue;
        }
        ExprPtr key = ParseExpr();
        if (failed()) {
          return nullptr;
        }
        if (tok_.kind != Tok::kRBrack) {
          Fail(tok_.range, "Missing close bracket on index",
               "The index operator must end with a closing bracket (\"]\").");
          return nullptr;
        }
        ExprPtr g = NewExpr(ExprKind::kIndex, {e->range.begin, tok_.range.end});
        g->operands.push_back(std::move(e));
        g->operands.push_back(std::move(key));
        e = std::move(g);
        Advance();
      } else {
        break;
      }
    }
    depth_ -= links - 1;
    return failed() ? nullptr : std::move(e);
  }

  ExprPtr ParseSplat(ExprPtr source, const Pos& end) {
    ExprPtr item = NewExpr(ExprKind::kSplatItem, source->range);
    ExprPtr projection = ParseTraversals(std::move(item), /*allow_splat=*/false);
    if (failed()) {
      return nullptr;
    }
    ExprPtr s = NewExpr(ExprKind::kSplat, {source->range.begin, end});
    if (projection->range.end.offset > end.offset) {
      s->range.end = projection->range.end;
    }
    s->operands.push_back(std::move(source));
    s->operands.push_back(std::move(projection));
    return s;
  }

  ExprPtr ParsePostfix() {
    ExprPtr e = ParsePrimary();
    if (failed()) {
      return nullptr;
    }
    return ParseTraversals(std::move(e), /*allow_splat=*/true);
  }

  ExprPtr NumberLiteral(const Token& t) {
    ExprPtr e = NewExpr(ExprKind::kLiteral, t.range);
    const bool integral = t.text.find_first_of(".eE") == std::string::npos;
    if (integral) {
      int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (ec == std::errc() && ptr == t.text.data() + t.text.size()) {
        e->literal = v;
        return e;
      }
    }
    double d = 0;
    const auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), d);
    if (ec != std::errc()) {
      Fail(t.range, "Invalid number literal", "The number is out of range.");
    }
    e->literal = d;
    return e;
  }

  ExprPtr ParsePrimary() {
    const Token t = tok_;
    switch (t.kind) {
      case Tok::kNumber: {
        ExprPtr e = NumberLiteral(t);
        Advance();
        return e;
      }
      case Tok::kOQuote:
        return ParseQuotedTemplate();
      case Tok::kHeredoc:
        return ParseHeredoc();
      case Tok::kIdent: {
        Advance();
        if (t.text == "true" || t.text == "false" || t.text == "null") {
          ExprPtr e = NewExpr(ExprKind::kLiteral, t.range);
          e->literal =
              t.text == "null" ? nlohmann::json(nullptr) : nlohmann::json(t.text == "true");
          return e;
        }
        if (tok_.kind == Tok::kLParen && !tok_.newline_before) {
          return ParseCall(t);
        }
        ExprPtr e = NewExpr(ExprKind::kVariable, t.range);
        e->name = t.text;
        return e;
      }
      case Tok::kLParen: {
        Advance();
        ExprPtr inner = ParseExpr();
        if (failed()) {
          return nullptr;
        }
        if (tok_.kind != Tok::kRParen) {
          Fail(tok_.range, "Unbalanced parentheses",
               "Expected a closing parenthesis to terminate the expression.");
          return nullptr;
        }
        ExprPtr e = NewExpr(ExprKind::kParens, {t.range.begin, tok_.range.end});
        e->operands.push_back(std::move(inner));
        Advance();
        return e;
      }
      case Tok::kLBrack:
        return ParseTuple();
      case Tok::kLBrace:
        return ParseObject();
      case Tok::kEof:
        Fail(t.range, "Missing expression",
             "Expected the start of an expression, but found the end of the file.");
        return nullptr;
      default:
        Fail(t.range, "Invalid expression",
             absl::StrCat("Expected the start of an expression, but found \"", t.text, "\"."));
        return nullptr;
    }
  }

  ExprPtr ParseCall(const Token& name) {
    ExprPtr call = NewExpr(ExprKind::kCall, name.range);
    call->name = name.text;
    Advance();
    while (!failed() && tok_.kind != Tok::kRParen) {
      ExprPtr arg = ParseExpr();
      if (failed()) {
        break;
      }
      call->operands.push_back(std::move(arg));
      if (tok_.kind == Tok::kEllipsis) {
        call->expand_final = true;
        Advance();
        if (tok_.kind != Tok::kRParen) {
          Fail(tok_.range, "Missing closing parenthesis",
               "An expanded function argument (with ...) must be immediately followed by the "
               "closing parenthesis.");
        }
        break;
      }
      if (tok_.kind == Tok::kComma) {
        Advance();
      } else if (tok_.kind != Tok::kRParen) {
        Fail(tok_.range, "Missing argument separator",
             "A comma is required to separate each function argument from the next.");
      }
    }
    if (failed()) {
      return nullptr;
    }
    call->range.end = tok_.range.end;
    Advance();
    return call;
  }

  bool AtKeyword(const char* word) const { return tok_.kind == Tok::kIdent && tok_.text == word; }

  ExprPtr ParseTuple() {
    const Range open = tok_.range;
    Advance();
    ExprPtr e;
    if (AtKeyword("for")) {
      e = ParseFor(open, /*object=*/false);
    } else {
      e = NewExpr(ExprKind::kTuple, open);
      while (!failed() && tok_.kind != Tok::kRBrack) {
        ExprPtr item = ParseExpr();
        if (failed()) {
          break;
        }
        e->operands.push_back(std::move(item));
        if (tok_.kind == Tok::kComma) {
          Advance();
        } else if (tok_.kind == Tok::kEof) {
          Fail(tok_.range, "Unclosed bracket",
               "There is no closing bracket (\"]\") for this list before the end of the file.");
        } else if (tok_.kind != Tok::kRBrack) {
          Fail(tok_.range, "Missing item separator",
               "Expected a comma to mark the beginning of the next item.");
        }
      }
      if (!failed()) {
        e->range.end = tok_.range.end;
        Advance();
      }
    }
    return failed() ? nullptr : std::move(e);
  }

  ExprPtr ParseObject() {
    const Range open = tok_.range;
    Advance();
    ExprPtr e;
    if (AtKeyword("for")) {
      e = ParseFor(open, /*object=*/true);
    } else {
      e = NewExpr(ExprKind::kObject, open);
      while (!failed() && tok_.kind != Tok::kRBrace) {
        ExprPtr key;
        if (tok_.kind == Tok::kIdent) {
          // A bare identifier key is a string, unless it is an expression like a call.
          const Token ident = tok_;
          Advance();
          if (tok_.kind == Tok::kAssign || tok_.kind == Tok::kColon) {
            key = NewExpr(ExprKind::kLiteral, ident.range);
            key->literal = ident.text;
          } else {
            Fail(tok_.range, "Missing key/value separator",
                 "Expected an equals sign (\"=\") to mark the beginning of the attribute "
                 "value.");
            break;
          }
        } else {
          key = ParseExpr();
        }
        if (failed()) {
          break;
        }
        if (tok_.kind != Tok::kAssign && tok_.kind != Tok::kColon) {
          Fail(tok_.range, "Missing key/value separator",
               "Expected an equals sign (\"=\") to mark the beginning of the attribute value.");
          break;
        }
        Advance();
        ExprPtr value = ParseExpr();
        if (failed()) {
          break;
        }
        e->items.push_back(ObjectItem{std::move(key), std::move(value)});
        if (tok_.kind == Tok::kComma) {
          Advance();
        } else if (tok_.kind == Tok::kEof) {
          Fail(tok_.range, "Unclosed brace",
               "There is no closing brace (\"}\") for this object before the end of the file.");
        } else if (tok_.kind != Tok::kRBrace && !tok_.newline_before) {
          Fail(tok_.range, "Missing attribute separator",
               "Expected a newline or comma to mark the beginning of the next attribute.");
        }
      }
      if (!failed()) {
        e->range.end = tok_.range.end;
        Advance();
      }
    }
    return failed() ? nullptr : std::move(e);
  }

  // After `[` or `{`, at `for`.
  ExprPtr ParseFor(const Range& open, bool object) {
    auto clause = std::make_unique<ForClause>();
    clause->object = object;
    Advance();
    auto ident = [&]() -> std::string {
      if (tok_.kind != Tok::kIdent) {
        Fail(tok_.range, "Invalid 'for' expression",
             "For expression requires a variable name after 'for'.");
        return "";
      }
      std::string name = tok_.text;
      Advance();
      return name;
    };
    std::string first = ident();
    if (!failed() && tok_.kind == Tok::kComma) {
      Advance();
      clause->key_var = first;
      clause->value_var = ident();
    } else {
      clause->value_var = first;
    }
    if (!failed() && !AtKeyword("in")) {
      Fail(tok_.range, "Invalid 'for' expression",
           "For expression requires the 'in' keyword after its name declarations.");
    }
    Advance();
    clause->collection = ParseExpr();
    if (!failed() && tok_.kind != Tok::kColon) {
      Fail(tok_.range, "Invalid 'for' expression",
           "For expression requires a colon after the collection expression.");
    }
    Advance();
    if (object) {
      clause->key = ParseExpr();
      if (!failed() && tok_.kind != Tok::kArrow) {
        Fail(tok_.range, "Invalid 'for' expression",
             "Key expression in 'for' expression must be followed by an arrow operator.");
      }
      Advance();
    }
    clause->value = ParseExpr();
    if (!failed() && object && tok_.kind == Tok::kEllipsis) {
      clause->group = true;
      Advance();
    }
    if (!failed() && AtKeyword("if")) {
      Advance();
      clause->condition = ParseExpr();
    }
    const Tok close = object ? Tok::kRBrace : Tok::kRBrack;
    if (!failed() && tok_.kind != close) {
      Fail(tok_.range, "Invalid 'for' expression",
           absl::StrCat("Extra characters after the end of the 'for' expression; expected \"",
                        object ? "}" : "]", "\"."));
    }
    if (failed()) {
      return nullptr;
    }
    ExprPtr e = NewExpr(ExprKind::kFor, {open.begin, tok_.range.end});
    e->for_clause = std::move(clause);
    Advance();
    return e;
  }

  // --- Templates ---------------------------------------------------------------------

  // tok_ is the opening quote; the scanner stands just after it.
  ExprPtr ParseQuotedTemplate() {
    ExprPtr e = NewExpr(ExprKind::kTemplate, tok_.range);
    ScanTemplate(*e, /*quoted=*/true, src_.size(), 0);
    if (failed()) {
      return nullptr;
    }
    e->range.end = Here();
    Advance();
    return e;
  }

  ExprPtr ParseHeredoc() {
    const HeredocInfo info = heredoc_;
    ExprPtr e = NewExpr(ExprKind::kTemplate, tok_.range);
    ScanTemplate(*e, /*quoted=*/false, info.body_end, info.indent);
    if (failed()) {
      return nullptr;
    }
    AdvanceTo(info.after);
    e->range.end = Here();
    Advance();
    return e;
  }

  // Scans literal text and `${...}` interpolations up to the closing quote (quoted) or
  // `limit` (heredoc). Heredocs have no escapes; `indent` blanks are removed from the
  // start of each heredoc line.
  void ScanTemplate(Expr& e, bool quoted, size_t limit, size_t indent) {
    std::string literal;
    Pos literal_begin = Here();
    auto flush_literal = [&]() {
      if (!literal.empty()) {
        TemplatePart part;
        part.literal = std::move(literal);
        part.range = {literal_begin, Here()};
        e.parts.push_back(std::move(part));
        literal.clear();
      }
    };
    bool line_start = !quoted;
    while (!failed()) {
      if (!quoted && line_start) {
        for (size_t i = 0; i < indent && pos_ < limit && (PeekChar() == ' ' || PeekChar() == '\t');
             ++i) {
          Bump();
        }
        line_start = false;
      }
      if (pos_ >= limit || AtEnd()) {
        if (quoted) {
          Fail({e.range.begin, Here()}, "Unterminated template string",
               "No closing quote was found for this string.");
        }
        break;
      }
      const char c = PeekChar();
      if (quoted && c == '"') {
        Bump();
        break;
      }
      if (quoted && c == '\n') {
        Fail({e.range.begin, Here()}, "Unterminated template string",
             "Quoted strings may not span lines; use a heredoc (<<EOT) for multi-line text.");
        break;
      }
      if ((c == '$' || c == '%') && PeekChar(1) == c && PeekChar(2) == '{') {
        literal += c;
        literal += '{';
        Bump();
        Bump();
        Bump();
        continue;
      }
      if (c == '%' && PeekChar(1) == '{') {
        const Pos begin = Here();
        Bump();
        Bump();
        Fail({begin, Here()}, "Unsupported template directive",
             "Template directives (%{ if }, %{ for }) are not supported; use a conditional or "
             "a for expression inside ${...}, or write %%{ for a literal %{.");
        break;
      }
      if (c == '$' && PeekChar(1) == '{') {
        flush_literal();
        TemplatePart part;
        const Pos begin = Here();
        Bump();
        Bump();
        Advance();
        part.expr = ParseExpr();
        if (failed()) {
          break;
        }
        if (tok_.kind != Tok::kRBrace) {
          Fail(tok_.range, "Extra characters after interpolation expression",
               "Expected a closing brace to end the interpolation expression.");
          break;
        }
        part.range = {begin, Here()};
        part.literal = std::string(src_.substr(begin.offset, pos_ - begin.offset));
        e.parts.push_back(std::move(part));
        literal_begin = Here();
        continue;
      }
      if (quoted && c == '\\') {
        ScanEscape(literal);
        continue;
      }
      if (c == '\n') {
        line_start = true;
      }
      literal += c;
      Bump();
    }
    if (!failed()) {
      flush_literal();
    }
  }

  void ScanEscape(std::string& out) {
    const Pos begin = Here();
    Bump();
    const char c = PeekChar();
    auto bad = [&](absl::string_view detail) {
      Fail({begin, Here()}, "Invalid escape sequence", detail);
    };
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'u':
      case 'U': {
        const size_t digits = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t i = 1; i <= digits; ++i) {
          const char h = PeekChar(i);
          uint32_t v = 0;
          if (h >= '0' && h <= '9') {
            v = h - '0';
          } else if (h >= 'a' && h <= 'f') {
            v = h - 'a' + 10;
          } else if (h >= 'A' && h <= 'F') {
            v = h - 'A' + 10;
          } else {
            bad(absl::StrCat("The \\", std::string(1, c), " escape requires ", digits,
                             " hexadecimal digits."));
            return;
          }
          cp = cp * 16 + v;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          bad("The escape names an invalid Unicode character.");
          return;
        }
        AppendUtf8(out, cp);
        for (size_t i = 0; i < digits; ++i) {
          Bump();
        }
        break;
      }
      default:
        bad(AtEnd() ? "The string ends in a backslash."
                    : absl::StrCat("The symbol \"", std::string(1, c),
                                   "\" is not a valid escape sequence selector."));
        return;
    }
    Bump();
  }

  std::string name_;
  absl::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  Token tok_;
  HeredocInfo heredoc_;
  int depth_ = 0;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<File> ParseFile(std::string name, std::string source) {
  File file;
  file.name = std::move(name);
  file.source = std::move(source);
  Parser parser(file.name, file.source);
  if (absl::Status s = parser.Start(); !s.ok()) {
    return s;
  }
  absl::StatusOr<Body> body = parser.ParseTopBody();
  if (!body.ok()) {
    return body.status();
  }
  file.body = std::move(*body);
  return file;
}

absl::StatusOr<ExprPtr> ParseExpression(const std::string& name, const std::string& source) {
  Parser parser(name, source);
  if (absl::Status s = parser.Start(); !s.ok()) {
    return s;
  }
  return parser.ParseOnlyExpression();
}

absl::StatusOr<ExprPtr> ParseTemplate(const std::string& name, const std::string& source) {
  Parser parser(name, source);
  if (absl::Status s = parser.CheckSource(); !s.ok()) {
    return s;
  }
  return parser.ParseWholeTemplate();
}

}  // namespace drover::jobspec
