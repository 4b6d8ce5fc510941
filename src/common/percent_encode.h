// Percent-encoding of a URL path segment or query value: every byte outside RFC 3986's
// unreserved set (letters, digits, '-', '_', '.', '~') as %XX, upper-case.
#pragma once

#include <string>
#include <string_view>

namespace drover::common {

std::string PercentEncode(std::string_view s);

}  // namespace drover::common
