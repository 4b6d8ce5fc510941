// What protocol_json.cc (JSON text, requests, responses) and protocol_results.cc (result
// decoders) share: the Json behind JsonPtr and the helpers for reading a parsed value
// strictly. Not part of the library's interface: include protocol_json.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include <nlohmann/json.hpp>

#include "devices/external/protocol_json.h"
#include "model/device.h"

namespace drover::devices::external {

struct Json {
  nlohmann::json value;
};

namespace internal {

using nlohmann::json;

// InvalidArgument "<path>: <what>", and "<path>: expected <expected>, got <type>".
absl::Status PathError(absl::string_view path, absl::string_view what);
absl::Status TypeError(absl::string_view path, absl::string_view expected, const json& got);

// JSON paths: "a.name", "a[3]", "a[\"key\"]" (Field of "" is just the name).
std::string Field(absl::string_view path, absl::string_view name);
std::string Index(absl::string_view path, size_t i);
std::string Key(absl::string_view path, absl::string_view key);

// The member `name` of object `obj`, or nullptr when absent or null.
const json* Member(const json& obj, const char* name);

absl::Status ExpectObject(const json& value, absl::string_view path);

// The member `name` of `obj` at `path`: a non-empty string; a string, "" when absent; a
// bool, `def` when absent.
absl::StatusOr<std::string> RequiredString(const json& obj, absl::string_view path,
                                           const char* name);
absl::StatusOr<std::string> OptionalString(const json& obj, absl::string_view path,
                                           const char* name);
absl::StatusOr<bool> OptionalBool(const json& obj, absl::string_view path, const char* name,
                                  bool def);

// An integer that fits int64_t (unsigned JSON numbers above INT64_MAX do not).
std::optional<int64_t> AsInt64(const json& v);

// A JSON number as an attribute with `unit`: integers stay Int, others become Float.
absl::StatusOr<model::Attribute> NumberAttribute(const json& v, std::string unit,
                                                 const std::string& path);

}  // namespace internal
}  // namespace drover::devices::external
