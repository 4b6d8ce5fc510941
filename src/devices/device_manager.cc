#include "devices/device_manager.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"

#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"
#include "devices/plugin_call.h"
#include "model/task_state.h"

namespace drover::devices {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

std::string IndexKey(const std::string& vendor, const std::string& type, const std::string& name,
                     const std::string& id) {
  std::string key;
  DeviceManager::AppendKeyPrefix(vendor, type, name, key);
  return key.append(id);
}

}  // namespace

absl::Status ValidateDeviceGroups(const std::vector<model::NodeDeviceResource>& groups) {
  std::set<std::string> ids;
  for (size_t i = 0; i < groups.size(); ++i) {
    const model::NodeDeviceResource& g = groups[i];
    if (g.vendor.empty() || g.type.empty() || g.name.empty()) {
      return absl::InvalidArgumentError("device group " + std::to_string(i) +
                                        " lacks a vendor, type or name");
    }
    for (const model::DeviceInstance& d : g.instances) {
      if (d.id.empty())
        return absl::InvalidArgumentError("device group \"" + g.IdString() +
                                          "\" has an instance without an ID");
      if (!ids.insert(d.id).second)
        return absl::InvalidArgumentError("instance ID \"" + d.id + "\" is reported twice");
    }
  }
  return absl::OkStatus();
}

DeviceManager::DeviceManager(asio::any_io_executor executor, common::Clock& clock,
                             std::vector<ConfiguredPlugin> plugins, DeviceManagerConfig config)
    : executor_(executor),
      clock_(clock),
      config_(config),
      changed_(executor),
      stop_(common::CancellationScope::Create(executor)),
      loop_exited_(executor),
      answered_(executor) {
  for (ConfiguredPlugin& c : plugins) {
    auto p = std::make_unique<Plugin>();
    p->name = c.plugin->Name();
    if (c.fingerprint_period <= common::Duration::zero())
      c.fingerprint_period = config_.fingerprint_period;
    p->config = std::move(c);
    p->fingerprinted = std::make_unique<common::Event>(executor);
    plugins_.push_back(std::move(p));
  }
}

// Waits for plugin calls still running (a call stuck in a plugin for good keeps the
// process from exiting, as it would any thread).
DeviceManager::~DeviceManager() {
  calls_.join();
}

template <typename T>
asio::awaitable<std::optional<absl::StatusOr<T>>> DeviceManager::Call(
    Plugin& p, std::function<absl::StatusOr<T>()> fn) {
  if (p.stuck->load() > 0) {
    co_return absl::StatusOr<T>(absl::UnavailableError(
        "an earlier call has not returned after " + model::FormatGoDuration(config_.call_timeout) +
        "; not calling it again yet"));
  }
  co_return co_await CallWithDeadline(calls_, clock_, config_.call_timeout, *stop_, p.stuck,
                                      std::move(fn));
}

void DeviceManager::Spawn(asio::awaitable<void> loop, const std::string& what) {
  ++loops_running_;
  auto wrapped = [](DeviceManager* self, asio::awaitable<void> l) -> asio::awaitable<void> {
    co_await std::move(l);
    --self->loops_running_;
    self->loop_exited_.Notify();
  };
  common::SpawnDetached(executor_, wrapped(this, std::move(loop)), what);
}

void DeviceManager::Start() {
  for (auto& p : plugins_) {
    Spawn(FingerprintLoop(*p), "device plugin " + p->name + " fingerprint");
    Spawn(StatsLoop(*p), "device plugin " + p->name + " stats");
  }
}

asio::awaitable<void> DeviceManager::Stop() {
  stop_->Cancel();
  while (loops_running_ > 0)
    co_await loop_exited_.Wait();
}

asio::awaitable<bool> DeviceManager::SleepUnlessStopped(common::Duration d) {
  if (stop_->cancelled())
    co_return false;
  auto sleep = clock_.Sleep(d);
  auto stopped = stop_->Wait();
  auto r = co_await (std::move(sleep) || std::move(stopped));
  co_return r.index() == 0;
}

asio::awaitable<void> DeviceManager::WaitForFirstFingerprint(common::Duration max) {
  const common::Time deadline = clock_.Now() + max;
  auto all_answered = [this] {
    return std::all_of(plugins_.begin(), plugins_.end(), [](const auto& p) { return p->answered; });
  };
  while (!all_answered() && !stop_->cancelled()) {
    const common::Duration left = deadline - clock_.Now();
    if (left <= common::Duration::zero())
      co_return;
    auto answered = answered_.Wait();
    auto timeout = clock_.Sleep(left);
    co_await (std::move(answered) || std::move(timeout));
  }
}

void DeviceManager::MarkAnswered(Plugin& p) {
  if (p.answered)
    return;
  p.answered = true;
  answered_.Notify();
}

std::vector<model::NodeDeviceResource> DeviceManager::Devices() const {
  std::vector<model::NodeDeviceResource> out;
  for (const auto& p : plugins_)
    out.insert(out.end(), p->devices.begin(), p->devices.end());
  return out;
}

void DeviceManager::ResetPlugin(Plugin& p) {
  // Reset does not block (device_plugin.h): it must work while a call is stuck.
  p.config.plugin->Reset();
}

void DeviceManager::MarkUnhealthy(Plugin& p, const std::string& why) {
  bool changed = false;
  for (model::NodeDeviceResource& g : p.devices) {
    for (model::DeviceInstance& d : g.instances) {
      if (d.healthy || d.health_description != why) {
        d.healthy = false;
        d.health_description = why;
        changed = true;
      }
    }
  }
  p.healthy = false;
  DropStats(p);  // samples of a failing plugin are no longer current
  if (changed)
    changed_.Notify();
}

void DeviceManager::Publish(Plugin& p, std::vector<model::NodeDeviceResource> fresh) {
  std::set<std::string> reported;
  for (const model::NodeDeviceResource& g : fresh) {
    for (const model::DeviceInstance& d : g.instances)
      reported.insert(d.id);
  }
  // Instances that vanished stay listed, unhealthy, in their old group.
  for (const model::NodeDeviceResource& old : p.devices) {
    std::vector<model::DeviceInstance> gone;
    for (const model::DeviceInstance& d : old.instances) {
      if (reported.contains(d.id))
        continue;
      if (d.healthy || d.health_description.rfind("no longer reported", 0) != 0) {
        DROVER_LOG_WARN("device plugin '{}': device {} ({}) is no longer reported", p.name, d.id,
                        old.IdString());
      }
      model::DeviceInstance v = d;
      v.healthy = false;
      v.health_description = "no longer reported by device plugin '" + p.name + "'";
      gone.push_back(std::move(v));
    }
    if (gone.empty())
      continue;
    auto same = std::find_if(fresh.begin(), fresh.end(), [&](const model::NodeDeviceResource& g) {
      return g.vendor == old.vendor && g.type == old.type && g.name == old.name &&
             g.attributes == old.attributes;
    });
    if (same == fresh.end()) {
      model::NodeDeviceResource g = old;
      g.instances = std::move(gone);
      fresh.push_back(std::move(g));
    } else {
      same->instances.insert(same->instances.end(), gone.begin(), gone.end());
    }
  }
  p.healthy = true;
  if (fresh != p.devices) {
    p.devices = std::move(fresh);
    changed_.Notify();
  }
}

asio::awaitable<void> DeviceManager::FingerprintLoop(Plugin& p) {
  common::Duration backoff = config_.backoff_initial;
  while (!stop_->cancelled()) {
    DevicePluginPtr plugin = p.config.plugin;
    std::function<absl::StatusOr<std::vector<model::NodeDeviceResource>>()> call = [plugin] {
      return plugin->Fingerprint();
    };
    auto r = co_await Call(p, std::move(call));
    if (stop_->cancelled())
      break;
    absl::Status error;
    if (!r.has_value()) {
      error = absl::DeadlineExceededError("no answer within " +
                                          model::FormatGoDuration(config_.call_timeout));
    } else if (!r->ok()) {
      error = r->status();
    } else {
      error = ValidateDeviceGroups(**r);
      if (!error.ok())
        error = common::Annotate(error, "malformed fingerprint");
    }
    if (r.has_value() && absl::IsFailedPrecondition(error)) {
      // Not available on this host: no devices, quietly, checked again now and then.
      if (p.disabled != error.message()) {
        DROVER_LOG_INFO("device plugin '{}' has no devices: {}", p.name,
                        std::string(error.message()));
        p.disabled = std::string(error.message());
      }
      MarkAnswered(p);
      Publish(p, {});
      p.healthy = false;
      DropStats(p);
      if (!co_await SleepUnlessStopped(p.config.fingerprint_period * 12))
        break;
      continue;
    }
    MarkAnswered(p);
    p.disabled.clear();
    if (!error.ok()) {
      const std::string why =
          "device plugin '" + p.name + "' failed: " + std::string(error.message());
      DROVER_LOG_WARN("{}; its devices are marked unhealthy; retrying in {}", why,
                      model::FormatGoDuration(backoff));
      MarkUnhealthy(p, why);
      ResetPlugin(p);
      if (!co_await SleepUnlessStopped(backoff))
        break;
      backoff = std::min(backoff * 2, config_.backoff_max);
      continue;
    }
    if (!p.healthy && p.fingerprinted->IsSet())
      DROVER_LOG_INFO("device plugin '{}' answers again", p.name);
    backoff = config_.backoff_initial;
    Publish(p, std::move(**r));
    p.fingerprinted->Set();
    if (!co_await SleepUnlessStopped(p.config.fingerprint_period))
      break;
  }
}

asio::awaitable<void> DeviceManager::StatsLoop(Plugin& p) {
  {
    auto first = p.fingerprinted->Wait();
    auto stopped = stop_->Wait();
    co_await (std::move(first) || std::move(stopped));
  }
  while (!stop_->cancelled()) {
    if (p.healthy) {
      DevicePluginPtr plugin = p.config.plugin;
      // Encoded here, on the manager's thread, once per answer.
      using Answer = std::shared_ptr<const StatsSnapshot>;
      std::function<absl::StatusOr<Answer>()> call = [plugin]() -> absl::StatusOr<Answer> {
        absl::StatusOr<std::vector<model::DeviceGroupStats>> r = plugin->Stats();
        if (!r.ok())
          return r.status();
        return std::make_shared<const StatsSnapshot>(std::move(*r));
      };
      ++stats_calls_;
      auto r = co_await Call(p, std::move(call));
      if (stop_->cancelled())
        break;
      if (!p.healthy) {
        // The plugin failed while this call was out: its answer is not trusted.
      } else if (r.has_value() && r->ok()) {
        p.stats = std::move(**r);
        RebuildIndex();
      } else {
        const std::string why =
            r.has_value() ? std::string(r->status().message())
                          : "no answer within " + model::FormatGoDuration(config_.call_timeout);
        DROVER_LOG_WARN("device plugin '{}': stats failed: {}", p.name, why);
        DropStats(p);
        // The fingerprint loop decides about health; a plugin whose stats hang is reset.
        if (!r.has_value())
          ResetPlugin(p);
      }
    }
    if (!co_await SleepUnlessStopped(config_.stats_interval))
      break;
  }
}

void DeviceManager::DropStats(Plugin& p) {
  if (p.stats != nullptr) {
    p.stats.reset();
    RebuildIndex();
  }
}

void DeviceManager::RebuildIndex() {
  index_.clear();
  for (const auto& p : plugins_) {
    if (p->stats == nullptr)
      continue;
    size_t next = 0;
    for (const model::DeviceGroupStats& g : p->stats->groups()) {
      for (size_t k = 0; k < g.instance_stats.size(); ++k, ++next) {
        const StatsSnapshot::Sample& s = p->stats->samples()[next];
        index_[IndexKey(g.vendor, g.type, g.name, *s.id)] = &s;
      }
    }
  }
}

asio::awaitable<absl::StatusOr<ContainerReservation>> DeviceManager::Reserve(
    model::AllocatedDeviceResource d) {
  const std::string what = "\"" + d.vendor + "/" + d.type + "/" + d.name + "\" (" +
                           absl::StrJoin(d.device_ids, ", ") + ")";
  Plugin* owner = nullptr;
  for (auto& p : plugins_) {
    for (const model::NodeDeviceResource& g : p->devices) {
      if (g.vendor != d.vendor || g.type != d.type || g.name != d.name)
        continue;
      const bool all = std::all_of(d.device_ids.begin(), d.device_ids.end(), [&](const auto& id) {
        return std::any_of(g.instances.begin(), g.instances.end(),
                           [&](const model::DeviceInstance& i) { return i.id == id; });
      });
      if (all)
        owner = p.get();
    }
  }
  if (owner == nullptr || d.device_ids.empty()) {
    // A plugin that has not answered well (yet) may still own them: worth a retry.
    for (auto& p : plugins_) {
      if (!p->healthy && p->disabled.empty())
        co_return absl::UnavailableError("device plugin '" + p->name +
                                         "' has not reported its devices; cannot reserve " + what);
    }
    co_return absl::NotFoundError("operation on unknown device(s) " + what);
  }
  DevicePluginPtr plugin = owner->config.plugin;
  std::function<absl::StatusOr<ContainerReservation>()> call = [plugin, ids = d.device_ids] {
    return plugin->Reserve(ids);
  };
  auto r = co_await Call(*owner, std::move(call));
  if (!r.has_value()) {
    ResetPlugin(*owner);
    co_return absl::DeadlineExceededError("device plugin '" + owner->name +
                                          "' did not answer within " +
                                          model::FormatGoDuration(config_.call_timeout));
  }
  co_return std::move(*r);
}

std::vector<model::DeviceGroupStats> DeviceManager::StatsFor(
    const std::vector<model::AllocatedDeviceResource>& devices) const {
  std::vector<model::DeviceGroupStats> out;
  const model::AllocatedDeviceResource* current = nullptr;
  FindSamples(devices,
              [&](const model::AllocatedDeviceResource& d, const StatsSnapshot::Sample& s) {
                if (current != &d) {
                  out.push_back({.vendor = d.vendor, .type = d.type, .name = d.name});
                  current = &d;
                }
                out.back().instance_stats.emplace(*s.id, *s.stats);
              });
  return out;
}

std::vector<model::DeviceGroupStats> DeviceManager::AllStats() const {
  std::vector<model::DeviceGroupStats> out;
  for (const auto& p : plugins_) {
    if (p->stats != nullptr)
      out.insert(out.end(), p->stats->groups().begin(), p->stats->groups().end());
  }
  return out;
}

std::string DeviceManager::AllStatsJson() const {
  std::string out = "[";
  for (const auto& p : plugins_) {
    if (p->stats == nullptr || p->stats->groups().empty())
      continue;
    if (out.size() > 1)
      out.push_back(',');
    p->stats->AppendGroups(out);
  }
  out.push_back(']');
  return out;
}

}  // namespace drover::devices
