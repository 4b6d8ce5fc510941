#include "client/allocdir/alloc_dir.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

TEST(AllocDirTest, RejectsBadTaskNames) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_TRUE(ad.Build().ok());
  for (const char* bad : {"", "..", "a/b", "alloc"}) {
    EXPECT_FALSE(ad.BuildTaskDir(bad).ok()) << bad;
  }
}

TEST(AllocDirTest, ResolveRefusesEscapes) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path(), "a1");
  ASSERT_TRUE(ad.Build().ok());
  EXPECT_TRUE(ad.Resolve("alloc/logs").ok());
  EXPECT_TRUE(absl::IsPermissionDenied(ad.Resolve("../../etc").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ad.Resolve("/etc/passwd").status()));
  fs::create_symlink("/etc", ad.data_dir() / "evil");
  EXPECT_TRUE(absl::IsPermissionDenied(ad.Resolve("alloc/data/evil/passwd").status()));
  EXPECT_TRUE(absl::IsNotFound(ad.Resolve("alloc/nothing").status()));
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

}  // namespace
}  // namespace drover::allocdir
