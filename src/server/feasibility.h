// Node feasibility for placement: constraint targets (${attr.*}, ${node.*}, ${meta.*})
// resolved against a node, and Nomad's constraint operands. Pure functions.
#pragma once

#include <optional>
#include <string>

#include "model/job.h"
#include "model/node.h"

namespace drover::server {

// Resolves "${attr.kernel.name}", "${node.unique.id}", "${node.datacenter}",
// "${node.unique.name}", "${node.class}", "${node.pool}", "${meta.key}"; any other
// string is a literal. nullopt when the node lacks the attribute.
std::optional<std::string> ResolveTarget(const std::string& target, const model::Node& node);

// Whether `node` satisfies `c`. `distinct_hosts` and `distinct_property` are decided by
// the scheduler (they depend on other allocations) and pass here.
bool MeetsConstraint(const model::Constraint& c, const model::Node& node);

// "${attr.kernel.name} = linux": how Nomad names a constraint in placement metrics.
std::string ConstraintString(const model::Constraint& c);

// Compares dotted versions ("1.10.2" vs "1.9"): <0, 0, >0. Non-numeric parts compare
// lexically.
int CompareVersions(const std::string& a, const std::string& b);
// A version constraint such as ">= 1.2, < 2.0" (all clauses must hold).
bool VersionSatisfies(const std::string& version, const std::string& spec);

// Whether `node` is in one of `datacenters` (entries may use '*' globs).
bool DatacenterMatches(const std::vector<std::string>& datacenters, const std::string& dc);

}  // namespace drover::server
