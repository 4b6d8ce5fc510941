#include "model/allocation.h"

#include <charconv>

namespace drover::model {

int Allocation::Index() const {
  const size_t open = name.rfind('[');
  if (open == std::string::npos || name.empty() || name.back() != ']') {
    return -1;
  }
  int idx = -1;
  const char* begin = name.data() + open + 1;
  const char* end = name.data() + name.size() - 1;
  auto [ptr, ec] = std::from_chars(begin, end, idx);
  return (ec == std::errc() && ptr == end) ? idx : -1;
}

}  // namespace drover::model
