// Go's string formatting where Nomad's messages use it: %q quoting.
#pragma once

#include <string>
#include <string_view>

namespace drover::common {

// Go's %q for the strings Nomad quotes in messages: double quotes, backslash escapes
// for quotes, backslashes and control characters.
std::string GoQuote(std::string_view s);

}  // namespace drover::common
