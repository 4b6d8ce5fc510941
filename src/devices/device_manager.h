// The device manager (reference §5.2): runs every configured device plugin, keeps the
// node's device inventory and the latest statistics of every instance, and reserves
// instances for tasks. Lives on the control loop (no locks); plugin calls go to the
// blocking pool with a deadline (plugin_call.h).
//
// Per plugin, two loops:
//   fingerprint  polls the plugin every fingerprint period and publishes changes. A
//                failed, hung or malformed answer marks the plugin's instances
//                unhealthy (with the reason), resets the plugin and retries with
//                exponential backoff; the next good answer restores them. An instance
//                that a plugin stops reporting stays listed, unhealthy ("no longer
//                reported"), so nothing more is placed on it while a task may hold it.
//                FailedPrecondition means "not available on this host" (nvidia without
//                NVML): the plugin has no devices, and that is not an error.
//   stats        one Stats call per collection interval, whatever the number of tasks;
//                each answer is encoded to JSON once, on the manager's thread
//                (StatsSnapshot), replaces the plugin's samples and is re-indexed by
//                instance, so a task's stats are a lookup and a text copy per allocated
//                instance (AllocDeviceStatsJson).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"
#include "devices/device_plugin.h"
#include "devices/plugin_call.h"
#include "devices/stats_snapshot.h"
#include "model/allocation.h"
#include "model/device.h"

namespace drover::devices {

struct ConfiguredPlugin {
  DevicePluginPtr plugin;
  // How often the inventory is polled; zero: the manager's default.
  common::Duration fingerprint_period{0};
};

struct DeviceManagerConfig {
  common::Duration fingerprint_period = std::chrono::seconds(5);
  common::Duration stats_interval = std::chrono::seconds(1);
  // Longer than an external plugin's restart, configure and request together.
  common::Duration call_timeout = std::chrono::seconds(30);
  common::Duration backoff_initial = std::chrono::seconds(1);
  common::Duration backoff_max = std::chrono::minutes(5);
};

class DeviceManager {
 public:
  // `clock` must outlive the manager. Plugin calls run on the manager's own two
  // threads, so a plugin that hangs cannot take the agent's blocking pool with it.
  DeviceManager(asio::any_io_executor executor, common::Clock& clock,
                std::vector<ConfiguredPlugin> plugins, DeviceManagerConfig config);
  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;
  ~DeviceManager();

  // Starts each plugin's loops.
  void Start();
  // Stops the loops and waits for them (abandoned plugin calls are not waited for).
  asio::awaitable<void> Stop();
  // Completes once every plugin answered its first fingerprint (well or not), or after
  // `max`.
  asio::awaitable<void> WaitForFirstFingerprint(common::Duration max);

  bool empty() const { return plugins_.empty(); }
  // Every plugin's device groups as last published.
  std::vector<model::NodeDeviceResource> Devices() const;
  // Notified (coalescing) each time Devices() changes. One consumer (the client).
  common::Notifier& changed() { return changed_; }

  // Asks the plugin that owns `d`'s instances how to expose them to a task.
  // NotFound when no plugin has all of them ("operation on unknown device(s)");
  // Unavailable when a plugin that might have them has not answered well yet.
  asio::awaitable<absl::StatusOr<ContainerReservation>> Reserve(model::AllocatedDeviceResource d);

  // The latest samples of exactly the instances in `devices`: one group per entry that
  // has any sample, in order. Cost: one index lookup per allocated instance (FindSamples)
  // and a copy of what was found.
  std::vector<model::DeviceGroupStats> StatsFor(
      const std::vector<model::AllocatedDeviceResource>& devices) const;
  // The lookup itself: calls `found(device, sample)` for each allocated instance that
  // has a sample. The references are valid until the next stats update (do not keep
  // them across a co_await).
  template <typename Fn>
  void FindSamples(const std::vector<model::AllocatedDeviceResource>& devices, Fn found) const {
    std::string key;
    for (const model::AllocatedDeviceResource& d : devices) {
      key.clear();
      AppendKeyPrefix(d.vendor, d.type, d.name, key);
      const size_t prefix = key.size();
      for (const std::string& id : d.device_ids) {
        key.resize(prefix);
        key.append(id);
        if (auto it = index_.find(key); it != index_.end())
          found(d, *it->second);
      }
    }
  }
  // The index key of an instance is this prefix followed by its ID.
  static void AppendKeyPrefix(const std::string& vendor, const std::string& type,
                              const std::string& name, std::string& key) {
    key.append(vendor).append("/").append(type).append("/").append(name).append("\x1f");
  }
  // The latest samples of every instance.
  std::vector<model::DeviceGroupStats> AllStats() const;
  // The same as a JSON array of pre-encoded text (GET /v1/client/stats).
  std::string AllStatsJson() const;
  // Stats calls made so far, over all plugins.
  uint64_t stats_calls() const { return stats_calls_; }

 private:
  struct Plugin {
    ConfiguredPlugin config;
    std::string name;
    std::vector<model::NodeDeviceResource> devices;
    std::shared_ptr<const StatsSnapshot> stats;    // null: no samples
    bool answered = false;                         // the first fingerprint came back (well or not)
    bool healthy = false;                          // the last fingerprint was good
    std::string disabled;                          // why the plugin has no devices on this host
    std::unique_ptr<common::Event> fingerprinted;  // set by the first good fingerprint
    // Calls that missed their deadline and are still inside the plugin: no new call is
    // made while there is one, so a hung plugin holds at most one thread per loop.
    StuckCalls stuck = std::make_shared<std::atomic<int>>(0);
  };

  // CallWithDeadline on the manager's threads, unless an earlier call is stuck.
  template <typename T>
  asio::awaitable<std::optional<absl::StatusOr<T>>> Call(Plugin& p,
                                                         std::function<absl::StatusOr<T>()> fn);

  asio::awaitable<void> FingerprintLoop(Plugin& p);
  asio::awaitable<void> StatsLoop(Plugin& p);
  // Replaces `p`'s devices with a good fingerprint, keeping instances it no longer
  // reports as unhealthy.
  void Publish(Plugin& p, std::vector<model::NodeDeviceResource> fresh);
  void MarkUnhealthy(Plugin& p, const std::string& why);
  void ResetPlugin(Plugin& p);
  void RebuildIndex();
  void DropStats(Plugin& p);
  void MarkAnswered(Plugin& p);
  // Sleeps `d` unless stopped first; false when stopped.
  asio::awaitable<bool> SleepUnlessStopped(common::Duration d);
  void Spawn(asio::awaitable<void> loop, const std::string& what);

  asio::any_io_executor executor_;
  asio::thread_pool calls_{2};
  common::Clock& clock_;
  DeviceManagerConfig config_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  common::Notifier changed_;
  common::CancellationScopePtr stop_;
  int loops_running_ = 0;
  common::Notifier loop_exited_;
  common::Notifier answered_;  // some plugin answered its first fingerprint
  uint64_t stats_calls_ = 0;
  // "vendor/type/name" + '\x1f' + instance id -> its latest sample (in Plugin::stats).
  absl::flat_hash_map<std::string, const StatsSnapshot::Sample*> index_;
};

// Checks a fingerprint: vendor, type and name set, instance IDs non-empty and unique.
absl::Status ValidateDeviceGroups(const std::vector<model::NodeDeviceResource>& groups);

}  // namespace drover::devices
