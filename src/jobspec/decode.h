// Schema-driven decoding of an HCL body into JSON with the API's field names. A
// BlockSpec lists the attributes and blocks a body may hold; anything else is an error
// in HCL's words ("Unsupported argument; An argument named \"foo\" is not expected
// here.") naming file, line and column. Job files and agent configuration files share
// this machinery with their own schemas.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "jobspec/ast.h"
#include "jobspec/eval.h"

namespace drover::jobspec {

enum class FieldType {
  kString,  // string; numbers and bools converted as HCL does
  kInt,     // whole number
  kNumber,  // any number
  kBool,
  kDuration,     // Go duration string ("30s", "1h30m") → integer nanoseconds
  kSizeMB,       // whole megabytes, or a string with a unit ("512MB", "1GiB") → MB
  kStringList,   // list of strings
  kStringMap,    // `name = { k = v }` or a `name { k = v }` block; values become strings
  kAny,          // any value; as a block, attributes become members and nested blocks
                 // lists of objects (a task's driver `config`)
  kBlock,        // one block without labels, decoded by `block`
  kBlockList,    // repeated blocks without labels → list
  kLabeledList,  // repeated blocks with one label → list; the label goes in `label_field`
  kLabeledMap,   // repeated blocks with one label → object keyed by label (and label_field)
};

struct BlockSpec;

struct FieldSpec {
  absl::string_view hcl;
  absl::string_view json;
  FieldType type;
  const BlockSpec* block = nullptr;
  absl::string_view label_field = {};
};

class Decoder;

struct BlockSpec {
  absl::string_view name;  // block type, for messages
  std::vector<FieldSpec> fields;
  // Applied to the decoded object; `block` is the source block (null at the top).
  absl::Status (*fixup)(Decoder& decoder, const Block* block, Json& out) = nullptr;
};

class Decoder {
 public:
  explicit Decoder(Evaluator& evaluator) : evaluator_(evaluator) {}

  // Decodes `body` per `spec` into `out` (an object); members for unset fields are
  // left out.
  absl::Status DecodeBody(const Body& body, const BlockSpec& spec, const Block* block, Json& out);

  Evaluator& evaluator() { return evaluator_; }
  absl::Status Error(const Range& range, absl::string_view summary,
                     absl::string_view detail) const {
    return evaluator_.Error(range, summary, detail);
  }

  // Converts an evaluated value to `type` (scalar and map types); `what` names the
  // attribute in messages.
  absl::Status Convert(const Json& value, FieldType type, const Range& range,
                       absl::string_view what, Json& out) const;

 private:
  absl::Status DecodeAttribute(const Attribute& attr, const FieldSpec& field, Json& out);
  // `labels` holds the (block type, label) pairs seen in this body, so duplicates are
  // found in O(log n) however many groups or tasks a file has.
  absl::Status DecodeBlock(const Block& block, const FieldSpec& field, Json& out,
                           std::set<std::pair<std::string, std::string>>& labels);
  absl::Status DecodeFreeBody(const Body& body, Json& out);

  Evaluator& evaluator_;
};

// The body HCL's JSON syntax describes: `json` (an object) read against `spec`, where a
// member naming a block holds an object (labeled blocks: keyed by label) or a list of
// them. Positions are unknown (line 1, column 1).
Body BodyFromJson(const Json& json, const BlockSpec& spec);

// Parses "512MB", "1.5 GiB", "100" (bytes) into bytes; false on bad syntax.
bool ParseByteSize(absl::string_view text, uint64_t& bytes);

}  // namespace drover::jobspec
