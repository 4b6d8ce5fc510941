// Node fingerprinting: what this machine is and has (cpu, memory, disk, kernel, OS,
// hostname, network, drivers) as a model::Node ready to register. The node ID and
// secret are generated once and persisted in <data_dir>/client/ so the node keeps its
// identity across agent restarts.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "absl/status/statusor.h"

#include "drivers/driver.h"
#include "model/node.h"

namespace drover::fingerprint {

struct FingerprintConfig {
  std::filesystem::path data_dir;
  std::string node_name;  // empty: hostname
  std::string datacenter = "dc1";
  std::string node_class;
  std::string http_addr;  // "127.0.0.1:4646"
  bool dev_mode = false;  // network fingerprint uses loopback
  std::map<std::string, std::string> meta;
};

absl::StatusOr<model::Node> FingerprintNode(const FingerprintConfig& config,
                                            const std::map<std::string, drivers::Driver*>& drivers);

// Sets `n.drivers` (and the driver.* attributes) from each driver's fingerprint.
// Returns whether anything changed; an unchanged driver keeps its UpdateTime. Calls
// Driver::Fingerprint, so it runs where the drivers live (the control loop).
bool ApplyDriverFingerprints(model::Node& n,
                             const std::map<std::string, drivers::Driver*>& drivers);

// The node events (subsystem Driver, detail "driver") for drivers whose detection or
// health differs between `before` and `after`; a driver seen for the first time makes
// none. The message is the driver's health description in ASCII (other bytes become
// '?'), cut to model::kMaxNodeEventMessageBytes.
std::vector<model::NodeEvent> DriverHealthEvents(
    const std::map<std::string, model::DriverInfo>& before,
    const std::map<std::string, model::DriverInfo>& after, common::Time now);

// Reads <dir>/<name>, or creates it with a new UUID (mode 0600).
absl::StatusOr<std::string> LoadOrCreateId(const std::filesystem::path& dir,
                                           const std::string& name);

}  // namespace drover::fingerprint
