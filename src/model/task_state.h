// Task states and task events as the client reports them (reference §2.3, §2.5).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"

namespace drover::model {

using common::Duration;
using common::Time;

inline constexpr char kTaskStatePending[] = "pending";
inline constexpr char kTaskStateRunning[] = "running";
inline constexpr char kTaskStateDead[] = "dead";

// Event type strings, exactly as on the wire.
inline constexpr char kEventReceived[] = "Received";
inline constexpr char kEventTaskSetup[] = "Task Setup";
inline constexpr char kEventSetupFailure[] = "Setup Failure";
inline constexpr char kEventDriverFailure[] = "Driver Failure";
// A driver's message during start (Nomad's TaskDriverMessage), e.g. image downloads.
inline constexpr char kEventDriverMessage[] = "Driver";
inline constexpr char kEventFailedValidation[] = "Failed Validation";
inline constexpr char kEventStarted[] = "Started";
inline constexpr char kEventTerminated[] = "Terminated";
inline constexpr char kEventKilling[] = "Killing";
inline constexpr char kEventKilled[] = "Killed";
inline constexpr char kEventRestarting[] = "Restarting";
inline constexpr char kEventNotRestarting[] = "Not Restarting";
inline constexpr char kEventRestartSignal[] = "Restart Signaled";
inline constexpr char kEventSignaling[] = "Signaling";
inline constexpr char kEventSiblingFailed[] = "Sibling Task Failed";
inline constexpr char kEventLeaderDead[] = "Leader Task Dead";
inline constexpr char kEventMainDead[] = "Main Tasks Dead";
inline constexpr char kEventHookFailed[] = "Task hook failed";
inline constexpr char kEventWaitingShutdownDelay[] = "Waiting for shutdown delay";
inline constexpr char kEventFailedRestoring[] = "Failed Restoring Task";
inline constexpr char kEventSkippingShutdownDelay[] = "Skipping shutdown delay";
// Drover's own: the previous allocation's ephemeral disk could not be taken over, and
// the task starts with an empty one (the message says why).
inline constexpr char kEventDiskNotMigrated[] = "Ephemeral Disk Not Migrated";

// A task event. Each setter fills both the typed field and its lower-case `details`
// key, as Nomad does.
struct TaskEvent {
  std::string type;
  int64_t time = 0;  // Unix nanoseconds
  std::string message;
  std::string display_message;
  std::map<std::string, std::string> details;
  bool fails_task = false;
  std::string restart_reason;
  std::string setup_error;
  std::string driver_error;
  int exit_code = 0;
  int signal = 0;
  Duration kill_timeout{0};
  std::string kill_error;
  std::string kill_reason;
  int64_t start_delay = 0;  // nanoseconds
  std::string download_error;
  std::string validation_error;
  std::string failed_sibling;
  std::string task_signal_reason;
  std::string task_signal;
  std::string driver_message;
  std::string generic_source;
  friend bool operator==(const TaskEvent&, const TaskEvent&) = default;

  TaskEvent() = default;
  TaskEvent(std::string event_type, Time when);

  TaskEvent& SetMessage(std::string m);
  TaskEvent& SetDisplayMessage(std::string m);
  TaskEvent& SetFailsTask();
  TaskEvent& SetExitCode(int code);
  TaskEvent& SetSignal(int sig);
  TaskEvent& SetOomKilled(bool oom);
  TaskEvent& SetExitMessage(const std::string& m);
  TaskEvent& SetKillTimeout(Duration timeout);
  TaskEvent& SetKillReason(std::string r);
  TaskEvent& SetKillError(std::string e);
  TaskEvent& SetRestartReason(std::string r);
  TaskEvent& SetStartDelay(Duration d);
  TaskEvent& SetDriverError(std::string e);
  TaskEvent& SetSetupError(std::string e);
  TaskEvent& SetValidationError(std::string e);
  TaskEvent& SetFailedSibling(std::string task);
  TaskEvent& SetTaskSignal(std::string sig);
  TaskEvent& SetTaskSignalReason(std::string r);

  // Fills display_message from the typed fields when empty (Nomad does this on append).
  void PopulateDisplayMessage();
};

// Go-style duration text ("5s", "1m30s", "16.2s") for messages and details.
std::string FormatGoDuration(Duration d);

// A task's recent events, oldest first. The list is immutable once built and shared by
// every copy: a task state is copied into each report, the client's pending and
// acknowledged updates, the servers' allocation and the state DB's write queue, and
// its events are most of its size. Copying the list copies one pointer; appending makes
// a new list (at most TaskState::kMaxEvents + 1 events are copied), so a copy held
// elsewhere, on another thread too, never sees a change.
class TaskEventList {
 public:
  using value_type = TaskEvent;
  using const_iterator = std::vector<TaskEvent>::const_iterator;
  using const_reverse_iterator = std::vector<TaskEvent>::const_reverse_iterator;

  TaskEventList() = default;
  explicit TaskEventList(std::vector<TaskEvent> events);
  TaskEventList(std::initializer_list<TaskEvent> events);

  const_iterator begin() const { return All().begin(); }
  const_iterator end() const { return All().end(); }
  const_reverse_iterator rbegin() const { return All().rbegin(); }
  const_reverse_iterator rend() const { return All().rend(); }
  size_t size() const { return list_ ? list_->size() : 0; }
  bool empty() const { return size() == 0; }
  const TaskEvent& front() const { return All().front(); }
  const TaskEvent& back() const { return All().back(); }
  const TaskEvent& operator[](size_t i) const { return All()[i]; }

  // Appends `ev`, dropping the oldest events beyond `max`.
  void Append(TaskEvent ev, size_t max);
  void push_back(TaskEvent ev) { Append(std::move(ev), SIZE_MAX); }
  void clear() { list_.reset(); }

  friend bool operator==(const TaskEventList& a, const TaskEventList& b);

 private:
  const std::vector<TaskEvent>& All() const;

  std::shared_ptr<const std::vector<TaskEvent>> list_;  // null when empty
};

struct TaskState {
  static constexpr size_t kMaxEvents = 10;

  std::string state = kTaskStatePending;
  bool failed = false;
  uint64_t restarts = 0;
  Time last_restart{};
  Time started_at{};
  Time finished_at{};
  TaskEventList events;  // oldest first; at most kMaxEvents
  friend bool operator==(const TaskState&, const TaskState&) = default;

  // Appends (dropping the oldest past kMaxEvents), fills the display message and makes
  // `failed` sticky when the event fails the task.
  void AppendEvent(TaskEvent ev);
};

}  // namespace drover::model
