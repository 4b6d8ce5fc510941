// Opening mount points in the task's root: never through a symlink the task planted,
// with openat2 and with the component walk used where the kernel has no openat2.
#include "supervisor/isolation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

class MountPointTest : public ::testing::TestWithParam<bool> {
 protected:
  MountPointTest() {
    fs::create_directories(dir_.path() / "root" / "a" / "b");
    std::ofstream(dir_.path() / "root" / "a" / "f") << "x";
    fs::create_directories(dir_.path() / "outside");
    fs::create_symlink(dir_.path() / "outside", dir_.path() / "root" / "a" / "l");
    fs::create_symlink("b", dir_.path() / "root" / "a" / "rel");
    root_ = open((dir_.path() / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  ~MountPointTest() override { close(root_); }

  // The inode `rel` opened as, or errno (negated) on failure.
  long Open(const char* rel) {
    const int fd = OpenMountPointInChild(root_, rel, GetParam());
    if (fd < 0)
      return -errno;
    struct stat st {};
    fstat(fd, &st);
    close(fd);
    return static_cast<long>(st.st_ino);
  }
  long Inode(const fs::path& p) {
    struct stat st {};
    return lstat(p.c_str(), &st) == 0 ? static_cast<long>(st.st_ino) : -1;
  }

  testing::TempDir dir_;
  int root_ = -1;
};

TEST_P(MountPointTest, OpensDirsAndFilesButNeverFollowsALink) {
  const fs::path root = dir_.path() / "root";
  EXPECT_EQ(Open(""), Inode(root));
  EXPECT_EQ(Open("a/b"), Inode(root / "a" / "b"));
  EXPECT_EQ(Open("a//b/"), Inode(root / "a" / "b"));
  EXPECT_EQ(Open("a/f"), Inode(root / "a" / "f"));
  EXPECT_LT(Open("a/l"), 0);
  EXPECT_LT(Open("a/l/x"), 0);
  EXPECT_LT(Open("a/rel"), 0);
  EXPECT_LT(Open("a/f/x"), 0);
  EXPECT_LT(Open("a/missing"), 0);
  EXPECT_LT(Open("../outside"), 0);
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, MountPointTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Walk" : "Openat2"; });

// A command whose link leads into a bind target (empty on the host, filled inside the
// task's root) is not called missing: exec tells. One with nothing on its path is.
TEST(CheckInsideTest, ALinkIntoABindTargetIsUnknownNotMissing) {
  testing::TempDir dir;
  const fs::path root = dir.path() / "root";
  fs::create_directories(root / "usr" / "bin");
  fs::create_directories(root / "local");
  fs::create_symlink("../usr/bin/python3", root / "local" / "run");
  IsolationSpec spec;
  spec.root = root.string();
  EXPECT_EQ(CheckInside(spec, "/local/run"), InsideCheck::kUnknown);
  EXPECT_EQ(CheckInside(spec, "/local/nothing"), InsideCheck::kMissing);
}

}  // namespace
}  // namespace drover::supervisor
