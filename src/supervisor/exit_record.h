// The exit journal's records and their writer (exit_journal.h has the format and the
// reader). Free of absl and iostreams on purpose: drover-reaper, which writes the
// journal, links only this and is linked statically (src/cmd/drover-reaper), so that it
// holds only the pages it uses. That is also why the writer reports an error as a
// string rather than an absl::Status (exit_journal.h wraps it in one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace drover::supervisor {

struct JournalExit {
  int pid = 0;
  // /proc/<pid>/stat's start time (clock ticks since boot): with the pid, it names the
  // process, as the task table does.
  uint64_t start_ticks = 0;
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it
  int64_t time_ns = 0;
  // CPU time it used (its own, in clock ticks), read before it was reaped.
  uint64_t user_ticks = 0;
  uint64_t system_ticks = 0;
  // CurrentBoot() where it was written: start times restart with every boot, so a
  // record of an earlier boot names no process of this one.
  uint64_t boot = 0;

  friend bool operator==(const JournalExit&, const JournalExit&) = default;
};

inline constexpr size_t kJournalRecordBytes = 64;

// A hash of the kernel's boot id (/proc/sys/kernel/random/boot_id), read once.
uint64_t CurrentBoot();

std::string EncodeJournalExit(const JournalExit& e);
// False when `record` (kJournalRecordBytes) is not an intact record.
bool DecodeJournalExit(const char* record, JournalExit* out);

// Appends `exits` under the journal's lock. Returns true once they are in the file (any
// reader sees them, whatever process dies next); false otherwise, with `error` set
// (then nothing of the batch is in the file, and nothing may be reaped).
bool AppendExitRecords(const std::string& path, const std::vector<JournalExit>& exits,
                       std::string* error);

// Shared with exit_journal.cc; not for others.
namespace journal_internal {
// "<what> '<path>': <strerror(errno)>".
std::string Errno(const std::string& what, const std::string& path);
// flock, retried on EINTR.
int Lock(int fd, int op);
}  // namespace journal_internal

}  // namespace drover::supervisor
