// The servers' garbage collection (Nomad's core scheduler, restated): what finished
// long enough ago leaves the state, so that a cluster that runs jobs for months does
// not hold every evaluation and allocation it ever made. The leader runs it every
// gc_interval; PUT /v1/system/gc runs it now with every threshold at zero.
//
// What goes, each older than its threshold (by its last change):
//  - an allocation that finished on its client (complete, failed or lost), or that
//    the servers stopped on a node that is down or gone. A failed allocation of a live
//    job is kept until it has a replacement: the reschedule policy still counts it;
//  - an evaluation that is complete, failed or canceled, once every allocation it made
//    goes too (eval_gc_threshold; batch_eval_gc_threshold for batch jobs). A batch
//    job's evaluations and allocations stay while the job is neither stopped nor dead:
//    they are its results;
//  - a job that is dead and was last registered job_gc_threshold ago, with all of its
//    evaluations and allocations by that threshold (all its versions go with it);
//  - a node that has been down for node_gc_threshold and holds nothing that runs;
//  - a deployment that ended eval_gc_threshold ago, and every deployment of a job
//    that goes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "server/state_store.h"

namespace drover::server {

struct GcThresholds {
  common::Duration eval = std::chrono::hours(1);
  common::Duration batch_eval = std::chrono::hours(24);
  common::Duration job = std::chrono::hours(4);
  common::Duration node = std::chrono::hours(24);

  // PUT /v1/system/gc: everything eligible, whatever its age.
  static GcThresholds Forced() {
    return {common::Duration(0), common::Duration(0), common::Duration(0), common::Duration(0)};
  }
};

// What goes: StateStore::Remove takes it out.
using Garbage = StateStore::Removal;

// What the collection removes from `state` at `now`. Pure: changes nothing.
Garbage FindGarbage(const StateStore& state, const GcThresholds& thresholds, common::Time now);

}  // namespace drover::server
