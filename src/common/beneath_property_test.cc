// Property test of the beneath module: random trees of files, directories, symlinks
// (absolute, relative, "..", loops, magic), FIFOs and sockets, mutated by another thread
// (renames, exchanges, removals) while other threads resolve random paths. Whatever
// opens must be beneath the root: never the directory around it, never a file outside.
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "common/beneath.h"
#include "testing/test_util.h"

namespace drover::common {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNames[] = {"a", "b", "c", "d"};

std::string RandomRel(std::mt19937& rng, bool dots) {
  std::uniform_int_distribution<int> depth(1, 4);
  std::uniform_int_distribution<int> pick(0, dots ? 5 : 3);
  std::string rel;
  for (int i = depth(rng); i > 0; --i) {
    const int p = pick(rng);
    rel += (rel.empty() ? "" : "/") + std::string(p < 4 ? kNames[p] : (p == 4 ? ".." : "."));
  }
  return rel;
}

// The attacker: a task changing its own directory as fast as it can.
class Mutator {
 public:
  Mutator(int root, fs::path outside, uint32_t seed)
      : root_(root), outside_(std::move(outside)), rng_(seed) {}

  void Step() {
    const std::string rel = RandomRel(rng_, false);
    const size_t cut = rel.rfind('/');
    const std::string parent = cut == std::string::npos ? "" : rel.substr(0, cut);
    const std::string name = cut == std::string::npos ? rel : rel.substr(cut + 1);
    // The attacker may go anywhere in its tree, but it never builds outside (it walks
    // without following its own links), so "outside" stays as the test made it.
    auto dir = OpenBeneath(root_, parent, O_RDONLY | O_DIRECTORY, Links::kRefuse);
    if (!dir.ok())
      return;
    const int d = dir->get();
    switch (std::uniform_int_distribution<int>(0, 9)(rng_)) {
      case 0:
        mkdirat(d, name.c_str(), 0755);
        break;
      case 1:
        close(openat(d, name.c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_NONBLOCK, 0644));
        break;
      case 2:
        symlinkat(LinkTarget().c_str(), d, name.c_str());
        break;
      case 3:
        mkfifoat(d, name.c_str(), 0666);
        break;
      case 4:
        MakeSocket(d, name);
        break;
      case 5:
      case 6:
      case 7: {
        // Exchange (a directory with a symlink, say) or move, between two random places.
        const std::string other = RandomRel(rng_, false);
        const size_t ocut = other.rfind('/');
        const std::string oparent = ocut == std::string::npos ? "" : other.substr(0, ocut);
        const std::string oname = ocut == std::string::npos ? other : other.substr(ocut + 1);
        auto odir = OpenBeneath(root_, oparent, O_RDONLY | O_DIRECTORY, Links::kRefuse);
        if (odir.ok())
          renameat2(d, name.c_str(), odir->get(), oname.c_str(), RENAME_EXCHANGE);
        if (odir.ok() && errno == ENOENT)
          renameat(d, name.c_str(), odir->get(), oname.c_str());
        break;
      }
      default:
        if (unlinkat(d, name.c_str(), 0) != 0)
          unlinkat(d, name.c_str(), AT_REMOVEDIR);
    }
  }

 private:
  std::string LinkTarget() {
    static const char* kTargets[] = {
        "..",   "../..",           "../../..",       "/",    "/etc", "a", "../a/b",
        "c/..", "/proc/self/root", "/proc/self/cwd", "self", "."};
    const int n = static_cast<int>(std::size(kTargets));
    const int p = std::uniform_int_distribution<int>(0, n + 1)(rng_);
    if (p == n)
      return (outside_ / "secret").string();
    if (p == n + 1)
      return "../../outside/secret";
    return kTargets[p];
  }

  static void MakeSocket(int dir, const std::string& name) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
      return;
    // bind() takes a path: go through /proc/self/fd of the directory descriptor.
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = "/proc/self/fd/" + std::to_string(dir) + "/" + name;
    if (path.size() < sizeof addr.sun_path) {
      std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
      bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    }
    close(s);
  }

  int root_;
  fs::path outside_;
  std::mt19937 rng_;
};

class BeneathPropertyTest : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(Resolvers, BeneathPropertyTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Walk" : "Default"; });

TEST_P(BeneathPropertyTest, NothingOutsideTheRootIsEverOpened) {
  ForceBeneathWalkForTesting(GetParam());
  testing::TempDir tmp;
  const fs::path root = fs::canonical(tmp.path()) / "root";
  const fs::path outside = fs::canonical(tmp.path()) / "outside";
  fs::create_directories(root);
  fs::create_directories(outside / "dir");
  std::ofstream(outside / "secret") << "SECRET";
  // Inodes the resolver must never hand out.
  std::set<std::pair<dev_t, ino_t>> forbidden;
  for (const fs::path& p : {tmp.path(), outside, outside / "dir", outside / "secret", fs::path("/"),
                            fs::path("/etc"), fs::path("/proc")}) {
    struct stat st {};
    ASSERT_EQ(stat(p.c_str(), &st), 0) << p;
    forbidden.insert({st.st_dev, st.st_ino});
  }
  auto root_fd = OpenDirectory(root);
  ASSERT_TRUE(root_fd.ok());

  std::atomic<bool> stop{false};
  std::thread attacker([&] {
    Mutator m(root_fd->get(), outside, 1234);
    // Seed a tree, then keep changing it.
    for (int i = 0; i < 200; ++i)
      m.Step();
    while (!stop.load())
      m.Step();
  });

  constexpr int kFlags[] = {O_RDONLY | O_NONBLOCK, O_PATH, O_RDONLY | O_DIRECTORY,
                            O_PATH | O_NOFOLLOW};
  std::atomic<int> opened{0};
  std::atomic<int> escapes{0};
  std::string first_escape;
  std::mutex escape_mu;
  auto resolve = [&](uint32_t seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < 15000; ++i) {
      const std::string rel = RandomRel(rng, true);
      const int flags = kFlags[std::uniform_int_distribution<int>(0, 3)(rng)];
      auto fd = OpenBeneath(root_fd->get(), rel, flags);
      if (!fd.ok())
        continue;
      opened.fetch_add(1);
      struct stat st {};
      const bool stat_ok = fstatat(fd->get(), "", &st, AT_EMPTY_PATH) == 0;
      std::error_code ec;
      const std::string where =
          fs::read_symlink("/proc/self/fd/" + std::to_string(fd->get()), ec).string();
      const bool beneath = where == root.string() || where.starts_with(root.string() + "/");
      if (!beneath || (stat_ok && forbidden.contains({st.st_dev, st.st_ino}))) {
        escapes.fetch_add(1);
        std::lock_guard lock(escape_mu);
        if (first_escape.empty())
          first_escape = rel + " -> " + where;
      }
    }
  };
  std::thread r1(resolve, 1);
  std::thread r2(resolve, 2);
  r1.join();
  r2.join();
  stop.store(true);
  attacker.join();
  ForceBeneathWalkForTesting(false);

  EXPECT_EQ(escapes.load(), 0) << "first: " << first_escape;
  EXPECT_GT(opened.load(), 1000) << "the resolver opened almost nothing: the test tests nothing";
  struct stat st {};
  EXPECT_EQ(stat((outside / "secret").c_str(), &st), 0);
  EXPECT_TRUE(RemoveTree(root).ok());
}

}  // namespace
}  // namespace drover::common
