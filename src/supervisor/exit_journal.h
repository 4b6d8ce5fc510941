// The exit journal (docs/supervisor.md): where drover-reaper, the parent of every task,
// writes down each exit before it collects the status, and where the supervisor reads
// them. An exit that happens while no supervisor runs (it crashed, it is restarting)
// is therefore still known, with its real code, when the next supervisor comes.
//
// `<state dir>/exits.journal` is a sequence of fixed 64-byte records, each with a
// checksum. Writers (reapers; normally one) append a batch under an exclusive flock
// before they reap; the reader takes a shared flock to read whole records, and empties
// the file under an exclusive one once it has read everything.
//
// Appends are written, not synced, as the task table is (task_table.h): a completed
// write survives the crash of any process, and only a machine crash could lose it, which
// kills the tasks it describes too. (Records carry the boot they were written in; an
// earlier boot's are not used.) A record torn by a machine crash fails its checksum and
// is skipped; a partial tail is cut off by the next writer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "supervisor/exit_record.h"

namespace drover::supervisor {

// AppendExitRecords (exit_record.h), its failure as an InternalError.
absl::Status AppendExits(const std::string& path, const std::vector<JournalExit>& exits);

// Reads what was appended since the last call, in order. Not thread-safe.
class JournalReader {
 public:
  explicit JournalReader(std::string path) : path_(std::move(path)) {}
  ~JournalReader();
  JournalReader(const JournalReader&) = delete;
  JournalReader& operator=(const JournalReader&) = delete;

  // The records appended since the last call (all of them the first time). Unless
  // `wait`, empty with busy() set while a writer holds the lock: call again soon.
  // Records that fail their checksum are skipped and counted in corrupt().
  // At most kMaxRecordsPerRead per call (a task that orphans children quickly makes
  // many): more() says that more are waiting.
  absl::StatusOr<std::vector<JournalExit>> ReadNew(bool wait = false);
  bool busy() const { return busy_; }
  bool more() const { return more_; }
  static constexpr size_t kMaxRecordsPerRead = 4096;
  // Empties the journal when everything in it was read and it holds at least
  // `min_bytes`; keeps it otherwise (a writer got in, or it is small).
  absl::Status TruncateIfRead(size_t min_bytes);
  uint64_t corrupt() const { return corrupt_; }

 private:
  absl::Status OpenIfNeeded();

  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t corrupt_ = 0;
  bool busy_ = false;
  bool more_ = false;
};

}  // namespace drover::supervisor
