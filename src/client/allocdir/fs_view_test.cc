#include "client/allocdir/fs_view.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::allocdir {
namespace {

namespace fs = std::filesystem;

class FsViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.Build().ok());
    ASSERT_TRUE(dir_.BuildTaskDir("web").ok());
    Write(dir_.task_dir("web").local / "out.txt", "0123456789");
    Write(dir_.task_dir("web").secrets / "token", "s3cret");
    Write(dir_.logs_dir() / "web.stdout.0", "aaa");
    Write(dir_.logs_dir() / "web.stdout.10", "ccc");
    Write(dir_.logs_dir() / "web.stdout.2", "bbb");
    Write(dir_.logs_dir() / ".web.stdout.fifo", "");
  }
  static void Write(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << s;
  }
  testing::TempDir tmp_;
  AllocDir dir_{tmp_.path(), "a1"};
};

TEST_F(FsViewTest, ListsStatsAndReads) {
  auto root = ListDir(dir_, "/");
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(root->size(), 2u);
  EXPECT_EQ((*root)[0].name, "alloc");
  EXPECT_TRUE((*root)[0].is_dir);
  EXPECT_EQ((*root)[0].file_mode[0], 'd');
  EXPECT_EQ((*root)[1].name, "web");
  auto st = StatPath(dir_, "/web/local/out.txt");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->name, "out.txt");
  EXPECT_EQ(st->size, 10);
  EXPECT_EQ(st->content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(st->file_mode.substr(0, 1), "-");
  EXPECT_EQ(*ReadFileAt(dir_, "web/local/out.txt", 0, -1), "0123456789");
  EXPECT_EQ(*ReadFileAt(dir_, "/web/local/out.txt", 3, 4), "3456");
  EXPECT_EQ(*ReadFileAt(dir_, "/web/local/out.txt", 8, 100), "89");
  EXPECT_TRUE(absl::IsInvalidArgument(ReadFileAt(dir_, "/web", 0, -1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ListDir(dir_, "/web/local/out.txt").status()));
  EXPECT_TRUE(absl::IsNotFound(StatPath(dir_, "/nope").status()));
}

TEST_F(FsViewTest, RefusesEscapesAndSecrets) {
  fs::create_symlink("/etc", dir_.task_dir("web").local / "etc");
  for (const std::string p : {"../x", "/../../etc/passwd", "web/local/etc/passwd"}) {
    EXPECT_TRUE(absl::IsPermissionDenied(ReadFileAt(dir_, p, 0, -1).status())) << p;
    EXPECT_TRUE(absl::IsPermissionDenied(StatPath(dir_, p).status())) << p;
  }
  EXPECT_TRUE(absl::IsPermissionDenied(ListDir(dir_, "web/local/etc").status()));
  auto secret = ReadFileAt(dir_, "/web/secrets/token", 0, -1);
  EXPECT_TRUE(absl::IsPermissionDenied(secret.status())) << secret.status();
  EXPECT_TRUE(
      absl::IsPermissionDenied(ReadFileAt(dir_, "/web/local/../secrets/token", 0, -1).status()));
  // Listing a secrets dir shows names, never contents.
  EXPECT_TRUE(ListDir(dir_, "/web/secrets").ok());
}

TEST_F(FsViewTest, LogFilesInRotationOrder) {
  auto files = LogFiles(dir_, "web", "stdout");
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].rel_path, "alloc/logs/web.stdout.0");
  EXPECT_EQ((*files)[1].index, 2);
  EXPECT_EQ((*files)[2].index, 10);
  EXPECT_TRUE(LogFiles(dir_, "web", "stderr")->empty());
  EXPECT_FALSE(LogFiles(dir_, "web", "stdin").ok());
  EXPECT_FALSE(LogFiles(dir_, "../web", "stdout").ok());
}

// alloc/logs holds every task's files: other tasks' logs do not count against the
// listing limit of one task's.
TEST_F(FsViewTest, LogFilesCountOnlyTheirOwnFiles) {
  for (size_t i = 0; i <= kMaxListEntries; ++i)
    std::ofstream(dir_.logs_dir() / ("api.stdout." + std::to_string(i)));
  auto files = LogFiles(dir_, "web", "stdout");
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->size(), 3u);
  // One task's own files past the limit still fail rather than grow without bound.
  EXPECT_TRUE(absl::IsInvalidArgument(LogFiles(dir_, "api", "stdout").status()));
}

}  // namespace
}  // namespace drover::allocdir
