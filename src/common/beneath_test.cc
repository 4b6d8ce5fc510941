#include "common/beneath.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::common {
namespace {

namespace fs = std::filesystem;

void WriteText(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

std::string PathOfFd(int fd) {
  std::error_code ec;
  return fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
}

// Both resolvers: openat2 where the kernel has it, and the component walk.
class BeneathTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ForceBeneathWalkForTesting(GetParam());
    root_ = tmp_.path() / "root";
    outside_ = tmp_.path() / "outside";
    fs::create_directories(root_ / "a" / "b");
    fs::create_directories(outside_);
    WriteText(root_ / "a" / "b" / "file", "inside");
    WriteText(outside_ / "secret", "SECRET");
    auto fd = OpenDirectory(root_);
    ASSERT_TRUE(fd.ok()) << fd.status();
    root_fd_ = std::move(*fd);
  }
  void TearDown() override { ForceBeneathWalkForTesting(false); }

  absl::StatusOr<std::string> Read(const std::string& rel) {
    struct stat st {};
    auto fd = OpenRegularBeneath(root_fd_.get(), rel, &st);
    if (!fd.ok())
      return fd.status();
    return ReadAt(fd->get(), 0, 1024);
  }

  testing::TempDir tmp_;
  fs::path root_;
  fs::path outside_;
  UniqueFd root_fd_;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, BeneathTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Walk" : "Default"; });

TEST_P(BeneathTest, OpensFilesBeneath) {
  EXPECT_EQ(*Read("a/b/file"), "inside");
  EXPECT_EQ(*Read("./a//b/./file"), "inside");
  EXPECT_EQ(*Read("a/../a/b/file"), "inside");
  auto dir = OpenBeneath(root_fd_.get(), "", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(PathOfFd(dir->get()), root_.string());
}

TEST_P(BeneathTest, RefusesEscapes) {
  EXPECT_TRUE(absl::IsPermissionDenied(Read("../outside/secret").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(Read("a/../../outside/secret").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(Read((outside_ / "secret").string()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Read(std::string("a/b/file\0x", 10)).status()));
  EXPECT_TRUE(absl::IsNotFound(Read("a/missing").status()));
}

TEST_P(BeneathTest, SymlinksStayBeneath) {
  fs::create_symlink("b/file", root_ / "a" / "rel");
  fs::create_symlink("../a/b", root_ / "a" / "up");
  fs::create_symlink(outside_ / "secret", root_ / "abs");
  fs::create_symlink("../outside/secret", root_ / "climb");
  fs::create_symlink("/", root_ / "slash");
  fs::create_symlink("loop", root_ / "loop");
  EXPECT_EQ(*Read("a/rel"), "inside");
  EXPECT_EQ(*Read("a/up/file"), "inside");
  EXPECT_TRUE(absl::IsPermissionDenied(Read("abs").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(Read("climb").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(Read("slash/etc/shadow").status()));
  EXPECT_FALSE(Read("loop").ok());
  // Refusing links altogether.
  struct stat st {};
  EXPECT_TRUE(absl::IsPermissionDenied(
      OpenRegularBeneath(root_fd_.get(), "a/rel", &st, Links::kRefuse).status()));
  // O_NOFOLLOW with O_PATH opens the link itself.
  auto link = OpenBeneath(root_fd_.get(), "abs", O_PATH | O_NOFOLLOW);
  ASSERT_TRUE(link.ok()) << link.status();
  ASSERT_EQ(fstatat(link->get(), "", &st, AT_EMPTY_PATH), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_P(BeneathTest, MagicLinksAreNotFollowed) {
  // A task can point a link at /proc; /proc/self/root is a magic link to the host's /.
  fs::create_symlink("/proc/self/root/etc/passwd", root_ / "magic");
  EXPECT_TRUE(absl::IsPermissionDenied(Read("magic").status()));
}

TEST_P(BeneathTest, FifosAndSocketsDoNotBlockAndAreNotRegular) {
  ASSERT_EQ(mkfifo((root_ / "fifo").c_str(), 0666), 0);
  auto fifo = Read("fifo");  // would block forever in a plain open(O_RDONLY)
  EXPECT_TRUE(absl::IsFailedPrecondition(fifo.status())) << fifo.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(Read("a").status()));  // a directory
}

TEST_P(BeneathTest, MakeDirsFollowsNoSymlink) {
  auto made = MakeDirsBeneath(root_fd_.get(), "x/y/z", 0751);
  ASSERT_TRUE(made.ok()) << made.status();
  struct stat st {};
  ASSERT_EQ(stat((root_ / "x" / "y" / "z").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  fs::create_symlink(outside_, root_ / "evil");
  EXPECT_TRUE(absl::IsFailedPrecondition(MakeDirsBeneath(root_fd_.get(), "evil/x", 0755).status()));
  EXPECT_FALSE(fs::exists(outside_ / "x"));
  EXPECT_FALSE(MakeDirsBeneath(root_fd_.get(), "../escape", 0755).ok());
  EXPECT_FALSE(fs::exists(tmp_.path() / "escape"));
  EXPECT_TRUE(
      absl::IsFailedPrecondition(MakeDirsBeneath(root_fd_.get(), "a/b/file/x", 0755).status()));
}

TEST_P(BeneathTest, ReadDirBoundsEntries) {
  for (int i = 0; i < 5; ++i)
    WriteText(root_ / "a" / ("f" + std::to_string(i)), "");
  auto dir = OpenBeneath(root_fd_.get(), "a", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(dir.ok());
  auto all = ReadDirAt(dir->get(), 6);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 6u);  // b + f0..f4
  EXPECT_TRUE(absl::IsResourceExhausted(ReadDirAt(dir->get(), 5).status()));
}

TEST_P(BeneathTest, ReadAtIsBounded) {
  struct stat st {};
  auto fd = OpenRegularBeneath(root_fd_.get(), "a/b/file", &st);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(*ReadAt(fd->get(), 2, 3), "sid");
  EXPECT_EQ(*ReadAt(fd->get(), 4, size_t{1} << 20), "de");  // no allocation of the limit kept
  EXPECT_EQ(*ReadAt(fd->get(), 100, 10), "");
  EXPECT_FALSE(ReadAt(fd->get(), -1, 10).ok());
}

TEST(RemoveTreeTest, FollowsNoSymlink) {
  testing::TempDir tmp;
  const fs::path tree = tmp.path() / "tree";
  const fs::path outside = tmp.path() / "outside";
  fs::create_directories(tree / "d");
  fs::create_directories(outside / "keep");
  WriteText(outside / "keep" / "file", "x");
  fs::create_symlink(outside, tree / "d" / "link");
  fs::create_symlink(outside / "keep" / "file", tree / "filelink");
  ASSERT_EQ(mkfifo((tree / "fifo").c_str(), 0666), 0);
  ASSERT_TRUE(RemoveTree(tree).ok());
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "keep" / "file"));
  EXPECT_TRUE(RemoveTree(tree).ok());  // already gone
}

TEST(RemoveTreeTest, RemovesTreesDeeperThanItsDescriptorBudget) {
  testing::TempDir tmp;
  const fs::path tree = tmp.path() / "tree";
  fs::create_directories(tree);
  UniqueFd cur(open(tree.c_str(), O_RDONLY | O_DIRECTORY));
  // 3,000 levels: deeper than PATH_MAX allows by name, as a task can build it.
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(mkdirat(cur.get(), "dd", 0755), 0);
    UniqueFd next(openat(cur.get(), "dd", O_RDONLY | O_DIRECTORY));
    ASSERT_TRUE(next.valid());
    if (i % 100 == 0) {
      int fd = openat(next.get(), "file", O_CREAT | O_WRONLY, 0644);
      ASSERT_GE(fd, 0);
      close(fd);
    }
    cur = std::move(next);
  }
  cur.reset();
  absl::Status s = RemoveTree(tree);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(fs::exists(tree));
}

TEST(RemoveTreeTest, ROOT_LeavesMountPointsAlone) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to mount";
  testing::TempDir tmp;
  const fs::path tree = tmp.path() / "tree";
  fs::create_directories(tree / "mnt");
  ASSERT_EQ(mount("tmpfs", (tree / "mnt").c_str(), "tmpfs", 0, "size=1m"), 0);
  WriteText(tree / "mnt" / "on-tmpfs", "x");
  absl::Status s = RemoveTree(tree);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(fs::exists(tree / "mnt" / "on-tmpfs"));
  ASSERT_EQ(umount2((tree / "mnt").c_str(), MNT_DETACH), 0);
  EXPECT_TRUE(RemoveTree(tree).ok());
}

}  // namespace
}  // namespace drover::common
