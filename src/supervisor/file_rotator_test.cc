#include "supervisor/file_rotator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

// Names of the entries in `dir`.
std::set<std::string> List(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
}

std::unique_ptr<FileRotator> MustOpen(const fs::path& dir, int max_files, int64_t max_size) {
  auto r = FileRotator::Open(dir, "web.stdout", max_files, max_size);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(FileRotatorTest, StartsAtZero) {
  testing::TempDir tmp;
  auto r = MustOpen(tmp.path(), 3, 100);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->current_index(), 0);
  EXPECT_EQ(r->current_path(), tmp.path() / "web.stdout.0");
  ASSERT_TRUE(r->Write("hello").ok());
  // No buffering: visible before Close.
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.0"), "hello");
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path() / "web.stdout.0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_TRUE(r->Close().ok());
  EXPECT_TRUE(r->Close().ok());  // idempotent
  EXPECT_TRUE(absl::IsFailedPrecondition(r->Write("more")));
  EXPECT_EQ(List(tmp.path()), std::set<std::string>({"web.stdout.0"}));
}

TEST(FileRotatorTest, SplitsWritesAtSizeLimit) {
  testing::TempDir tmp;
  auto r = MustOpen(tmp.path(), 10, 10);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->Write("0123456789abcdefghijXYZ").ok());  // spans three files
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.0"), "0123456789");
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.1"), "abcdefghij");
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.2"), "XYZ");
  EXPECT_EQ(r->current_index(), 2);

  // Filling a file exactly does not open the next one yet.
  ASSERT_TRUE(r->Write("1234567").ok());
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.2"), "XYZ1234567");
  EXPECT_FALSE(fs::exists(tmp.path() / "web.stdout.3"));
  ASSERT_TRUE(r->Write("!").ok());
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.3"), "!");
  ASSERT_TRUE(r->Write("").ok());
  EXPECT_EQ(List(tmp.path()), std::set<std::string>({"web.stdout.0", "web.stdout.1", "web.stdout.2",
                                                     "web.stdout.3"}));
}

TEST(FileRotatorTest, KeepsOnlyMaxFiles) {
  testing::TempDir tmp;
  auto r = MustOpen(tmp.path(), 2, 4);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->Write("aaaabbbbcccc").ok());
  EXPECT_EQ(List(tmp.path()), std::set<std::string>({"web.stdout.1", "web.stdout.2"}));
  ASSERT_TRUE(r->Write("dddde").ok());
  EXPECT_EQ(List(tmp.path()), std::set<std::string>({"web.stdout.3", "web.stdout.4"}));
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.3"), "dddd");
  EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.4"), "e");

  // max_files 1: only the file being written survives.
  testing::TempDir tmp1;
  auto one = FileRotator::Open(tmp1.path(), "web.stdout", 1, 2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE((*one)->Write("xxyyz").ok());
  EXPECT_EQ(List(tmp1.path()), std::set<std::string>({"web.stdout.2"}));
  EXPECT_EQ(testing::ReadFile(tmp1.path() / "web.stdout.2"), "z");
}

TEST(FileRotatorTest, ReopenContinuesLastFileOrStartsNext) {
  testing::TempDir tmp;
  {
    auto r = MustOpen(tmp.path(), 5, 10);
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->Write("0123456789abc").ok());
    ASSERT_TRUE(r->Close().ok());
  }
  {
    // web.stdout.1 holds 3 of 10 bytes: continue it.
    auto r = MustOpen(tmp.path(), 5, 10);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->current_index(), 1);
    ASSERT_TRUE(r->Write("defghij").ok());
    EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.1"), "abcdefghij");
    EXPECT_FALSE(fs::exists(tmp.path() / "web.stdout.2"));
  }
  {
    // web.stdout.1 is full: start web.stdout.2.
    auto r = MustOpen(tmp.path(), 5, 10);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->current_index(), 2);
    EXPECT_TRUE(fs::exists(tmp.path() / "web.stdout.2"));
    ASSERT_TRUE(r->Write("k").ok());
    EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.1"), "abcdefghij");
    EXPECT_EQ(testing::ReadFile(tmp.path() / "web.stdout.2"), "k");
  }
  {
    // A smaller max_files on reopen deletes the oldest files right away.
    auto r = MustOpen(tmp.path(), 2, 10);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(List(tmp.path()), std::set<std::string>({"web.stdout.1", "web.stdout.2"}));
  }
}

TEST(FileRotatorTest, IgnoresUnrelatedFiles) {
  testing::TempDir tmp;
  const std::set<std::string> unrelated = {
      "web.stdout.fifo", ".web.stdout.fifo", "web.stdout.7.old", "web.stdout.01",
      "web.stdout.x",    "web.stdout.",      "web.stderr.3",     "web.stdout",
      "web.stdout.-1",   "xweb.stdout.4",    "web.stdout.5"};  // .5: a symlink, below
  for (const std::string& name : unrelated) {
    if (name != "web.stdout.5")
      WriteFile(tmp.path() / name, "not ours");
  }
  fs::create_symlink(tmp.path() / "web.stdout", tmp.path() / "web.stdout.5");
  fs::create_directory(tmp.path() / "web.stdout.6");
  auto r = MustOpen(tmp.path(), 1, 4);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->current_index(), 0);
  ASSERT_TRUE(r->Write("aaaabbbbc").ok());  // rotates to .2, purging .0 and .1
  std::set<std::string> want = unrelated;
  want.insert("web.stdout.6");
  want.insert("web.stdout.2");
  EXPECT_EQ(List(tmp.path()), want);
  for (const std::string& name : unrelated) {
    if (name != "web.stdout.5") {
      EXPECT_EQ(testing::ReadFile(tmp.path() / name), "not ours") << name;
    }
  }
}

TEST(FileRotatorTest, RejectsBadLimits) {
  testing::TempDir tmp;
  EXPECT_TRUE(absl::IsInvalidArgument(FileRotator::Open(tmp.path(), "web.stdout", 0, 10).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(FileRotator::Open(tmp.path(), "web.stdout", -1, 10).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FileRotator::Open(tmp.path(), "web.stdout", 1, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FileRotator::Open(tmp.path(), "web.stdout", 1, -5).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FileRotator::Open(tmp.path(), "", 1, 10).status()));
  EXPECT_TRUE(List(tmp.path()).empty());
}

TEST(FileRotatorTest, MissingDirIsAnErrorNamingIt) {
  testing::TempDir tmp;
  auto r = FileRotator::Open(tmp.path() / "nope", "web.stdout", 1, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find((tmp.path() / "nope").string()), std::string::npos)
      << r.status();
}

// The logs dir is writable by tasks: one that swaps it (or a file in it) for a symlink
// must not make the supervisor, root, write or delete anything outside it.
TEST(FileRotatorTest, SymlinksNeverLeadOutOfTheLogDir) {
  testing::TempDir tmp;
  const fs::path outside = tmp.path() / "outside";
  const fs::path logs = tmp.path() / "logs";
  fs::create_directories(outside);
  fs::create_directories(logs);
  fs::create_directory_symlink(outside, tmp.path() / "linked");
  EXPECT_FALSE(FileRotator::Open(tmp.path() / "linked", "web.stdout", 2, 10).ok());
  // A file named like ours that is a symlink is not followed: the link is replaced by a
  // log file of our own, and what it pointed to is untouched.
  std::ofstream(outside / "victim") << "keep";
  fs::create_symlink(outside / "victim", logs / "web.stdout.0");
  auto r = FileRotator::Open(logs, "web.stdout", 1, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*r)->Write("log").ok());
  EXPECT_EQ(testing::ReadFile(outside / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(logs / "web.stdout.0"));
  EXPECT_EQ(testing::ReadFile(logs / "web.stdout.0"), "log");
  r->reset();
  fs::remove(logs / "web.stdout.0");
  r = FileRotator::Open(logs, "web.stdout", 1, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  // The directory is swapped for a symlink after opening: writes stay in the real one.
  fs::rename(logs, tmp.path() / "moved");
  fs::create_directory_symlink(outside, logs);
  ASSERT_TRUE((*r)->Write("12345678").ok());
  EXPECT_EQ(testing::ReadFile(tmp.path() / "moved" / "web.stdout.1"), "5678");
  EXPECT_FALSE(fs::exists(outside / "web.stdout.1"));
}

// Defect 18 of the security review: the rotator opened files a task had planted under
// its next names without checking what they were. A FIFO used to block it (and with it
// the whole supervisor); a hard link to a file elsewhere was appended to.
TEST(FileRotatorTest, PlantedFifosHardLinksAndDirectoriesAreReplaced) {
  testing::TempDir tmp;
  const fs::path logs = tmp.path() / "logs";
  fs::create_directories(logs);
  const fs::path victim = tmp.path() / "victim";
  std::ofstream(victim) << "keep";
  ASSERT_EQ(mkfifo((logs / "web.stdout.1").c_str(), 0666), 0);
  fs::create_hard_link(victim, logs / "web.stdout.2");
  fs::create_directories(logs / "web.stdout.3" / "sub");
  auto r = FileRotator::Open(logs, "web.stdout", 10, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  // The hard link looks like the newest file (.2): it is replaced, not appended to,
  // and the rotation then goes through the directory planted at .3.
  ASSERT_TRUE((*r)->Write("aaaabbbbcccc").ok());
  EXPECT_EQ(testing::ReadFile(victim), "keep");
  for (int i = 2; i <= 4; ++i) {
    const fs::path p = logs / ("web.stdout." + std::to_string(i));
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(p))) << p;
    EXPECT_EQ(fs::hard_link_count(p), 1u) << p;
  }
  EXPECT_EQ(testing::ReadFile(logs / "web.stdout.3"), "bbbb");
  // A FIFO at the next name does not block the rotation either.
  ASSERT_EQ(mkfifo((logs / "web.stdout.5").c_str(), 0666), 0);
  ASSERT_TRUE((*r)->Write("dddd").ok());
  EXPECT_EQ(testing::ReadFile(logs / "web.stdout.5"), "dddd");
}

}  // namespace
}  // namespace drover::supervisor
