#include "codec/internal/json_util.h"

#include "codec/json.h"

namespace drover::codec::internal {

namespace {

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') {
      x = static_cast<char>(x - 'A' + 'a');
    }
    if (y >= 'A' && y <= 'Z') {
      y = static_cast<char>(y - 'A' + 'a');
    }
    if (x != y) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string MemberPath(const std::string& path, std::string_view key) {
  return absl::StrCat(path, ".", std::string(key));
}

std::string IndexPath(const std::string& path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::string KeyPath(const std::string& path, std::string_view key) {
  return absl::StrCat(path, "[\"", std::string(key), "\"]");
}

absl::Status TypeError(const std::string& path, std::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", std::string(expected), ", got ", got.type_name()));
}

const Json* FindMember(const Json& obj, std::string_view key) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find(std::string(key));
  if (it == obj.end()) {
    for (auto cand = obj.begin(); cand != obj.end(); ++cand) {
      if (EqualsIgnoreAsciiCase(cand.key(), key)) {
        it = cand;
        break;
      }
    }
  }
  if (it == obj.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

absl::StatusOr<std::string> ToString(const Json& v, const std::string& path) {
  if (v.is_null()) {
    return std::string();  // Go leaves the zero value for a null element
  }
  if (!v.is_string()) {
    return TypeError(path, "string", v);
  }
  return v.get<std::string>();
}

absl::StatusOr<Time> ToTime(const Json& v, const std::string& path) {
  if (!v.is_string()) {
    return TypeError(path, "RFC 3339 time string", v);
  }
  absl::StatusOr<Time> t = ParseTime(v.get<std::string>());
  if (!t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", t.status().message()));
  }
  return *t;
}

Reader::Reader(const Json& j, std::string path) : j_(j), path_(std::move(path)) {}

bool Reader::ExpectObject() {
  if (!j_.is_object()) {
    Fail(TypeError(path_, "object", j_));
  }
  return ok();
}

void Reader::Fail(absl::Status s) {
  if (status_.ok()) {
    status_ = std::move(s);
  }
}

const Json* Reader::Get(std::string_view key) const {
  if (!status_.ok()) {
    return nullptr;
  }
  return FindMember(j_, key);
}

void Reader::Read(std::string_view key, std::string& out) {
  const Json* v = Get(key);
  if (v == nullptr) {
    return;
  }
  if (!v->is_string()) {
    Fail(TypeError(Path(key), "string", *v));
    return;
  }
  out = v->get<std::string>();
}

void Reader::Read(std::string_view key, bool& out) {
  const Json* v = Get(key);
  if (v == nullptr) {
    return;
  }
  if (!v->is_boolean()) {
    Fail(TypeError(Path(key), "boolean", *v));
    return;
  }
  out = v->get<bool>();
}

void Reader::Read(std::string_view key, Duration& out) {
  int64_t ns = out.count();
  ReadInt(key, ns);
  out = Duration(ns);
}

void Reader::Read(std::string_view key, std::optional<bool>& out) {
  if (Get(key) == nullptr) {
    return;
  }
  bool b = false;
  Read(key, b);
  out = b;
}

void Reader::Read(std::string_view key, std::optional<Duration>& out) {
  if (Get(key) == nullptr) {
    return;
  }
  Duration d{0};
  Read(key, d);
  out = d;
}

void Reader::Read(std::string_view key, Time& out) {
  const Json* v = Get(key);
  if (v == nullptr) {
    return;
  }
  absl::StatusOr<Time> t = ToTime(*v, Path(key));
  if (!t.ok()) {
    Fail(t.status());
    return;
  }
  out = *t;
}

void Reader::Read(std::string_view key, std::vector<std::string>& out) {
  ReadList(key, out, ToString);
}

void Reader::Read(std::string_view key, std::map<std::string, std::string>& out) {
  ReadMap(key, out, ToString);
}

void Reader::Read(std::string_view key, std::map<std::string, int>& out) {
  ReadMap(key, out, [](const Json& v, const std::string& path) { return ToInt<int>(v, path); });
}

void Reader::Read(std::string_view key, model::Value& out) {
  const Json* v = Get(key);
  if (v == nullptr) {
    return;
  }
  out = ValueFromJson(*v);
}

Json StringMapOrNull(const std::map<std::string, std::string>& m) {
  return m.empty() ? Json(nullptr) : StringMapObject(m);
}

Json StringMapObject(const std::map<std::string, std::string>& m) {
  Json out = Json::object();
  for (const auto& [k, v] : m) {
    out[k] = v;
  }
  return out;
}

Json IntMapOrNull(const std::map<std::string, int>& m) {
  if (m.empty()) {
    return nullptr;
  }
  Json out = Json::object();
  for (const auto& [k, v] : m) {
    out[k] = v;
  }
  return out;
}

Json StringListOrEmpty(const std::vector<std::string>& v) {
  Json out = Json::array();
  for (const std::string& s : v) {
    out.push_back(s);
  }
  return out;
}

Json OptionalBool(const std::optional<bool>& b) {
  return b ? Json(*b) : Json(nullptr);
}

}  // namespace drover::codec::internal
