// devices: reserves the task's allocated device instances through their plugin and
// hands the reservation (environment, mounts, device nodes) to the driver (reference
// §5.5).
//
// The plugin is asked on every start, so a start after a host or driver change gets
// current device nodes. The reservation is also kept in the hook's persisted state:
// when the plugin cannot answer for the moment (not back yet after an agent restart,
// busy, restarting) a start of the same instances uses the kept one, so a task
// restarted after an agent restart still gets its mounts and device nodes (Nomad
// replays only the environment, its issue #9473). Without a kept reservation a
// transient failure is a recoverable start error (the restart policy retries); any
// other failure fails the task: it never runs without its devices. Reservations of
// several requests are merged: nodes and mounts once each, list variables joined.
#pragma once

#include <functional>

#include "client/taskrunner/task_hook.h"
#include "devices/device_plugin.h"

namespace drover::taskrunner {

class DeviceHook : public TaskHook {
 public:
  static constexpr char kName[] = "devices";
  using ReserveFn = std::function<asio::awaitable<absl::StatusOr<devices::ContainerReservation>>(
      model::AllocatedDeviceResource)>;

  explicit DeviceHook(ReserveFn reserve) : reserve_(std::move(reserve)) {}
  std::string_view Name() const override { return kName; }

  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;

 private:
  ReserveFn reserve_;
};

// The reservation as the hook persists it (JSON), and back.
std::string EncodeReservation(const devices::ContainerReservation& r);
absl::StatusOr<devices::ContainerReservation> DecodeReservation(const std::string& text);

}  // namespace drover::taskrunner
