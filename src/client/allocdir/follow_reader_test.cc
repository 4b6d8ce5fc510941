#include "client/allocdir/follow_reader.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::allocdir {
namespace {

namespace fs = std::filesystem;

class FollowReaderTest : public ::testing::Test {
 protected:
  FollowReaderTest() {
    fs::create_directories(logs_);
    fs::create_directories(dir_.path() / "a1" / "web" / "secrets");
  }
  void Append(const fs::path& file, const std::string& data) {
    std::ofstream(file, std::ios::app) << data;
  }
  // Everything Next returns until it comes back empty.
  std::string ReadAll(FollowReader& r) {
    std::string out;
    for (;;) {
      auto chunk = r.Next();
      EXPECT_TRUE(chunk.ok()) << chunk.status();
      if (!chunk.ok() || chunk->data.empty())
        return out;
      out += chunk->data;
    }
  }

  drover::testing::TempDir dir_;
  AllocDirLocation loc_{dir_.path(), "a1"};
  fs::path logs_ = dir_.path() / "a1" / "alloc" / "logs";
};

TEST_F(FollowReaderTest, ALogIsReadAcrossItsRotationsAsItGrows) {
  FollowReader r(loc_, {.task = "web", .type = "stdout"});
  EXPECT_EQ(ReadAll(r), "");  // no file yet: waited for
  Append(logs_ / "web.stdout.0", "ab");
  EXPECT_EQ(ReadAll(r), "ab");
  Append(logs_ / "web.stdout.0", "cd");
  Append(logs_ / "web.stdout.1", "ef");
  auto chunk = r.Next();
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, "cd");  // the rest of .0 first
  EXPECT_EQ(chunk->file, "alloc/logs/web.stdout.0");
  chunk = r.Next();
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, "ef");
  EXPECT_EQ(chunk->file, "alloc/logs/web.stdout.1");
  EXPECT_EQ(chunk->end_offset, 2);
  EXPECT_EQ(r.read(), 6);
  ASSERT_TRUE(LogSize(AllocDir(loc_), "web", "stdout").ok());
  EXPECT_EQ(*LogSize(AllocDir(loc_), "web", "stdout"), 6);
}

TEST_F(FollowReaderTest, PositionsCountFromEitherEndOfTheWholeLogAndTheLimitHolds) {
  Append(logs_ / "web.stderr.0", "0123");
  Append(logs_ / "web.stderr.1", "4567");
  FollowReader tail(loc_, {.task = "web", .type = "stderr", .offset = 6, .from_end = true});
  EXPECT_EQ(ReadAll(tail), "234567");
  FollowReader limited(loc_, {.task = "web", .type = "stderr", .offset = 1, .limit = 4});
  EXPECT_EQ(ReadAll(limited), "1234");
  EXPECT_TRUE(limited.AtLimit());
}

TEST_F(FollowReaderTest, OneFileFromAnOffsetAndTheConfinementOfFsView) {
  Append(dir_.path() / "a1" / "alloc" / "out.txt", "hello world");
  FollowReader r(loc_, {.path = "alloc/out.txt", .offset = 5, .from_end = true});
  EXPECT_EQ(ReadAll(r), "world");
  FollowReader missing(loc_, {.path = "alloc/nope"});
  EXPECT_TRUE(absl::IsNotFound(missing.Next().status()));
  FollowReader escape(loc_, {.path = "../../etc/shadow"});
  EXPECT_FALSE(escape.Next().ok());
  Append(dir_.path() / "a1" / "web" / "secrets" / "token", "s3cret");
  EXPECT_TRUE(absl::IsPermissionDenied(StatReadable(AllocDir(loc_), "web/secrets/token").status()));
  EXPECT_TRUE(StatReadable(AllocDir(loc_), "web/secrets").ok());  // a directory may be listed
}

}  // namespace
}  // namespace drover::allocdir
