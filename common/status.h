#pragma once
// Status propagation at module boundaries: absl::Status / absl::StatusOr<T>
// with one RETURN_IF_ERROR / ASSIGN_OR_RETURN pair (as in Triton's status.h).

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GS_CONCAT_INNER(a, b) a##b
#define GS_CONCAT(a, b) GS_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status gs_status_ = (expr);              \
    if (!gs_status_.ok()) return gs_status_;         \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, MakeX());` binds the value of a StatusOr or
// returns its error from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  GS_ASSIGN_OR_RETURN_IMPL(GS_CONCAT(gs_statusor_, __LINE__), lhs, expr)

#define GS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()
