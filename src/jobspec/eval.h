// Evaluation of HCL expressions to JSON values, with `var.*` and `local.*` references,
// functions and HCL's conversions (numbers and bools to strings in templates, numeric
// strings to numbers in arithmetic).
//
// References that only a client can resolve are kept verbatim inside templates, as in
// Nomad: "${NOMAD_ALLOC_ID}", "${attr.kernel.name}", "${node.datacenter}",
// "${meta.rack}", "${env["HOME"]}", "${device.model}", and any other name the file does
// not define ("${HOME}") survive evaluation exactly as written. Outside a template, a
// bare `attr.x`, `node.x`, `meta.x`, `env[...]`, `device.x` or `NOMAD_*` means
// "${...}"; other unknown names and undeclared `var.x`/`local.x` are errors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "jobspec/ast.h"

namespace drover::jobspec {

using Json = nlohmann::json;

// Bounds that keep hostile input from hanging the parser or exhausting memory: total
// evaluation work per file (expression steps, plus the weight — elements and string
// bytes/16 — of every value produced or copied), the size of one string value, how
// deeply evaluation may recurse (locals referring to locals included), and how deeply
// a value may nest (copies and encodings of values recurse).
inline constexpr uint64_t kMaxEvalWork = 10'000'000;
inline constexpr size_t kMaxStringBytes = 4 << 20;
inline constexpr int kMaxLocalDepth = 100;
inline constexpr int kMaxEvalDepth = 400;
inline constexpr int kMaxValueDepth = 128;

// The weight of a value, counted until it passes `cap` (elements, members, and string
// bytes/16): the work a copy of it costs.
uint64_t ValueWeight(const Json& v, uint64_t cap);
// Whether `v` nests deeper than `limit` levels of lists and objects.
bool ValueDeeperThan(const Json& v, int limit);
// Whether a text nests deeper than `limit` levels of [ and { (outside strings); used
// before parsing JSON, whose parser and values recurse.
bool JsonTextDeeperThan(absl::string_view text, int limit);

struct EvalOptions {
  // file(), fileexists() and templatefile() read files relative to base_dir. Off in the
  // server's parse endpoint, as in Nomad.
  bool allow_fs = false;
  std::string base_dir = ".";
  uint64_t max_work = kMaxEvalWork;  // lower in tests
};

class Evaluator {
 public:
  Evaluator(std::string file, EvalOptions options);

  // `var.NAME` values (an object).
  void SetVariables(Json variables) { variables_ = std::move(variables); }
  // Declares `local.NAME`, evaluated on first use (cycles are reported).
  absl::Status AddLocal(const Attribute& attr);
  // Evaluates every local not yet used, so that a broken unused one is still an error.
  absl::Status EvaluateLocals();
  // Names usable directly, as templatefile()'s variables are.
  void SetRootScope(Json names) { root_scope_ = std::move(names); }
  // Makes this evaluator draw on `parent`'s work budget (validation blocks,
  // templatefile(), var files), so no part of a file gets a fresh budget.
  void ShareBudget(Evaluator& parent) { work_ = parent.work_; }
  // Names visible until the matching PopScope (a dynamic block's iterator).
  void PushScope(std::map<std::string, Json> names) { scopes_.push_back(std::move(names)); }
  void PopScope() { scopes_.pop_back(); }

  absl::StatusOr<Json> Evaluate(const Expr& expr);

  // An error at `range` in this evaluator's file.
  absl::Status Error(const Range& range, absl::string_view summary, absl::string_view detail) const;
  const std::string& file() const { return file_; }
  const EvalOptions& options() const { return options_; }

 private:
  struct Local {
    const Attribute* attr = nullptr;
    Json value;
    enum class State { kPending, kEvaluating, kDone } state = State::kPending;
  };

  bool Eval(const Expr& e, Json& out);
  bool EvalNode(const Expr& e, Json& out);
  bool EvalTemplate(const Expr& e, Json& out);
  bool EvalVariable(const Expr& e, Json& out);
  bool EvalTraversal(const Expr& e, Json& out);
  bool EvalCall(const Expr& e, Json& out);
  bool EvalUnary(const Expr& e, Json& out);
  bool EvalBinary(const Expr& e, Json& out);
  bool EvalFor(const Expr& e, Json& out);
  bool EvalSplat(const Expr& e, Json& out);
  bool EvalBareRuntime(const Expr& e, Json& out);
  bool Resolve(const Expr& e, Json& storage, const Json*& value);
  bool ResolveLocal(const std::string& name, const Range& range, const Json*& out);
  bool Fail(const Range& range, absl::string_view summary, absl::string_view detail);
  // Charges `units` of work and checks the size of a produced value.
  bool Charge(const Range& range, uint64_t units);
  bool CheckProduced(const Range& range, const Json& value);
  // Charges the weight of a value about to be copied.
  bool ChargeCopy(const Range& range, const Json& value);
  bool InScope(const std::string& name) const;
  // A reference whose root this file does not define (neither var, local, a
  // for-expression variable nor a templatefile() variable): the client resolves it.
  bool IsUnresolvedReference(const Expr& e) const;

  std::string file_;
  EvalOptions options_;
  Json variables_ = Json::object();
  Json root_scope_ = Json::object();
  std::map<std::string, Local> locals_;
  std::vector<std::map<std::string, Json>> scopes_;  // for-expression variables
  std::vector<const Json*> splat_items_;
  absl::Status status_;
  uint64_t own_work_ = 0;
  uint64_t* work_ = &own_work_;  // over every Evaluate call: the budget is per file
  int local_depth_ = 0;
  int eval_depth_ = 0;
};

// Whether `e` is a reference (possibly with traversals) rooted at a name only the
// client resolves at run time.
bool IsRuntimeReference(const Expr& e);

// HCL's string conversion of a primitive; false for null and collections.
bool ToHclString(const Json& v, std::string& out);
// Number conversion (numbers, and strings holding a number).
bool ToHclNumber(const Json& v, Json& out);
// Bool conversion (bools, and "true"/"false").
bool ToHclBool(const Json& v, bool& out);
// HCL's type name of a value, for messages ("string", "number", "tuple", ...).
std::string TypeName(const Json& v);

}  // namespace drover::jobspec
