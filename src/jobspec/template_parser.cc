// Templates: quoted strings, heredoc bodies, ${...} interpolations, %{...} directives.
#include "jobspec/parser_internal.h"

namespace drover::jobspec::internal {

// The whole source as one template without quotes (templatefile()).
absl::StatusOr<ExprPtr> Parser::ParseWholeTemplate() {
  ExprPtr e = NewExpr(ExprKind::kTemplate, {Here(), Here()});
  ScanTemplate(*e, /*quoted=*/false, src_.size(), 0);
  if (!status_.ok()) {
    return status_;
  }
  e->range.end = Here();
  return e;
}

// tok_ is the opening quote; the scanner stands just after it.
ExprPtr Parser::ParseQuotedTemplate() {
  ExprPtr e = NewExpr(ExprKind::kTemplate, tok_.range);
  ScanTemplate(*e, /*quoted=*/true, src_.size(), 0);
  if (failed()) {
    return nullptr;
  }
  e->range.end = Here();
  Advance();
  return e;
}

ExprPtr Parser::ParseHeredoc() {
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
void Parser::ScanTemplate(Expr& e, bool quoted, size_t limit, size_t indent) {
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

void Parser::ScanEscape(std::string& out) {
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

}  // namespace drover::jobspec::internal
