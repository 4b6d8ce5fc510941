// Device placement (reference §5.3): which of a node's device instances a task group's
// `device` requests get. Pure functions, used by the scheduler for each candidate node.
//
// A request ("nvidia/gpu", count 2, constraints, affinities) is met from one device
// group whose name matches (type, vendor/type or vendor/type/name) and whose attributes
// meet every constraint, using only healthy instances that no other allocation (nor an
// earlier request of the same allocation) holds. Among groups that can serve it, the
// one with the best affinity score wins; ties go to the node's order.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/allocation.h"
#include "model/job.h"
#include "model/node.h"

namespace drover::server {

// Key of one instance in a node's set of used instances. Not by model name: a plugin
// that renames a group (a driver update) keeps its instance IDs, and an instance held
// under the old name must not look free under the new one.
std::string DeviceInstanceKey(const std::string& vendor, const std::string& type,
                              const std::string& id);

// Adds the instances an allocated task holds to `used`.
void AddUsedDevices(const model::AllocatedTaskResources& r, std::set<std::string>& used);

// Whether a device group meets a constraint on ${device.vendor}, ${device.type},
// ${device.model} or ${device.attr.<name>}; numbers compare with units ("4 GiB").
bool MeetsDeviceConstraint(const model::Constraint& c, const model::NodeDeviceResource& group);

struct DeviceAssignment {
  std::map<std::string, std::vector<model::AllocatedDeviceResource>> tasks;  // by task name
  // Mean over requests with affinities of (matched weights / total |weights|), in
  // [-1, 1]; 0 when no request has affinities.
  double affinity_score = 0;
};

// Why a node cannot serve the group's devices: `filtered` when the node lacks a
// matching device at all (a constraint-style reason), else resources are exhausted.
struct DeviceFailure {
  bool filtered = false;
  std::string reason;
};

// Assigns instances for every task's device requests on `node`, or says why not.
std::optional<DeviceFailure> AssignDevices(const model::TaskGroup& group, const model::Node& node,
                                           const std::set<std::string>& used,
                                           DeviceAssignment& out);

}  // namespace drover::server
