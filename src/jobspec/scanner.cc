// Characters to tokens: trivia, tokens, heredoc markers, escapes, UTF-8 checks.
#include "jobspec/parser_internal.h"

namespace drover::jobspec::internal {

absl::Status Parser::CheckSource() {
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

void Parser::AdvanceTo(size_t target) {
  while (pos_ < target && pos_ < src_.size()) {
    Bump();
  }
}

// Skips blanks and comments; reports whether a newline was among them.
bool Parser::SkipTrivia() {
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
void Parser::Advance() {
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
    case '~':  // a template strip marker, `~}`
      finish(Tok::kTilde, 1);
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
void Parser::LexHeredoc(const Pos& begin) {
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

}  // namespace drover::jobspec::internal
