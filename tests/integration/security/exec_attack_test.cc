// Attacks by exec tasks, the confined ones (issue 16, defects 1, 13, 14 and 17): a task
// running as nobody in its chroot that plants symlinks for root to follow, and what it
// may no longer do at all. They need root and a cgroup hierarchy, as exec does.
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "supervisor/cgroups.h"
#include "tests/integration/agent_fixture.h"
#include "tests/integration/raw_http.h"
#include "tests/integration/security/attack_util.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

// An exec job running `/bin/sh -c script` as nobody.
std::string ExecJob(const std::string& id, const std::string& type, const std::string& script) {
  codec::Json job = {{"ID", id},
                     {"Type", type},
                     {"Datacenters", {"dc1"}},
                     {"TaskGroups",
                      {{{"Name", "g"},
                        {"RestartPolicy", {{"Attempts", 0}, {"Mode", "fail"}}},
                        {"ReschedulePolicy", {{"Attempts", 0}, {"Unlimited", false}}},
                        {"Tasks",
                         {{{"Name", "t"},
                           {"Driver", "exec"},
                           {"KillTimeout", 2'000'000'000},
                           {"Config", {{"command", "/bin/sh"}, {"args", {"-c", script}}}},
                           {"Resources", {{"CPU", 100}, {"MemoryMB", 64}}}}}}}}}};
  return codec::Dump(codec::Json{{"Job", job}});
}

class ExecAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "exec needs root";
    if (supervisor::CgroupLayout::Detect().mode == supervisor::CgroupMode::kNone)
      GTEST_SKIP() << "exec needs a cgroup hierarchy with the memory controller";
  }
  // Starts an agent (with `config`, an agent configuration file's text, if any).
  void Start(const std::string& config = "") {
    std::vector<std::string> args;
    if (!config.empty()) {
      std::ofstream(conf_.path() / "agent.hcl") << config;
      args = {"-config", (conf_.path() / "agent.hcl").string()};
    }
    agent_ = std::make_unique<AgentProcess>(args);
    ASSERT_TRUE(agent_->ok()) << agent_->log();
  }
  void TearDown() override {
    if (HasFailure() && agent_)
      std::cerr << "---- agent log ----\n" << agent_->log();
  }
  // Runs `body` and waits for its alloc to reach `status`; returns the alloc.
  codec::Json Run(const std::string& job, const std::string& body, const std::string& status) {
    EXPECT_EQ(
        agent_->Cli({"job", "run", "-detach", agent_->WriteFile(job + ".json", body)}).exit_code,
        0);
    codec::Json found;
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          codec::Json allocs = agent_->Get("/v1/job/" + job + "/allocations");
          if (allocs.empty())
            return false;
          found = agent_->Get("/v1/allocation/" + allocs[0]["ID"].get<std::string>());
          return found["ClientStatus"] == status;
        },
        30s))
        << found.dump();
    return found;
  }
  std::string Shared(const codec::Json& alloc, const std::string& name) {
    return testing::ReadFile(agent_->data_dir() / "alloc" / alloc["ID"].get<std::string>() /
                             "alloc" / "data" / name);
  }

  testing::TempDir conf_;
  std::unique_ptr<AgentProcess> agent_;
};

// The bounding set kept (supervisor/hardening.h kAllowedCaps), as /proc prints CapBnd.
std::string AllowedCapMask() {
  const int caps[] = {0, 1, 3, 4, 5, 6, 7, 8, 10, 18, 27, 29, 31};
  uint64_t mask = 0;
  for (int c : caps)
    mask |= uint64_t{1} << c;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(mask));
  return buf;
}

// Defect 17: exec tasks had no_new_privs off, the full capability bounding set, no
// seccomp filter, and the agent's environment.
TEST_F(ExecAttackTest, ROOT_CGROUPS_Defect17_ExecTasksAreHardened) {
  setenv("DROVER_AGENT_SECRET", "hunter2", 1);  // in the agent's environment
  Start();
  unsetenv("DROVER_AGENT_SECRET");
  const codec::Json alloc =
      Run("hard",
          ExecJob("hard", "batch",
                  "grep -E '^(NoNewPrivs|Seccomp|CapBnd):' /proc/self/status > "
                  "/alloc/data/status; env > /alloc/data/env; "
                  "(unshare -U true 2>/dev/null && echo unshare-allowed || echo unshare-refused)"
                  " > /alloc/data/unshare"),
          "complete");
  const std::string status = Shared(alloc, "status");
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  EXPECT_NE(status.find("Seccomp:\t2"), std::string::npos) << status;
  EXPECT_NE(status.find("CapBnd:\t" + AllowedCapMask()), std::string::npos) << status;
  const std::string env = Shared(alloc, "env");
  EXPECT_EQ(env.find("DROVER_AGENT_SECRET"), std::string::npos) << env;
  EXPECT_NE(env.find("NOMAD_ALLOC_ID="), std::string::npos) << env;
  EXPECT_NE(env.find("PATH="), std::string::npos) << env;
  EXPECT_EQ(Shared(alloc, "unshare"), "unshare-refused\n");
  ExpectServing(*agent_);
}

// network { mode = "none" }: an empty network namespace, so the task cannot reach the
// agent's API on the host; bridge, which Drover cannot set up yet, is refused by name.
TEST_F(ExecAttackTest, ROOT_CGROUPS_NetworkModeNoneIsolatesAndBridgeIsRefused) {
  Start();
  std::string body = ExecJob("nonet", "batch", "cat /proc/net/dev > /alloc/data/net");
  body = WithGroupField(body, "Networks", {{{"Mode", "none"}}});
  const codec::Json alloc = Run("nonet", body, "complete");
  const std::string net = Shared(alloc, "net");
  EXPECT_NE(net.find("lo:"), std::string::npos) << net;
  // Two header lines and the loopback interface: nothing else.
  EXPECT_EQ(std::count(net.begin(), net.end(), '\n'), 3) << net;
  const std::string bridge =
      WithGroupField(ExecJob("bridged", "batch", "true"), "Networks", {{{"Mode", "bridge"}}});
  RawResponse r =
      RawExchange(agent_->address(), HttpRequest("PUT", "/v1/jobs", agent_->address(), bridge,
                                                 {{"Content-Type", "application/json"}}));
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("network mode \"bridge\" is not supported"), std::string::npos) << r.body;
  ExpectServing(*agent_);
}

// Defect 14: exec tasks' directories belong to the user they run as; secrets are that
// user's only.
TEST_F(ExecAttackTest, ROOT_CGROUPS_Defect14_TaskDirsBelongToTheTaskUser) {
  Start();
  const codec::Json alloc = Run("owner", ExecJob("owner", "service", "sleep 600"), "running");
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const fs::path t = agent_->data_dir() / "alloc" / alloc["ID"].get<std::string>() / "t";
  for (const auto& [dir, uid, mode] :
       {std::tuple{t, nobody->pw_uid, 0755u}, std::tuple{t / "local", nobody->pw_uid, 0755u},
        std::tuple{t / "secrets", nobody->pw_uid, 0700u}, std::tuple{t / "private", 0u, 0700u}}) {
    struct stat st {};
    ASSERT_EQ(stat(dir.c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_uid, uid) << dir;
    EXPECT_EQ(st.st_mode & 07777, mode) << dir;
  }
  ExpectServing(*agent_);
}

// Defect 1 as the review found it: a task confined by exec (nobody, chroot) replaced
// its local/ with a link to /etc and read the host's /etc/shadow through its snapshot.
TEST_F(ExecAttackTest, ROOT_CGROUPS_Defect01_AnExecTaskCannotReadHostFilesThroughItsSnapshot) {
  Start();
  const codec::Json alloc =
      Run("snap", ExecJob("snap", "service", "rm -rf /local && ln -s /etc /local && sleep 600"),
          "running");
  const std::string id = alloc["ID"];
  ASSERT_TRUE(testing::WaitFor(
      [&] { return fs::is_symlink(agent_->data_dir() / "alloc" / id / "t" / "local"); }));
  auto tar = agent_->GetSnapshot(id);
  ASSERT_TRUE(tar.ok()) << tar.status();
  EXPECT_EQ(tar->body.find("root:"), std::string::npos) << "host /etc leaked";
  ExpectServing(*agent_);
}

// Defect 13: preparing mount points again before a restart, the supervisor followed a
// symlink the task had put in place of one: a nobody task got root to create a file in
// a root-only directory.
TEST_F(ExecAttackTest, ROOT_CGROUPS_Defect13_MountPointsAreNeverFollowedOnRestart) {
  testing::TempDir host;
  const fs::path shared = host.path() / "shared-file";
  std::ofstream(shared) << "mounted into the task";
  const fs::path victim = host.path() / "victim";
  fs::create_directories(victim);
  fs::permissions(victim, fs::perms::owner_all);  // root only
  Start(
      "client {\n  chroot_env {\n    \"/bin\" = \"/bin\"\n    \"/lib\" = \"/lib\"\n"
      "    \"/lib64\" = \"/lib64\"\n    \"/usr\" = \"/usr\"\n    \"/etc\" = \"/etc\"\n    \"" +
      shared.string() + "\" = \"/data/shared-file\"\n  }\n}\n");
  // The first run swaps /data (a mount point's directory) for a link to the victim and
  // fails; the restart policy starts it again.
  std::string body = ExecJob("swap", "service",
                             "if [ -L /data ]; then sleep 600; fi; mv /data /data.old && ln -s " +
                                 victim.string() + " /data; exit 1");
  body = WithGroupField(
      body, "RestartPolicy",
      {{"Attempts", 3}, {"Interval", 600'000'000'000}, {"Delay", 0}, {"Mode", "fail"}});
  body = WithTaskField(
      body, "RestartPolicy",
      {{"Attempts", 3}, {"Interval", 600'000'000'000}, {"Delay", 0}, {"Mode", "fail"}});
  const codec::Json alloc = Run("swap", body, "failed");
  EXPECT_TRUE(fs::is_empty(victim)) << "root created something in the victim directory";
  // The restart failed on the mount point, and said so.
  bool named = false;
  for (const auto& e : alloc["TaskStates"]["t"]["Events"])
    named = named || e.value("DisplayMessage", "").find("/data") != std::string::npos;
  EXPECT_TRUE(named) << alloc["TaskStates"]["t"]["Events"].dump();
  ExpectServing(*agent_);
}

}  // namespace
}  // namespace drover::integration
