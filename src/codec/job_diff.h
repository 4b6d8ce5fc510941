// Diffs two versions of a job as Nomad does (model/job_diff.h), from their API JSON so
// that every field diffs under the name Nomad's API gives it:
// - a level's primitive fields are flattened ("Count", "Meta[owner]", "Env[PATH]");
// - nested blocks are objects ("RestartPolicy", "Resources", "LogConfig"), lists of
//   blocks are sets of objects matched by value ("Constraint", "Network", "Static
//   Port"), lists of strings are sets of fields ("Datacenters");
// - a task's Config is one object flattened all the way down ("args[0]",
//   "port_map[0][db]");
// - task groups and tasks are matched by name.
// With `contextual`, the fields that did not change inside a changed object are listed
// too (type "None"), to show what the change is in; unchanged objects never are, nor
// the unchanged fields of the job, a group or a task. Task groups and tasks are always
// listed. Server-managed fields (indexes, version, status, submit
// time) are not compared.
#pragma once

#include "codec/json.h"
#include "model/job.h"
#include "model/job_diff.h"
#include "model/server_types.h"

namespace drover::codec {

// `old_job` or `new_job` may be null (the job is added or deleted). REQUIRES: both
// non-null jobs have the same ID.
model::JobDiff DiffJobs(const model::Job* old_job, const model::Job* new_job, bool contextual);

// The JSON Nomad's API gives the diff (JobDiff with Type, ID, Fields, Objects,
// TaskGroups; FieldDiff with Type, Name, Old, New, Annotations).
Json ToJson(const model::JobDiff& diff);
Json ToJson(const model::DesiredUpdates& updates);
// Nomad's JobPlanResponse: Annotations {DesiredTGUpdates, PreemptedAllocs},
// FailedTGAllocs, JobModifyIndex, CreatedEvals, Diff, NextPeriodicLaunch, Warnings,
// Index.
Json PlanResponseJson(const model::JobPlan& plan);

}  // namespace drover::codec
