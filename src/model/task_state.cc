#include "model/task_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace drover::model {

TaskEvent::TaskEvent(std::string event_type, Time when)
    : type(std::move(event_type)), time(common::ToUnixNanos(when)) {}

TaskEvent& TaskEvent::SetMessage(std::string m) {
  details["message"] = m;
  message = std::move(m);
  return *this;
}
TaskEvent& TaskEvent::SetDisplayMessage(std::string m) {
  display_message = std::move(m);
  return *this;
}
TaskEvent& TaskEvent::SetFailsTask() {
  fails_task = true;
  details["fails_task"] = "true";
  return *this;
}
TaskEvent& TaskEvent::SetExitCode(int code) {
  exit_code = code;
  details["exit_code"] = std::to_string(code);
  return *this;
}
TaskEvent& TaskEvent::SetSignal(int sig) {
  signal = sig;
  details["signal"] = std::to_string(sig);
  return *this;
}
TaskEvent& TaskEvent::SetOomKilled(bool oom) {
  details["oom_killed"] = oom ? "true" : "false";
  return *this;
}
TaskEvent& TaskEvent::SetExitMessage(const std::string& m) {
  if (!m.empty()) {
    details["exit_message"] = m;
    message = m;
  }
  return *this;
}
TaskEvent& TaskEvent::SetKillTimeout(Duration timeout) {
  kill_timeout = timeout;
  details["kill_timeout"] = FormatGoDuration(timeout);
  return *this;
}
TaskEvent& TaskEvent::SetKillReason(std::string r) {
  details["kill_reason"] = r;
  kill_reason = std::move(r);
  return *this;
}
TaskEvent& TaskEvent::SetKillError(std::string e) {
  details["kill_error"] = e;
  kill_error = std::move(e);
  return *this;
}
TaskEvent& TaskEvent::SetRestartReason(std::string r) {
  details["restart_reason"] = r;
  restart_reason = std::move(r);
  return *this;
}
TaskEvent& TaskEvent::SetStartDelay(Duration d) {
  start_delay = d.count();
  details["start_delay"] = std::to_string(d.count());
  return *this;
}
TaskEvent& TaskEvent::SetDriverError(std::string e) {
  details["driver_error"] = e;
  driver_error = std::move(e);
  return *this;
}
TaskEvent& TaskEvent::SetSetupError(std::string e) {
  details["setup_error"] = e;
  setup_error = std::move(e);
  return *this;
}
TaskEvent& TaskEvent::SetValidationError(std::string e) {
  details["validation_error"] = e;
  validation_error = std::move(e);
  return *this;
}
TaskEvent& TaskEvent::SetFailedSibling(std::string task) {
  details["failed_sibling"] = task;
  failed_sibling = std::move(task);
  return *this;
}
TaskEvent& TaskEvent::SetTaskSignal(std::string sig) {
  details["signal"] = sig;
  task_signal = std::move(sig);
  return *this;
}
TaskEvent& TaskEvent::SetTaskSignalReason(std::string r) {
  details["task_signal_reason"] = r;
  task_signal_reason = std::move(r);
  return *this;
}

void TaskEvent::PopulateDisplayMessage() {
  if (!display_message.empty()) {
    return;
  }
  std::string desc;
  if (type == kEventReceived) {
    desc = "Task received by client";
  } else if (type == kEventTaskSetup) {
    desc = message;
  } else if (type == kEventSetupFailure) {
    desc = setup_error.empty() ? "Task setup failed" : setup_error;
  } else if (type == kEventDriverFailure) {
    desc = driver_error.empty() ? "Failed to start task" : driver_error;
  } else if (type == kEventFailedValidation) {
    desc = validation_error.empty() ? "Validation of task failed" : validation_error;
  } else if (type == kEventStarted) {
    desc = "Task started by client";
  } else if (type == kEventTerminated) {
    desc = "Exit Code: " + std::to_string(exit_code);
    if (signal != 0) {
      desc += ", Signal: " + std::to_string(signal);
    }
    if (!message.empty()) {
      desc += ", Exit Message: \"" + message + "\"";
    }
  } else if (type == kEventKilling) {
    desc = !kill_reason.empty() ? kill_reason
                                : (kill_timeout.count() != 0 ? "Sent interrupt. Waiting " +
                                                                   FormatGoDuration(kill_timeout) +
                                                                   " before force killing"
                                                             : "Sent interrupt");
  } else if (type == kEventKilled) {
    desc = kill_error.empty() ? "Task successfully killed" : kill_error;
  } else if (type == kEventRestarting) {
    std::string in = "Task restarting in " + FormatGoDuration(Duration(start_delay));
    desc = (restart_reason.empty() || restart_reason == "Restart within policy")
               ? in
               : restart_reason + " - " + in;
  } else if (type == kEventNotRestarting) {
    desc = restart_reason.empty() ? "Task exceeded restart policy" : restart_reason;
  } else if (type == kEventRestartSignal) {
    desc = restart_reason.empty() ? "Task signaled to restart" : restart_reason;
  } else if (type == kEventSignaling) {
    desc = "Task being sent signal " + task_signal;
    if (!task_signal_reason.empty()) {
      desc += ": " + task_signal_reason;
    }
  } else if (type == kEventSiblingFailed) {
    desc = "Task's sibling \"" + failed_sibling + "\" failed";
  } else if (type == kEventLeaderDead) {
    desc = "Leader Task in Group dead";
  } else if (type == kEventMainDead) {
    desc = "Main tasks in the group died";
  } else {
    desc = message;
  }
  display_message = desc;
}

std::string FormatGoDuration(Duration d) {
  using std::chrono::duration_cast;
  int64_t ns = d.count();
  if (ns == 0) {
    return "0s";
  }
  std::string sign;
  if (ns < 0) {
    sign = "-";
    ns = -ns;
  }
  if (ns < 1'000) {
    return sign + std::to_string(ns) + "ns";
  }
  char buf[64];
  if (ns < 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%gµs", static_cast<double>(ns) / 1e3);
    return sign + buf;
  }
  if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%gms", static_cast<double>(ns) / 1e6);
    return sign + buf;
  }
  const int64_t hours = ns / 3'600'000'000'000;
  ns -= hours * 3'600'000'000'000;
  const int64_t minutes = ns / 60'000'000'000;
  ns -= minutes * 60'000'000'000;
  std::string out = sign;
  if (hours > 0) {
    out += std::to_string(hours) + "h";
  }
  if (hours > 0 || minutes > 0) {
    out += std::to_string(minutes) + "m";
  }
  // Seconds with up to 9 fractional digits, trailing zeros trimmed (Go's format).
  std::snprintf(buf, sizeof(buf), "%.9f", static_cast<double>(ns) / 1e9);
  std::string secs = buf;
  while (!secs.empty() && secs.back() == '0') {
    secs.pop_back();
  }
  if (!secs.empty() && secs.back() == '.') {
    secs.pop_back();
  }
  return out + secs + "s";
}

void TaskState::AppendEvent(TaskEvent ev) {
  ev.PopulateDisplayMessage();
  if (ev.fails_task) {
    failed = true;
  }
  events.Append(std::move(ev), kMaxEvents);
}

TaskEventList::TaskEventList(std::vector<TaskEvent> events) {
  if (!events.empty())
    list_ = std::make_shared<const std::vector<TaskEvent>>(std::move(events));
}

TaskEventList::TaskEventList(std::initializer_list<TaskEvent> events)
    : TaskEventList(std::vector<TaskEvent>(events)) {}

const std::vector<TaskEvent>& TaskEventList::All() const {
  static const std::vector<TaskEvent> kNone;
  return list_ ? *list_ : kNone;
}

void TaskEventList::Append(TaskEvent ev, size_t max) {
  if (max == 0) {
    list_.reset();
    return;
  }
  const std::vector<TaskEvent>& old = All();
  const size_t kept = std::min(old.size(), max - 1);
  std::vector<TaskEvent> next;
  next.reserve(kept + 1);
  next.insert(next.end(), old.end() - static_cast<std::ptrdiff_t>(kept), old.end());
  next.push_back(std::move(ev));
  list_ = std::make_shared<const std::vector<TaskEvent>>(std::move(next));
}

bool operator==(const TaskEventList& a, const TaskEventList& b) {
  return a.list_ == b.list_ || a.All() == b.All();
}

}  // namespace drover::model
