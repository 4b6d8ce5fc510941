// A hand-written parser for HCL2's native syntax: bodies (attributes and blocks with
// labels), comments (`#`, `//`, `/* */`), quoted templates with escapes and `${...}`
// interpolations, heredocs (`<<EOF`, `<<-EOF`), numbers, bools, null, tuples, objects,
// operators, conditionals, function calls, splats and `for` expressions.
//
// Bad input is an InvalidArgument naming file, line and column, never a crash: the
// source must be valid UTF-8 and at most kMaxSourceBytes long, and nesting (blocks,
// brackets and interpolations together) is capped at kMaxNesting. Template directives
// (`%{ if }`, `%{ for }`) are refused with a clear message; `%%{` is a literal `%{`.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "jobspec/ast.h"

namespace drover::jobspec {

inline constexpr size_t kMaxSourceBytes = 4 << 20;
inline constexpr int kMaxNesting = 100;

absl::StatusOr<File> ParseFile(std::string name, std::string source);

// Parses `source` as one expression (a `-var` value of a complex type).
absl::StatusOr<ExprPtr> ParseExpression(const std::string& name, const std::string& source);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or values past
// U+10FFFF).
bool IsValidUtf8(absl::string_view text);

// Parses all of `source` as a template without quotes (templatefile()'s file).
absl::StatusOr<ExprPtr> ParseTemplate(const std::string& name, const std::string& source);

}  // namespace drover::jobspec
