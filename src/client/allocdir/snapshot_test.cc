#include "client/allocdir/snapshot.h"

#include <sys/stat.h>

#include <algorithm>
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

// The whole archive, read in pieces of `piece` bytes as the endpoint does; each piece
// stays near that size.
std::string ReadAll(const AllocDir& ad, const std::vector<std::string>& tasks,
                    absl::Status* status = nullptr, size_t piece = 4096) {
  auto stream = SnapshotStream::Open(ad, "a1", tasks, uint64_t{1} << 30);
  EXPECT_TRUE(stream.ok()) << stream.status();
  std::string archive;
  for (std::string part = (*stream)->Next(piece); !part.empty(); part = (*stream)->Next(piece)) {
    EXPECT_LE(part.size(), piece + 2048);
    archive += part;
  }
  if (status != nullptr)
    *status = (*stream)->status();
  return archive;
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
  fs::create_symlink("/etc/passwd", ad.data_dir() / "outside");  // left out: absolute
  absl::Status status;
  const std::string archive = ReadAll(ad, {"web", "gone"}, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(archive.size() % 512, 0u);
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / "db" / "x"), "data");
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / deep / "f"), "deep");
  EXPECT_EQ(testing::ReadFile(out / "web" / "local" / "cache"), "local");
  EXPECT_FALSE(fs::exists(out / "alloc" / "logs"));
  EXPECT_EQ(fs::read_symlink(out / "alloc" / "data" / "link"), "db/x");
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "alloc" / "data" / "outside")));
}

TEST(SnapshotTest, AWalkErrorEndsWithTheErrorFile) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  // A name too long for the archive format stands in for an unreadable tree.
  Write(ad.data_dir() / std::string(200, 'n'), "x");
  absl::Status s;
  const std::string archive = ReadAll(ad, {}, &s);
  EXPECT_FALSE(s.ok());
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_EQ(testing::ReadFile(out / "NOMAD-a1-ERROR.log"), std::string(s.message()));
}

// Defect 1 of the security review: a task replaced local/ with a symlink to /etc and got
// the host's /etc, shadow included, in its own snapshot.
TEST(SnapshotTest, ATopLevelSymlinkIsStoredNotFollowed) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  ASSERT_TRUE(ad.BuildTaskDir("web").ok());
  fs::remove(ad.task_dir("web").local);
  fs::create_symlink("/etc", ad.task_dir("web").local);
  fs::remove(ad.data_dir());
  fs::create_symlink("/", ad.data_dir());
  absl::Status status;
  const std::string archive = ReadAll(ad, {"web"}, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(archive.find("root:"), std::string::npos);  // nothing of /etc/passwd or shadow
  EXPECT_LT(archive.size(), 8192u);
  // Links out of the tree are left out of the archive altogether.
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "web" / "local")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "alloc" / "data")));
}

// What a receiver extracts (as root) must not harm it: no setuid bits, no links that
// climb out, a file with several names sent once, and no more data than the disk holds.
TEST(SnapshotTest, WhatAReceiverExtractsStaysHarmless) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  Write(ad.data_dir() / "suid", "#!/bin/sh\n");
  fs::permissions(ad.data_dir() / "suid", static_cast<fs::perms>(04755));
  fs::create_symlink("../../../../etc", ad.data_dir() / "climb");
  fs::create_symlink("suid", ad.data_dir() / "near");
  // Chained links: each climbs no higher than its place on paper, together they leave.
  fs::create_symlink(".", ad.data_dir() / "y");
  fs::create_symlink("y/y/y/../../../../..", ad.data_dir() / "chain");
  fs::create_symlink("../data/suid", ad.data_dir() / "up");  // leading "..": kept
  Write(ad.data_dir() / "big", std::string(4096, 'b'));
  for (int i = 0; i < 50; ++i)
    fs::create_hard_link(ad.data_dir() / "big", ad.data_dir() / ("link" + std::to_string(i)));
  absl::Status status;
  const std::string archive = ReadAll(ad, {}, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_LT(archive.size(), 64u * 1024) << "every hard link was sent in full";
  const fs::path out = Extract(archive, tmp.path());
  EXPECT_EQ(fs::status(out / "alloc" / "data" / "suid").permissions() & fs::perms::set_uid,
            fs::perms::none);
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "alloc" / "data" / "climb")));
  EXPECT_EQ(fs::read_symlink(out / "alloc" / "data" / "near"), "suid");
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "alloc" / "data" / "chain")));
  EXPECT_EQ(fs::read_symlink(out / "alloc" / "data" / "up"), "../data/suid");
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / "link7"), std::string(4096, 'b'));
  // A cap on the data: the archive ends with the error entry.
  auto small = SnapshotStream::Open(ad, "a1", {}, 1024);
  ASSERT_TRUE(small.ok());
  std::string capped;
  for (std::string p = (*small)->Next(4096); !p.empty(); p = (*small)->Next(4096))
    capped += p;
  EXPECT_TRUE(absl::IsResourceExhausted((*small)->status())) << (*small)->status();
  EXPECT_NE(capped.find("NOMAD-a1-ERROR.log"), std::string::npos);
}

TEST(SnapshotTest, FifosAreSkippedAndLargeFilesStreamInPieces) {
  testing::TempDir tmp;
  AllocDir ad(tmp.path() / "root", "a1");
  ASSERT_TRUE(ad.Build().ok());
  ASSERT_EQ(mkfifo((ad.data_dir() / "fifo").c_str(), 0666), 0);  // would block a read
  {
    // A sparse file: 64 MiB on paper, next to nothing on disk.
    std::ofstream f(ad.data_dir() / "sparse", std::ios::binary);
    f.seekp((64 << 20) - 1);
    f.put('z');
  }
  auto stream = SnapshotStream::Open(ad, "a1", {}, uint64_t{1} << 30);
  ASSERT_TRUE(stream.ok());
  size_t total = 0;
  size_t largest = 0;
  char last = 0;
  for (std::string part = (*stream)->Next(65536); !part.empty(); part = (*stream)->Next(65536)) {
    total += part.size();
    largest = std::max(largest, part.size());
    if (total <= (64u << 20) + 2048)
      last = part.find('z') != std::string::npos ? 'z' : last;
  }
  EXPECT_TRUE((*stream)->status().ok()) << (*stream)->status();
  EXPECT_EQ(last, 'z');
  EXPECT_GT(total, 64u << 20);
  EXPECT_LE(largest, 65536u + 2048);  // never the whole file at once
}

}  // namespace
}  // namespace drover::allocdir
