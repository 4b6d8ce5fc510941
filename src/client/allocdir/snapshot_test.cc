#include "client/allocdir/snapshot.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::allocdir {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

// Extracts with the system tar: the archive must be readable by standard tools.
fs::path Extract(const std::string& archive, const fs::path& where) {
  const fs::path file = where / "snap.tar";
  std::ofstream(file, std::ios::binary) << archive;
  const fs::path out = where / "out";
  fs::create_directories(out);
  const std::string cmd = "tar -C '" + out.string() + "' -xf '" + file.string() + "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

TEST(SnapshotTest, ArchivesDataAndTaskLocalWithLinksAndLongNames) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  ASSERT_TRUE(ad.BuildTaskDir("web").ok());
  Write(ad.data_dir() / "db" / "x", "data");
  const std::string deep(120, 'd');
  Write(ad.data_dir() / deep / "f", "deep");
  Write(ad.task_dir("web").local / "cache", "local");
  Write(ad.logs_dir() / "web.stdout.0", "not archived");
  fs::create_symlink("db/x", ad.data_dir() / "link");
  fs::create_symlink("/etc/passwd", ad.data_dir() / "outside");  // stored, not followed
  std::string archive;
  ASSERT_TRUE(WriteSnapshot(ad, "a1", {"web", "gone"}, &archive).ok());
  EXPECT_EQ(archive.size() % 512, 0u);
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / "db" / "x"), "data");
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / deep / "f"), "deep");
  EXPECT_EQ(testing::ReadFile(out / "web" / "local" / "cache"), "local");
  EXPECT_FALSE(fs::exists(out / "alloc" / "logs"));
  EXPECT_EQ(fs::read_symlink(out / "alloc" / "data" / "link"), "db/x");
  EXPECT_EQ(fs::read_symlink(out / "alloc" / "data" / "outside"), "/etc/passwd");
  EXPECT_TRUE(fs::is_symlink(out / "alloc" / "data" / "outside"));
}

TEST(SnapshotTest, AWalkErrorEndsWithTheErrorFile) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  // A name too long for the archive format stands in for an unreadable tree.
  Write(ad.data_dir() / std::string(200, 'n'), "x");
  std::string archive;
  absl::Status s = WriteSnapshot(ad, "a1", {}, &archive);
  EXPECT_FALSE(s.ok());
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_EQ(testing::ReadFile(out / "NOMAD-a1-ERROR.log"), std::string(s.message()));
}

}  // namespace
}  // namespace drover::allocdir
