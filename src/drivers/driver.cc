#include "drivers/driver.h"

#include <csignal>
#include <string>
#include <utility>

#include "absl/strings/cord.h"

namespace drover::drivers {
namespace {

constexpr char kRecoverablePayload[] = "drover.dev/recoverable";

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

absl::Status RecoverableError(std::string_view message) {
  absl::Status s = absl::UnavailableError(std::string(message));
  s.SetPayload(kRecoverablePayload, absl::Cord("true"));
  return s;
}

bool IsRecoverable(const absl::Status& status) {
  return status.GetPayload(kRecoverablePayload).has_value();
}

absl::StatusOr<int> ParseSignal(std::string_view name) {
  std::string upper;
  for (char c : name) {
    upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  if (!upper.empty() && std::all_of(upper.begin(), upper.end(), ::isdigit)) {
    const int n = std::stoi(upper);
    if (n > 0 && n < 65) {
      return n;
    }
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

}  // namespace drover::drivers
