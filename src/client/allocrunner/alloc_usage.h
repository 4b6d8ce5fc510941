// An allocation's resource usage as Nomad reports it (AllocResourceUsage): each task's
// latest sample, and the allocation's usage as their sum.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "drivers/driver.h"

namespace drover::allocrunner {

struct AllocUsage {
  std::map<std::string, drivers::TaskResourceUsage> tasks;  // those sampled so far
  drivers::MemoryUsage memory;                              // the tasks' sum
  drivers::CpuUsage cpu;                                    // the tasks' sum
  int64_t timestamp = 0;                                    // the latest task sample
};

// Sums the tasks' samples. Counters add up; `measured` lists come from the first task
// that has one (every task of a node is measured the same way).
AllocUsage SumUsage(std::map<std::string, drivers::TaskResourceUsage> tasks);

}  // namespace drover::allocrunner
