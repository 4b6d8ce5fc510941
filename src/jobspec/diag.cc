#include "jobspec/diag.h"

#include "absl/strings/str_cat.h"

namespace drover::jobspec {

std::string FormatRange(absl::string_view file, const Range& range) {
  const Pos& b = range.begin;
  const Pos& e = range.end;
  if (e.offset <= b.offset) {
    return absl::StrCat(file, ":", b.line, ",", b.column);
  }
  if (e.line == b.line) {
    return absl::StrCat(file, ":", b.line, ",", b.column, "-", e.column);
  }
  return absl::StrCat(file, ":", b.line, ",", b.column, "-", e.line, ",", e.column);
}

absl::Status DiagError(absl::string_view file, const Range& range, absl::string_view summary,
                       absl::string_view detail) {
  std::string message = absl::StrCat(FormatRange(file, range), ": ", summary);
  if (!detail.empty()) {
    absl::StrAppend(&message, "; ", detail);
  }
  return absl::InvalidArgumentError(message);
}

}  // namespace drover::jobspec
