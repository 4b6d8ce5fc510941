#include "jobspec/eval.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "jobspec/diag.h"
#include "jobspec/functions.h"

namespace drover::jobspec {

namespace {

bool IsRuntimeRoot(const std::string& name) {
  return name == "attr" || name == "node" || name == "meta" || name == "env" || name == "device" ||
         absl::StartsWith(name, "NOMAD_");
}

}  // namespace

const Expr* ReferenceRoot(const Expr& e) {
  const Expr* cur = &e;
  while (cur->kind == ExprKind::kGetAttr || cur->kind == ExprKind::kIndex) {
    cur = cur->operands[0].get();
  }
  return cur->kind == ExprKind::kVariable ? cur : nullptr;
}

bool IsRuntimeReference(const Expr& e) {
  const Expr* root = ReferenceRoot(e);
  return root != nullptr && IsRuntimeRoot(root->name);
}

bool Evaluator::InScope(const std::string& name) const {
  for (const auto& scope : scopes_) {
    if (scope.contains(name)) {
      return true;
    }
  }
  return root_scope_.contains(name);
}

bool Evaluator::IsUnresolvedReference(const Expr& e) const {
  const Expr* root = ReferenceRoot(e);
  return root != nullptr && root->name != "var" && root->name != "local" && !InScope(root->name);
}

// The source form of a reference ("attr.kernel.name", "env[\"HOME\"]"); false when an
// index is not a literal.
bool ReferenceText(const Expr& e, std::string& out) {
  switch (e.kind) {
    case ExprKind::kVariable:
      out = e.name;
      return true;
    case ExprKind::kGetAttr:
      if (!ReferenceText(*e.operands[0], out)) {
        return false;
      }
      absl::StrAppend(&out, ".", e.name);
      return true;
    case ExprKind::kIndex: {
      const Expr& key = *e.operands[1];
      const Expr* literal = &key;
      if (key.kind == ExprKind::kTemplate && key.parts.size() == 1 && !key.parts[0].expr) {
        out.clear();
        if (!ReferenceText(*e.operands[0], out)) {
          return false;
        }
        absl::StrAppend(&out, "[", Json(key.parts[0].literal).dump(), "]");
        return true;
      }
      if (literal->kind != ExprKind::kLiteral || !ReferenceText(*e.operands[0], out)) {
        return false;
      }
      absl::StrAppend(&out, "[", literal->literal.dump(), "]");
      return true;
    }
    default:
      return false;
  }
}

Evaluator::Evaluator(std::string file, EvalOptions options)
    : file_(std::move(file)), options_(std::move(options)) {}

absl::Status Evaluator::Error(const Range& range, absl::string_view summary,
                              absl::string_view detail) const {
  return DiagError(file_, range, summary, detail);
}

bool Evaluator::Fail(const Range& range, absl::string_view summary, absl::string_view detail) {
  if (status_.ok()) {
    status_ = Error(range, summary, detail);
  }
  return false;
}

absl::Status Evaluator::AddLocal(const Attribute& attr) {
  if (locals_.contains(attr.name)) {
    return Error(attr.name_range, "Duplicate local value definition",
                 absl::StrCat("A local value named \"", attr.name,
                              "\" was already defined. Local value names must be unique."));
  }
  locals_[attr.name].attr = &attr;
  return absl::OkStatus();
}

absl::Status Evaluator::EvaluateLocals() {
  status_ = absl::OkStatus();
  for (auto& [name, local] : locals_) {
    const Json* ignored = nullptr;
    if (local.state == Local::State::kPending &&
        !ResolveLocal(name, local.attr->name_range, ignored)) {
      return status_;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> Evaluator::Evaluate(const Expr& expr) {
  status_ = absl::OkStatus();
  Json out;
  if (!Eval(expr, out)) {
    return status_;
  }
  return out;
}

bool Evaluator::Charge(const Range& range, uint64_t units) {
  *work_ += units;
  if (*work_ > options_.max_work) {
    return Fail(range, "Evaluation too expensive",
                absl::StrCat("This file's expressions need more than ", options_.max_work,
                             " steps to evaluate; simplify them."));
  }
  return true;
}

bool Evaluator::CheckProduced(const Range& range, const Json& value) {
  if (value.is_string()) {
    const size_t n = value.get_ref<const std::string&>().size();
    if (n > kMaxStringBytes) {
      return Fail(range, "Value too large",
                  absl::StrCat("The result is a string of ", n, " bytes; the limit is ",
                               kMaxStringBytes, "."));
    }
    return Charge(range, n / 16);
  }
  if (value.is_array() || value.is_object()) {
    return Charge(range, value.size());
  }
  return true;
}

bool Evaluator::ChargeCopy(const Range& range, const Json& value) {
  const uint64_t left = options_.max_work - std::min(options_.max_work, *work_);
  return Charge(range, ValueWeight(value, left + 1));
}

bool Evaluator::Eval(const Expr& e, Json& out) {
  if (!Charge(e.range, 1)) {
    return false;
  }
  if (eval_depth_ >= kMaxEvalDepth) {
    return Fail(e.range, "Expression nests too deeply",
                absl::StrCat("Evaluating this needs more than ", kMaxEvalDepth,
                             " nested steps (locals referring to locals count too)."));
  }
  ++eval_depth_;
  const bool ok = EvalNode(e, out);
  --eval_depth_;
  return ok;
}

bool Evaluator::EvalNode(const Expr& e, Json& out) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      out = e.literal;
      return true;
    case ExprKind::kTemplate:
      return EvalTemplate(e, out);
    case ExprKind::kVariable:
      return EvalVariable(e, out);
    case ExprKind::kGetAttr:
    case ExprKind::kIndex:
      return EvalTraversal(e, out);
    case ExprKind::kSplat:
      return EvalSplat(e, out);
    case ExprKind::kSplatItem:
      if (splat_items_.empty()) {
        return Fail(e.range, "Invalid splat", "A splat item is used outside of a splat.");
      }
      out = *splat_items_.back();
      return true;
    case ExprKind::kCall:
      return EvalCall(e, out);
    case ExprKind::kTuple: {
      out = Json::array();
      for (const ExprPtr& item : e.operands) {
        Json v;
        if (!Eval(*item, v)) {
          return false;
        }
        out.push_back(std::move(v));
      }
      return CheckProduced(e.range, out);
    }
    case ExprKind::kObject: {
      out = Json::object();
      for (const ObjectItem& item : e.items) {
        Json key;
        Json value;
        if (!Eval(*item.key, key) || !Eval(*item.value, value)) {
          return false;
        }
        std::string name;
        if (!ToHclString(key, name)) {
          return Fail(item.key->range, "Incorrect key type",
                      absl::StrCat("Can't use this value as a key: string required, got ",
                                   TypeName(key), "."));
        }
        out[name] = std::move(value);
      }
      return CheckProduced(e.range, out);
    }
    case ExprKind::kUnary:
      return EvalUnary(e, out);
    case ExprKind::kBinary:
      return EvalBinary(e, out);
    case ExprKind::kConditional: {
      Json cond;
      if (!Eval(*e.operands[0], cond)) {
        return false;
      }
      bool b = false;
      if (!ToHclBool(cond, b)) {
        return Fail(e.operands[0]->range, "Incorrect condition type",
                    absl::StrCat("The condition expression must be of type bool, got ",
                                 TypeName(cond), "."));
      }
      return Eval(*e.operands[b ? 1 : 2], out);
    }
    case ExprKind::kFor:
      return EvalFor(e, out);
    case ExprKind::kParens:
      return Eval(*e.operands[0], out);
  }
  return Fail(e.range, "Invalid expression", "Unknown expression kind.");
}

bool Evaluator::EvalTemplate(const Expr& e, Json& out) {
  // "${x}" alone yields x's value unconverted, as in HCL.
  if (!e.directive && e.parts.size() == 1 && e.parts[0].expr && !e.parts[0].expr->directive &&
      !IsUnresolvedReference(*e.parts[0].expr)) {
    return Eval(*e.parts[0].expr, out);
  }
  std::string text;
  for (const TemplatePart& part : e.parts) {
    if (!part.expr) {
      text += part.literal;
      continue;
    }
    // Names this file does not define are the client's (NOMAD_*, attr, env, task
    // environment variables): kept as written, as Nomad does.
    if (IsUnresolvedReference(*part.expr)) {
      // Rendered canonically ("${ NOMAD_ALLOC_ID }" → "${NOMAD_ALLOC_ID}") so the
      // client's lookup finds it; as written when it has a computed index.
      std::string reference;
      text +=
          ReferenceText(*part.expr, reference) ? absl::StrCat("${", reference, "}") : part.literal;
      continue;
    }
    Json v;
    if (!Eval(*part.expr, v)) {
      return false;
    }
    std::string s;
    if (part.expr->directive) {
      // %{ if } gives its branch's text, %{ for } a list of texts.
      for (const Json& piece : v.is_array() ? v : Json::array({v})) {
        if (ToHclString(piece, s)) {
          text += s;
        }
      }
      continue;
    }
    if (v.is_null()) {
      return Fail(part.expr->range, "Invalid template interpolation value",
                  "The expression result is null. Cannot include a null value in a string "
                  "template.");
    }
    if (!ToHclString(v, s)) {
      return Fail(part.expr->range, "Invalid template interpolation value",
                  absl::StrCat("Cannot include the given value in a string template: string "
                               "required, got ",
                               TypeName(v), "."));
    }
    text += s;
    if (text.size() > kMaxStringBytes) {
      return CheckProduced(e.range, text);
    }
  }
  out = std::move(text);
  return CheckProduced(e.range, out);
}

bool Evaluator::EvalVariable(const Expr& e, Json& out) {
  Json storage;
  const Json* value = nullptr;
  if (InScope(e.name) || e.name == "var") {
    if (!Resolve(e, storage, value) || !ChargeCopy(e.range, *value)) {
      return false;
    }
    out = *value;
    return true;
  }
  if (e.name == "local" || e.name == "locals") {
    return Fail(e.range, "Invalid reference",
                "A reference to a local value must be followed by its name, like local.name.");
  }
  if (IsRuntimeRoot(e.name)) {
    return EvalBareRuntime(e, out);
  }
  return Fail(e.range, "Unknown variable",
              absl::StrCat("There is no variable named \"", e.name, "\"."));
}

// A bare `attr.kernel.name` means "${attr.kernel.name}", as in Nomad.
bool Evaluator::EvalBareRuntime(const Expr& e, Json& out) {
  std::string text;
  if (!ReferenceText(e, text)) {
    return Fail(e.range, "Invalid runtime reference",
                "A reference resolved by the client may only use literal indexes.");
  }
  out = absl::StrCat("${", text, "}");
  return true;
}

bool Evaluator::ResolveLocal(const std::string& name, const Range& range, const Json*& out) {
  auto it = locals_.find(name);
  if (it == locals_.end()) {
    return Fail(range, "Reference to undeclared local value",
                absl::StrCat("A local value with the name \"", name, "\" has not been declared."));
  }
  Local& local = it->second;
  if (local.state == Local::State::kDone) {
    out = &local.value;
    return true;
  }
  if (local.state == Local::State::kEvaluating) {
    return Fail(range, "Cycle in local values",
                absl::StrCat("The local value \"", name, "\" refers to itself."));
  }
  if (local_depth_ >= kMaxLocalDepth) {
    return Fail(range, "Local values nest too deeply",
                absl::StrCat("Local values may refer to other locals at most ", kMaxLocalDepth,
                             " levels deep."));
  }
  local.state = Local::State::kEvaluating;
  ++local_depth_;
  // Locals are evaluated in the file's scope, not inside the caller's for-expression.
  std::vector<std::map<std::string, Json>> saved;
  saved.swap(scopes_);
  Json value;
  const bool ok = Eval(*local.attr->expr, value);
  --local_depth_;
  saved.swap(scopes_);
  if (!ok) {
    return false;
  }
  if (ValueDeeperThan(value, kMaxValueDepth)) {
    return Fail(local.attr->expr->range, "Value nests too deeply",
                absl::StrCat("A local value may nest at most ", kMaxValueDepth,
                             " levels of lists and objects."));
  }
  local.value = std::move(value);
  local.state = Local::State::kDone;
  out = &local.value;
  return true;
}

bool Evaluator::EvalTraversal(const Expr& e, Json& out) {
  if (IsRuntimeReference(e) && IsUnresolvedReference(e)) {
    return EvalBareRuntime(e, out);
  }
  Json storage;
  const Json* value = nullptr;
  if (!Resolve(e, storage, value) || !ChargeCopy(e.range, *value)) {
    return false;
  }
  out = *value;
  return true;
}

// Points `value` at what `e` denotes without copying the containers on the way
// (`var.x` must not copy every variable); `storage` holds a computed base.
bool Evaluator::Resolve(const Expr& e, Json& storage, const Json*& value) {
  if (e.kind == ExprKind::kVariable) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto found = it->find(e.name); found != it->end()) {
        value = &found->second;
        return true;
      }
    }
    if (auto found = root_scope_.find(e.name); found != root_scope_.end()) {
      value = &*found;
      return true;
    }
    if (e.name == "var") {
      value = &variables_;
      return true;
    }
  }
  if (e.kind != ExprKind::kGetAttr && e.kind != ExprKind::kIndex) {
    if (!Eval(e, storage)) {
      return false;
    }
    value = &storage;
    return true;
  }
  const Expr& base = *e.operands[0];
  const bool plain_root = base.kind == ExprKind::kVariable && !InScope(base.name);
  // local.NAME is resolved lazily rather than by building an object of all locals.
  if (e.kind == ExprKind::kGetAttr && plain_root && base.name == "local") {
    return ResolveLocal(e.name, e.range, value);
  }
  if (e.kind == ExprKind::kGetAttr && plain_root && base.name == "var" &&
      !variables_.contains(e.name)) {
    return Fail(
        e.range, "Reference to undeclared input variable",
        absl::StrCat("An input variable with the name \"", e.name, "\" has not been declared."));
  }
  const Json* container = nullptr;
  if (!Resolve(base, storage, container)) {
    return false;
  }
  Json key;
  if (e.kind == ExprKind::kGetAttr) {
    key = e.name;
  } else if (!Eval(*e.operands[1], key)) {
    return false;
  }
  if (container->is_null()) {
    return Fail(e.range, "Attempt to index a null value",
                "This value is null, so it does not have any attributes or elements.");
  }
  if (container->is_object()) {
    std::string name;
    if (!ToHclString(key, name)) {
      return Fail(e.range, "Invalid index", "An object can only be indexed by a string.");
    }
    auto it = container->find(name);
    if (it == container->end()) {
      return Fail(e.range, "Unsupported attribute",
                  absl::StrCat("This object does not have an attribute named \"", name, "\"."));
    }
    value = &*it;
    return true;
  }
  if (container->is_array()) {
    Json number;
    if (!ToHclNumber(key, number) || !number.is_number_integer()) {
      return Fail(e.range, "Invalid index", "A list can only be indexed by a whole number.");
    }
    const int64_t i = number.get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= container->size()) {
      return Fail(e.range, "Invalid index",
                  absl::StrCat("The given key does not identify an element in this collection "
                               "value: index ",
                               i, " is out of range for a list of ", container->size(), "."));
    }
    value = &(*container)[static_cast<size_t>(i)];
    return true;
  }
  return Fail(
      e.range, "Unsupported attribute",
      absl::StrCat("Can't access attributes or elements of a ", TypeName(*container), " value."));
}

bool Evaluator::EvalSplat(const Expr& e, Json& out) {
  Json source;
  if (!Eval(*e.operands[0], source)) {
    return false;
  }
  if (source.is_null()) {
    out = Json::array();
    return true;
  }
  if (!source.is_array()) {
    source = Json::array({source});
  }
  out = Json::array();
  for (const Json& item : source) {
    splat_items_.push_back(&item);
    Json v;
    const bool ok = Eval(*e.operands[1], v);
    splat_items_.pop_back();
    if (!ok) {
      return false;
    }
    out.push_back(std::move(v));
  }
  return true;
}

bool Evaluator::EvalUnary(const Expr& e, Json& out) {
  Json v;
  if (!Eval(*e.operands[0], v)) {
    return false;
  }
  if (e.name == "!") {
    bool b = false;
    if (!ToHclBool(v, b)) {
      return Fail(e.range, "Invalid operand",
                  absl::StrCat("Unsuitable value for unary operand: bool required, got ",
                               TypeName(v), "."));
    }
    out = !b;
    return true;
  }
  Json n;
  if (!ToHclNumber(v, n)) {
    return Fail(e.range, "Invalid operand",
                absl::StrCat("Unsuitable value for unary operand: number required, got ",
                             TypeName(v), "."));
  }
  if (n.is_number_integer() && n.get<int64_t>() != std::numeric_limits<int64_t>::min()) {
    out = -n.get<int64_t>();
  } else {
    out = -n.get<double>();
  }
  return true;
}

bool Evaluator::EvalBinary(const Expr& e, Json& out) {
  const std::string& op = e.name;
  Json lhs;
  if (!Eval(*e.operands[0], lhs)) {
    return false;
  }
  if (op == "&&" || op == "||") {
    bool a = false;
    if (!ToHclBool(lhs, a)) {
      return Fail(e.operands[0]->range, "Invalid operand",
                  absl::StrCat("Unsuitable value for left operand: bool required, got ",
                               TypeName(lhs), "."));
    }
    if ((op == "&&" && !a) || (op == "||" && a)) {
      out = a;
      return true;
    }
    Json rhs;
    bool b = false;
    if (!Eval(*e.operands[1], rhs)) {
      return false;
    }
    if (!ToHclBool(rhs, b)) {
      return Fail(e.operands[1]->range, "Invalid operand",
                  absl::StrCat("Unsuitable value for right operand: bool required, got ",
                               TypeName(rhs), "."));
    }
    out = b;
    return true;
  }
  Json rhs;
  if (!Eval(*e.operands[1], rhs)) {
    return false;
  }
  if (op == "==" || op == "!=") {
    out = (lhs == rhs) == (op == "==");
    return true;
  }
  Json a;
  Json b;
  if (!ToHclNumber(lhs, a)) {
    return Fail(e.operands[0]->range, "Invalid operand",
                absl::StrCat("Unsuitable value for left operand: number required, got ",
                             TypeName(lhs), "."));
  }
  if (!ToHclNumber(rhs, b)) {
    return Fail(e.operands[1]->range, "Invalid operand",
                absl::StrCat("Unsuitable value for right operand: number required, got ",
                             TypeName(rhs), "."));
  }
  const double x = a.get<double>();
  const double y = b.get<double>();
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    out = op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y;
    return true;
  }
  const bool ints = a.is_number_integer() && b.is_number_integer();
  if ((op == "/" || op == "%") && y == 0) {
    return Fail(e.range, "Operation failed", "Error during operation: can't divide by zero.");
  }
  if (ints) {
    const int64_t i = a.get<int64_t>();
    const int64_t j = b.get<int64_t>();
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(i, j, &r);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(i, j, &r);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(i, j, &r);
    } else if (op == "%") {
      overflow = j == -1;
      r = overflow ? 0 : i % j;
    } else if (i % j == 0 && !(j == -1 && i == std::numeric_limits<int64_t>::min())) {
      r = i / j;
    } else {
      overflow = true;  // an inexact quotient is a float
    }
    if (!overflow) {
      out = r;
      return true;
    }
  }
  double r = 0;
  if (op == "+") {
    r = x + y;
  } else if (op == "-") {
    r = x - y;
  } else if (op == "*") {
    r = x * y;
  } else if (op == "/") {
    r = x / y;
  } else {
    r = std::fmod(x, y);
  }
  if (!std::isfinite(r)) {
    return Fail(e.range, "Operation failed", "The result is not a finite number.");
  }
  out = r;
  return true;
}

bool Evaluator::EvalFor(const Expr& e, Json& out) {
  const ForClause& f = *e.for_clause;
  Json collection;
  if (!Eval(*f.collection, collection)) {
    return false;
  }
  if (!collection.is_array() && !collection.is_object()) {
    return Fail(f.collection->range, "Iteration over non-iterable value",
                absl::StrCat("A value of type ", TypeName(collection),
                             " cannot be used as the collection in a 'for' expression."));
  }
  out = f.object ? Json::object() : Json::array();
  size_t index = 0;
  for (auto it = collection.begin(); it != collection.end(); ++it, ++index) {
    std::map<std::string, Json> scope;
    if (!f.key_var.empty()) {
      scope[f.key_var] = collection.is_array() ? Json(index) : Json(it.key());
    }
    if (!ChargeCopy(f.collection->range, *it)) {
      return false;
    }
    scope[f.value_var] = *it;
    scopes_.push_back(std::move(scope));
    bool ok = true;
    bool include = true;
    if (f.condition) {
      Json cond;
      ok = Eval(*f.condition, cond);
      if (ok && !ToHclBool(cond, include)) {
        ok = Fail(f.condition->range, "Invalid 'for' condition",
                  "The 'if' clause value must be a bool.");
      }
    }
    if (ok && include) {
      Json value;
      ok = Eval(*f.value, value);
      if (ok && f.object) {
        Json key;
        std::string name;
        ok = Eval(*f.key, key);
        if (ok && !ToHclString(key, name)) {
          ok = Fail(f.key->range, "Invalid object key", "Key expression result must be a string.");
        }
        if (ok && f.group) {
          if (!out.contains(name)) {
            out[name] = Json::array();
          }
          out[name].push_back(std::move(value));
        } else if (ok && out.contains(name)) {
          ok = Fail(f.key->range, "Duplicate object key",
                    absl::StrCat("Two different items produced the key \"", name,
                                 "\" in this 'for' expression. Use the ellipsis (...) after the "
                                 "value expression to group values by key."));
        } else if (ok) {
          out[name] = std::move(value);
        }
      } else if (ok) {
        out.push_back(std::move(value));
      }
    }
    scopes_.pop_back();
    if (!ok) {
      return false;
    }
  }
  return CheckProduced(e.range, out);
}

bool Evaluator::EvalCall(const Expr& e, Json& out) {
  std::vector<Json> args;
  for (size_t i = 0; i < e.operands.size(); ++i) {
    Json v;
    if (!Eval(*e.operands[i], v)) {
      return false;
    }
    if (e.expand_final && i + 1 == e.operands.size()) {
      if (!v.is_array()) {
        return Fail(e.operands[i]->range, "Invalid expanding argument value",
                    "The expanding argument (indicated by ...) must be of a tuple or list type.");
      }
      for (Json& item : v) {
        args.push_back(std::move(item));
      }
    } else {
      args.push_back(std::move(v));
    }
  }
  absl::StatusOr<Json> result = CallFunction(*this, e.name, args);
  if (!result.ok()) {
    const auto& message = result.status().message();
    if (result.status().code() == absl::StatusCode::kNotFound) {
      return Fail(e.range, "Call to unknown function",
                  absl::StrCat("There is no function named \"", e.name, "\"."));
    }
    if (result.status().code() == absl::StatusCode::kFailedPrecondition) {
      // Already a positioned diagnostic (templatefile()'s own template).
      if (status_.ok()) {
        status_ = absl::InvalidArgumentError(message);
      }
      return false;
    }
    return Fail(e.range, "Error in function call",
                absl::StrCat("Call to function \"", e.name, "\" failed: ", message, "."));
  }
  out = std::move(*result);
  return CheckProduced(e.range, out);
}

}  // namespace drover::jobspec
