#include "cli/url.h"

#include <cctype>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace drover::cli {

namespace {

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~';
}

void AppendPercent(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xF]);
}

}  // namespace

std::string Address::ToString() const {
  return absl::StrCat(scheme, "://", HostPort());
}

std::string Address::HostPort() const {
  if (host.find(':') != std::string::npos) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<Address> ParseAddress(std::string_view text) {
  const std::string original(text);
  Address addr;
  std::string_view rest = text;
  bool had_scheme = false;
  if (size_t pos = rest.find("://"); pos != std::string_view::npos) {
    addr.scheme = absl::AsciiStrToLower(std::string(rest.substr(0, pos)));
    rest.remove_prefix(pos + 3);
    had_scheme = true;
  }
  if (addr.scheme == "https") {
    return absl::UnimplementedError(
        absl::StrCat("https addresses are not supported yet: \"", original, "\""));
  }
  if (addr.scheme == "unix") {
    return absl::UnimplementedError(
        absl::StrCat("unix socket addresses are not supported: \"", original, "\""));
  }
  if (addr.scheme != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported scheme \"", addr.scheme, "\" in address \"", original, "\""));
  }
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    if (path != "/") {
      return absl::InvalidArgumentError(
          absl::StrCat("address \"", original, "\" must not contain a path"));
    }
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("missing ']' in address \"", original, "\""));
    }
    addr.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        return absl::InvalidArgumentError(absl::StrCat("malformed address \"", original, "\""));
      }
      port_text = after.substr(1);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    addr.host = std::string(rest.substr(0, colon));
    port_text = rest.substr(colon + 1);
  } else {
    addr.host = std::string(rest);
  }
  if (addr.host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("missing host in address \"", original, "\""));
  }
  if (port_text.empty()) {
    addr.port = had_scheme ? 80 : 4646;
  } else {
    int port = 0;
    if (!absl::SimpleAtoi(absl::string_view(port_text.data(), port_text.size()), &port) ||
        port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("invalid port \"", std::string(port_text),
                                                     "\" in address \"", original, "\""));
    }
    addr.port = port;
  }
  return addr;
}

std::string ChooseAddress(std::string_view flag, const char* env_nomad_addr) {
  if (!flag.empty()) {
    return std::string(flag);
  }
  if (env_nomad_addr != nullptr && env_nomad_addr[0] != '\0') {
    return env_nomad_addr;
  }
  return kDefaultAddress;
}

std::string PathEscape(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (char ch : segment) {
    auto c = static_cast<unsigned char>(ch);
    // Go's PathEscape keeps unreserved characters plus these sub-delims and ':' '@'.
    if (IsUnreserved(c) || c == '$' || c == '&' || c == '+' || c == ',' || c == ';' || c == '=' ||
        c == ':' || c == '@') {
      out.push_back(ch);
    } else {
      AppendPercent(out, c);
    }
  }
  return out;
}

std::string QueryEscape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c)) {
      out.push_back(ch);
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      AppendPercent(out, c);
    }
  }
  return out;
}

}  // namespace drover::cli
