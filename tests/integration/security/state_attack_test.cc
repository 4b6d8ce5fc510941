// Attacks on what the server keeps (issue 16, defects 9 and 19): a state DB whose bytes
// were changed on disk, and a disk that fills up under a registration.
#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"
#include "tests/integration/raw_http.h"
#include "tests/integration/security/attack_util.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

void Overwrite(const fs::path& file, size_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Prints the agent's log when the test has failed (however it ended).
struct LogOnFailure {
  AgentProcess& agent;
  ~LogOnFailure() {
    if (::testing::Test::HasFailure())
      std::cerr << "---- agent log ----\n" << agent.log();
  }
};

// The page that holds the root of LMDB's main tree, from the newer of its two meta
// pages (LMDB's on-disk layout: a 16-byte page header, then MDB_meta).
size_t RootPageOffset(const fs::path& file) {
  const std::string bytes = testing::ReadFile(file);
  constexpr size_t kPage = 4096;
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    return v;
  };
  // MDB_meta: magic, version (4 each), address, mapsize (8 each), two MDB_db of 48
  // bytes (the main one second; md_root its last field), last_pg, txnid.
  const size_t meta = 16;
  const size_t main_root = meta + 24 + 48 + 40;
  const size_t txnid = meta + 24 + 96 + 8;
  const bool second = u64(kPage + txnid) > u64(txnid);
  return static_cast<size_t>(u64((second ? kPage : 0) + main_root)) * kPage;
}

// Defect 9: four bytes written into a page of the server's state.db crashed the agent
// at start (SIGBUS in LMDB's map), and -reset-corrupt-state did not recover.
TEST(StateAttackTest, Defect09_ADamagedStateDbIsAClearErrorAndResetRecovers) {
  AgentProcess agent;
  ASSERT_TRUE(agent.ok()) << agent.log();
  LogOnFailure log{agent};
  const std::string job = RawExecJob("corruptme-job", "service", "sleep 60");
  ASSERT_EQ(agent.Cli({"job", "run", "-detach", agent.WriteFile("j.json", job)}).exit_code, 0);
  ASSERT_EQ(agent.Stop(), 0);
  const fs::path db = agent.data_dir() / "server" / "state.db";
  const fs::path pristine = agent.data_dir() / "pristine.db";
  fs::copy_file(db, pristine);

  // A record's bytes: found by its checksum when it is read. (Every copy of the job's ID
  // in the file: older copies sit in pages LMDB no longer uses.)
  const std::string bytes = testing::ReadFile(db);
  size_t hits = 0;
  for (size_t at = bytes.find("corruptme-job"); at != std::string::npos;
       at = bytes.find("corruptme-job", at + 1), ++hits) {
    Overwrite(db, at, "\xff\xff\xff\xff");
  }
  ASSERT_GT(hits, 0u);
  agent.Restart();
  EXPECT_FALSE(agent.ok());
  EXPECT_EQ(agent.exit_status(), 1) << agent.log();
  EXPECT_NE(agent.log().find("state.db is damaged"), std::string::npos) << agent.log();
  EXPECT_NE(agent.log().find("-reset-corrupt-state"), std::string::npos);

  // The tree's own pages: whatever LMDB makes of them happens in a child, not the agent.
  fs::copy_file(pristine, db, fs::copy_options::overwrite_existing);
  Overwrite(db, RootPageOffset(db) + 8, std::string(8, '\xff'));
  agent.Restart();
  EXPECT_FALSE(agent.ok());
  EXPECT_EQ(agent.exit_status(), 1) << "the agent crashed instead of refusing: " << agent.log();
  EXPECT_NE(agent.log().find("state.db is damaged"), std::string::npos) << agent.log();

  // -reset-corrupt-state moves the file aside and starts over.
  agent.Restart({"-reset-corrupt-state"});
  ASSERT_TRUE(agent.ok()) << agent.log();
  bool aside = false;
  for (const auto& e : fs::directory_iterator(agent.data_dir() / "server"))
    aside = aside || e.path().filename().string().rfind("state.db.corrupt-", 0) == 0;
  EXPECT_TRUE(aside);
  EXPECT_EQ(agent.Get("/v1/jobs").size(), 0u);
  ExpectServing(agent);
}

// Defect 19: with the disk full, PUT /v1/jobs answered 500, yet the job was live in
// memory and scheduled.
TEST(StateAttackTest, ROOT_Defect19_AWriteThatIsNotDurableIsNotLive) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to mount a small file system";
  fs::path server_dir;
  AgentProcess agent({}, AgentProcess::Role::kDev, [&](const fs::path& data_dir) {
    server_dir = data_dir / "server";
    fs::create_directories(server_dir);
    ASSERT_EQ(mount("tmpfs", server_dir.c_str(), "tmpfs", 0, "size=4m"), 0) << strerror(errno);
  });
  ASSERT_TRUE(agent.ok()) << agent.log();
  LogOnFailure log{agent};
  // Fill the file system the server's DB is on.
  const fs::path filler = server_dir / "filler";
  {
    std::ofstream f(filler, std::ios::binary);
    const std::string block(64 << 10, 'x');
    while (f.write(block.data(), static_cast<std::streamsize>(block.size())))
      f.flush();
  }
  // LMDB reuses the pages it freed before it needs new ones: register jobs until a
  // write needs space the file system no longer has.
  std::string late;
  RawResponse r;
  for (int i = 0; i < 200 && r.status != 500; ++i) {
    late = "late-" + std::to_string(i);
    // Count 1: each one that is accepted also runs (and writes its allocation).
    r = RawExchange(agent.address(),
                    HttpRequest("PUT", "/v1/jobs", agent.address(),
                                WithGroupField(RawExecJob(late, "batch", "true"), "Count", 1),
                                {{"Content-Type", "application/json"}}));
  }
  ASSERT_EQ(r.status, 500) << "no write ever failed: " << r.body;
  // Not live: no job, no evaluation, nothing scheduled.
  EXPECT_EQ(
      RawExchange(agent.address(), HttpRequest("GET", "/v1/job/" + late, agent.address())).status,
      404);
  EXPECT_EQ(agent.Get("/v1/job/" + late + "/evaluations").size(), 0u);
  EXPECT_EQ(agent.Get("/v1/job/" + late + "/allocations").size(), 0u);
  ExpectServing(agent);
  // With room again, the same request succeeds and runs.
  fs::remove(filler);
  r = RawExchange(agent.address(),
                  HttpRequest("PUT", "/v1/jobs", agent.address(), RawExecJob(late, "batch", "true"),
                              {{"Content-Type", "application/json"}}));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(
      testing::WaitFor([&] { return agent.Get("/v1/job/" + late + "/allocations").size() == 1; }));
  agent.Stop();
  umount2(server_dir.c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace drover::integration
