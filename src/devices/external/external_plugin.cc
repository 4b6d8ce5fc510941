// ExternalPlugin: the DevicePlugin side of the external protocol. Starts the plugin
// process on the first call (and again after any failure), sends "configure" first,
// then one request at a time, each with request_timeout to answer (see
// MaxExternalPluginCallDuration). Anything that breaks the conversation (timeout, exit,
// a malformed line, a wrong id) kills the process group and reaps it, waiting at most
// kExternalPluginKillGrace; the next call starts afresh (and reaps what was left).
#include "devices/external/external_plugin.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "common/logging.h"
#include "common/status_macros.h"
#include "devices/external/plugin_process.h"
#include "devices/external/protocol_json.h"

namespace drover::devices {

namespace {

using external::PluginProcess;
using Clock = std::chrono::steady_clock;
using ProcessPtr = std::shared_ptr<PluginProcess>;

// How long a plugin that closed its stdout gets to exit by itself (within the request's
// deadline), so the error can report its exit status rather than our SIGKILL.
constexpr std::chrono::milliseconds kExitGrace = std::chrono::seconds(1);
constexpr auto kKillGrace =
    std::chrono::duration_cast<std::chrono::milliseconds>(kExternalPluginKillGrace);

common::Duration RequestTimeout(const ExternalPluginConfig& config) {
  return config.request_timeout > common::Duration::zero() ? config.request_timeout
                                                           : ExternalPluginConfig{}.request_timeout;
}

class ExternalPlugin final : public DevicePlugin {
 public:
  explicit ExternalPlugin(ExternalPluginConfig config) : config_(std::move(config)) {
    config_.request_timeout = RequestTimeout(config_);
  }
  // The PluginProcess destructors kill the plugin and wait until it is reaped.
  ~ExternalPlugin() override = default;

  // devices::DevicePlugin
  std::string Name() const override { return config_.name; }

  absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() override {
    DROVER_ASSIGN_OR_RETURN(external::JsonPtr result, Call("fingerprint", [](int64_t id) {
                              return external::EncodeRequest(id, "fingerprint");
                            }));
    auto devices = external::DecodeFingerprintResult(*result);
    if (!devices.ok())
      return InvalidResult("fingerprint", devices.status());
    return devices;
  }

  absl::StatusOr<ContainerReservation> Reserve(const std::vector<std::string>& ids) override {
    if (ids.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device plugin '", config_.name, "': reserve needs instance ids"));
    }
    DROVER_ASSIGN_OR_RETURN(external::JsonPtr result, Call("reserve", [&ids](int64_t id) {
                              return external::EncodeReserveRequest(id, ids);
                            }));
    auto reservation = external::DecodeReserveResult(*result);
    if (!reservation.ok())
      return InvalidResult("reserve", reservation.status());
    return reservation;
  }

  absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() override {
    DROVER_ASSIGN_OR_RETURN(external::JsonPtr result, Call("stats", [](int64_t id) {
                              return external::EncodeRequest(id, "stats");
                            }));
    const auto now =
        std::chrono::time_point_cast<common::Duration>(std::chrono::system_clock::now());
    auto stats = external::DecodeStatsResult(*result, common::ToUnixNanos(now));
    if (!stats.ok())
      return InvalidResult("stats", stats.status());
    return stats;
  }

  // Kills the process without waiting for it or for a call in flight (the manager
  // calls this after abandoning one): the kill wakes that call, which then fails "was
  // reset" and reaps the process; else the next call or the destructor does. Never
  // blocks: no waiting for the process, and no PluginProcess is destroyed here.
  void Reset() override {
    std::lock_guard lock(process_mu_);
    if (process_ == nullptr)
      return;
    DROVER_LOG_INFO("device plugin '{}': reset, killing pid {}", config_.name, process_->pid());
    process_->Kill();
    killed_.push_back(std::move(process_));
  }

 private:
  std::string Prefix() const { return absl::StrCat("device plugin '", config_.name, "'"); }

  absl::Status InvalidResult(absl::string_view method, const absl::Status& cause) const {
    return absl::InternalError(
        absl::StrCat(Prefix(), " sent an invalid '", method, "' result: ", cause.message()));
  }

  // Sends the request `encode(id)` for `method` and returns the plugin's result, starting
  // (and configuring) the process first when there is none. Errors: the plugin's own
  // error response (with its code), or a broken conversation (see FailLocked).
  absl::StatusOr<external::JsonPtr> Call(absl::string_view method,
                                         absl::FunctionRef<std::string(int64_t)> encode) {
    std::lock_guard call_lock(call_mu_);
    // Configure and request together get 2 * request_timeout (see the header).
    const Clock::time_point call_deadline = Clock::now() + 2 * config_.request_timeout;
    ReapKilledLocked();
    DROVER_ASSIGN_OR_RETURN(ProcessPtr process, EnsureStartedLocked(call_deadline));
    const int64_t id = next_id_++;
    DROVER_ASSIGN_OR_RETURN(external::Response response,
                            RoundTripLocked(process, method, id, encode(id), call_deadline));
    if (response.error) {
      return absl::Status(response.error->code(), absl::StrCat(Prefix(), " failed '", method,
                                                               "': ", response.error->message()));
    }
    return std::move(response.result);
  }

  // Reaps (without waiting) and forgets the processes killed earlier whose reaping had
  // to be left for later. REQUIRES: call_mu_ held.
  void ReapKilledLocked() {
    std::vector<ProcessPtr> killed;
    {
      std::lock_guard lock(process_mu_);
      killed = killed_;
    }
    if (killed.empty())
      return;
    std::erase_if(killed, [](const ProcessPtr& p) {
      return !p->Reap(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
    });
    std::lock_guard lock(process_mu_);
    std::erase_if(killed_, [&](const ProcessPtr& p) {
      return std::find(killed.begin(), killed.end(), p) != killed.end();
    });
    // `killed` destroys the reaped ones here, on the calling thread.
  }

  // The running, configured process: the current one unless Reset() killed it, else a
  // new one that has accepted "configure". REQUIRES: call_mu_ held.
  absl::StatusOr<ProcessPtr> EnsureStartedLocked(Clock::time_point call_deadline) {
    {
      std::lock_guard lock(process_mu_);
      if (process_ != nullptr && !process_->killed())
        return process_;
      if (process_ != nullptr)  // not to be destroyed here: that waits until it is reaped
        killed_.push_back(std::move(process_));
    }
    const int64_t id = next_id_++;
    auto configure = external::EncodeConfigureRequest(id, config_.config_json);
    if (!configure.ok())
      return common::Annotate(configure.status(), Prefix() + " has an invalid config");
    auto started = PluginProcess::Start(config_.name, config_.command, config_.args);
    if (!started.ok())
      return common::Annotate(started.status(), Prefix() + " could not be started");
    ProcessPtr process = std::move(*started);
    DROVER_LOG_INFO("{} started '{}' (pid {})", Prefix(), config_.command, process->pid());
    {
      std::lock_guard lock(process_mu_);
      process_ = process;
    }
    DROVER_ASSIGN_OR_RETURN(external::Response response,
                            RoundTripLocked(process, "configure", id, *configure, call_deadline));
    absl::Status accepted =
        response.error ? *response.error : external::DecodeConfigureResult(*response.result);
    if (!accepted.ok()) {
      // Unconfigured, it is of no use: the next call starts and configures a fresh one.
      DiscardLocked(process, Prefix() + " rejected its configuration");
      return absl::Status(
          response.error ? accepted.code() : absl::StatusCode::kInternal,
          absl::StrCat(Prefix(), " rejected its configuration: ", accepted.message()));
    }
    return process;
  }

  // Writes the request line and reads the answer, within request_timeout and by
  // `call_deadline`. Errors: see FailLocked. REQUIRES: call_mu_ held.
  absl::StatusOr<external::Response> RoundTripLocked(const ProcessPtr& process,
                                                     absl::string_view method, int64_t id,
                                                     const std::string& request,
                                                     Clock::time_point call_deadline) {
    const auto deadline = std::min(Clock::now() + config_.request_timeout, call_deadline);
    if (absl::Status s = process->WriteLine(request, deadline); !s.ok())
      return FailLocked(process, method, s, deadline);
    auto line = process->ReadLine(deadline);
    if (!line.ok())
      return FailLocked(process, method, line.status(), deadline);
    auto response = external::ParseResponse(*line);
    if (!response.ok())
      return FailLocked(process, method, response.status(), deadline);
    if (response->id != id) {
      return FailLocked(process, method,
                        absl::InvalidArgumentError(absl::StrCat("response id ", response->id,
                                                                " does not match request id ", id)),
                        deadline);
    }
    return response;
  }

  // Kills and reaps `process` after `cause` broke the conversation during `method` (a
  // request due by `deadline`), and says what happened: DeadlineExceeded (no answer
  // within request_timeout), Unavailable (the plugin exited), Aborted (Reset() killed
  // it), Internal (a malformed or oversized line, a response for another request).
  // REQUIRES: call_mu_.
  absl::Status FailLocked(const ProcessPtr& process, absl::string_view method,
                          const absl::Status& cause, Clock::time_point deadline) {
    const std::string during = absl::StrCat(" during '", method, "'");
    absl::Status result;
    switch (cause.code()) {
      case absl::StatusCode::kDeadlineExceeded:
        result = absl::DeadlineExceededError(
            absl::StrCat(Prefix(), " did not answer '", method, "' within ",
                         absl::FormatDuration(absl::FromChrono(config_.request_timeout))));
        break;
      case absl::StatusCode::kUnavailable: {
        // Usually it exited; if it is still running after the grace period (which ends
        // by the request's deadline), Reap kills it, and DiscardLocked waits for that.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        const auto grace = std::clamp(left, std::chrono::milliseconds(0), kExitGrace);
        const bool was_killed = process->killed();
        const auto how = process->Reap(grace, std::chrono::milliseconds(0));
        result = absl::UnavailableError(
            !was_killed && process->killed()
                ? absl::StrCat(Prefix(), " closed its stdout", during, " (", cause.message(), ")")
                : absl::StrCat(Prefix(), " exited (", how.value_or("still dying"), ")", during));
        break;
      }
      case absl::StatusCode::kAborted:
        result = absl::AbortedError(absl::StrCat(Prefix(), " was reset", during));
        break;
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kResourceExhausted:
        result = absl::InternalError(
            absl::StrCat(Prefix(), " sent malformed JSON for '", method, "': ", cause.message()));
        break;
      default:
        result =
            absl::InternalError(absl::StrCat(Prefix(), " failed", during, ": ", cause.message()));
        break;
    }
    DiscardLocked(process, std::string(result.message()));
    return result;
  }

  // Kills `process`, gives it kKillGrace to die and reaps it, and forgets it as the
  // current process. One still not gone is kept in killed_ for later calls (or the
  // destructor) to reap. REQUIRES: call_mu_ held.
  void DiscardLocked(const ProcessPtr& process, const std::string& why) {
    DROVER_LOG_WARN("{}; killing pid {}, the next call starts a new one", why, process->pid());
    process->Kill();
    const bool reaped = process->Reap(std::chrono::milliseconds(0), kKillGrace).has_value();
    if (!reaped) {
      DROVER_LOG_WARN("{}: pid {} is not gone {}ms after SIGKILL; a later call reaps it", Prefix(),
                      process->pid(), kKillGrace.count());
    }
    std::lock_guard lock(process_mu_);
    if (process_ == process)
      process_.reset();
    std::erase(killed_, process);
    if (!reaped)
      killed_.push_back(process);
  }

  // Immutable after construction.
  ExternalPluginConfig config_;

  // Serializes calls: the protocol has one request in flight at a time.
  std::mutex call_mu_;
  int64_t next_id_ = 1;  // guarded by call_mu_

  // Guards the pointers only, so Reset() can reach the process while a call holds
  // call_mu_ (a shared_ptr: the call keeps using its copy until it notices the kill).
  std::mutex process_mu_;
  ProcessPtr process_;  // guarded by process_mu_
  // Killed, and not reaped yet (Reset(), or not dead within kKillGrace). Guarded by
  // process_mu_.
  std::vector<ProcessPtr> killed_;
};

}  // namespace

common::Duration MaxExternalPluginCallDuration(const ExternalPluginConfig& config) {
  return 2 * RequestTimeout(config) + kExternalPluginKillGrace;
}

DevicePluginPtr MakeExternalPlugin(ExternalPluginConfig config) {
  return std::make_shared<ExternalPlugin>(std::move(config));
}

}  // namespace drover::devices
