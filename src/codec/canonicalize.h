// Nomad's registration defaults (api Canonicalize, see http-api.md "Defaults applied on
// registration"): Region "global", Namespace "default", Type "service", Priority 50,
// Name = ID, Datacenters ["*"], NodePool "default", group Count 1, restart and
// reschedule policies by job type, EphemeralDisk 300 MB, KillTimeout 5 s, LogConfig
// 10 files x 10 MB, CPU 100 MHz / MemoryMB 300 when unset, task restart policy merged
// over the group's.
#pragma once

#include "model/job.h"

namespace drover::codec {

void CanonicalizeJob(model::Job& job);

}  // namespace drover::codec
