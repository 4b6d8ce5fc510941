// The largest value every number, list and map in a job may have (docs/security.md).
// Each is far above what a Nomad user writes, and below what would let one request
// hold the control loop, the scheduler or memory: validation and scheduling cost grows
// with the size of the job, never with the value of a field.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/job.h"

namespace drover::codec {

struct JobLimits {
  static constexpr int kMaxCount = 10'000;           // allocations of one group
  static constexpr size_t kMaxGroups = 256;          // groups of a job
  static constexpr size_t kMaxTasks = 256;           // tasks of a group
  static constexpr size_t kMaxConstraints = 64;      // per job, group, task or device
  static constexpr size_t kMaxPorts = 256;           // ports of a network
  static constexpr size_t kMaxDevices = 64;          // device requests of a task
  static constexpr uint64_t kMaxDeviceCount = 1024;  // instances of one request
  static constexpr size_t kMaxDatacenters = 256;
  static constexpr size_t kMaxMapEntries = 1024;        // meta and env entries
  static constexpr size_t kMaxNameBytes = 256;          // IDs and names
  static constexpr size_t kMaxStringBytes = 64 << 10;   // meta and env values, any other string
  static constexpr size_t kMaxPayloadBytes = 16 << 10;  // a dispatched job's payload (Nomad's)
  static constexpr size_t kMaxCronSpecs = 64;           // a periodic block's crons
  // What a child's ID adds to its template's: "/dispatch-<unix>-<8 hex>" (29 bytes;
  // and a dispatch's id prefix template, which the child's own ID limit bounds) and
  // "/periodic-<unix>" (20).
  static constexpr size_t kDispatchIdSuffixBytes = 29;
  static constexpr size_t kPeriodicIdSuffixBytes = 20;
  static constexpr size_t kMaxTaskEnvBytes = 1 << 20;  // a task's env and meta together
  static constexpr int kMaxConfigDepth = 64;           // nesting of a task's `config`
  static constexpr int kMaxAttempts = 1'000;           // restart and reschedule attempts
  static constexpr int64_t kMaxCpuMhz = 4'000'000;
  static constexpr int64_t kMaxMemoryMb = 16 << 20;   // 16 TiB
  static constexpr int64_t kMaxDiskMb = 100'000'000;  // 100 TB
  static constexpr int kMaxLogFiles = 1'000;
  static constexpr int kMaxLogFileSizeMb = 100'000;
  // Every duration (restart and reschedule timing, kill_timeout, shutdown_delay).
  static constexpr std::chrono::nanoseconds kMaxDuration = std::chrono::hours(24 * 366);
};

// Appends one message per limit `job` passes. Runs before the rest of validation, which
// is skipped when this finds anything (its cost would then follow the values).
void CheckJobLimits(const model::Job& job, std::vector<std::string>& errs);

}  // namespace drover::codec
