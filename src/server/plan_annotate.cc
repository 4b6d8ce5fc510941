#include "server/plan_annotate.h"

#include <charconv>

namespace drover::server {
namespace {

int64_t CountOf(const std::string& value) {
  int64_t n = 0;
  std::from_chars(value.data(), value.data() + value.size(), n);
  return n;
}

void AnnotateCount(model::TaskGroupDiff& group) {
  for (model::FieldDiff& f : group.fields) {
    if (f.name != "Count" || f.type == model::kDiffNone)
      continue;
    const int64_t before = CountOf(f.old_value);
    const int64_t after = CountOf(f.new_value);
    if (before < after)
      f.annotations.push_back(model::kAnnotationForcesCreate);
    else if (after < before)
      f.annotations.push_back(model::kAnnotationForcesDestroy);
  }
}

// A task that is added or removed with its group is created or destroyed with it.
// Any other change to a task replaces the group's allocations: Drover updates in place
// only what the servers alone act on (placement.h's UpdatableInPlace), never a task.
void AnnotateTask(model::TaskDiff& task, const model::TaskGroupDiff& group) {
  if (task.type == model::kDiffNone)
    return;
  if (group.type == model::kDiffAdded && task.type == model::kDiffAdded) {
    task.annotations.push_back(model::kAnnotationForcesCreate);
  } else if (group.type == model::kDiffDeleted && task.type == model::kDiffDeleted) {
    task.annotations.push_back(model::kAnnotationForcesDestroy);
  } else {
    task.annotations.push_back(model::kAnnotationForcesDestructive);
  }
}

std::map<std::string, uint64_t> UpdatesOf(const model::DesiredUpdates& u) {
  std::map<std::string, uint64_t> out;
  const std::pair<const char*, uint64_t> counts[] = {{kUpdateIgnore, u.ignore},
                                                     {kUpdateCreate, u.place},
                                                     {kUpdateMigrate, u.migrate},
                                                     {kUpdateDestroy, u.stop},
                                                     {kUpdateCanary, u.canary},
                                                     {kUpdateInPlace, u.in_place_update},
                                                     {kUpdateDestructive, u.destructive_update}};
  for (const auto& [name, n] : counts) {
    if (n > 0)
      out[name] = n;
  }
  return out;
}

}  // namespace

void AnnotateDiff(model::JobDiff& diff,
                  const std::map<std::string, model::DesiredUpdates>& updates) {
  for (model::TaskGroupDiff& group : diff.task_groups) {
    if (auto it = updates.find(group.name); it != updates.end())
      group.updates = UpdatesOf(it->second);
    AnnotateCount(group);
    for (model::TaskDiff& task : group.tasks)
      AnnotateTask(task, group);
  }
}

}  // namespace drover::server
