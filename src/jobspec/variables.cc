#include "jobspec/variables.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"

#include "jobspec/diag.h"
#include "jobspec/parser.h"

namespace drover::jobspec {

namespace {

bool IsComplex(const Json& type) {
  return type.is_object();
}

std::string TypeString(const Json& type) {
  if (type.is_string()) {
    return type.get<std::string>();
  }
  const std::string kind = type.begin().key();
  const Json& inner = type.begin().value();
  if (kind == "object" || kind == "tuple") {
    return kind;
  }
  return absl::StrCat(kind, "(", TypeString(inner), ")");
}

// Parses a type constraint expression: string, number, bool, any, list(T), set(T),
// map(T), object({name = T}), tuple([T, ...]).
absl::StatusOr<Json> ParseType(const Evaluator& ev, const Expr& e) {
  auto bad = [&]() {
    return ev.Error(e.range, "Invalid type specification",
                    "A type is string, number, bool, any, list(T), set(T), map(T), "
                    "object({...}) or tuple([...]).");
  };
  if (e.kind == ExprKind::kVariable) {
    if (e.name == "string" || e.name == "number" || e.name == "bool" || e.name == "any") {
      return Json(e.name);
    }
    return bad();
  }
  if (e.kind != ExprKind::kCall || e.operands.size() != 1) {
    return bad();
  }
  const Expr& arg = *e.operands[0];
  if (e.name == "list" || e.name == "set" || e.name == "map") {
    absl::StatusOr<Json> inner = ParseType(ev, arg);
    if (!inner.ok()) {
      return inner.status();
    }
    return Json{{e.name, *inner}};
  }
  if (e.name == "object" && arg.kind == ExprKind::kObject) {
    Json fields = Json::object();
    for (const ObjectItem& item : arg.items) {
      if (item.key->kind != ExprKind::kLiteral || !item.key->literal.is_string()) {
        return bad();
      }
      absl::StatusOr<Json> inner = ParseType(ev, *item.value);
      if (!inner.ok()) {
        return inner.status();
      }
      fields[item.key->literal.get<std::string>()] = *inner;
    }
    return Json{{"object", fields}};
  }
  if (e.name == "tuple" && arg.kind == ExprKind::kTuple) {
    Json items = Json::array();
    for (const ExprPtr& item : arg.operands) {
      absl::StatusOr<Json> inner = ParseType(ev, *item);
      if (!inner.ok()) {
        return inner.status();
      }
      items.push_back(*inner);
    }
    return Json{{"tuple", items}};
  }
  return bad();
}

// Converts `value` to `type`; the error text names `path` ("var.ports[0]").
absl::StatusOr<Json> ConvertTo(const Json& value, const Json& type, const std::string& path) {
  auto bad = [&](absl::string_view want) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", want, " required, got ", TypeName(value)));
  };
  if (value.is_null() || type == "any") {
    return value;
  }
  if (type == "string") {
    std::string s;
    if (!ToHclString(value, s)) {
      return bad("string");
    }
    return Json(s);
  }
  if (type == "number") {
    Json n;
    if (!ToHclNumber(value, n)) {
      return bad("number");
    }
    return n;
  }
  if (type == "bool") {
    bool b = false;
    if (!ToHclBool(value, b)) {
      return bad("bool");
    }
    return Json(b);
  }
  const std::string kind = type.begin().key();
  const Json& inner = type.begin().value();
  if (kind == "list" || kind == "set" || kind == "tuple") {
    if (!value.is_array()) {
      return bad(kind);
    }
    if (kind == "tuple" && value.size() != inner.size()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a tuple of ", inner.size(),
                                                     " elements required, got ", value.size()));
    }
    Json out = Json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      absl::StatusOr<Json> item =
          ConvertTo(value[i], kind == "tuple" ? inner[i] : inner, absl::StrCat(path, "[", i, "]"));
      if (!item.ok()) {
        return item.status();
      }
      out.push_back(std::move(*item));
    }
    if (kind == "set") {  // sorted and without duplicates, in O(n log n)
      std::set<Json> unique(out.begin(), out.end());
      out = Json(Json::array_t(unique.begin(), unique.end()));
    }
    return out;
  }
  if (!value.is_object()) {
    return bad(kind);
  }
  Json out = Json::object();
  if (kind == "map") {
    for (auto it = value.begin(); it != value.end(); ++it) {
      absl::StatusOr<Json> item = ConvertTo(it.value(), inner, absl::StrCat(path, ".", it.key()));
      if (!item.ok()) {
        return item.status();
      }
      out[it.key()] = std::move(*item);
    }
    return out;
  }
  for (auto it = inner.begin(); it != inner.end(); ++it) {
    if (!value.contains(it.key())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": attribute \"", it.key(), "\" is required"));
    }
    absl::StatusOr<Json> item =
        ConvertTo(value[it.key()], it.value(), absl::StrCat(path, ".", it.key()));
    if (!item.ok()) {
      return item.status();
    }
    out[it.key()] = std::move(*item);
  }
  return out;
}

struct Declared {
  const Block* block = nullptr;  // null for `variables { }` entries
  Range range;
  Json type = "any";
  Json value;
  bool has_value = false;
  const Block* validation = nullptr;
};

absl::Status DeclareBlock(Evaluator& ev, const Block& block, std::map<std::string, Declared>& out) {
  const std::string& name = block.labels[0];
  if (out.contains(name)) {
    return ev.Error(block.label_ranges[0], "Duplicate variable declaration",
                    absl::StrCat("A variable named \"", name, "\" was already declared."));
  }
  Declared d;
  d.block = &block;
  d.range = block.label_ranges[0];
  for (const Attribute& attr : block.body.attributes) {
    if (attr.name == "type") {
      absl::StatusOr<Json> type = ParseType(ev, *attr.expr);
      if (!type.ok()) {
        return type.status();
      }
      d.type = *type;
    } else if (attr.name == "default") {
      absl::StatusOr<Json> value = ev.Evaluate(*attr.expr);
      if (!value.ok()) {
        return value.status();
      }
      d.value = *value;
      d.has_value = true;
    } else if (attr.name != "description" && attr.name != "sensitive" && attr.name != "nullable") {
      return ev.Error(attr.name_range, "Unsupported argument",
                      absl::StrCat("An argument named \"", attr.name, "\" is not expected here."));
    }
  }
  for (const Block& child : block.body.blocks) {
    if (child.type != "validation" || d.validation != nullptr) {
      return ev.Error(child.type_range, "Unsupported block type",
                      absl::StrCat("Blocks of type \"", child.type, "\" are not expected here."));
    }
    d.validation = &child;
  }
  if (d.has_value) {
    absl::StatusOr<Json> converted = ConvertTo(d.value, d.type, absl::StrCat("var.", name));
    if (!converted.ok()) {
      return ev.Error(d.range, "Invalid default value for variable", converted.status().message());
    }
    d.value = *converted;
  }
  out[name] = std::move(d);
  return absl::OkStatus();
}

absl::Status CheckValidation(Evaluator& ev, const std::string& name, const Declared& d) {
  const Attribute* condition = d.validation->body.FindAttribute("condition");
  const Attribute* message = d.validation->body.FindAttribute("error_message");
  if (condition == nullptr || message == nullptr) {
    return ev.Error(d.validation->type_range, "Incomplete validation block",
                    "A validation block needs both \"condition\" and \"error_message\".");
  }
  Evaluator scoped(ev.file(), ev.options());
  scoped.ShareBudget(ev);
  scoped.SetVariables(Json{{name, d.value}});
  absl::StatusOr<Json> ok = scoped.Evaluate(*condition->expr);
  if (!ok.ok()) {
    return ok.status();
  }
  bool passed = false;
  if (!ToHclBool(*ok, passed)) {
    return ev.Error(condition->expr->range, "Invalid validation result",
                    "The condition must be a bool.");
  }
  if (passed) {
    return absl::OkStatus();
  }
  absl::StatusOr<Json> text = scoped.Evaluate(*message->expr);
  std::string detail = "the value does not pass validation";
  if (text.ok()) {
    ToHclString(*text, detail);
  }
  return ev.Error(d.range, "Invalid value for variable", detail);
}

// Values from a var file (HCL attributes, or a JSON object).
absl::StatusOr<std::map<std::string, std::pair<Json, Range>>> ReadVarFile(
    Evaluator& parent, const std::string& name, const std::string& content) {
  std::map<std::string, std::pair<Json, Range>> values;
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && content[first] == '{') {
    if (content.size() > kMaxSourceBytes) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": file is ", content.size(),
                                                     " bytes; the limit is ", kMaxSourceBytes));
    }
    if (JsonTextDeeperThan(content, kMaxValueDepth)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": values nest more than ", kMaxValueDepth, " levels deep"));
    }
    Json j = Json::parse(content, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": not a valid JSON object"));
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      values[it.key()] = {it.value(), Range{}};
    }
    return values;
  }
  absl::StatusOr<File> file = ParseFile(name, content);
  if (!file.ok()) {
    return file.status();
  }
  Evaluator ev(name, EvalOptions{.max_work = parent.options().max_work});
  ev.ShareBudget(parent);
  if (!file->body.blocks.empty()) {
    return ev.Error(file->body.blocks[0].type_range, "Unexpected block in variable file",
                    "A variable file holds only assignments, like name = value.");
  }
  for (const Attribute& attr : file->body.attributes) {
    absl::StatusOr<Json> v = ev.Evaluate(*attr.expr);
    if (!v.ok()) {
      return v.status();
    }
    values[attr.name] = {*v, attr.name_range};
  }
  return values;
}

// Applies one "name=value" (from -var or NOMAD_VAR_name; `source` names it in messages).
absl::Status Assign(Evaluator& parent, std::map<std::string, Declared>& declared,
                    const std::string& assignment, absl::string_view source) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", source, "\"", assignment, "\": expected NAME=VALUE"));
  }
  const std::string name = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  auto it = declared.find(name);
  if (it == declared.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Undefined -var variable; A \"", name,
        "\" variable was passed in but was not found in known variables. To declare variable "
        "\"",
        name, "\", place this block in your job file: variable \"", name, "\" { type = string }"));
  }
  Json raw = text;
  if (IsComplex(it->second.type)) {
    const std::string source_name = absl::StrCat("<value for var.", name, ">");
    absl::StatusOr<ExprPtr> expr = ParseExpression(source_name, text);
    if (!expr.ok()) {
      return expr.status();
    }
    Evaluator plain(source_name, EvalOptions{.max_work = parent.options().max_work});
    plain.ShareBudget(parent);
    absl::StatusOr<Json> v = plain.Evaluate(**expr);
    if (!v.ok()) {
      return v.status();
    }
    raw = *v;
  }
  absl::StatusOr<Json> converted = ConvertTo(raw, it->second.type, absl::StrCat("var.", name));
  if (!converted.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Invalid value for ", source, "\"", name,
                                                   "\": ", converted.status().message(), " (type ",
                                                   TypeString(it->second.type), ")"));
  }
  it->second.value = *converted;
  it->second.has_value = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Json> ResolveVariables(Evaluator& ev, const std::vector<const Block*>& blocks,
                                      const ParseOptions& options) {
  std::map<std::string, Declared> declared;
  for (const Block* block : blocks) {
    if (block->type == "variable") {
      if (absl::Status s = DeclareBlock(ev, *block, declared); !s.ok()) {
        return s;
      }
      continue;
    }
    // variables { name = default ... }
    for (const Attribute& attr : block->body.attributes) {
      if (declared.contains(attr.name)) {
        return ev.Error(attr.name_range, "Duplicate variable declaration",
                        absl::StrCat("A variable named \"", attr.name, "\" was already declared."));
      }
      absl::StatusOr<Json> value = ev.Evaluate(*attr.expr);
      if (!value.ok()) {
        return value.status();
      }
      Declared d;
      d.range = attr.name_range;
      d.value = *value;
      d.has_value = true;
      declared[attr.name] = std::move(d);
    }
    if (!block->body.blocks.empty()) {
      return ev.Error(block->body.blocks[0].type_range, "Unsupported block type",
                      "A variables block holds only assignments, like name = default.");
    }
  }

  // NOMAD_VAR_name values: raw strings like -var, for declared variables only.
  for (const std::string& assignment : options.var_environment) {
    const size_t eq = assignment.find('=');
    if (eq == std::string::npos || !declared.contains(assignment.substr(0, eq))) {
      continue;
    }
    if (absl::Status s = Assign(ev, declared, assignment, "NOMAD_VAR_"); !s.ok()) {
      return s;
    }
  }
  for (const auto& [file_name, content] : options.var_files) {
    absl::StatusOr<std::map<std::string, std::pair<Json, Range>>> values =
        ReadVarFile(ev, file_name, content);
    if (!values.ok()) {
      return values.status();
    }
    for (auto& [name, entry] : *values) {
      auto it = declared.find(name);
      if (it == declared.end()) {
        return DiagError(file_name, entry.second, "Undefined variable",
                         absl::StrCat("A \"", name,
                                      "\" variable was set but was not found in known variables. "
                                      "To declare variable \"",
                                      name, "\", place this block in your job file: variable \"",
                                      name, "\" { type = string }"));
      }
      absl::StatusOr<Json> converted =
          ConvertTo(entry.first, it->second.type, absl::StrCat("var.", name));
      if (!converted.ok()) {
        return DiagError(file_name, entry.second, "Invalid value for variable",
                         converted.status().message());
      }
      it->second.value = *converted;
      it->second.has_value = true;
    }
  }

  for (const std::string& assignment : options.var_assignments) {
    if (absl::Status s = Assign(ev, declared, assignment, "-var "); !s.ok()) {
      return s;
    }
  }

  Json variables = Json::object();
  for (const auto& [name, d] : declared) {
    if (!d.has_value) {
      return ev.Error(d.range, absl::StrCat("Unset variable \"", name, "\""),
                      "A used variable must be set or have a default value; see "
                      "https://developer.hashicorp.com/nomad/docs/job-specification/hcl2/"
                      "variables for details.");
    }
    if (d.validation != nullptr) {
      if (absl::Status s = CheckValidation(ev, name, d); !s.ok()) {
        return s;
      }
    }
    variables[name] = d.value;
  }
  return variables;
}

}  // namespace drover::jobspec
