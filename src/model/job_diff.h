// What changed between two versions of a job, in the shape of Nomad's JobDiff: what
// `GET /v1/job/:id/versions?diffs=true` and a plan return, and `job plan` and
// `job history -p` print. Computed by codec::DiffJobs; a plan annotates it with the
// scheduler's decisions (server/plan_annotate.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace drover::model {

inline constexpr char kDiffAdded[] = "Added";
inline constexpr char kDiffDeleted[] = "Deleted";
inline constexpr char kDiffEdited[] = "Edited";
inline constexpr char kDiffNone[] = "None";

// Annotations a plan puts on task diffs and on a group's Count.
inline constexpr char kAnnotationForcesCreate[] = "forces create";
inline constexpr char kAnnotationForcesDestroy[] = "forces destroy";
inline constexpr char kAnnotationForcesInPlace[] = "forces in-place update";
inline constexpr char kAnnotationForcesDestructive[] = "forces create/destroy update";

// One flattened field ("Count", "Meta[owner]", "args[0]"); values are as Nomad prints
// them: strings as they are, numbers in decimal (durations in nanoseconds), booleans
// "true"/"false". A side that does not have the field is "".
struct FieldDiff {
  std::string type;  // kDiff*
  std::string name;
  std::string old_value;
  std::string new_value;
  std::vector<std::string> annotations;
  friend bool operator==(const FieldDiff&, const FieldDiff&) = default;
};

struct ObjectDiff {
  std::string type;
  std::string name;
  std::vector<FieldDiff> fields;
  std::vector<ObjectDiff> objects;
  friend bool operator==(const ObjectDiff&, const ObjectDiff&) = default;
};

struct TaskDiff {
  std::string type;
  std::string name;
  std::vector<FieldDiff> fields;
  std::vector<ObjectDiff> objects;
  std::vector<std::string> annotations;
  friend bool operator==(const TaskDiff&, const TaskDiff&) = default;
};

struct TaskGroupDiff {
  std::string type;
  std::string name;
  std::vector<FieldDiff> fields;
  std::vector<ObjectDiff> objects;
  std::vector<TaskDiff> tasks;
  // Update type ("create", "destroy", "in-place update", ...) -> how many (plans only).
  std::map<std::string, uint64_t> updates;
  friend bool operator==(const TaskGroupDiff&, const TaskGroupDiff&) = default;
};

struct JobDiff {
  std::string type;
  std::string id;
  std::vector<FieldDiff> fields;
  std::vector<ObjectDiff> objects;
  std::vector<TaskGroupDiff> task_groups;
  friend bool operator==(const JobDiff&, const JobDiff&) = default;
};

// What a plan would do to one task group's allocations (Nomad's DesiredUpdates).
struct DesiredUpdates {
  uint64_t ignore = 0;
  uint64_t place = 0;
  uint64_t migrate = 0;
  uint64_t stop = 0;
  uint64_t in_place_update = 0;
  uint64_t destructive_update = 0;
  uint64_t canary = 0;
  uint64_t preemptions = 0;
  friend bool operator==(const DesiredUpdates&, const DesiredUpdates&) = default;
};

}  // namespace drover::model
