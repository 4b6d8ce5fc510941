// The client file-system and logs endpoints against a real agent and a real task.
#include <fstream>
#include <mutex>
#include <thread>

#include "cli/url.h"
#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

class FsTest : public AgentTest {
 protected:
  // A finished batch alloc whose task printed "hello" and wrote local/f.
  std::string RunWriter() {
    const std::string file = agent_.WriteFile(
        "w.json", RawExecJob("writer", "batch",
                             "echo hello; echo oops >&2; printf 'abcdef' > \"$NOMAD_TASK_DIR/f\"; "
                             "echo token > \"$NOMAD_SECRETS_DIR/token\"; "
                             "ln -s /etc \"$NOMAD_TASK_DIR/out\""));
    EXPECT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
    return WaitAlloc("writer", "complete")["ID"];
  }
  absl::StatusOr<std::string> Body(const std::string& path) {
    auto r = agent_.http().Do("GET", path);
    if (!r.ok())
      return r.status();
    return r->body;
  }
};

TEST_F(FsTest, ListStatCatReadatAndLogs) {
  const std::string id = RunWriter();
  const std::string fs = "/v1/client/fs/";
  codec::Json ls = agent_.Get(fs + "ls/" + id + "?path=/");
  ASSERT_EQ(ls.size(), 2u) << ls.dump();
  EXPECT_EQ(ls[0]["Name"], "alloc");
  EXPECT_EQ(ls[0]["IsDir"], true);
  EXPECT_EQ(ls[1]["Name"], "t");
  codec::Json st = agent_.Get(fs + "stat/" + id + "?path=/t/local/f");
  EXPECT_EQ(st["Size"], 6);
  EXPECT_EQ(st["IsDir"], false);
  EXPECT_EQ(*Body(fs + "cat/" + id + "?path=/t/local/f"), "abcdef");
  EXPECT_EQ(*Body(fs + "readat/" + id + "?path=/t/local/f&offset=1&limit=3"), "bcd");
  // Logs: plain bytes, framed JSON, and from the end.
  ASSERT_TRUE(testing::WaitFor([&] {
    auto b = Body(fs + "logs/" + id + "?task=t&type=stdout&plain=true");
    return b.ok() && *b == "hello\n";
  }));
  EXPECT_EQ(*Body(fs + "logs/" + id + "?task=t&type=stderr&plain=true"), "oops\n");
  EXPECT_EQ(*Body(fs + "logs/" + id + "?task=t&type=stdout&plain=true&origin=end&offset=3"),
            "lo\n");
  auto framed = codec::ParseJson(*Body(fs + "logs/" + id + "?task=t&type=stdout"));
  ASSERT_TRUE(framed.ok());
  EXPECT_EQ((*framed)["Data"], "aGVsbG8K");
  EXPECT_EQ((*framed)["File"], "alloc/logs/t.stdout.0");
}

TEST_F(FsTest, BadRequestsGetClearErrors) {
  const std::string id = RunWriter();
  const std::string fs = "/v1/client/fs/";
  auto expect = [&](const std::string& path, const std::string& code, const std::string& text) {
    auto r = Body(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_NE(r.status().message().find(code), std::string::npos) << path << ": " << r.status();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << path << ": " << r.status();
  };
  expect(fs + "logs/" + id + "?type=stdout", "400", "must provide task name");
  expect(fs + "logs/" + id + "?task=t&type=stdin", "400", "must provide log type");
  expect(fs + "logs/" + id + "?task=t&type=stdout&origin=middle", "400", "origin must be");
  expect(fs + "stream/" + id + "?path=/nope", "400", "does not exist");
  expect(fs + "stream/" + id + "?path=/t", "400", "is a directory");
  expect(fs + "stream/" + id + "?path=/../../../etc/passwd", "403", "escapes");
  expect(fs + "stream/" + id + "?path=/t/secrets/token", "403", "Reading secret file prohibited");
  expect(fs + "stream/" + id, "400", "must provide a file name");
  // Escapes through every endpoint: `..`, an absolute path is relative to the alloc
  // dir, and a symlink a task planted pointing outside.
  for (const char* op : {"ls", "stat", "cat", "readat", "stream"}) {
    expect(fs + op + "/" + id + "?path=/../../../etc/passwd", "403", "escapes");
    expect(fs + op + "/" + id + "?path=t/local/../../../../etc", "403", "escapes");
    expect(fs + op + "/" + id + "?path=/t/local/out", "403", "escapes");
  }
  expect(fs + "logs/" + id + "?task=../../etc&type=stdout", "400", "invalid task name");
  expect(fs + "cat/" + id + "?path=/t/secrets/token", "403", "Reading secret file prohibited");
  expect(fs + "cat/" + id + "?path=/t", "400", "is a directory");
  expect(fs + "cat/" + id + "?path=/nope", "404", "does not exist");
  expect(fs + "ls/ffffffff-0000-4000-8000-000000000000", "404", "Unknown allocation");
  expect(fs + "readat/" + id + "?path=/t/local/f&offset=x", "400", "invalid offset");
}

TEST_F(FsTest, AllocLogsAndAllocFsCommands) {
  const std::string file = agent_.WriteFile(
      "n.json", RawExecJob("lines", "batch",
                           "i=1; while [ $i -le 15 ]; do echo line$i; i=$((i+1)); done; "
                           "echo err >&2; mkdir -p \"$NOMAD_TASK_DIR/sub\"; "
                           "printf xyz > \"$NOMAD_TASK_DIR/sub/f\""));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const std::string id = WaitAlloc("lines", "complete")["ID"];
  ASSERT_TRUE(testing::WaitFor([&] {
    return agent_.Cli({"alloc", "logs", id}).out.find("line15") != std::string::npos;
  }));
  CliResult all = agent_.Cli({"alloc", "logs", id.substr(0, 8)});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(all.out.starts_with("line1\nline2\n")) << all.out;
  CliResult tail = agent_.Cli({"alloc", "logs", "-tail", id, "t"});
  EXPECT_TRUE(tail.out.starts_with("line6\n")) << tail.out;
  EXPECT_EQ(agent_.Cli({"alloc", "logs", "-n", "2", id}).out, "line14\nline15\n");
  EXPECT_EQ(agent_.Cli({"alloc", "logs", "-c", "3", id}).out, "15\n");
  EXPECT_EQ(agent_.Cli({"alloc", "logs", "-stderr", id}).out, "err\n");
  // The task is dead: following ends once everything was shown.
  CliResult follow = agent_.Cli({"alloc", "logs", "-f", "-n", "1", id});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "line15\n");
  CliResult wrong = agent_.Cli({"alloc", "logs", id, "nope"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("Could not find task named: nope"), std::string::npos) << wrong.err;

  CliResult root = agent_.Cli({"alloc", "fs", id});
  EXPECT_EQ(root.exit_code, 0) << root.err;
  EXPECT_NE(root.out.find("alloc/"), std::string::npos) << root.out;
  EXPECT_NE(root.out.find("t/"), std::string::npos) << root.out;
  EXPECT_EQ(agent_.Cli({"alloc", "fs", id, "t/local/sub/f"}).out, "xyz");
  CliResult stat = agent_.Cli({"alloc", "fs", "-stat", id, "/t/local/sub/f"});
  EXPECT_NE(stat.out.find("Mode"), std::string::npos) << stat.out;
  EXPECT_NE(stat.out.find(" 3 "), std::string::npos) << stat.out;
  CliResult escape = agent_.Cli({"alloc", "fs", id, "../../etc/passwd"});
  EXPECT_EQ(escape.exit_code, 1);
  EXPECT_NE(escape.err.find("403"), std::string::npos) << escape.err;
}

TEST_F(FsTest, FollowingALogStreamsItUntilTheTaskEnds) {
  const std::string file = agent_.WriteFile(
      "f.json",
      RawExecJob("follow", "batch",
                 "echo first; while [ ! -e \"$NOMAD_TASK_DIR/go\" ]; do sleep 0.05; done; "
                 "echo second"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const std::string id = WaitAlloc("follow", "running")["ID"];
  // Followed on another thread, as `drover alloc logs -f` does, with its own client.
  std::mutex mu;
  std::string got;
  absl::Status ended = absl::UnknownError("still following");
  bool done = false;
  std::thread follower([&] {
    auto address = cli::ParseAddress("http://" + agent_.address());
    auto client = cli::NewHttpClient(*address);
    absl::Status s =
        client->Stream("/v1/client/fs/logs/" + id + "?task=t&type=stdout&plain=true&follow=true",
                       [&](std::string_view data) {
                         std::lock_guard lock(mu);
                         got += data;
                         return true;
                       });
    std::lock_guard lock(mu);
    ended = s;
    done = true;
  });
  auto seen = [&](const std::string& want) {
    std::lock_guard lock(mu);
    return got == want;
  };
  EXPECT_TRUE(testing::WaitFor([&] { return seen("first\n"); }));
  // The task carries on only now: what it writes next arrives on the open stream.
  const auto go = agent_.data_dir() / "alloc" / id / "t" / "local" / "go";
  std::ofstream{go};
  EXPECT_TRUE(testing::WaitFor([&] { return seen("first\nsecond\n"); })) << got;
  EXPECT_TRUE(testing::WaitFor([&] {
    std::lock_guard lock(mu);
    return done;
  }));
  follower.join();
  EXPECT_TRUE(ended.ok()) << ended;
  // Framed, from the end, of a finished task: the last bytes and the end offset.
  auto tail =
      Body("/v1/client/fs/logs/" + id + "?task=t&type=stdout&follow=true&origin=end&offset=7");
  ASSERT_TRUE(tail.ok()) << tail.status();
  auto framed = codec::ParseJson(*tail);
  ASSERT_TRUE(framed.ok());
  EXPECT_EQ((*framed)["Data"], "c2Vjb25kCg==");  // "second\n"
  EXPECT_EQ((*framed)["Offset"], 13);
  // One file, streamed without following.
  EXPECT_EQ(
      *Body("/v1/client/fs/stream/" + id + "?path=/alloc/logs/t.stdout.0&plain=true&follow=false"),
      "first\nsecond\n");
}

}  // namespace
}  // namespace drover::integration
