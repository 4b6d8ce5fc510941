// exec: what it asks the supervisor for, and (as root, with cgroups) what the task
// really gets: its chroot, pid 1, nobody, a memory limit that OOM-kills.
#include "drivers/exec/exec_driver.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/ids.h"
#include "common/mounts.h"
#include "drivers/supervised/supervised_driver_fixture.h"

namespace drover::drivers {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT

TEST(ExecSpawnSpecTest, IsolatesLimitsAndRunsAsNobody) {
  asio::io_context io;
  common::RealClock clock;
  SupervisorLink link(io.get_executor(), SupervisorLinkOptions{});
  ExecDriver driver(io.get_executor(), clock, link,
                    ExecDriverOptions{.chroot_env = {{"/usr", "/usr"}, {"/etc", "/etc"}}});
  TaskConfig c;
  c.id = "a1/web/0011aabb";
  c.task_dir = "/data/alloc/a1/web";
  c.alloc_dir = "/data/alloc/a1";
  c.memory_mb = 64;
  c.memory_max_mb = 128;
  c.cpu_shares = 250;
  c.config = model::Value::Object{
      {"command", "/bin/app"}, {"args", model::Value::Array{"-x"}}, {"pids_limit", 20}};
  auto spec = driver.BuildSpawnSpec(c);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"/bin/app", "-x"}));
  EXPECT_EQ(spec->user, "nobody");
  EXPECT_EQ(spec->cwd, "/");
  EXPECT_TRUE(spec->isolation.enabled);
  EXPECT_EQ(spec->isolation.root, "/data/alloc/a1/web");
  EXPECT_EQ(spec->isolation.binds,
            (std::vector<supervisor::BindMount>{{"/etc", "/etc", true},
                                                {"/usr", "/usr", true},
                                                {"/data/alloc/a1/alloc", "/alloc", false}}));
  EXPECT_EQ(spec->cgroup.name, "a1.web.0011aabb");
  EXPECT_EQ(spec->cgroup.limits, (supervisor::CgroupLimits{.memory_bytes = 128 << 20,
                                                           .memory_soft_bytes = 64 << 20,
                                                           .cpu_shares = 250,
                                                           .pids_max = 20}));
  // Hook mounts and device nodes come after the built-in binds.
  c.mounts = {{.task_path = "/dev-files/g0", .host_path = "/devs/g0", .readonly = true}};
  c.devices = {{.task_path = "/dev/nvidia0", .host_path = "/dev/nvidia0", .permissions = "rwm"}};
  spec = driver.BuildSpawnSpec(c);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->isolation.binds.back(),
            (supervisor::BindMount{"/devs/g0", "/dev-files/g0", true}));
  EXPECT_EQ(spec->isolation.devices,
            (std::vector<supervisor::DeviceNode>{{"/dev/nvidia0", "/dev/nvidia0", "rwm"}}));
  c.user = "www";
  c.config = model::Value::Object{{"command", "app"}, {"pids_limit", -1}};
  EXPECT_NE(driver.BuildSpawnSpec(c).status().message().find("pids_limit"), std::string::npos);
  c.config = model::Value::Object{{"command", "app"}};
  EXPECT_EQ(driver.BuildSpawnSpec(c)->user, "www");
  // No pids_limit: the default; 0: no limit.
  EXPECT_EQ(driver.BuildSpawnSpec(c)->cgroup.limits.pids_max, kDefaultPidsLimit);
  c.config = model::Value::Object{{"command", "app"}, {"pids_limit", 0}};
  EXPECT_EQ(driver.BuildSpawnSpec(c)->cgroup.limits.pids_max, 0);
  // Network mode none: an empty network namespace; modes exec cannot make are errors.
  EXPECT_FALSE(driver.BuildSpawnSpec(c)->isolation.network_none);
  c.network_mode = "none";
  EXPECT_TRUE(driver.BuildSpawnSpec(c)->isolation.network_none);
  c.network_mode = "bridge";
  EXPECT_FALSE(driver.BuildSpawnSpec(c).ok());
  EXPECT_EQ(driver.GetCapabilities().fs_isolation, "chroot");
}

class ExecDriverTest : public SupervisedDriverTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "exec needs root";
    if (supervisor::CgroupLayout::Detect().mode == supervisor::CgroupMode::kNone)
      GTEST_SKIP() << "exec needs a cgroup hierarchy with the memory controller";
    SupervisedDriverTest::SetUp();
    SupervisedDriverTest::Connect([this](SupervisorLink& link) {
      return std::make_unique<ExecDriver>(io_.get_executor(), clock_, link);
    });
    // A task dir as the client builds it: local/ writable by the task's user.
    for (const char* d : {"task/local", "task/tmp", "task/secrets", "alloc/alloc/data"}) {
      fs::create_directories(dir_.path() / d);
      fs::permissions(dir_.path() / d, fs::perms::all);
    }
    fs::permissions(dir_.path() / "task", fs::perms::owner_all | fs::perms::group_read |
                                              fs::perms::group_exec | fs::perms::others_read |
                                              fs::perms::others_exec);
  }

  fs::path task_dir() const { return dir_.path() / "task"; }

  TaskConfig Config(const std::string& id, std::vector<std::string> argv) {
    TaskConfig c;
    // Unique across test processes running at once: the cgroup is named after it.
    c.id = "alloc1/" + id + "/" + common::RandomHex(8);
    c.task_dir = task_dir().string();
    c.alloc_dir = (dir_.path() / "alloc").string();
    c.logs = {.dir = logs_.string(), .stdout_base = id + ".stdout", .stderr_base = id + ".stderr"};
    c.env = {{"PATH", "/usr/bin:/bin"}};
    c.memory_mb = 64;
    c.cpu_shares = 100;
    model::Value::Array args;
    for (size_t i = 1; i < argv.size(); ++i)
      args.push_back(model::Value(argv[i]));
    c.config = model::Value::Object{{"command", argv[0]}, {"args", args}};
    return c;
  }

  fs::path CgroupDir(const std::string& task_id) const {
    const supervisor::TaskCgroup cg(supervisor::CgroupLayout::Detect(),
                                    supervisor::CgroupName(task_id));
    return cg.Dirs().front();
  }
};

TEST_F(ExecDriverTest, ROOT_CGROUPS_TheTaskSeesOnlyItsChrootAsPid1AndNobody) {
  const std::string script =
      "echo $$ > /local/pid; id -u > /local/uid; ls / > /local/root; "
      "ls /proc | grep '^[0-9]' | sort -n | tail -1 > /local/maxpid; cat /proc/1/comm > "
      "/local/init; "
      "echo shared > /alloc/data/note; "
      "echo to-the-log";
  TaskConfig c = Config("look", {"/bin/sh", "-c", script});
  auto h = Start(c);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(fs::exists(CgroupDir(c.id)));
  auto r = Run(driver_->WaitTask(c.id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  const fs::path local = task_dir() / "local";
  EXPECT_EQ(testing::ReadFile(local / "pid"), "1\n");
  EXPECT_EQ(testing::ReadFile(local / "uid"), "65534\n");
  // Its own pid namespace: sh is pid 1 and only the few processes of the script exist.
  EXPECT_EQ(testing::ReadFile(local / "init"), "sh\n");
  const std::string maxpid = testing::ReadFile(local / "maxpid");
  ASSERT_FALSE(maxpid.empty());
  EXPECT_LE(std::stoi(maxpid), 10) << "host processes visible";
  const std::string root = testing::ReadFile(local / "root");
  for (const char* want : {"alloc\n", "bin\n", "dev\n", "etc\n", "local\n", "proc\n", "usr\n"})
    EXPECT_NE(root.find(want), std::string::npos) << want << " missing from:\n" << root;
  for (const char* host_only : {"home\n", "root\n", "work\n", "sys\n"})
    EXPECT_EQ(root.find(host_only), std::string::npos) << host_only << " visible:\n" << root;
  EXPECT_EQ(testing::ReadFile(dir_.path() / "alloc/alloc/data/note"), "shared\n");
  EXPECT_EQ(testing::ReadFile(logs_ / "look.stdout.0"), "to-the-log\n");
  // The task's mounts lived in its own namespace: nothing is left on the host.
  auto mounts = common::MountsUnder(task_dir());
  ASSERT_TRUE(mounts.ok());
  EXPECT_TRUE(mounts->empty());
  ASSERT_TRUE(driver_->DestroyTask(c.id, false).ok());
  EXPECT_TRUE(RunUntil([&] { return !fs::exists(CgroupDir(c.id)); }));
}

TEST_F(ExecDriverTest, ROOT_CGROUPS_HookMountsAndDeviceNodesReachTheTask) {
  const fs::path desc = dir_.path() / "gpu0.desc";
  { std::ofstream(desc) << "fake gpu\n"; }
  const std::string script =
      "test -c /dev/fakegpu0 && test -c /dev/dri/card9 && echo nodes > /local/nodes; "
      "stat -c %a /dev/dri/card9 > /local/mode; "
      "cat /dev-files/gpu0 > /local/seen; (echo x > /dev-files/gpu0) 2>/dev/null || echo ro > "
      "/local/ro";
  TaskConfig c = Config("devs", {"/bin/sh", "-c", script});
  c.devices = {{.task_path = "/dev/fakegpu0", .host_path = "/dev/null", .permissions = "rwm"},
               {.task_path = "/dev/dri/card9", .host_path = "/dev/zero", .permissions = "r"}};
  c.mounts = {{.task_path = "/dev-files/gpu0", .host_path = desc.string(), .readonly = true}};
  auto h = Start(c);
  ASSERT_TRUE(h.ok()) << h.status();
  auto r = Run(driver_->WaitTask(c.id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  const fs::path local = task_dir() / "local";
  EXPECT_EQ(testing::ReadFile(local / "nodes"), "nodes\n");
  EXPECT_EQ(testing::ReadFile(local / "mode"), "444\n");  // "r" only
  EXPECT_EQ(testing::ReadFile(local / "seen"), "fake gpu\n");
  EXPECT_EQ(testing::ReadFile(local / "ro"), "ro\n");
  EXPECT_EQ(testing::ReadFile(desc), "fake gpu\n");
  ASSERT_TRUE(driver_->DestroyTask(c.id, false).ok());

  // A device node that is not there fails the start: no task without its devices.
  TaskConfig missing = Config("nodev", {"/bin/true"});
  missing.devices = {{.task_path = "/dev/gone", .host_path = "/dev/does-not-exist"}};
  // Nor one outside /dev.
  TaskConfig outside = Config("notdev", {"/bin/true"});
  outside.devices = {{.task_path = "/dev/x", .host_path = desc.string()}};
  auto refused = Start(outside);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is not under /dev"), std::string::npos)
      << refused.status();
  auto bad = Start(missing);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("device '/dev/does-not-exist' is not available"),
            std::string::npos)
      << bad.status();
}

TEST_F(ExecDriverTest, ROOT_CGROUPS_AMemoryHogIsOomKilledAndTheExitSaysSo) {
  fs::copy_file(Helper(), task_dir() / "local" / "helper");
  TaskConfig c = Config("hog", {"/local/helper", "hog", "512", "pause"});
  c.memory_mb = 32;
  auto h = Start(c);
  ASSERT_TRUE(h.ok()) << h.status();
  auto r = Run(driver_->WaitTask(c.id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_TRUE(r->oom_killed);
  ASSERT_TRUE(driver_->DestroyTask(c.id, false).ok());
  EXPECT_TRUE(RunUntil([&] { return !fs::exists(CgroupDir(c.id)); }));
}

TEST_F(ExecDriverTest, ROOT_CGROUPS_StopKillsEverythingAndUsageComesFromTheCgroup) {
  const std::string script = "sleep 300 & touch /local/ready; exec sleep 301";
  TaskConfig c = Config("stop", {"/bin/sh", "-c", script});
  auto h = Start(c);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(testing::WaitFor([&] { return fs::exists(task_dir() / "local" / "ready"); }));
  const fs::path procs = CgroupDir(c.id) / "cgroup.procs";
  // The two sleeps (`touch` may still be on its way out when the file appears).
  std::string members;
  EXPECT_TRUE(testing::WaitFor([&] {
    members = testing::ReadFile(procs);
    return std::count(members.begin(), members.end(), '\n') == 2;
  })) << members;
  auto usage = driver_->TaskStats(c.id);
  ASSERT_TRUE(usage.ok());
  EXPECT_GT(usage->memory.usage, 0u);
  // `sleep` is pid 1 and has no SIGTERM handler: the signal is ignored, SIGKILL follows
  // (and takes the background sleep with it).
  ASSERT_TRUE(Run(driver_->StopTask(c.id, 300ms, "SIGTERM")).ok());
  auto r = Run(driver_->WaitTask(c.id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_FALSE(r->oom_killed);
  ASSERT_TRUE(driver_->DestroyTask(c.id, false).ok());
  EXPECT_TRUE(RunUntil([&] { return !fs::exists(CgroupDir(c.id)); }));
}

TEST_F(ExecDriverTest, ROOT_CGROUPS_AMissingCommandIsAClearError) {
  auto h = Start(Config("missing", {"/not/in/the/chroot"}));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("/not/in/the/chroot"), std::string::npos) << h.status();
  h = Start(Config("missing2", {"no-such-command"}));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("not found in PATH"), std::string::npos) << h.status();
}

}  // namespace
}  // namespace drover::drivers
