// Nodes: a client machine as registered with the server (http-api "Node").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/job.h"

namespace drover::model {

inline constexpr char kNodeStatusInit[] = "initializing";
inline constexpr char kNodeStatusReady[] = "ready";
inline constexpr char kNodeStatusDown[] = "down";

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
  bool drain = false;
  std::string scheduling_eligibility = "eligible";
  std::string status;
  std::string status_description;
  int64_t status_updated_at = 0;  // Unix seconds, as Nomad
  std::map<std::string, DriverInfo> drivers;
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const Node&, const Node&) = default;
};

// The computed node class (reference §5.4): a stable hash over the datacenter, node
// class and pool, attributes and meta (keys not starting with "unique."), and each
// device group's vendor, type, name and attributes. Instance IDs, counts, health and
// locality are left out, so the class does not change when a GPU turns unhealthy or
// when a node has more GPUs of the same model.
std::string ComputeNodeClass(const Node& node);

}  // namespace drover::model
