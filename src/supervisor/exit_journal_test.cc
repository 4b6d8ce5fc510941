// The exit journal: records round-trip, several writers append whole records, a torn
// or damaged tail is cut or skipped, and the reader empties the file only once it has
// read everything.
#include "supervisor/exit_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

JournalExit Exit(int pid, int code = 0, int signal = 0) {
  return JournalExit{.pid = pid,
                     .start_ticks = 1000u + static_cast<uint64_t>(pid),
                     .exit_code = code,
                     .signal = signal,
                     .time_ns = 1'700'000'000'000'000'000 + pid,
                     .user_ticks = 3,
                     .system_ticks = 4,
                     .boot = CurrentBoot()};
}

class ExitJournalTest : public ::testing::Test {
 protected:
  std::vector<JournalExit> Read(JournalReader& r) {
    auto got = r.ReadNew();
    EXPECT_TRUE(got.ok()) << got.status();
    return got.value_or(std::vector<JournalExit>{});
  }
  testing::TempDir dir_;
  std::string path_ = (dir_.path() / "exits.journal").string();
};

TEST_F(ExitJournalTest, RecordsRoundTripAndAreReadOnce) {
  JournalReader reader(path_);
  EXPECT_TRUE(Read(reader).empty());  // created empty
  ASSERT_TRUE(AppendExits(path_, {Exit(10, 0), Exit(11, 3)}).ok());
  ASSERT_TRUE(AppendExits(path_, {Exit(12, 0, 9)}).ok());
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(10, 0), Exit(11, 3), Exit(12, 0, 9)}));
  EXPECT_TRUE(Read(reader).empty());
  ASSERT_TRUE(AppendExits(path_, {Exit(13, 1)}).ok());
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(13, 1)}));
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // A new reader (a restarted supervisor) reads everything again.
  JournalReader again(path_);
  EXPECT_EQ(Read(again).size(), 4u);
}

TEST_F(ExitJournalTest, ConcurrentWritersAppendWholeRecords) {
  constexpr int kWriters = 4;
  constexpr int kEach = 200;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i) {
        if (!AppendExits(path_, {Exit(w * 10000 + i + 1)}).ok())
          _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  JournalReader reader(path_);
  std::vector<JournalExit> seen;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    auto more = Read(reader);  // read while others still write
    seen.insert(seen.end(), more.begin(), more.end());
  }
  auto rest = Read(reader);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kWriters * kEach));
  EXPECT_EQ(reader.corrupt(), 0u);
}

TEST_F(ExitJournalTest, OneReadTakesABoundedNumberOfRecords) {
  std::vector<JournalExit> many;
  for (int i = 1; i <= 5000; ++i)
    many.push_back(Exit(i));
  ASSERT_TRUE(AppendExits(path_, many).ok());
  JournalReader reader(path_);
  const size_t first = Read(reader).size();
  EXPECT_GE(first, JournalReader::kMaxRecordsPerRead);
  EXPECT_LT(first, 5000u);
  EXPECT_TRUE(reader.more());
  EXPECT_EQ(first + Read(reader).size(), 5000u);
  EXPECT_FALSE(reader.more());
}

TEST_F(ExitJournalTest, ATornTailIsCutAndADamagedRecordSkipped) {
  ASSERT_TRUE(AppendExits(path_, {Exit(1), Exit(2)}).ok());
  {
    // A machine crash: the second record damaged, and half of a third written.
    const int fd = open(path_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "garbage", 7, kJournalRecordBytes + 20), 7);
    const std::string half = EncodeJournalExit(Exit(3)).substr(0, 30);
    ASSERT_EQ(pwrite(fd, half.data(), half.size(), 2 * kJournalRecordBytes),
              static_cast<ssize_t>(half.size()));
    close(fd);
  }
  JournalReader reader(path_);
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(1)}));
  EXPECT_EQ(reader.corrupt(), 1u);
  // The next writer cuts the partial record off; what it appends is read whole.
  ASSERT_TRUE(AppendExits(path_, {Exit(4)}).ok());
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(4)}));
  EXPECT_EQ(fs::file_size(path_), 3 * kJournalRecordBytes);
}

TEST_F(ExitJournalTest, TheReaderEmptiesItOnlyOnceEverythingWasRead) {
  JournalReader reader(path_);
  ASSERT_TRUE(AppendExits(path_, {Exit(1), Exit(2)}).ok());
  ASSERT_TRUE(reader.TruncateIfRead(0).ok());
  EXPECT_EQ(fs::file_size(path_), 2 * kJournalRecordBytes);  // not read yet
  EXPECT_EQ(Read(reader).size(), 2u);
  ASSERT_TRUE(reader.TruncateIfRead(1 << 20).ok());
  EXPECT_EQ(fs::file_size(path_), 2 * kJournalRecordBytes);  // small: kept
  ASSERT_TRUE(AppendExits(path_, {Exit(3)}).ok());
  ASSERT_TRUE(reader.TruncateIfRead(0).ok());
  EXPECT_EQ(fs::file_size(path_), 3 * kJournalRecordBytes);  // a writer got in
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(3)}));
  ASSERT_TRUE(reader.TruncateIfRead(0).ok());
  EXPECT_EQ(fs::file_size(path_), 0u);
  ASSERT_TRUE(AppendExits(path_, {Exit(5)}).ok());
  EXPECT_EQ(Read(reader), (std::vector<JournalExit>{Exit(5)}));
}

TEST_F(ExitJournalTest, AJournalThatCannotBeOpenedIsAnErrorNamingIt) {
  const std::string missing = (dir_.path() / "gone" / "exits.journal").string();
  absl::Status s = AppendExits(missing, {Exit(2)});
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_NE(s.message().find(missing), std::string::npos) << s;
  // A link planted in its place is not followed.
  fs::create_symlink("/etc/passwd", path_);
  EXPECT_FALSE(AppendExits(path_, {Exit(3)}).ok());
}

}  // namespace
}  // namespace drover::supervisor
