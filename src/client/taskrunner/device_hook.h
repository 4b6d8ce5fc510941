// devices: reserves the task's allocated device instances through their plugin and
// hands the reservation (environment, mounts, device nodes) to the driver (reference
// §5.5).
//
// Unlike Nomad, the reservation is kept in the hook's persisted state and the hook is
// never "done" for a task with devices: every start of the task, including the first
// after an agent restart, gets the same mounts and device nodes again (Nomad replays
// only the environment, its issue #9473). The plugin is asked once per task; a
// persisted reservation is reused as long as the allocated instances are the same.
// A failed reservation fails the start, unrecoverably: the task never runs without its
// devices.
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
