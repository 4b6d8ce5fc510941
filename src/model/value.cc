#include "model/value.h"

namespace drover::model {

const Value* Value::Find(const std::string& key) const {
  const Object* o = as_object();
  if (o == nullptr) {
    return nullptr;
  }
  auto it = o->find(key);
  return it == o->end() ? nullptr : &it->second;
}

}  // namespace drover::model
