// An allocation's resource usage as Nomad reports it (AllocResourceUsage): each task's
// latest sample, and the allocation's usage as their sum.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "drivers/driver.h"
#include "model/usage.h"

namespace drover::allocrunner {

using model::AllocUsage;

// Sums the tasks' samples. Counters add up; `measured` lists come from the first task
// that has one (every task of a node is measured the same way).
AllocUsage SumUsage(std::map<std::string, drivers::TaskResourceUsage> tasks);

// Sets every CPU sample's TotalTicks (the MHz in use) from its percentage of one core
// and the core's clock.
void FillTotalTicks(AllocUsage& usage, double core_mhz);

}  // namespace drover::allocrunner
