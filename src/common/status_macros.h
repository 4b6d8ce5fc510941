// Status propagation helpers. Debian 12's abseil has no status_macros.h, so we
// carry our own. Both macros work in ordinary functions and, with the CO_ forms,
// in coroutines (where `return` must be `co_return`).
#pragma once

#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace drover::common {

// Returns `status` with `context` prefixed to its message ("context: message"), keeping
// the code. OK stays OK.
absl::Status Annotate(const absl::Status& status, std::string_view context);

}  // namespace drover::common

#define DROVER_STATUS_CONCAT_INNER_(a, b) a##b
#define DROVER_STATUS_CONCAT_(a, b) DROVER_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` yields a non-OK absl::Status.
#define DROVER_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::absl::Status drover_status_ = (expr); \
    if (!drover_status_.ok())               \
      return drover_status_;                \
  } while (false)

// `lhs = value of expr` or returns its error from the enclosing function.
#define DROVER_ASSIGN_OR_RETURN(lhs, expr)                                                    \
  DROVER_ASSIGN_OR_RETURN_IMPL_(DROVER_STATUS_CONCAT_(drover_statusor_, __LINE__), lhs, expr, \
                                return )

// Coroutine forms.
#define DROVER_CO_RETURN_IF_ERROR(expr)     \
  do {                                      \
    ::absl::Status drover_status_ = (expr); \
    if (!drover_status_.ok())               \
      co_return drover_status_;             \
  } while (false)

#define DROVER_CO_ASSIGN_OR_RETURN(lhs, expr)                                                 \
  DROVER_ASSIGN_OR_RETURN_IMPL_(DROVER_STATUS_CONCAT_(drover_statusor_, __LINE__), lhs, expr, \
                                co_return )

#define DROVER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr, ret) \
  auto tmp = (expr);                                       \
  if (!tmp.ok())                                           \
    ret std::move(tmp).status();                           \
  lhs = std::move(tmp).value()

// Invariant checks: DROVER_CHECK is always on; a failure means a bug, so we crash.
#define DROVER_CHECK(cond)                                                \
  do {                                                                    \
    if (!(cond))                                                          \
      ::drover::common::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (false)

namespace drover::common::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}  // namespace drover::common::internal
