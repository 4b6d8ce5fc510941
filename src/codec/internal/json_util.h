// Helpers shared by the codec's encoders and decoders: a field reader that records
// the first error with its JSON path, strict number conversion, and small builders for
// Nomad's null-versus-empty conventions. Private to codec/.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "model/value.h"

namespace drover::codec::internal {

using Json = nlohmann::json;
using common::Duration;
using common::Time;

// Path of a member ("Job.TaskGroups") and of an element ("...[0]", "...[\"web\"]").
std::string MemberPath(const std::string& path, std::string_view key);
std::string IndexPath(const std::string& path, size_t index);
std::string KeyPath(const std::string& path, std::string_view key);

// "<path>: expected <what>, got <json type>".
absl::Status TypeError(const std::string& path, std::string_view expected, const Json& got);

// Member `key` of object `obj`: an exact match first, then an ASCII case-insensitive
// one, as Go's encoding/json matches struct fields. nullptr when absent or null.
const Json* FindMember(const Json& obj, std::string_view key);

// Strict conversions for list elements and map values. Numbers may be JSON integers or
// floats with no fractional part (5e9); anything outside the target type's range is
// rejected. null gives the zero value, as in Go.
template <typename Int>
absl::StatusOr<Int> ToInt(const Json& v, const std::string& path) {
  static_assert(std::is_integral_v<Int>);
  if (v.is_null()) {
    return Int{0};  // Go leaves the zero value for a null element
  }
  using Limits = std::numeric_limits<Int>;
  auto range_error = [&] {
    return absl::InvalidArgumentError(absl::StrCat(path, ": value ", v.dump(), " out of range"));
  };
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const int64_t i = v.get<int64_t>();
    if constexpr (Limits::is_signed) {
      if (i < static_cast<int64_t>(Limits::min()) || i > static_cast<int64_t>(Limits::max())) {
        return range_error();
      }
    } else {
      if (i < 0 || static_cast<uint64_t>(i) > static_cast<uint64_t>(Limits::max())) {
        return range_error();
      }
    }
    return static_cast<Int>(i);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(Limits::max())) {
      return range_error();
    }
    return static_cast<Int>(u);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": expected integer, got ", v.dump()));
    }
    // 2^digits is exactly representable; the max of a 64-bit type is not.
    const double upper = std::ldexp(1.0, Limits::digits);
    const double lower = Limits::is_signed ? -upper : 0.0;
    if (d < lower || d >= upper) {
      return range_error();
    }
    return static_cast<Int>(d);
  }
  return TypeError(path, "number", v);
}

absl::StatusOr<std::string> ToString(const Json& v, const std::string& path);
absl::StatusOr<Time> ToTime(const Json& v, const std::string& path);

// Reads the members of one JSON object into model fields. Absent and null members
// leave the field untouched. The first error (wrong type, bad number) is kept and all
// later reads become no-ops, so a decoder reads every field and returns status().
class Reader {
 public:
  // `j` is the value found at `path`; it must outlive the reader.
  Reader(const Json& j, std::string path);

  // Records an error unless the value is an object. Call before any Read().
  bool ExpectObject();
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  void Fail(absl::Status s);

  // The member or nullptr (absent, null, or after an error).
  const Json* Get(std::string_view key) const;
  std::string Path(std::string_view key) const { return MemberPath(path_, key); }

  void Read(std::string_view key, std::string& out);
  void Read(std::string_view key, bool& out);
  void Read(std::string_view key, int& out) { ReadInt(key, out); }
  void Read(std::string_view key, int64_t& out) { ReadInt(key, out); }
  void Read(std::string_view key, uint64_t& out) { ReadInt(key, out); }
  void Read(std::string_view key, Duration& out);
  void Read(std::string_view key, std::optional<bool>& out);
  void Read(std::string_view key, std::optional<Duration>& out);
  void Read(std::string_view key, Time& out);
  void Read(std::string_view key, std::vector<std::string>& out);
  void Read(std::string_view key, std::map<std::string, std::string>& out);
  void Read(std::string_view key, std::map<std::string, int>& out);
  void Read(std::string_view key, model::Value& out);

  // Nested values, decoded by `decode(const Json&, const std::string& path)` returning
  // absl::StatusOr<T>.
  template <typename T, typename Decode>
  void ReadObject(std::string_view key, T& out, Decode decode) {
    const Json* v = Get(key);
    if (v == nullptr) {
      return;
    }
    absl::StatusOr<T> r = decode(*v, Path(key));
    if (!r.ok()) {
      Fail(r.status());
      return;
    }
    out = *std::move(r);
  }

  template <typename T, typename Decode>
  void ReadOptional(std::string_view key, std::optional<T>& out, Decode decode) {
    const Json* v = Get(key);
    if (v == nullptr) {
      return;
    }
    absl::StatusOr<T> r = decode(*v, Path(key));
    if (!r.ok()) {
      Fail(r.status());
      return;
    }
    out = *std::move(r);
  }

  template <typename Container, typename Decode>
  void ReadList(std::string_view key, Container& out, Decode decode) {
    const Json* v = Get(key);
    if (v == nullptr) {
      return;
    }
    const std::string path = Path(key);
    if (!v->is_array()) {
      Fail(TypeError(path, "array", *v));
      return;
    }
    Container result;
    for (size_t i = 0; i < v->size(); ++i) {
      auto r = decode((*v)[i], IndexPath(path, i));
      if (!r.ok()) {
        Fail(r.status());
        return;
      }
      result.push_back(*std::move(r));
    }
    out = std::move(result);
  }

  template <typename T, typename Decode>
  void ReadMap(std::string_view key, std::map<std::string, T>& out, Decode decode) {
    const Json* v = Get(key);
    if (v == nullptr) {
      return;
    }
    const std::string path = Path(key);
    if (!v->is_object()) {
      Fail(TypeError(path, "object", *v));
      return;
    }
    std::map<std::string, T> result;
    for (const auto& [k, elem] : v->items()) {
      absl::StatusOr<T> r = decode(elem, KeyPath(path, k));
      if (!r.ok()) {
        Fail(r.status());
        return;
      }
      result.emplace(k, *std::move(r));
    }
    out = std::move(result);
  }

 private:
  template <typename Int>
  void ReadInt(std::string_view key, Int& out) {
    const Json* v = Get(key);
    if (v == nullptr) {
      return;
    }
    absl::StatusOr<Int> r = ToInt<Int>(*v, Path(key));
    if (!r.ok()) {
      Fail(r.status());
      return;
    }
    out = *r;
  }

  const Json& j_;
  std::string path_;
  absl::Status status_;
};

// Encoding helpers for Nomad's conventions: Go nil slices and maps are null.
Json StringMapOrNull(const std::map<std::string, std::string>& m);
Json StringMapObject(const std::map<std::string, std::string>& m);
Json IntMapOrNull(const std::map<std::string, int>& m);
Json StringListOrEmpty(const std::vector<std::string>& v);
Json OptionalBool(const std::optional<bool>& b);
inline Json DurationJson(Duration d) {
  return d.count();
}

template <typename Container, typename Encode>
Json ListOrNull(const Container& items, Encode encode) {
  if (items.empty()) {
    return nullptr;
  }
  Json out = Json::array();
  for (const auto& item : items) {
    out.push_back(encode(item));
  }
  return out;
}

template <typename Container, typename Encode>
Json ListOrEmpty(const Container& items, Encode encode) {
  Json out = Json::array();
  for (const auto& item : items) {
    out.push_back(encode(item));
  }
  return out;
}

template <typename T, typename Encode>
Json MapObject(const std::map<std::string, T>& items, Encode encode) {
  Json out = Json::object();
  for (const auto& [k, v] : items) {
    out[k] = encode(v);
  }
  return out;
}

template <typename T, typename Encode>
Json MapOrNull(const std::map<std::string, T>& items, Encode encode) {
  return items.empty() ? Json(nullptr) : MapObject(items, encode);
}

// Runs a decoder, turning any exception that escapes nlohmann or the standard library
// into an Internal status, so no exception crosses the codec's API.
template <typename Fn>
auto NoThrow(Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("JSON decoding failed: ", e.what()));
  }
}

}  // namespace drover::codec::internal
