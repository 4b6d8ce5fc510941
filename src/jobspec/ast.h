// The syntax tree of an HCL2 file (the native syntax, not HCL's JSON form): bodies of
// attributes and blocks, and expressions. Every node keeps its source range so that
// evaluation and decoding errors name file, line and column.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace drover::jobspec {

struct Pos {
  int line = 1;
  int column = 1;  // 1-based, counted in bytes
  size_t offset = 0;
};

struct Range {
  Pos begin;
  Pos end;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// A template ("a ${b} c" or a heredoc): literal text and interpolations in order.
struct TemplatePart {
  // The text of a literal part; for an interpolation, its source text ("${attr.x}"),
  // which runtime references (resolved by the client) keep verbatim.
  std::string literal;
  ExprPtr expr;  // null for literal parts
  Range range;   // of the whole `${...}` sequence for interpolations
};

struct ObjectItem {
  ExprPtr key;  // a bare identifier key is a string literal
  ExprPtr value;
};

enum class ExprKind {
  kLiteral,      // literal
  kTemplate,     // parts
  kVariable,     // name (a root such as `var`, `local` or `attr`)
  kGetAttr,      // operands[0].name
  kIndex,        // operands[0][operands[1]]
  kSplat,        // operands[0][*] then each element through `operands[1]` (null: identity)
  kSplatItem,    // the element being projected inside a splat
  kCall,         // name(operands...), expand_final for `...`
  kTuple,        // [operands...]
  kObject,       // { items }
  kUnary,        // op operands[0]
  kBinary,       // operands[0] op operands[1]
  kConditional,  // operands[0] ? operands[1] : operands[2]
  kFor,          // for expression, see ForClause
  kParens,       // (operands[0]); keeps `(a) = 1` object keys from being literal
};

struct ForClause {
  std::string key_var;  // empty when only a value variable is given
  std::string value_var;
  ExprPtr collection;
  ExprPtr key;  // object form only
  ExprPtr value;
  ExprPtr condition;  // may be null
  bool object = false;
  bool group = false;  // `...` after the value: values grouped per key
};

struct Expr {
  ExprKind kind;
  Range range;
  nlohmann::json literal;
  std::string name;  // variable, attribute or function name; operator for unary/binary
  std::vector<ExprPtr> operands;
  std::vector<TemplatePart> parts;
  std::vector<ObjectItem> items;
  std::unique_ptr<ForClause> for_clause;
  bool expand_final = false;
  // Built from a template directive (`%{ if }`, `%{ for }`, and their bodies): always
  // yields text, never the unwrapped value of a lone interpolation.
  bool directive = false;
};

struct Block;

struct Attribute {
  std::string name;
  Range name_range;
  ExprPtr expr;
  Range range;
};

struct Body {
  std::vector<Attribute> attributes;  // in source order, names unique
  std::vector<Block> blocks;          // in source order
  Range range;
  const Attribute* FindAttribute(const std::string& name) const;
};

struct Block {
  std::string type;
  Range type_range;
  std::vector<std::string> labels;
  std::vector<Range> label_ranges;
  Body body;
  Range range;
};

// A parsed file: its name (for messages), its source and its body.
struct File {
  std::string name;
  std::string source;
  Body body;
};

}  // namespace drover::jobspec
