#include "jobspec/decode.h"

#include <charconv>
#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

#include "common/go_duration.h"
#include "jobspec/diag.h"

namespace drover::jobspec {

namespace {

const FieldSpec* FindField(const BlockSpec& spec, const std::string& name) {
  for (const FieldSpec& f : spec.fields) {
    if (f.hcl == name) {
      return &f;
    }
  }
  return nullptr;
}

bool IsBlockType(FieldType t) {
  return t == FieldType::kBlock || t == FieldType::kBlockList || t == FieldType::kLabeledList ||
         t == FieldType::kLabeledMap;
}

// Types that may be written as an attribute or, being maps, as a block.
bool AllowsBlockForm(FieldType t) {
  return t == FieldType::kStringMap || t == FieldType::kAny;
}

absl::string_view TypeWord(FieldType t) {
  switch (t) {
    case FieldType::kString:
    case FieldType::kDuration:
      return "string";
    case FieldType::kInt:
    case FieldType::kNumber:
      return "number";
    case FieldType::kBool:
      return "bool";
    case FieldType::kSizeMB:
      return "number or size string";
    case FieldType::kStringList:
      return "list of string";
    case FieldType::kStringMap:
      return "map of string";
    default:
      return "value";
  }
}

}  // namespace

Body BodyFromJson(const Json& json, const BlockSpec& spec) {
  Body body;
  if (!json.is_object()) {
    return body;
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const FieldSpec* field = FindField(spec, it.key());
    if (field != nullptr && IsBlockType(field->type) && field->block != nullptr) {
      const bool labeled =
          field->type == FieldType::kLabeledList || field->type == FieldType::kLabeledMap;
      auto add = [&](const Json& value, const std::string* label) {
        Block block;
        block.type = it.key();
        if (label != nullptr) {
          block.labels.push_back(*label);
          block.label_ranges.emplace_back();
        }
        block.body = BodyFromJson(value, *field->block);
        body.blocks.push_back(std::move(block));
      };
      const Json& value = it.value();
      if (labeled && value.is_object()) {
        for (auto l = value.begin(); l != value.end(); ++l) {
          const std::string label = l.key();
          if (l->is_array()) {
            for (const Json& item : *l) {
              add(item, &label);
            }
          } else {
            add(*l, &label);
          }
        }
      } else if (value.is_array()) {
        for (const Json& item : value) {
          add(item, nullptr);
        }
      } else {
        add(value, nullptr);
      }
      continue;
    }
    Attribute attr;
    attr.name = it.key();
    attr.expr = std::make_unique<Expr>();
    attr.expr->kind = ExprKind::kLiteral;
    attr.expr->literal = it.value();
    body.attributes.push_back(std::move(attr));
  }
  return body;
}

bool ParseByteSize(absl::string_view text, uint64_t& bytes) {
  text = absl::StripAsciiWhitespace(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  double number = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (i == 0 || ec != std::errc() || p != text.data() + i) {
    return false;
  }
  const std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text.substr(i)));
  static const std::map<std::string, double>* units = new std::map<std::string, double>{
      {"", 1},
      {"b", 1},
      {"k", 1024.0},
      {"kb", 1024.0},
      {"kib", 1024.0},
      {"m", 1048576.0},
      {"mb", 1048576.0},
      {"mib", 1048576.0},
      {"g", 1073741824.0},
      {"gb", 1073741824.0},
      {"gib", 1073741824.0},
      {"t", 1099511627776.0},
      {"tb", 1099511627776.0},
      {"tib", 1099511627776.0},
  };
  auto it = units->find(unit);
  if (it == units->end()) {
    return false;
  }
  const double value = number * it->second;
  if (!std::isfinite(value) || value >= 1.8e19) {
    return false;
  }
  bytes = static_cast<uint64_t>(std::ceil(value));
  return true;
}

absl::Status Decoder::Convert(const Json& value, FieldType type, const Range& range,
                              absl::string_view what, Json& out) const {
  auto unsuitable = [&](absl::string_view detail = {}) {
    return Error(range, "Incorrect attribute value type",
                 detail.empty()
                     ? absl::StrCat("Inappropriate value for attribute \"", what,
                                    "\": ", TypeWord(type), " required, got ", TypeName(value), ".")
                     : absl::StrCat("Inappropriate value for attribute \"", what, "\": ", detail));
  };
  switch (type) {
    case FieldType::kString: {
      std::string s;
      if (!ToHclString(value, s)) {
        return unsuitable();
      }
      out = std::move(s);
      return absl::OkStatus();
    }
    case FieldType::kInt:
    case FieldType::kNumber: {
      Json n;
      if (!ToHclNumber(value, n)) {
        return unsuitable();
      }
      if (type == FieldType::kInt && !n.is_number_integer()) {
        const double d = n.get<double>();
        if (d != std::floor(d) || std::fabs(d) > 9e15) {
          return unsuitable("a whole number is required.");
        }
        n = static_cast<int64_t>(d);
      }
      out = std::move(n);
      return absl::OkStatus();
    }
    case FieldType::kBool: {
      bool b = false;
      if (!ToHclBool(value, b)) {
        return unsuitable();
      }
      out = b;
      return absl::OkStatus();
    }
    case FieldType::kDuration: {
      if (value.is_number()) {  // nanoseconds, as Nomad accepts
        return Convert(value, FieldType::kInt, range, what, out);
      }
      if (!value.is_string()) {
        return unsuitable();
      }
      absl::StatusOr<common::Duration> d = common::ParseGoDuration(value.get<std::string>());
      if (!d.ok()) {
        return unsuitable(absl::StrCat("\"", value.get<std::string>(),
                                       "\" is not a duration (like \"30s\" or \"1h30m\")."));
      }
      out = static_cast<int64_t>(d->count());
      return absl::OkStatus();
    }
    case FieldType::kSizeMB: {
      Json number;
      if (value.is_number() || (value.is_string() && ToHclNumber(value, number))) {
        return Convert(value, FieldType::kInt, range, what, out);  // "512" is 512 MB
      }
      uint64_t bytes = 0;
      if (!value.is_string() || !ParseByteSize(value.get<std::string>(), bytes)) {
        return unsuitable(
            "a number of megabytes or a size with a unit (like \"512MB\" or \"2GiB\") is "
            "required.");
      }
      constexpr uint64_t kMiB = 1 << 20;
      out = static_cast<int64_t>((bytes + kMiB - 1) / kMiB);
      return absl::OkStatus();
    }
    case FieldType::kStringList: {
      if (!value.is_array()) {
        return unsuitable();
      }
      out = Json::array();
      for (const Json& item : value) {
        std::string s;
        if (!ToHclString(item, s)) {
          return unsuitable(
              absl::StrCat("list of string required, but an element is ", TypeName(item), "."));
        }
        out.push_back(std::move(s));
      }
      return absl::OkStatus();
    }
    case FieldType::kStringMap: {
      if (!value.is_object()) {
        return unsuitable();
      }
      out = Json::object();
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string s;
        if (!ToHclString(it.value(), s)) {
          return unsuitable(absl::StrCat("map of string required, but element \"", it.key(),
                                         "\" is ", TypeName(it.value()), "."));
        }
        out[it.key()] = std::move(s);
      }
      return absl::OkStatus();
    }
    default:
      out = value;
      return absl::OkStatus();
  }
}

absl::Status Decoder::DecodeAttribute(const Attribute& attr, const FieldSpec& field, Json& out) {
  absl::StatusOr<Json> value = evaluator_.Evaluate(*attr.expr);
  if (!value.ok()) {
    return value.status();
  }
  if (value->is_null()) {
    return absl::OkStatus();  // null means "not set", as in HCL
  }
  Json converted;
  if (absl::Status s = Convert(*value, field.type, attr.expr->range, attr.name, converted);
      !s.ok()) {
    return s;
  }
  out[std::string(field.json)] = std::move(converted);
  return absl::OkStatus();
}

absl::Status Decoder::DecodeFreeBody(const Body& body, Json& out) {
  out = Json::object();
  for (const Attribute& attr : body.attributes) {
    absl::StatusOr<Json> value = evaluator_.Evaluate(*attr.expr);
    if (!value.ok()) {
      return value.status();
    }
    out[attr.name] = std::move(*value);
  }
  return ForEachBlock(body, [&](const BlockView& block) -> absl::Status {
    if (out.contains(block.type) && !out[block.type].is_array()) {
      return Error(block.type_range, "Duplicate argument",
                   absl::StrCat("\"", block.type, "\" is set both as an argument and as a block."));
    }
    Json item;
    if (absl::Status s = DecodeFreeBody(*block.body, item); !s.ok()) {
      return s;
    }
    // Labels nest as in HCL's JSON form: `mount "a" { ... }` → {"mount": [{"a": {...}}]}.
    for (auto it = block.labels.rbegin(); it != block.labels.rend(); ++it) {
      item = Json{{*it, std::move(item)}};
    }
    out[block.type].push_back(std::move(item));
    return absl::OkStatus();
  });
}

absl::Status Decoder::ForEachBlock(const Body& body,
                                   const std::function<absl::Status(const BlockView&)>& visit) {
  for (const Block& block : body.blocks) {
    if (block.type == "dynamic") {
      if (absl::Status s = ExpandDynamic(block, visit); !s.ok()) {
        return s;
      }
      continue;
    }
    const BlockView view{block.type,  block.type_range, block.labels, block.label_ranges,
                         &block.body, block.range,      &block};
    if (absl::Status s = visit(view); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Decoder::ExpandDynamic(const Block& dynamic,
                                    const std::function<absl::Status(const BlockView&)>& visit) {
  if (dynamic.labels.size() != 1) {
    return Error(
        dynamic.labels.empty() ? dynamic.type_range : dynamic.label_ranges[1],
        dynamic.labels.empty() ? "Missing name for dynamic" : "Extraneous label for dynamic",
        "A dynamic block has one label: the type of the blocks it generates.");
  }
  const Attribute* for_each = nullptr;
  const Attribute* labels = nullptr;
  std::string iterator = dynamic.labels[0];
  for (const Attribute& attr : dynamic.body.attributes) {
    if (attr.name == "for_each") {
      for_each = &attr;
    } else if (attr.name == "labels") {
      labels = &attr;
    } else if (attr.name == "iterator") {
      if (attr.expr->kind != ExprKind::kVariable) {
        return Error(attr.expr->range, "Invalid dynamic iterator name",
                     "The iterator must be a single name, like iterator = port.");
      }
      iterator = attr.expr->name;
    } else {
      return Error(attr.name_range, "Unsupported argument",
                   absl::StrCat("An argument named \"", attr.name, "\" is not expected here."));
    }
  }
  const Block* content = nullptr;
  for (const Block& child : dynamic.body.blocks) {
    if (child.type != "content" || !child.labels.empty() || content != nullptr) {
      return Error(child.type_range, "Unsupported block type",
                   "A dynamic block holds exactly one content block, without labels.");
    }
    content = &child;
  }
  if (for_each == nullptr || content == nullptr) {
    return Error(dynamic.type_range, "Incomplete dynamic block",
                 "A dynamic block needs a for_each argument and a content block.");
  }
  absl::StatusOr<Json> collection = evaluator_.Evaluate(*for_each->expr);
  if (!collection.ok()) {
    return collection.status();
  }
  if (!collection->is_array() && !collection->is_object()) {
    return Error(for_each->expr->range, "Invalid dynamic for_each value",
                 absl::StrCat("Cannot use a ", TypeName(*collection),
                              " value in for_each. An iterable collection is required."));
  }
  size_t index = 0;
  for (auto it = collection->begin(); it != collection->end(); ++it, ++index) {
    const Json key = collection->is_array() ? Json(index) : Json(it.key());
    evaluator_.PushScope({{iterator, Json{{"key", key}, {"value", *it}}}});
    BlockView view{dynamic.labels[0], dynamic.label_ranges[0], {},     {},
                   &content->body,    content->range,          content};
    absl::Status status;
    if (labels != nullptr) {
      absl::StatusOr<Json> values = evaluator_.Evaluate(*labels->expr);
      if (!values.ok()) {
        status = values.status();
      } else if (!values->is_array()) {
        status = Error(labels->expr->range, "Invalid dynamic labels",
                       "The labels argument must be a list of strings.");
      } else {
        for (const Json& label : *values) {
          std::string text;
          if (!ToHclString(label, text)) {
            status = Error(labels->expr->range, "Invalid dynamic labels",
                           "The labels argument must be a list of strings.");
            break;
          }
          view.labels.push_back(std::move(text));
          view.label_ranges.push_back(labels->expr->range);
        }
      }
    }
    if (status.ok()) {
      status = visit(view);
    }
    evaluator_.PopScope();
    if (!status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeBlock(const BlockView& block, const FieldSpec& field, Json& out,
                                  std::set<std::pair<std::string, std::string>>& labels) {
  const std::string key(field.json);
  const bool labeled =
      field.type == FieldType::kLabeledList || field.type == FieldType::kLabeledMap;
  const size_t want = labeled ? 1 : 0;
  if (block.labels.size() < want) {
    return Error(block.type_range, absl::StrCat("Missing name for ", block.type),
                 absl::StrCat("All ", block.type, " blocks must have 1 labels (name)."));
  }
  if (block.labels.size() > want) {
    return Error(
        block.label_ranges[want], absl::StrCat("Extraneous label for ", block.type),
        want == 0 ? absl::StrCat("No labels are expected for ", block.type, " blocks.")
                  : absl::StrCat("Only 1 labels (name) are expected for ", block.type, " blocks."));
  }
  if (AllowsBlockForm(field.type)) {
    if (out.contains(key)) {
      return Error(block.type_range, absl::StrCat("Duplicate ", block.type, " block"),
                   absl::StrCat("Only one ", block.type, " block (or argument) is allowed."));
    }
    Json value;
    if (absl::Status s = DecodeFreeBody(*block.body, value); !s.ok()) {
      return s;
    }
    if (field.type == FieldType::kStringMap) {
      Json converted;
      if (absl::Status s = Convert(value, field.type, block.range, block.type, converted);
          !s.ok()) {
        return s;
      }
      value = std::move(converted);
    }
    out[key] = std::move(value);
    return absl::OkStatus();
  }
  Json item = Json::object();
  if (labeled) {
    item[std::string(field.label_field)] = block.labels[0];
  }
  if (absl::Status s = DecodeBody(*block.body, *field.block, block.source, item); !s.ok()) {
    return s;
  }
  switch (field.type) {
    case FieldType::kBlock:
      if (out.contains(key)) {
        return Error(block.type_range, absl::StrCat("Duplicate ", block.type, " block"),
                     absl::StrCat("Only one ", block.type, " block is allowed here."));
      }
      out[key] = std::move(item);
      break;
    case FieldType::kBlockList:
    case FieldType::kLabeledList:
      if (field.type == FieldType::kLabeledList &&
          !labels.emplace(block.type, block.labels[0]).second) {
        return Error(block.label_ranges[0],
                     absl::StrCat("Duplicate ", block.type, " \"", block.labels[0], "\""),
                     absl::StrCat("Each ", block.type, " must have a unique name."));
      }
      out[key].push_back(std::move(item));
      break;
    case FieldType::kLabeledMap:
      if (out.contains(key) && out[key].contains(block.labels[0])) {
        return Error(block.label_ranges[0],
                     absl::StrCat("Duplicate ", block.type, " \"", block.labels[0], "\""),
                     absl::StrCat("Each ", block.type, " must have a unique name."));
      }
      out[key][block.labels[0]] = std::move(item);
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeBody(const Body& body, const BlockSpec& spec, const Block* block,
                                 Json& out) {
  if (!out.is_object()) {
    out = Json::object();
  }
  for (const Attribute& attr : body.attributes) {
    const FieldSpec* field = FindField(spec, attr.name);
    if (field == nullptr || IsBlockType(field->type)) {
      return Error(attr.name_range, "Unsupported argument",
                   field == nullptr
                       ? absl::StrCat("An argument named \"", attr.name, "\" is not expected here.")
                       : absl::StrCat("An argument named \"", attr.name,
                                      "\" is not expected here. Did you mean to define a block "
                                      "of type \"",
                                      attr.name, "\"?"));
    }
    if (absl::Status s = DecodeAttribute(attr, *field, out); !s.ok()) {
      return s;
    }
  }
  std::set<std::pair<std::string, std::string>> labels;
  absl::Status blocks = ForEachBlock(body, [&](const BlockView& child) -> absl::Status {
    const FieldSpec* field = FindField(spec, child.type);
    if (field == nullptr || (!IsBlockType(field->type) && !AllowsBlockForm(field->type))) {
      return Error(
          child.type_range, "Unsupported block type",
          field == nullptr
              ? absl::StrCat("Blocks of type \"", child.type, "\" are not expected here.")
              : absl::StrCat("Blocks of type \"", child.type,
                             "\" are not expected here. Did you mean to define argument "
                             "\"",
                             child.type, "\"? If so, use the equals sign to assign it a value."));
    }
    return DecodeBlock(child, *field, out, labels);
  });
  if (!blocks.ok()) {
    return blocks;
  }
  if (spec.fixup != nullptr) {
    return spec.fixup(*this, block, out);
  }
  return absl::OkStatus();
}

}  // namespace drover::jobspec
