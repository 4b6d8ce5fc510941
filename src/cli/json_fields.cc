#include "cli/json_fields.h"

#include <string>

#include <nlohmann/json.hpp>

namespace drover::cli {

const codec::Json* JsonMember(const codec::Json& j, std::string_view key) {
  if (!j.is_object()) {
    return nullptr;
  }
  auto it = j.find(std::string(key));
  if (it == j.end()) {
    return nullptr;
  }
  return &*it;
}

std::string JsonString(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  if (v == nullptr || !v->is_string()) {
    return "";
  }
  return v->get<std::string>();
}

int64_t JsonInt(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  if (v == nullptr || !v->is_number()) {
    return 0;
  }
  if (v->is_number_float()) {
    return static_cast<int64_t>(v->get<double>());
  }
  return v->get<int64_t>();
}

uint64_t JsonUint(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  if (v == nullptr || !v->is_number()) {
    return 0;
  }
  if (v->is_number_unsigned()) {
    return v->get<uint64_t>();
  }
  const int64_t n = JsonInt(j, key);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

bool JsonBool(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::vector<std::string> JsonStrings(const codec::Json& j, std::string_view key) {
  std::vector<std::string> out;
  const codec::Json* v = JsonMember(j, key);
  if (v == nullptr || !v->is_array()) {
    return out;
  }
  for (const auto& item : *v) {
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    }
  }
  return out;
}

bool JsonPresent(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  return v != nullptr && !v->is_null() && !(v->is_boolean() && !v->get<bool>());
}

}  // namespace drover::cli
