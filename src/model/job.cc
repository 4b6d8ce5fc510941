#include "model/job.h"

namespace drover::model {

const Task* TaskGroup::FindTask(const std::string& task_name) const {
  for (const Task& t : tasks) {
    if (t.name == task_name) {
      return &t;
    }
  }
  return nullptr;
}

const TaskGroup* Job::FindGroup(const std::string& group_name) const {
  for (const TaskGroup& g : task_groups) {
    if (g.name == group_name) {
      return &g;
    }
  }
  return nullptr;
}

}  // namespace drover::model
