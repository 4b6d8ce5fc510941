// The JSON side of the external device plugin protocol (docs/device-plugin-protocol.md):
// request lines the agent writes, and strict decoding of the lines a plugin answers
// with into model types. No I/O here; plugin_process.h moves the lines and
// external_plugin.cc drives the conversation.
//
// Decoding errors are InvalidArgument whose message starts with the JSON path of the
// offending value ("devices[0].instances[1].id: missing"); callers prefix the plugin and
// method. Unknown object members are ignored (forward compatibility); for optional
// members, JSON null means absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "devices/device_plugin.h"
#include "model/device.h"

namespace drover::devices::external {

inline constexpr int kProtocolVersion = 1;

// Limits on what a plugin may send, besides PluginProcess::kMaxLineBytes. Nesting of
// arrays and objects is checked on the text before parsing (nlohmann::json copies and
// dumps values recursively, so a deep value could overflow the stack).
inline constexpr int kMaxJsonNesting = 64;
// Device groups, and instances of all groups together, in one fingerprint or stats result.
inline constexpr size_t kMaxDeviceGroups = 1024;
inline constexpr size_t kMaxDeviceInstances = 4096;

// A parsed JSON value (nlohmann::json underneath, kept out of headers: cpp-style §19).
struct Json;
struct JsonDeleter {
  void operator()(const Json* json) const;
};
using JsonPtr = std::unique_ptr<const Json, JsonDeleter>;

// Parses one JSON document. Errors: InvalidArgument with the parser's message, or
// "nesting deeper than 64" (kMaxJsonNesting) before any parsing.
absl::StatusOr<JsonPtr> ParseJson(std::string_view text);

// Request lines, without the trailing newline.
//
// configure: params {"config": <config_json>, "protocol_version": 1}. Errors:
// InvalidArgument when `config_json` is not a JSON object.
absl::StatusOr<std::string> EncodeConfigureRequest(int64_t id, std::string_view config_json);
// reserve: params {"ids": [...]}.
std::string EncodeReserveRequest(int64_t id, const std::vector<std::string>& ids);
// Any method without parameters (fingerprint, stats): params {}.
std::string EncodeRequest(int64_t id, std::string_view method);

// One response line: {"id": N, "result": ...} or {"id": N, "error": "...", "code": "..."}.
struct Response {
  int64_t id = 0;
  // The plugin's own failure: its message, with the absl code named by "code"
  // ("NOT_FOUND", ...; UNKNOWN when absent or not a known code name).
  std::optional<absl::Status> error;
  JsonPtr result;  // set exactly when `error` is not
};

// Parses a response line. Errors: InvalidArgument when the line is not JSON or not a
// response object (no integer "id", neither or both of "result" and "error", an "error"
// that is not a string); the caller treats any of these as a broken plugin.
absl::StatusOr<Response> ParseResponse(std::string_view line);

// Result decoders, one per method. `result` is Response::result.
//
// configure: an object; a "protocol_version" member, if any, must be 1.
absl::Status DecodeConfigureResult(const Json& result);
// fingerprint: {"devices": [...]}. Every group needs vendor, type and name, every
// instance a non-empty id unique within the result and a "healthy" bool. At most
// kMaxDeviceGroups groups and kMaxDeviceInstances instances.
absl::StatusOr<std::vector<model::NodeDeviceResource>> DecodeFingerprintResult(const Json& result);
// reserve: {"envs": {...}, "mounts": [...], "devices": [...]}, all optional.
absl::StatusOr<ContainerReservation> DecodeReserveResult(const Json& result);
// stats: {"groups": [...]}. Samples without a "timestamp" get `now_unix_nanos`. At most
// kMaxDeviceGroups groups and kMaxDeviceInstances samples.
absl::StatusOr<std::vector<model::DeviceGroupStats>> DecodeStatsResult(const Json& result,
                                                                       int64_t now_unix_nanos);

// One attribute value as a plugin reports it: a string (through model::ParseAttribute,
// so "16 GiB" gets a unit), a number, a bool, or {"value": ..., "unit": "..."}.
absl::StatusOr<model::Attribute> DecodeAttribute(const Json& value, const std::string& path);
// One statistic: {"value": number|string|bool, "denominator"?, "unit"?, "desc"?}.
absl::StatusOr<model::StatValue> DecodeStatValue(const Json& value, const std::string& path);

}  // namespace drover::devices::external
