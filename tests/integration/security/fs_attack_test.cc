// Attacks through the files a task controls (issue 16, defects 1, 2, 3, 6, 14, 18, 20),
// each by a task doing the hostile thing against a real agent, then a check that the
// attack had no effect and that the agent still serves. raw_exec tasks are the
// attackers here (they run everywhere); exec_attack_test.cc repeats what needs exec.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"
#include "tests/integration/raw_http.h"
#include "tests/integration/security/attack_util.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

class FsAttackTest : public AgentTest {
 protected:
  // Runs a raw_exec service job whose task runs `script`, then touches
  // $NOMAD_ALLOC_DIR/ready and sleeps; returns the alloc once it is ready.
  std::string RunAttacker(const std::string& job, const std::string& script,
                          const nlohmann::json& log_config = nullptr) {
    std::string body =
        RawExecJob(job, "service", script + "; touch \"$NOMAD_ALLOC_DIR/ready\"; sleep 600");
    if (!log_config.is_null())
      body = WithTaskField(body, "LogConfig", log_config);
    const std::string file = agent_.WriteFile(job + ".json", body);
    EXPECT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
    const std::string id = WaitAlloc(job, "running")["ID"];
    EXPECT_TRUE(testing::WaitFor(
        [&] { return fs::exists(agent_.data_dir() / "alloc" / id / "alloc" / "ready"); }, 30s));
    return id;
  }
  absl::StatusOr<cli::HttpResponse> Get(const std::string& path) {
    return agent_.http().Do("GET", path, {}, std::chrono::seconds(10));
  }
};

// Defect 1 (critical): a task that replaced local/ with a link to /etc got the host's
// /etc, shadow included, in its own snapshot.
TEST_F(FsAttackTest, Defect01_TheSnapshotStoresPlantedSymlinksWithoutFollowingThem) {
  const std::string id =
      RunAttacker("snap",
                  "rm -rf \"$NOMAD_TASK_DIR\" && ln -s /etc \"$NOMAD_TASK_DIR\" && "
                  "rm -rf \"$NOMAD_ALLOC_DIR/data\" && ln -s / \"$NOMAD_ALLOC_DIR/data\"");
  auto tar = agent_.GetSnapshot(id);
  ASSERT_TRUE(tar.ok()) << tar.status();
  EXPECT_EQ(tar->body.find("root:"), std::string::npos) << "host /etc/passwd or shadow leaked";
  EXPECT_LT(tar->body.size(), 16u * 1024);
  ExpectServing(agent_);
}

// Defect 2: the fs API checked a path, then opened it again by name; a task swapping a
// directory and a symlink to /etc leaked /etc/shadow in 270 of 2,000 reads.
TEST_F(FsAttackTest, Defect02_SwappingDirectoriesAndSymlinksNeverLeaksAHostFile) {
  const std::string helper = testing::BinaryPath("drover-test-helper").string();
  const std::string id =
      RunAttacker("race",
                  "L=\"$NOMAD_TASK_DIR\"; mkdir \"$L/x\" && echo benign > \"$L/x/passwd\" && "
                  "ln -s /etc \"$L/y\" && (" +
                      helper + " exchange \"$L/x\" \"$L/y\" &)");
  int leaked = 0;
  int benign = 0;
  for (int i = 0; i < 2000; ++i) {
    auto r = Get("/v1/client/fs/cat/" + id + "?path=/t/local/x/passwd");
    if (r.ok() && r->body.find("root:") != std::string::npos)
      ++leaked;
    if (r.ok() && r->body == "benign\n")
      ++benign;
  }
  EXPECT_EQ(leaked, 0);
  EXPECT_GT(benign, 0) << "the race never let a read through: the test tests nothing";
  ExpectServing(agent_);
}

// Defect 3: fs/cat on a task-made FIFO blocked in open(); two such requests held both
// threads of the blocking pool, and nothing was scheduled until someone wrote to it.
TEST_F(FsAttackTest, Defect03_AFifoNeverBlocksTheAgent) {
  const std::string id = RunAttacker("fifo", "mkfifo \"$NOMAD_TASK_DIR/fifo\"");
  std::vector<std::thread> readers;
  std::atomic<int> refused{0};
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      auto client = NewClientFor(agent_);
      for (const char* op : {"cat", "readat", "stream"}) {
        auto r =
            client->Do("GET", std::string("/v1/client/fs/") + op + "/" + id + "?path=/t/local/fifo",
                       {}, std::chrono::seconds(10));
        if (!r.ok() && r.status().message().find("400") != std::string::npos)
          ++refused;
      }
    });
  }
  for (auto& t : readers)
    t.join();
  EXPECT_EQ(refused.load(), 12);
  // The scheduler still places work.
  const std::string file = agent_.WriteFile("after.json", RawExecJob("after", "batch", "true"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  WaitAlloc("after", "complete");
  ExpectServing(agent_);
}

// Defect 6: readat with a huge limit allocated it, and cat read a 1.5 GB sparse file
// whole; clients that never read pinned gigabytes.
TEST_F(FsAttackTest, Defect06_ReadsAreBoundedWhateverTheRequestOrTheFileSays) {
  const std::string id = RunAttacker("big",
                                     "printf abc > \"$NOMAD_TASK_DIR/small\" && "
                                     "truncate -s 1500M \"$NOMAD_TASK_DIR/big\"");
  auto small = Get("/v1/client/fs/readat/" + id + "?path=/t/local/small&offset=0&limit=3000000000");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->body, "abc");
  // Three clients ask for the whole sparse file and never read the answer.
  std::vector<int> stuck;
  for (int i = 0; i < 3; ++i) {
    const int fd = ConnectTo(agent_.address());
    ASSERT_GE(fd, 0);
    const std::string req =
        HttpRequest("GET", "/v1/client/fs/cat/" + id + "?path=/t/local/big", agent_.address());
    ASSERT_EQ(send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    stuck.push_back(fd);
  }
  // What the agent holds stays small: a chunk per stream, not the file.
  for (int i = 0; i < 20; ++i) {
    ExpectServing(agent_);
    EXPECT_LT(RssMb(agent_.pid()), 300) << "agent memory grows with what it is asked to send";
  }
  for (int fd : stuck)
    close(fd);
  ExpectServing(agent_);
}

// Defect 20: a NUL byte in `path` was accepted and cut the path short.
TEST_F(FsAttackTest, Defect20_ANulByteInAPathIsRefused) {
  const std::string id = RunAttacker("nul", "printf secret > \"$NOMAD_TASK_DIR/f\"");
  for (const char* op : {"cat", "stat", "readat", "ls"}) {
    auto r = Get(std::string("/v1/client/fs/") + op + "/" + id + "?path=/t/local/f%00.txt");
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_NE(r.status().message().find("400"), std::string::npos) << op << ": " << r.status();
  }
  ExpectServing(agent_);
}

// Defect 14: the data dir was 0755 and alloc, task and secrets dirs 0777: any local user
// could plant links and FIFOs there and read tasks' secrets.
TEST_F(FsAttackTest, Defect14_DirectoriesAreNotOpenToOtherUsers) {
  const std::string id = RunAttacker("modes", "true");
  const fs::path alloc = agent_.data_dir() / "alloc" / id;
  const std::pair<fs::path, unsigned> want[] = {{agent_.data_dir(), 0711},
                                                {agent_.data_dir() / "alloc", 0711},
                                                {alloc, 0711},
                                                {alloc / "alloc", 0755},
                                                {alloc / "alloc" / "logs", 0755},
                                                {alloc / "alloc" / "data", 0777},
                                                {alloc / "alloc" / "tmp", 01777},
                                                {alloc / "t", 0755},
                                                {alloc / "t" / "local", 0755},
                                                {alloc / "t" / "secrets", 0700},
                                                {alloc / "t" / "private", 0700}};
  for (const auto& [path, mode] : want) {
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 07777, mode) << path;
  }
  ExpectServing(agent_);
}

// Defect 18: the log rotator opened files a task had planted without checking their
// link count or owner. A hard link to a file elsewhere was appended to as root.
TEST_F(FsAttackTest, Defect18_ThePlantedNextLogFileIsReplacedNotAppendedTo) {
  testing::TempDir victim_dir;
  const fs::path victim = victim_dir.path() / "victim";
  std::ofstream(victim) << "keep";
  const std::string id = RunAttacker("rotate",
                                     "ln \"" + victim.string() +
                                         "\" \"$NOMAD_ALLOC_DIR/logs/t.stdout.1\" && "
                                         "head -c 1600000 /dev/zero | tr '\\0' x",
                                     {{"MaxFiles", 3}, {"MaxFileSizeMB", 1}});
  const fs::path next = agent_.data_dir() / "alloc" / id / "alloc" / "logs" / "t.stdout.1";
  ASSERT_TRUE(testing::WaitFor([&] { return fs::exists(next) && fs::file_size(next) > 0; }, 30s));
  EXPECT_EQ(testing::ReadFile(victim), "keep");
  EXPECT_EQ(fs::hard_link_count(next), 1u);
  ExpectServing(agent_);
}

}  // namespace
}  // namespace drover::integration
