// Nodes: a client machine as registered with the server (http-api "Node").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/job.h"

namespace drover::model {

inline constexpr char kNodeStatusInit[] = "initializing";
inline constexpr char kNodeStatusReady[] = "ready";
inline constexpr char kNodeStatusDown[] = "down";
// Missed its heartbeat while running allocations with max_client_disconnect: they are
// `unknown` until the node comes back or the longest window passes (then it is down).
inline constexpr char kNodeStatusDisconnected[] = "disconnected";

struct DriverInfo {
  std::map<std::string, std::string> attributes;
  bool detected = false;
  bool healthy = false;
  std::string health_description;
  Time update_time{};
  friend bool operator==(const DriverInfo&, const DriverInfo&) = default;
};

struct NodeResources {
  int64_t cpu_shares = 0;  // total MHz
  int64_t total_cores = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  std::vector<NetworkResource> networks;
  int min_dynamic_port = 20000;
  int max_dynamic_port = 32000;
  // Device groups from the node's device plugins (reference §5.4).
  std::vector<NodeDeviceResource> devices;
  friend bool operator==(const NodeResources&, const NodeResources&) = default;
};

struct NodeReservedResources {
  int64_t cpu_shares = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  std::string reserved_host_ports;
  friend bool operator==(const NodeReservedResources&, const NodeReservedResources&) = default;
};

inline constexpr char kDrainStatusDraining[] = "draining";
inline constexpr char kDrainStatusComplete[] = "complete";
inline constexpr char kDrainStatusCanceled[] = "canceled";

// A drain in progress (Nomad's DrainStrategy). `deadline` as given: negative forces
// every allocation off at once, zero means no deadline. `force_deadline` is when what
// is left is stopped (zero time without a deadline).
struct DrainStrategy {
  Duration deadline{0};
  Time force_deadline{};
  bool ignore_system_jobs = false;
  Time started_at{};
  friend bool operator==(const DrainStrategy&, const DrainStrategy&) = default;
};

// What the node's latest drain was (Nomad's DrainMetadata, LastDrain).
struct DrainMetadata {
  Time started_at{};
  Time updated_at{};
  std::string status;  // kDrainStatus*
  std::map<std::string, std::string> meta;
  // Drover's own: the drain left system allocations running, so the node keeps them
  // while it stays ineligible after the drain (until its eligibility is set again).
  bool ignore_system_jobs = false;
  friend bool operator==(const DrainMetadata&, const DrainMetadata&) = default;
};

// Something that happened to a node, as operators see it in `node status` (Nomad's
// NodeEvent). The servers record their own (registration, missed heartbeats, drain,
// eligibility); clients send theirs (a driver's health) through the protocol.
inline constexpr char kNodeEventCluster[] = "Cluster";
inline constexpr char kNodeEventDrain[] = "Drain";
inline constexpr char kNodeEventDriver[] = "Driver";
inline constexpr size_t kMaxNodeEvents = 10;  // the newest are kept, as in Nomad
// What a client may send at once, and how large each event may be (servers refuse
// more): the message, and the subsystem, detail keys and detail values.
inline constexpr size_t kMaxNodeEventsPerCall = kMaxNodeEvents;
inline constexpr size_t kMaxNodeEventMessageBytes = 1024;
inline constexpr size_t kMaxNodeEventDetails = 16;
inline constexpr size_t kMaxNodeEventFieldBytes = 256;

struct NodeEvent {
  std::string message;
  std::string subsystem;
  std::map<std::string, std::string> details;
  Time timestamp{};
  uint64_t create_index = 0;  // the index of the write that stored it
  friend bool operator==(const NodeEvent&, const NodeEvent&) = default;
};

struct Node {
  std::string id;
  std::string secret_id;
  std::string datacenter;
  std::string name;
  std::string http_addr;
  std::map<std::string, std::string> attributes;
  NodeResources node_resources;
  NodeReservedResources reserved_resources;
  std::map<std::string, std::string> meta;
  std::string node_class;
  std::string node_pool = "default";
  // "v1:<hash>" of what makes nodes interchangeable for placement (ComputeNodeClass).
  std::string computed_class;
  bool drain = false;  // drain_strategy is set
  std::optional<DrainStrategy> drain_strategy;
  std::optional<DrainMetadata> last_drain;
  std::string scheduling_eligibility = "eligible";
  std::string status;
  std::string status_description;
  int64_t status_updated_at = 0;  // Unix seconds, as Nomad
  std::map<std::string, DriverInfo> drivers;
  std::vector<NodeEvent> events;  // oldest first, at most kMaxNodeEvents
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const Node&, const Node&) = default;
};

// Appends `event`, dropping the oldest beyond kMaxNodeEvents.
void AddNodeEvent(Node& node, NodeEvent event);

// The computed node class (reference §5.4): a stable hash over the datacenter, node
// class and pool, attributes and meta (keys not starting with "unique."), and each
// device group's vendor, type, name and attributes. Instance IDs, counts, health and
// locality are left out, so the class does not change when a GPU turns unhealthy or
// when a node has more GPUs of the same model.
std::string ComputeNodeClass(const Node& node);

}  // namespace drover::model
