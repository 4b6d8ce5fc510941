#include "cli/args.h"

#include <cctype>

namespace drover::cli {

namespace {

bool IsSingleDashLongFlag(const std::string& token) {
  if (token.size() < 3 || token[0] != '-' || token[1] == '-') {
    return false;
  }
  // "-1", "-1.5": a negative number given as a value, not a flag.
  return std::isdigit(static_cast<unsigned char>(token[1])) == 0 && token[1] != '.';
}

}  // namespace

std::vector<std::string> NormalizeArgs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool passthrough = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (i == 0 || passthrough) {
      out.push_back(token);
      continue;
    }
    if (token == "--") {
      passthrough = true;
      out.push_back(token);
      continue;
    }
    out.push_back(IsSingleDashLongFlag(token) ? "-" + token : token);
  }
  return out;
}

}  // namespace drover::cli
