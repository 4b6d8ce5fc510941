// Periodic and parameterized jobs' children (Nomad's periodic dispatcher and
// Job.Dispatch): when a periodic job launches next, and the child job a launch or a
// dispatch registers. Pure functions of the job; the server's loop and writes are in
// periodic.cc and job_dispatch.cc.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "model/job.h"
#include "model/server_types.h"

namespace drover::server {

// The first launch of `periodic` strictly after `after`: the earliest of its crons in
// its time zone. None when no cron has another launch (or the block does not parse,
// which validation refuses).
std::optional<common::Time> NextPeriodicLaunch(const model::PeriodicConfig& periodic,
                                               common::Time after);

// The child a launch of `parent` at `launch` registers: `<parent>/periodic-<unix>`,
// named so, with ParentID set and no periodic block of its own.
model::Job PeriodicChild(const model::Job& parent, common::Time launch);

// The child a dispatch registers: `<parent>/dispatch-[<template>-]<unix>-<8 hex>`,
// Dispatched, with the request's meta merged over the parent's and its payload.
model::Job DispatchChild(const model::Job& parent, const model::DispatchRequest& request,
                         common::Time now);

}  // namespace drover::server
