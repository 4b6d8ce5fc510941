#include "client/taskrunner/device_hook.h"

#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "common/status_macros.h"

namespace drover::taskrunner {

namespace {

constexpr char kReservationKey[] = "reservation";
constexpr char kDevicesKey[] = "devices";

// Identifies the allocated instances a reservation was made for.
std::string DevicesKey(const std::vector<model::AllocatedDeviceResource>& devices) {
  std::vector<std::string> parts;
  for (const model::AllocatedDeviceResource& d : devices) {
    parts.push_back(d.vendor + "/" + d.type + "/" + d.name + "=" +
                    absl::StrJoin(d.device_ids, ","));
  }
  return absl::StrJoin(parts, ";");
}

void Apply(const devices::ContainerReservation& r, PrestartResponse* resp) {
  for (const auto& [k, v] : r.envs)
    resp->env[k] = v;
  for (const devices::Mount& m : r.mounts) {
    resp->mounts.push_back(
        {.task_path = m.task_path, .host_path = m.host_path, .readonly = m.read_only});
  }
  for (const devices::DeviceSpec& d : r.devices) {
    resp->devices.push_back(
        {.task_path = d.task_path, .host_path = d.host_path, .permissions = d.permissions});
  }
}

void Merge(devices::ContainerReservation& into, devices::ContainerReservation from) {
  for (auto& [k, v] : from.envs)
    into.envs[k] = std::move(v);
  into.mounts.insert(into.mounts.end(), from.mounts.begin(), from.mounts.end());
  into.devices.insert(into.devices.end(), from.devices.begin(), from.devices.end());
}

}  // namespace

std::string EncodeReservation(const devices::ContainerReservation& r) {
  nlohmann::json mounts = nlohmann::json::array();
  for (const devices::Mount& m : r.mounts)
    mounts.push_back(
        {{"task_path", m.task_path}, {"host_path", m.host_path}, {"read_only", m.read_only}});
  nlohmann::json nodes = nlohmann::json::array();
  for (const devices::DeviceSpec& d : r.devices) {
    nodes.push_back(
        {{"task_path", d.task_path}, {"host_path", d.host_path}, {"permissions", d.permissions}});
  }
  return nlohmann::json{{"envs", r.envs}, {"mounts", mounts}, {"devices", nodes}}.dump();
}

absl::StatusOr<devices::ContainerReservation> DecodeReservation(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    devices::ContainerReservation r;
    r.envs = j.at("envs").get<std::map<std::string, std::string>>();
    for (const auto& m : j.at("mounts")) {
      r.mounts.push_back({.task_path = m.at("task_path").get<std::string>(),
                          .host_path = m.at("host_path").get<std::string>(),
                          .read_only = m.at("read_only").get<bool>()});
    }
    for (const auto& d : j.at("devices")) {
      r.devices.push_back({.task_path = d.at("task_path").get<std::string>(),
                           .host_path = d.at("host_path").get<std::string>(),
                           .permissions = d.at("permissions").get<std::string>()});
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(std::string("persisted device reservation is unreadable: ") +
                               e.what());
  }
}

asio::awaitable<absl::Status> DeviceHook::Prestart(const PrestartRequest& req,
                                                   PrestartResponse* resp) {
  const std::vector<model::AllocatedDeviceResource>* allocated = nullptr;
  if (auto it = req.alloc->allocated_resources.tasks.find(req.task->name);
      it != req.alloc->allocated_resources.tasks.end() && !it->second.devices.empty()) {
    allocated = &it->second.devices;
  }
  if (allocated == nullptr) {
    resp->done = true;
    co_return absl::OkStatus();
  }
  const std::string key = DevicesKey(*allocated);
  if (auto kept = req.previous_state.find(kReservationKey);
      kept != req.previous_state.end() && req.previous_state.count(kDevicesKey) != 0 &&
      req.previous_state.at(kDevicesKey) == key) {
    auto restored = DecodeReservation(kept->second);
    if (restored.ok()) {
      Apply(*restored, resp);
      resp->state = req.previous_state;
      co_return absl::OkStatus();
    }
    // Unreadable: reserve again below rather than start without devices.
  }
  if (!reserve_) {
    co_return absl::FailedPreconditionError(
        "the task was given devices but this node runs no device plugins");
  }
  devices::ContainerReservation all;
  for (const model::AllocatedDeviceResource& d : *allocated) {
    absl::StatusOr<devices::ContainerReservation> r = co_await reserve_(d);
    if (!r.ok()) {
      co_return common::Annotate(r.status(), "failed to reserve device \"" + d.vendor + "/" +
                                                 d.type + "/" + d.name + "\"");
    }
    Merge(all, std::move(*r));
  }
  Apply(all, resp);
  resp->state = {{kReservationKey, EncodeReservation(all)}, {kDevicesKey, key}};
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
