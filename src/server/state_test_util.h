// What tests compare of a StateStore: everything a reader of the API could see.
#pragma once

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "server/state_store.h"

namespace drover::server::test {

// Everything a reader of the API could see, as JSON.
inline codec::Json Snapshot(const StateStore& s) {
  codec::Json out;
  for (const JobPtr& j : s.ListJobs("*", "")) {
    for (const JobPtr& v : s.JobVersions(j->namespace_, j->id))
      out["jobs"][j->id].push_back(codec::ToJson(*v));
    out["job_allocs"][j->id] = s.AllocsByJob(j->namespace_, j->id).size();
    out["job_evals"][j->id] = s.EvalsByJob(j->namespace_, j->id).size();
  }
  for (const EvalPtr& e : s.ListEvals("*", ""))
    out["evals"].push_back(codec::ToJson(*e));
  for (const AllocPtr& a : s.ListAllocs("*", ""))
    out["allocs"].push_back(codec::ToJson(*a));
  for (const NodePtr& n : s.ListNodes("")) {
    out["nodes"].push_back(codec::ToJson(*n));
    out["node_allocs"][n->id] = s.AllocsByNode(n->id).size();
  }
  out["index"] = s.LatestIndex();
  for (Table t : {Table::kJobs, Table::kEvals, Table::kAllocs, Table::kNodes})
    out["tables"].push_back(s.TableIndex(t));
  return out;
}

}  // namespace drover::server::test
