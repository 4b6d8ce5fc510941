#include "client/allocdir/alloc_dir.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/mounts.h"
#include "testing/test_util.h"

namespace drover::allocdir {
namespace {

namespace fs = std::filesystem;

TEST(AllocDirTest, BuildsLayoutAndDestroys) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_FALSE(ad.BuildTaskDir("web").ok());  // not built yet
  ASSERT_TRUE(ad.Build().ok());
  auto td = ad.BuildTaskDir("web");
  ASSERT_TRUE(td.ok()) << td.status();
  for (const fs::path& p : {ad.data_dir(), ad.logs_dir(), ad.shared_dir() / "tmp", td->local,
                            td->tmp, td->secrets, td->private_}) {
    EXPECT_TRUE(fs::is_directory(p)) << p;
  }
  EXPECT_TRUE(ad.TaskDirBuilt("web"));
  EXPECT_TRUE(ad.Build().ok());  // idempotent
  ASSERT_TRUE(ad.Destroy().ok());
  EXPECT_FALSE(fs::exists(ad.dir()));
  EXPECT_TRUE(ad.Destroy().ok());
}

TEST(AllocDirTest, ModesForHostUsersAndForImageUsers) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_TRUE(ad.Build().ok());
  const auto mode = [](const fs::path& p) { return fs::status(p).permissions() & fs::perms::all; };
  auto host = ad.BuildTaskDir("host");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(mode(host->local), static_cast<fs::perms>(0755));
  EXPECT_EQ(mode(host->secrets), static_cast<fs::perms>(0700));
  // A docker task's user is its image's: its directories are open to every user.
  auto image = ad.BuildTaskDir("image", std::nullopt, /*open_to_all=*/true);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(mode(image->local), static_cast<fs::perms>(0777));
  EXPECT_EQ(mode(image->secrets), static_cast<fs::perms>(0777));
  EXPECT_EQ(mode(image->private_), static_cast<fs::perms>(0700));
  ASSERT_TRUE(ad.Destroy().ok());
}

TEST(AllocDirTest, RejectsBadTaskNames) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_TRUE(ad.Build().ok());
  for (const char* bad : {"", "..", "a/b", "alloc"}) {
    EXPECT_FALSE(ad.BuildTaskDir(bad).ok()) << bad;
  }
}

TEST(AllocDirTest, ConcurrentTaskDirBuilds) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_TRUE(ad.Build().ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&ad, i] {
      for (int j = 0; j < 20; ++j) {
        ASSERT_TRUE(ad.BuildTaskDir("t" + std::to_string((i + j) % 5)).ok());
        ad.TaskDirBuilt("t0");
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(ad.TaskDirBuilt("t" + std::to_string(i)));
}

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

TEST(AllocDirTest, MoveTakesDataAndTaskLocalOnly) {
  testing::TempDir tmp;
  AllocDir prev(tmp.path(), "prev");
  ASSERT_TRUE(prev.Build().ok());
  ASSERT_TRUE(prev.BuildTaskDir("web").ok());
  Write(prev.data_dir() / "db" / "x", "data");
  Write(prev.task_dir("web").local / "cache", "local");
  Write(prev.task_dir("web").tmp / "scratch", "tmp");
  Write(prev.logs_dir() / "web.stdout.0", "log");
  AllocDir next(tmp.path(), "next");
  EXPECT_TRUE(absl::IsFailedPrecondition(next.Move(prev.dir(), {"web"})));
  ASSERT_TRUE(next.Build().ok());
  ASSERT_TRUE(next.Move(prev.dir(), {"web", "gone"}).ok());
  EXPECT_EQ(testing::ReadFile(next.data_dir() / "db" / "x"), "data");
  EXPECT_EQ(testing::ReadFile(next.task_dir("web").local / "cache"), "local");
  EXPECT_FALSE(fs::exists(next.task_dir("web").tmp / "scratch"));
  EXPECT_FALSE(fs::exists(next.logs_dir() / "web.stdout.0"));
  EXPECT_FALSE(fs::exists(next.dir() / "gone"));
  // The task dir can still be built over what was moved in.
  ASSERT_TRUE(next.BuildTaskDir("web").ok());
  EXPECT_EQ(testing::ReadFile(next.task_dir("web").local / "cache"), "local");
}

TEST(AllocDirTest, MoveIntoANonEmptyTargetFailsAndNamesThePaths) {
  testing::TempDir tmp;
  AllocDir prev(tmp.path(), "prev");
  ASSERT_TRUE(prev.Build().ok());
  Write(prev.data_dir() / "x", "1");
  AllocDir next(tmp.path(), "next");
  ASSERT_TRUE(next.Build().ok());
  Write(next.data_dir() / "y", "2");
  absl::Status s = next.Move(prev.dir(), {});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("failed to move"), std::string::npos) << s;
}

TEST(AllocDirTest, SecretsAndPrivateAreTmpfsAndUnmountedOnDestroy) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "mounting tmpfs needs root";
  }
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1", AllocDirOptions{.mount_tmpfs = true, .secrets_mb = 2});
  ASSERT_TRUE(ad.Build().ok());
  auto td = ad.BuildTaskDir("web");
  ASSERT_TRUE(td.ok()) << td.status();
  EXPECT_TRUE(common::IsMountPoint(td->secrets));
  EXPECT_TRUE(common::IsMountPoint(td->private_));
  ASSERT_TRUE(ad.BuildTaskDir("web").ok());  // idempotent: no second mount
  auto mounts = common::MountsUnder(ad.dir());
  ASSERT_TRUE(mounts.ok());
  EXPECT_EQ(mounts->size(), 2u);
  ASSERT_TRUE(ad.Destroy().ok());
  EXPECT_FALSE(fs::exists(ad.dir()));
  mounts = common::MountsUnder(tmp.path());
  ASSERT_TRUE(mounts.ok());
  EXPECT_TRUE(mounts->empty());
}

// Mounts Drover did not make (an operator's, one left by an older agent) are found and
// undone too; a bind mount of the host's files is never walked into.
TEST(AllocDirTest, DestroyUndoesForeignMountsAndLeavesBindMountedFilesAlone) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "mounting needs root";
  }
  testing::TempDir tmp;
  const fs::path host = tmp.path() / "host";
  fs::create_directories(host);
  std::ofstream(host / "keep") << "host file";
  AllocDir ad(tmp.path() / "allocs", "a1", AllocDirOptions{.mount_tmpfs = true});
  ASSERT_TRUE(ad.Build().ok());
  auto td = ad.BuildTaskDir("web");
  ASSERT_TRUE(td.ok()) << td.status();
  const fs::path bound = td->local / "bound";
  const fs::path foreign = ad.data_dir() / "foreign";
  fs::create_directories(bound);
  fs::create_directories(foreign);
  ASSERT_EQ(mount(host.c_str(), bound.c_str(), nullptr, MS_BIND, nullptr), 0) << strerror(errno);
  ASSERT_EQ(mount("tmpfs", foreign.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  std::ofstream(foreign / "f") << "x";
  ASSERT_EQ(common::MountsUnder(ad.dir())->size(), 4u);
  ASSERT_TRUE(ad.Destroy().ok());
  EXPECT_FALSE(fs::exists(ad.dir()));
  EXPECT_TRUE(common::MountsUnder(tmp.path())->empty());
  EXPECT_TRUE(fs::exists(host / "keep"));
}

}  // namespace
}  // namespace drover::allocdir
