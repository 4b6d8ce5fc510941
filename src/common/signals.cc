#include "common/signals.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>
#include <utility>

namespace drover::common {
namespace {

const std::pair<const char*, int> kSignals[] = {
    {"SIGHUP", SIGHUP},       {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},   {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP},     {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},     {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL},     {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV},   {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE},     {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM},   {"SIGCHLD", SIGCHLD},
    {"SIGCONT", SIGCONT},     {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP},   {"SIGTTIN", SIGTTIN},
    {"SIGTTOU", SIGTTOU},     {"SIGURG", SIGURG},   {"SIGXCPU", SIGXCPU},   {"SIGXFSZ", SIGXFSZ},
    {"SIGVTALRM", SIGVTALRM}, {"SIGPROF", SIGPROF}, {"SIGWINCH", SIGWINCH}, {"SIGIO", SIGIO},
    {"SIGSYS", SIGSYS},
};

}  // namespace

absl::StatusOr<int> ParseSignal(std::string_view name) {
  std::string upper;
  for (char c : name) {
    upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  if (!upper.empty() && std::all_of(upper.begin(), upper.end(), ::isdigit)) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(upper.data(), upper.data() + upper.size(), n);
    if (ec == std::errc() && n > 0 && n < 65) {
      return n;
    }
    return absl::InvalidArgumentError("unknown signal \"" + std::string(name) + "\"");
  }
  if (upper.rfind("SIG", 0) != 0) {
    upper = "SIG" + upper;
  }
  for (const auto& [sig_name, number] : kSignals) {
    if (upper == sig_name) {
      return number;
    }
  }
  return absl::InvalidArgumentError("unknown signal \"" + std::string(name) + "\"");
}

std::string SignalName(int signal) {
  for (const auto& [sig_name, number] : kSignals) {
    if (number == signal) {
      return sig_name;
    }
  }
  return std::to_string(signal);
}

}  // namespace drover::common
