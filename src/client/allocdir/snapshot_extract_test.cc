#include "client/allocdir/snapshot_extract.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "client/allocdir/snapshot.h"
#include "client/allocdir/tar.h"
#include "testing/test_util.h"

namespace drover::allocdir {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

// An archive built entry by entry, as a hostile sender could.
class Archive {
 public:
  Archive& File(const std::string& name, const std::string& data, uint32_t mode = 0644) {
    Add({.name = name, .type = '0', .mode = mode, .size = data.size()});
    bytes_ += data;
    bytes_.append(tar::PadFor(data.size()), '\0');
    return *this;
  }
  Archive& Dir(const std::string& name) {
    return Add({.name = name + "/", .type = '5', .mode = 0755});
  }
  Archive& Symlink(const std::string& name, const std::string& target) {
    return Add({.name = name, .type = '2', .mode = 0777, .link = target});
  }
  Archive& HardLink(const std::string& name, const std::string& target) {
    return Add({.name = name, .type = '1', .mode = 0644, .link = target});
  }
  Archive& Add(const tar::Entry& e) {
    EXPECT_TRUE(tar::AppendHeader(e, &bytes_).ok());
    return *this;
  }
  std::string End() const { return bytes_ + std::string(1024, '\0'); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class ExtractTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dest_.Build().ok()); }

  // Extracts `archive`, fed in pieces of `piece` bytes.
  absl::Status Extract(const std::string& archive, size_t piece = 4096,
                       uint64_t max_data = uint64_t{1} << 30) {
    auto x = SnapshotExtractor::Open(dest_, "prev", {"web"}, max_data);
    if (!x.ok())
      return x.status();
    for (size_t at = 0; at < archive.size(); at += piece) {
      if (absl::Status s = (*x)->Feed(std::string_view(archive).substr(at, piece)); !s.ok())
        return s;
    }
    return (*x)->Finish();
  }

  testing::TempDir tmp_;
  AllocDir dest_{tmp_.path() / "root", "new"};
};

TEST_F(ExtractTest, RoundTripsWhatTheSenderArchives) {
  AllocDir src(tmp_.path() / "root", "old");
  ASSERT_TRUE(src.Build().ok());
  ASSERT_TRUE(src.BuildTaskDir("web").ok());
  ASSERT_TRUE(src.BuildTaskDir("other").ok());
  const std::string deep(120, 'd');
  Write(src.data_dir() / "db" / "x", "data");
  Write(src.data_dir() / deep / "f", "deep");
  fs::permissions(src.data_dir() / "db" / "x", static_cast<fs::perms>(0600));
  Write(src.task_dir("web").local / "cache", std::string(100000, 'c'));
  Write(src.task_dir("other").local / "skipped", "no");
  fs::create_symlink("db/x", src.data_dir() / "link");
  fs::create_hard_link(src.data_dir() / "db" / "x", src.data_dir() / "hard");
  auto stream = SnapshotStream::Open(src, "old", {"web", "other"}, uint64_t{1} << 30);
  ASSERT_TRUE(stream.ok());
  std::string archive;
  for (std::string p = (*stream)->Next(8192); !p.empty(); p = (*stream)->Next(8192))
    archive += p;
  // Odd piece sizes: headers and data split anywhere.
  ASSERT_TRUE(Extract(archive, 777).ok());
  EXPECT_EQ(testing::ReadFile(dest_.data_dir() / "db" / "x"), "data");
  EXPECT_EQ(fs::status(dest_.data_dir() / "db" / "x").permissions(), static_cast<fs::perms>(0600));
  EXPECT_EQ(testing::ReadFile(dest_.data_dir() / deep / "f"), "deep");
  EXPECT_EQ(testing::ReadFile(dest_.task_dir("web").local / "cache"), std::string(100000, 'c'));
  EXPECT_FALSE(fs::exists(dest_.dir() / "other"));
  EXPECT_EQ(fs::read_symlink(dest_.data_dir() / "link"), "db/x");
  EXPECT_EQ(fs::hard_link_count(dest_.data_dir() / "hard"), 2u);
}

TEST_F(ExtractTest, RefusesNamesOutsideDataAndLocal) {
  for (const std::string name : {"../x", "/etc/x", "alloc/logs/x", "web/secrets/token",
                                 "alloc/data/../../x", "alloc/data/./x", "web", "x"}) {
    ASSERT_TRUE(dest_.Destroy().ok());
    ASSERT_TRUE(dest_.Build().ok());
    absl::Status s = Extract(Archive().File(name, "evil").End());
    EXPECT_FALSE(s.ok()) << name;
  }
  EXPECT_FALSE(fs::exists(tmp_.path() / "x"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "root" / "x"));
  EXPECT_FALSE(fs::exists(dest_.task_dir("web").secrets));
}

TEST_F(ExtractTest, NeverWritesThroughALinkItMade) {
  fs::create_directories(tmp_.path() / "outside");
  absl::Status s = Extract(Archive()
                               .Symlink("alloc/data/l", "../../../../outside")
                               .File("alloc/data/l/f", "evil")
                               .End());
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  // A link that stays inside is made, but a later entry does not go through it either.
  ASSERT_TRUE(dest_.Destroy().ok());
  ASSERT_TRUE(dest_.Build().ok());
  s = Extract(Archive()
                  .Dir("alloc/data/sub")
                  .Symlink("alloc/data/l", "sub")
                  .File("alloc/data/l/f", "x")
                  .End());
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(dest_.data_dir() / "sub" / "f"));
  EXPECT_TRUE(fs::is_empty(tmp_.path() / "outside"));
}

TEST_F(ExtractTest, HardLinksOnlyToFilesItWrote) {
  Write(tmp_.path() / "secret", "host");
  EXPECT_FALSE(Extract(Archive().HardLink("alloc/data/h", "../../../secret").End()).ok());
  EXPECT_FALSE(Extract(Archive().HardLink("alloc/data/h", "alloc/data/none").End()).ok());
  EXPECT_FALSE(fs::exists(dest_.data_dir() / "h"));
}

TEST_F(ExtractTest, DropsSetuidAndBoundsTheData) {
  ASSERT_TRUE(Extract(Archive().File("alloc/data/suid", "#!/bin/sh\n", 04755).End()).ok());
  struct stat st {};
  ASSERT_EQ(stat((dest_.data_dir() / "suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // Data and entries both count: 4 KiB an entry, besides its data.
  EXPECT_TRUE(Extract(Archive()
                          .File("alloc/data/a", std::string(3000, 'a'))
                          .File("alloc/data/b", std::string(3000, 'b'))
                          .End(),
                      4096, 16000)
                  .ok());
  absl::Status s =
      Extract(Archive().File("alloc/data/big", std::string(20000, 'x')).End(), 4096, 16000);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  Archive empties;
  for (int i = 0; i < 10; ++i)
    empties.File("alloc/data/e" + std::to_string(i), "");
  s = Extract(empties.End(), 4096, 30000);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

TEST_F(ExtractTest, TheRootDirectoriesKeepTheirModes) {
  ASSERT_TRUE(Extract(Archive()
                          .Add({.name = "alloc/data/", .type = '5', .mode = 0, .uid = 4242})
                          .Add({.name = "web/local/", .type = '5', .mode = 0, .uid = 4242})
                          .End())
                  .ok());
  struct stat st {};
  ASSERT_EQ(stat(dest_.data_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  EXPECT_NE(st.st_uid, 4242u);
  ASSERT_EQ(stat(dest_.task_dir("web").local.c_str(), &st), 0);
  EXPECT_NE(st.st_mode & 07777, 0u);
  EXPECT_NE(st.st_uid, 4242u);
}

TEST_F(ExtractTest, ReportsTheSendersErrorAndShortArchives) {
  absl::Status s = Extract(
      Archive().File("alloc/data/a", "a").File("NOMAD-prev-ERROR.log", "disk on fire").End());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("disk on fire"), std::string::npos) << s;
  const std::string cut = Archive().File("alloc/data/a", std::string(2000, 'a')).bytes();
  s = Extract(cut.substr(0, 1000));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

TEST_F(ExtractTest, RefusesGarbageAndOtherEntryTypes) {
  std::string bad = Archive().File("alloc/data/a", "a").End();
  bad[148] = '7';  // checksum
  EXPECT_FALSE(Extract(bad).ok());
  EXPECT_FALSE(Extract(std::string(512, 'x')).ok());
  EXPECT_FALSE(Extract(Archive().Add({.name = "alloc/data/fifo", .type = '6'}).End()).ok());
  EXPECT_FALSE(Extract(Archive().Add({.name = "alloc/data/dev", .type = '3'}).End()).ok());
  EXPECT_FALSE(fs::exists(dest_.data_dir() / "dev"));
}

}  // namespace
}  // namespace drover::allocdir
