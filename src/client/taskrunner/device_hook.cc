#include "client/taskrunner/device_hook.h"

#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "common/logging.h"
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

// Adds one plugin's reservation to the task's. Two requests of one task may both ask
// for the same control node (/dev/nvidiactl) or list variable (NVIDIA_VISIBLE_DEVICES):
// nodes and mounts are kept once, list values are joined; one task path given two
// different host paths is a conflict.
absl::Status Merge(devices::ContainerReservation& into, devices::ContainerReservation from) {
  for (auto& [k, v] : from.envs) {
    auto [it, inserted] = into.envs.emplace(k, v);
    if (!inserted && it->second != v)
      it->second += "," + v;
  }
  for (const devices::Mount& m : from.mounts) {
    auto same = std::find_if(into.mounts.begin(), into.mounts.end(),
                             [&](const devices::Mount& o) { return o.task_path == m.task_path; });
    if (same == into.mounts.end()) {
      into.mounts.push_back(m);
    } else if (same->host_path != m.host_path) {
      return absl::InvalidArgumentError("device mounts conflict: " + m.task_path + " is both " +
                                        same->host_path + " and " + m.host_path);
    }
  }
  for (const devices::DeviceSpec& d : from.devices) {
    auto same =
        std::find_if(into.devices.begin(), into.devices.end(),
                     [&](const devices::DeviceSpec& o) { return o.task_path == d.task_path; });
    if (same == into.devices.end()) {
      into.devices.push_back(d);
    } else if (same->host_path != d.host_path) {
      return absl::InvalidArgumentError("device nodes conflict: " + d.task_path + " is both " +
                                        same->host_path + " and " + d.host_path);
    }
  }
  return absl::OkStatus();
}

// Errors a later attempt may not see (a plugin restarting, busy or slow).
bool Transient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsAborted(s);
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
  // What an earlier start got for these same instances (also before an agent restart).
  std::optional<devices::ContainerReservation> kept;
  if (auto it = req.previous_state.find(kReservationKey);
      it != req.previous_state.end() && req.previous_state.count(kDevicesKey) != 0 &&
      req.previous_state.at(kDevicesKey) == key) {
    if (auto decoded = DecodeReservation(it->second); decoded.ok())
      kept = std::move(*decoded);
  }
  absl::Status failed;
  devices::ContainerReservation all;
  if (!reserve_) {
    failed = absl::UnavailableError("this node runs no device plugins");
  } else {
    for (const model::AllocatedDeviceResource& d : *allocated) {
      absl::StatusOr<devices::ContainerReservation> r = co_await reserve_(d);
      const absl::Status s = r.ok() ? Merge(all, std::move(*r)) : r.status();
      if (!s.ok()) {
        failed = common::Annotate(
            s, "failed to reserve device \"" + d.vendor + "/" + d.type + "/" + d.name + "\"");
        break;
      }
    }
  }
  if (!failed.ok()) {
    if (kept.has_value() && Transient(failed)) {
      // The plugin is not back yet (e.g. just after an agent restart): the devices
      // are the same instances as last time, so their reservation still holds.
      DROVER_LOG_WARN("task {} of alloc {}: {}; using the reservation of its previous start",
                      req.task->name, req.alloc->id, std::string(failed.message()));
      all = std::move(*kept);
    } else if (Transient(failed)) {
      co_return drivers::RecoverableError(std::string(failed.message()));
    } else {
      co_return failed;
    }
  }
  Apply(all, resp);
  resp->state = {{kReservationKey, EncodeReservation(all)}, {kDevicesKey, key}};
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
