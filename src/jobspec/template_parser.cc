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

void Parser::ScanTemplate(Expr& e, bool quoted, size_t limit, size_t indent) {
  TemplateScan scan{quoted, limit, indent, /*line_start=*/!quoted, /*strip_next=*/false};
  Range closer;
  const std::string end = ScanParts(e, scan, closer);
  if (!failed() && !end.empty()) {
    Fail(closer, "Unexpected template directive",
         absl::StrCat("There is no open directive for this %{ ", end, " }."));
  }
}

namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// A `~` after `${` or `%{` strips the whitespace before it.
void StripTrailing(Expr& e, std::string& literal) {
  while (!literal.empty() && IsBlank(literal.back())) {
    literal.pop_back();
  }
  if (literal.empty() && !e.parts.empty() && !e.parts.back().expr) {
    std::string& previous = e.parts.back().literal;
    while (!previous.empty() && IsBlank(previous.back())) {
      previous.pop_back();
    }
    if (previous.empty()) {
      e.parts.pop_back();
    }
  }
}

}  // namespace

bool Parser::CloseTemplateSequence(TemplateScan& scan) {
  if (tok_.kind == Tok::kTilde) {
    Advance();
    if (tok_.kind != Tok::kRBrace) {
      Fail(tok_.range, "Invalid strip marker", "A ~ strip marker must be followed by }.");
      return false;
    }
    scan.strip_next = true;
  }
  if (tok_.kind != Tok::kRBrace) {
    Fail(tok_.range, "Extra characters after interpolation expression",
         "Expected a closing brace to end the interpolation expression.");
    return false;
  }
  return true;
}

std::string Parser::ScanParts(Expr& e, TemplateScan& scan, Range& closer) {
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
  while (!failed()) {
    if (!scan.quoted && scan.line_start) {
      for (size_t i = 0;
           i < scan.indent && pos_ < scan.limit && (PeekChar() == ' ' || PeekChar() == '\t'); ++i) {
        Bump();
      }
      scan.line_start = false;
    }
    if (scan.strip_next) {
      while (pos_ < scan.limit && !AtEnd() && IsBlank(PeekChar()) &&
             !(scan.quoted && PeekChar() == '\n')) {
        Bump();
      }
      scan.strip_next = false;
      literal_begin = Here();
    }
    if (pos_ >= scan.limit || AtEnd()) {
      if (scan.quoted) {
        Fail({e.range.begin, Here()}, "Unterminated template string",
             "No closing quote was found for this string.");
      }
      break;
    }
    const char c = PeekChar();
    if (scan.quoted && c == '"') {
      Bump();
      break;
    }
    if (scan.quoted && c == '\n') {
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
    if ((c == '$' || c == '%') && PeekChar(1) == '{') {
      const Pos begin = Here();
      Bump();
      Bump();
      if (PeekChar() == '~') {
        Bump();
        StripTrailing(e, literal);
      }
      flush_literal();
      Advance();
      if (c == '%') {
        if (tok_.kind != Tok::kIdent) {
          Fail(tok_.range, "Invalid template directive",
               "A template directive keyword (if, else, endif, for, endfor) is expected here.");
          break;
        }
        const std::string word = tok_.text;
        if (word == "else" || word == "endif" || word == "endfor") {
          Advance();
          if (!CloseTemplateSequence(scan)) {
            break;
          }
          closer = {begin, Here()};
          return word;
        }
        if (word == "if") {
          ParseIfDirective(e, scan, begin);
        } else if (word == "for") {
          ParseForDirective(e, scan, begin);
        } else {
          Fail(tok_.range, "Invalid template directive",
               absl::StrCat("\"", word,
                            "\" is not a template directive (if, else, endif, for, endfor); "
                            "write %%{ for a literal %{."));
        }
        literal_begin = Here();
        continue;
      }
      TemplatePart part;
      part.expr = ParseExpr();
      if (failed() || !CloseTemplateSequence(scan)) {
        break;
      }
      part.range = {begin, Here()};
      part.literal = std::string(src_.substr(begin.offset, pos_ - begin.offset));
      e.parts.push_back(std::move(part));
      literal_begin = Here();
      continue;
    }
    if (scan.quoted && c == '\\') {
      ScanEscape(literal);
      continue;
    }
    if (c == '\n') {
      scan.line_start = true;
    }
    literal += c;
    Bump();
  }
  if (!failed()) {
    flush_literal();
  }
  return "";
}

void Parser::ParseIfDirective(Expr& e, TemplateScan& scan, const Pos& begin) {
  if (!Enter({begin, Here()})) {
    return;
  }
  Advance();
  ExprPtr cond = ParseExpr();
  if (failed() || !CloseTemplateSequence(scan)) {
    return;
  }
  ExprPtr yes = NewExpr(ExprKind::kTemplate, {Here(), Here()});
  yes->directive = true;
  ExprPtr no = NewExpr(ExprKind::kTemplate, {Here(), Here()});
  no->directive = true;
  Range closer;
  std::string end = ScanParts(*yes, scan, closer);
  if (!failed() && end == "else") {
    end = ScanParts(*no, scan, closer);
  }
  if (failed()) {
    return;
  }
  if (end != "endif") {
    Fail(end.empty() ? Range{begin, Here()} : closer, "Unterminated template directive",
         "This %{ if } has no %{ endif }.");
    return;
  }
  Leave();
  ExprPtr node = NewExpr(ExprKind::kConditional, {begin, Here()});
  node->directive = true;
  node->operands.push_back(std::move(cond));
  node->operands.push_back(std::move(yes));
  node->operands.push_back(std::move(no));
  TemplatePart part;
  part.range = node->range;
  part.expr = std::move(node);
  e.parts.push_back(std::move(part));
}

void Parser::ParseForDirective(Expr& e, TemplateScan& scan, const Pos& begin) {
  if (!Enter({begin, Here()})) {
    return;
  }
  auto clause = std::make_unique<ForClause>();
  ParseForHead(*clause, "directive");
  if (failed() || !CloseTemplateSequence(scan)) {
    return;
  }
  ExprPtr body = NewExpr(ExprKind::kTemplate, {Here(), Here()});
  body->directive = true;
  Range closer;
  const std::string end = ScanParts(*body, scan, closer);
  if (failed()) {
    return;
  }
  if (end != "endfor") {
    Fail(end.empty() ? Range{begin, Here()} : closer, "Unterminated template directive",
         "This %{ for } has no %{ endfor }.");
    return;
  }
  Leave();
  clause->value = std::move(body);
  ExprPtr node = NewExpr(ExprKind::kFor, {begin, Here()});
  node->directive = true;
  node->for_clause = std::move(clause);
  TemplatePart part;
  part.range = node->range;
  part.expr = std::move(node);
  e.parts.push_back(std::move(part));
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
