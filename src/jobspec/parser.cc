#include "jobspec/parser.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "jobspec/diag.h"
#include "jobspec/parser_internal.h"

namespace drover::jobspec {

const Attribute* Body::FindAttribute(const std::string& attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) {
      return &a;
    }
  }
  return nullptr;
}

namespace internal {

absl::Status Parser::Start() {
  if (absl::Status s = CheckSource(); !s.ok()) {
    return s;
  }
  Advance();
  return status_;
}

bool Parser::Enter(const Range& range) {
  if (++depth_ > kMaxNesting) {
    Fail(range, "Nesting too deep",
         absl::StrCat("Blocks, brackets, interpolations and chains of operators may nest at "
                      "most ",
                      kMaxNesting, " levels deep."));
    return false;
  }
  return true;
}

Body Parser::ParseBody(bool top) {
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

void Parser::RequireLineEnd(absl::string_view summary, absl::string_view detail) {
  if (failed() || tok_.newline_before || tok_.kind == Tok::kEof || tok_.kind == Tok::kRBrace) {
    return;
  }
  Fail(tok_.range, summary, detail);
}

Block Parser::ParseBlock(const Token& type) {
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

ExprPtr Parser::ParseExpr() {
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

int Parser::Precedence(const std::string& op) {
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
ExprPtr Parser::ParseBinary(int min_precedence) {
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

ExprPtr Parser::ParseUnary() {
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
ExprPtr Parser::ParseTraversals(ExprPtr e, bool allow_splat) {
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

ExprPtr Parser::ParseSplat(ExprPtr source, const Pos& end) {
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

ExprPtr Parser::ParsePostfix() {
  ExprPtr e = ParsePrimary();
  if (failed()) {
    return nullptr;
  }
  return ParseTraversals(std::move(e), /*allow_splat=*/true);
}

ExprPtr Parser::NumberLiteral(const Token& t) {
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

ExprPtr Parser::ParsePrimary() {
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
        e->literal = t.text == "null" ? nlohmann::json(nullptr) : nlohmann::json(t.text == "true");
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

ExprPtr Parser::ParseCall(const Token& name) {
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

ExprPtr Parser::ParseTuple() {
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

ExprPtr Parser::ParseObject() {
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

void Parser::ParseForHead(ForClause& clause, absl::string_view what) {
  const std::string summary = absl::StrCat("Invalid 'for' ", what);
  Advance();
  auto ident = [&]() -> std::string {
    if (tok_.kind != Tok::kIdent) {
      Fail(tok_.range, summary, "A variable name is required after 'for'.");
      return "";
    }
    std::string name = tok_.text;
    Advance();
    return name;
  };
  std::string first = ident();
  if (!failed() && tok_.kind == Tok::kComma) {
    Advance();
    clause.key_var = first;
    clause.value_var = ident();
  } else {
    clause.value_var = first;
  }
  if (!failed() && !AtKeyword("in")) {
    Fail(tok_.range, summary, "The 'in' keyword is required after the variable names.");
  }
  Advance();
  clause.collection = ParseExpr();
}

// After `[` or `{`, at `for`.
ExprPtr Parser::ParseFor(const Range& open, bool object) {
  auto clause = std::make_unique<ForClause>();
  clause->object = object;
  ParseForHead(*clause, "expression");
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

}  // namespace internal

absl::StatusOr<File> ParseFile(std::string name, std::string source) {
  File file;
  file.name = std::move(name);
  file.source = std::move(source);
  internal::Parser parser(file.name, file.source);
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
  internal::Parser parser(name, source);
  if (absl::Status s = parser.Start(); !s.ok()) {
    return s;
  }
  return parser.ParseOnlyExpression();
}

bool IsValidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = internal::Utf8Length(text, i);
    if (n == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

absl::StatusOr<ExprPtr> ParseTemplate(const std::string& name, const std::string& source) {
  internal::Parser parser(name, source);
  if (absl::Status s = parser.CheckSource(); !s.ok()) {
    return s;
  }
  return parser.ParseWholeTemplate();
}

}  // namespace drover::jobspec
