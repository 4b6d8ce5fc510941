// drover alloc restart / signal against a scripted agent (FakeHttpClient): the requests
// made, Nomad's error texts, and the flag wiring through cli::Run.
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/fake_http_client.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "model/allocation.h"
#include "model/job.h"

namespace drover::cli {
namespace {

const std::string kAllocId = "a1b2c3d4-1111-2222-3333-444444444444";
const std::string kRestartPath = "/v1/client/allocation/" + kAllocId + "/restart";
const std::string kSignalPath = "/v1/client/allocation/" + kAllocId + "/signal";

model::Allocation Alloc(const std::string& id = kAllocId) {
  model::Job job;
  job.id = "hello";
  job.name = "hello";
  job.namespace_ = "default";
  job.type = "service";
  model::TaskGroup group;
  group.name = "web";
  group.count = 1;
  model::Task server;
  server.name = "server";
  server.driver = "raw_exec";
  group.tasks.push_back(server);
  model::Task sidecar;
  sidecar.name = "sidecar";
  sidecar.driver = "raw_exec";
  group.tasks.push_back(sidecar);
  job.task_groups.push_back(group);

  model::Allocation a;
  a.id = id;
  a.namespace_ = "default";
  a.name = "hello.web[0]";
  a.job_id = "hello";
  a.job = std::make_shared<model::Job>(job);
  a.task_group = "web";
  a.desired_status = "run";
  a.client_status = "running";
  return a;
}

// Serves the prefix lookup for `prefix` and GET /v1/allocation/<id> for Alloc().
void AddAlloc(FakeHttpClient& client, const std::string& prefix) {
  client.AddJson("GET", "/v1/allocations?prefix=" + prefix,
                 codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  client.AddJson("GET", "/v1/allocation/" + kAllocId, codec::Dump(codec::ToJson(Alloc())));
}

class AllocLifecycleTest : public ::testing::Test {
 protected:
  AllocLifecycleTest() : ui_(in_, out_, err_) {}

  // The body of the last request, parsed.
  nlohmann::json LastBody() const { return nlohmann::json::parse(client_.requests().back().body); }

  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
  Ui ui_;
  FakeHttpClient client_;
};

TEST_F(AllocLifecycleTest, RestartWholeAllocation) {
  AddAlloc(client_, "a1b2");
  client_.AddJson("PUT", kRestartPath, "{}");
  EXPECT_EQ(RunAllocRestart({.id = "a1b2"}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(client_.requests().size(), 3u);
  EXPECT_EQ(client_.requests()[0].path, "/v1/allocations?prefix=a1b2");
  EXPECT_EQ(client_.requests()[1].path, "/v1/allocation/" + kAllocId);
  EXPECT_EQ(client_.requests()[2].method, "PUT");
  EXPECT_EQ(client_.requests()[2].path, kRestartPath);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "", "AllTasks": false})"));
}

TEST_F(AllocLifecycleTest, RestartOneTaskByFlagOrArgument) {
  AddAlloc(client_, "a1b2");
  client_.AddJson("PUT", kRestartPath, "{}");
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server"}, client_, ui_), kExitOk);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "server", "AllTasks": false})"));
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task_arg = "sidecar"}, client_, ui_), kExitOk);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "sidecar", "AllTasks": false})"));
  // The same name twice is fine.
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server", .task_arg = "server"}, client_, ui_),
            kExitOk);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "server", "AllTasks": false})"));
  EXPECT_EQ(err_.str(), "");
}

TEST_F(AllocLifecycleTest, RestartAllTasks) {
  AddAlloc(client_, kAllocId);
  client_.AddJson("PUT", kRestartPath, "{}");
  EXPECT_EQ(RunAllocRestart({.id = kAllocId, .all_tasks = true}, client_, ui_), kExitOk);
  EXPECT_EQ(client_.requests().back().path, kRestartPath);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "", "AllTasks": true})"));
}

TEST_F(AllocLifecycleTest, RestartAllTasksWithATaskIsRefusedBeforeAnyRequest) {
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server", .all_tasks = true}, client_, ui_),
            kExitError);
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task_arg = "server", .all_tasks = true}, client_, ui_),
            kExitError);
  EXPECT_EQ(err_.str(),
            "The -all-tasks option is not allowed when using a task name\n"
            "The -all-tasks option is not allowed when using a task name\n");
  EXPECT_TRUE(client_.requests().empty());
}

TEST_F(AllocLifecycleTest, ConflictingTaskNamesAreRefused) {
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server", .task_arg = "sidecar"}, client_, ui_),
            kExitError);
  EXPECT_EQ(RunAllocSignal({.id = "a1b2", .task = "server", .task_arg = "sidecar"}, client_, ui_),
            kExitError);
  const std::string message =
      "The -task option and the task argument name different tasks: \"server\" and \"sidecar\"\n";
  EXPECT_EQ(err_.str(), message + message);
  EXPECT_TRUE(client_.requests().empty());
}

TEST_F(AllocLifecycleTest, UnknownTaskIsRefused) {
  AddAlloc(client_, "a1b2");
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "nope"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "Could not find task named: nope, found:\nserver\nsidecar\n");
  err_.str("");
  EXPECT_EQ(RunAllocSignal({.id = "a1b2", .task_arg = "nope"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "Could not find task named: nope, found:\nserver\nsidecar\n");
  for (const FakeHttpClient::Request& request : client_.requests()) {
    EXPECT_EQ(request.method, "GET") << request.path;
  }
}

TEST_F(AllocLifecycleTest, TaskOfAnAllocationWithoutItsGroup) {
  model::Allocation alloc = Alloc();
  alloc.task_group = "gone";
  client_.AddJson("GET", "/v1/allocations?prefix=a1b2",
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(alloc)})));
  client_.AddJson("GET", "/v1/allocation/" + kAllocId, codec::Dump(codec::ToJson(alloc)));
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "Could not find allocation task group: gone\n");
}

TEST_F(AllocLifecycleTest, PrefixErrors) {
  EXPECT_EQ(RunAllocRestart({.id = "a"}, client_, ui_), kExitError);
  EXPECT_EQ(RunAllocSignal({.id = "a"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Alloc ID must contain at least two characters.\n"
            "Alloc ID must contain at least two characters.\n");
  EXPECT_TRUE(client_.requests().empty());

  client_.AddJson("GET", "/v1/allocations?prefix=ffff", "[]");
  err_.str("");
  EXPECT_EQ(RunAllocRestart({.id = "ffff"}, client_, ui_), kExitError);
  EXPECT_EQ(RunAllocSignal({.id = "ffff"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "No allocation(s) with prefix or id \"ffff\" found\n"
            "No allocation(s) with prefix or id \"ffff\" found\n");

  client_.AddJson("GET", "/v1/allocations?prefix=a1",
                  codec::Dump(nlohmann::json::array(
                      {codec::AllocStubJson(Alloc()),
                       codec::AllocStubJson(Alloc("a1ffffff-1111-2222-3333-444444444444"))})));
  err_.str("");
  EXPECT_EQ(RunAllocRestart({.id = "a1"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str().rfind("Prefix matched multiple allocations\n\nID ", 0), 0u) << err_.str();
  EXPECT_NE(err_.str().find("\na1b2c3d4 "), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("\na1ffffff "), std::string::npos) << err_.str();
  for (const FakeHttpClient::Request& request : client_.requests()) {
    EXPECT_EQ(request.method, "GET") << request.path;
  }
}

TEST_F(AllocLifecycleTest, RestartApiError) {
  AddAlloc(client_, "a1b2");
  client_.Add("PUT", kRestartPath, 500, "Task not running");
  EXPECT_EQ(RunAllocRestart({.id = "a1b2"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Failed to restart allocation:\n\nUnexpected response code: 500 (Task not running)\n");
  err_.str("");
  // Nomad names the target: a task when one was given.
  EXPECT_EQ(RunAllocRestart({.id = "a1b2", .task = "server"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Failed to restart task:\n\nUnexpected response code: 500 (Task not running)\n");
}

TEST_F(AllocLifecycleTest, SignalSendsTaskAndSignal) {
  AddAlloc(client_, "a1b2");
  client_.AddJson("PUT", kSignalPath, "{}");
  EXPECT_EQ(RunAllocSignal({.id = "a1b2", .signal = "SIGHUP", .task = "server"}, client_, ui_),
            kExitOk);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(client_.requests().size(), 3u);
  EXPECT_EQ(client_.requests()[2].method, "PUT");
  EXPECT_EQ(client_.requests()[2].path, kSignalPath);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "server", "Signal": "SIGHUP"})"));

  // No task: every task; no signal: the agent's default.
  EXPECT_EQ(RunAllocSignal({.id = "a1b2"}, client_, ui_), kExitOk);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "", "Signal": ""})"));
  EXPECT_EQ(
      RunAllocSignal({.id = "a1b2", .signal = "SIGUSR1", .task_arg = "sidecar"}, client_, ui_),
      kExitOk);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "sidecar", "Signal": "SIGUSR1"})"));
}

TEST_F(AllocLifecycleTest, SignalApiError) {
  AddAlloc(client_, "a1b2");
  client_.Add("PUT", kSignalPath, 400, "invalid signal");
  EXPECT_EQ(RunAllocSignal({.id = "a1b2", .signal = "SIGNOPE"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Error signalling allocation: Unexpected response code: 400 (invalid signal)\n");
}

// Forwards to a FakeHttpClient the test owns, so its requests outlive cli::Run.
class ForwardingClient final : public HttpClient {
 public:
  explicit ForwardingClient(FakeHttpClient& target) : target_(target) {}
  absl::StatusOr<HttpResponse> Do(std::string_view method, std::string_view path_with_query,
                                  std::string_view body,
                                  std::chrono::milliseconds timeout) override {
    return target_.Do(method, path_with_query, body, timeout);
  }

 private:
  FakeHttpClient& target_;
};

class AllocLifecycleCliTest : public ::testing::Test {
 protected:
  AllocLifecycleCliTest() {
    deps_.new_client = [this](Address, std::string) {
      return std::make_unique<ForwardingClient>(client_);
    };
    deps_.run_agent = [](const agent::AgentConfig&) { return 0; };
    deps_.getenv = [](const std::string&) { return std::string(); };
    AddAlloc(client_, "a1b2");
    client_.AddJson("PUT", kRestartPath, "{}");
    client_.AddJson("PUT", kSignalPath, "{}");
  }

  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "drover");
    return cli::Run(args, in_, out_, err_, deps_);
  }

  nlohmann::json LastBody() const { return nlohmann::json::parse(client_.requests().back().body); }

  FakeHttpClient client_;
  Dependencies deps_;
  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(AllocLifecycleCliTest, RestartFlags) {
  EXPECT_EQ(Run({"alloc", "restart", "a1b2", "server"}), 0) << err_.str();
  EXPECT_EQ(client_.requests().back().path, kRestartPath);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "server", "AllTasks": false})"));
  EXPECT_EQ(Run({"alloc", "restart", "-task", "sidecar", "a1b2"}), 0) << err_.str();
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "sidecar", "AllTasks": false})"));
  EXPECT_EQ(Run({"alloc", "restart", "-all-tasks", "a1b2"}), 0) << err_.str();
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"TaskName": "", "AllTasks": true})"));
  EXPECT_EQ(out_.str(), "");

  EXPECT_EQ(Run({"alloc", "restart", "-all-tasks", "a1b2", "server"}), 1);
  EXPECT_EQ(err_.str(), "The -all-tasks option is not allowed when using a task name\n");
  EXPECT_EQ(Run({"alloc", "restart", "a1b2", "server", "extra"}), 1);
}

TEST_F(AllocLifecycleCliTest, SignalFlags) {
  EXPECT_EQ(Run({"alloc", "signal", "-s", "SIGHUP", "a1b2", "server"}), 0) << err_.str();
  EXPECT_EQ(client_.requests().back().path, kSignalPath);
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "server", "Signal": "SIGHUP"})"));
  EXPECT_EQ(Run({"alloc", "signal", "-s=SIGUSR1", "-task=sidecar", "a1b2"}), 0) << err_.str();
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "sidecar", "Signal": "SIGUSR1"})"));
  EXPECT_EQ(Run({"alloc", "signal", "a1b2"}), 0) << err_.str();
  EXPECT_EQ(LastBody(), nlohmann::json::parse(R"({"Task": "", "Signal": ""})"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(AllocLifecycleCliTest, AllocUsageListsTheCommands) {
  EXPECT_EQ(Run({"alloc"}), 1);
  EXPECT_NE(err_.str().find("restart"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("signal"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("status"), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace drover::cli
