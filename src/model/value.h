// A JSON-like value tree for the free-form parts of a job (a task's driver `config`).
// Keeps the model independent of any JSON library.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace drover::model {

class Value {
 public:
  using Array = std::vector<Value>;
  using Object = std::map<std::string, Value>;
  using Storage = std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object>;

  Value() : v_(nullptr) {}
  Value(std::nullptr_t) : v_(nullptr) {}         // NOLINT(google-explicit-constructor)
  Value(bool b) : v_(b) {}                       // NOLINT(google-explicit-constructor)
  Value(int64_t i) : v_(i) {}                    // NOLINT(google-explicit-constructor)
  Value(int i) : v_(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  Value(double d) : v_(d) {}                     // NOLINT(google-explicit-constructor)
  Value(std::string s) : v_(std::move(s)) {}     // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(std::string(s)) {}   // NOLINT(google-explicit-constructor)
  Value(Array a) : v_(std::move(a)) {}           // NOLINT(google-explicit-constructor)
  Value(Object o) : v_(std::move(o)) {}          // NOLINT(google-explicit-constructor)

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_object() const { return std::holds_alternative<Object>(v_); }
  bool is_number() const {
    return std::holds_alternative<int64_t>(v_) || std::holds_alternative<double>(v_);
  }
  const std::string* as_string() const { return std::get_if<std::string>(&v_); }
  const Array* as_array() const { return std::get_if<Array>(&v_); }
  const Object* as_object() const { return std::get_if<Object>(&v_); }
  Object* as_object() { return std::get_if<Object>(&v_); }
  const Storage& storage() const { return v_; }
  Storage& storage() { return v_; }

  // Member lookup on objects; nullptr when absent or not an object.
  const Value* Find(const std::string& key) const;

  friend bool operator==(const Value&, const Value&) = default;

 private:
  Storage v_;
};

}  // namespace drover::model
