// The parser's class, shared by its three files: scanner.cc (characters to tokens,
// heredocs, escapes), parser.cc (bodies and expressions) and template_parser.cc
// (quoted templates, heredoc bodies, interpolations and directives). Not part of the
// library's interface: include parser.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "jobspec/ast.h"
#include "jobspec/diag.h"
#include "jobspec/parser.h"

namespace drover::jobspec::internal {

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
  kTilde,
};

struct Token {
  Tok kind = Tok::kEof;
  std::string text;
  Range range;
  bool newline_before = false;
};

// Where a template is being scanned; shared by the nested bodies of its directives.
struct TemplateScan {
  bool quoted = false;
  size_t limit = 0;   // end of a heredoc body
  size_t indent = 0;  // blanks removed from each heredoc line (`<<-`)
  bool line_start = false;
  bool strip_next = false;  // a `~}` strips the whitespace that follows
};

struct HeredocInfo {
  size_t body_begin = 0;
  size_t body_end = 0;
  size_t after = 0;   // offset just past the closing marker
  size_t indent = 0;  // leading whitespace removed from each line (`<<-` only)
  bool flush = false;
};

inline bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool IsIdentChar(char c) {
  return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '-';
}
inline bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Length of the UTF-8 sequence at s[i], or 0 when it is not well-formed.
inline size_t Utf8Length(absl::string_view s, size_t i) {
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

inline void AppendUtf8(std::string& out, uint32_t cp) {
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

  absl::Status Start();

  absl::Status CheckSource();

  absl::StatusOr<Body> ParseTopBody() {
    Body body = ParseBody(/*top=*/true);
    if (!status_.ok()) {
      return status_;
    }
    return body;
  }

  // The whole source as one template without quotes (templatefile()).
  absl::StatusOr<ExprPtr> ParseWholeTemplate();

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
  void AdvanceTo(size_t target);

  // Skips blanks and comments; reports whether a newline was among them.
  bool SkipTrivia();

  // Lexes the next token in expression/body mode into tok_.
  void Advance();

  // At `<<`: reads the marker line and finds the closing marker.
  void LexHeredoc(const Pos& begin);

  // --- Bodies ------------------------------------------------------------------------

  bool Enter(const Range& range);
  void Leave() { --depth_; }

  Body ParseBody(bool top);

  void RequireLineEnd(absl::string_view summary, absl::string_view detail);

  Block ParseBlock(const Token& type);

  // --- Expressions -------------------------------------------------------------------

  ExprPtr NewExpr(ExprKind kind, const Range& range) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->range = range;
    return e;
  }

  ExprPtr ParseExpr();

  static int Precedence(const std::string& op);

  // A chain of operators or traversals builds a left-deep tree: each link counts
  // against kMaxNesting like a bracket, so evaluation depth stays bounded.
  ExprPtr ParseBinary(int min_precedence);

  ExprPtr ParseUnary();

  // Applies `.name`, `.0`, `[index]` traversals to `e`; stops at anything else.
  ExprPtr ParseTraversals(ExprPtr e, bool allow_splat);

  ExprPtr ParseSplat(ExprPtr source, const Pos& end);

  ExprPtr ParsePostfix();

  ExprPtr NumberLiteral(const Token& t);

  ExprPtr ParsePrimary();

  ExprPtr ParseCall(const Token& name);

  bool AtKeyword(const char* word) const { return tok_.kind == Tok::kIdent && tok_.text == word; }

  ExprPtr ParseTuple();

  ExprPtr ParseObject();

  // At `for`: the variable names, `in` and the collection (shared by for expressions
  // and %{ for } directives; `what` names which in messages).
  void ParseForHead(ForClause& clause, absl::string_view what);
  // After `[` or `{`, at `for`.
  ExprPtr ParseFor(const Range& open, bool object);

  // --- Templates ---------------------------------------------------------------------

  // tok_ is the opening quote; the scanner stands just after it.
  ExprPtr ParseQuotedTemplate();

  ExprPtr ParseHeredoc();

  // Scans literal text, `${...}` interpolations and `%{...}` directives up to the
  // closing quote (quoted) or `limit` (heredoc). Heredocs have no escapes; `indent`
  // blanks are removed from the start of each heredoc line.
  void ScanTemplate(Expr& e, bool quoted, size_t limit, size_t indent);
  // Scans parts into `e` until the template ends (returns "") or a closing directive
  // (returns "else", "endif" or "endfor", its range in `closer`).
  std::string ScanParts(Expr& e, TemplateScan& scan, Range& closer);
  // After `%{ if` / `%{ for`: the directive, its bodies and its closing directive.
  void ParseIfDirective(Expr& e, TemplateScan& scan, const Pos& begin);
  void ParseForDirective(Expr& e, TemplateScan& scan, const Pos& begin);
  // tok_ is `}` or `~`: consumes the `~}` form and arranges the stripping.
  bool CloseTemplateSequence(TemplateScan& scan);

  void ScanEscape(std::string& out);

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

}  // namespace drover::jobspec::internal
