#include "client/taskrunner/task_env.h"

#include <gtest/gtest.h>

namespace drover::taskrunner {
namespace {

class TaskEnvTest : public ::testing::Test {
 protected:
  TaskEnvTest() {
    auto job = std::make_shared<model::Job>();
    job->id = "web-job";
    job->name = "web-job";
    job->meta = {{"owner", "ops"}};
    model::TaskGroup g;
    g.name = "web";
    g.meta = {{"owner", "web-team"}};
    model::Task t;
    t.name = "server";
    t.env = {{"GREETING", "hi from ${NOMAD_TASK_NAME} on ${attr.kernel.name}"},
             {"UNKNOWN", "${NOMAD_NOPE}"}};
    g.tasks.push_back(t);
    job->task_groups.push_back(g);
    alloc_.id = "0123456789abcdef";
    alloc_.name = "web-job.web[2]";
    alloc_.namespace_ = "default";
    alloc_.task_group = "web";
    alloc_.job = job;
    alloc_.job_id = "web-job";
    model::AllocatedTaskResources r;
    r.cpu_shares = 250;
    r.memory_mb = 128;
    alloc_.allocated_resources.tasks["server"] = r;
    alloc_.allocated_resources.shared.ports.push_back({"http", 23456, 8080, "127.0.0.1"});
    node_.id = "node-1";
    node_.datacenter = "dc1";
    node_.attributes = {{"kernel.name", "linux"}};
  }
  TaskEnv Build() {
    TaskEnvInput in;
    in.alloc = &alloc_;
    in.task = &alloc_.job->task_groups[0].tasks[0];
    in.node = &node_;
    in.region = "global";
    in.alloc_dir = "/a/alloc";
    in.task_dir = "/a/server/local";
    in.secrets_dir = "/a/server/secrets";
    in.host_env = {{"PATH", "/bin"}};
    return TaskEnv::Build(in);
  }
  model::Allocation alloc_;
  model::Node node_;
};

TEST_F(TaskEnvTest, SetsNomadVariables) {
  const auto env = Build().env();
  EXPECT_EQ(env.at("NOMAD_ALLOC_DIR"), "/a/alloc");
  EXPECT_EQ(env.at("NOMAD_TASK_DIR"), "/a/server/local");
  EXPECT_EQ(env.at("NOMAD_SECRETS_DIR"), "/a/server/secrets");
  EXPECT_EQ(env.at("NOMAD_ALLOC_ID"), "0123456789abcdef");
  EXPECT_EQ(env.at("NOMAD_ALLOC_NAME"), "web-job.web[2]");
  EXPECT_EQ(env.at("NOMAD_ALLOC_INDEX"), "2");
  EXPECT_EQ(env.at("NOMAD_JOB_NAME"), "web-job");
  EXPECT_EQ(env.at("NOMAD_GROUP_NAME"), "web");
  EXPECT_EQ(env.at("NOMAD_TASK_NAME"), "server");
  EXPECT_EQ(env.at("NOMAD_CPU_LIMIT"), "250");
  EXPECT_EQ(env.at("NOMAD_MEMORY_LIMIT"), "128");
  EXPECT_EQ(env.at("NOMAD_DC"), "dc1");
  EXPECT_EQ(env.at("NOMAD_REGION"), "global");
  EXPECT_EQ(env.at("NOMAD_NAMESPACE"), "default");
  EXPECT_EQ(env.at("NOMAD_PORT_http"), "8080");
  EXPECT_EQ(env.at("NOMAD_HOST_PORT_http"), "23456");
  EXPECT_EQ(env.at("NOMAD_ADDR_http"), "127.0.0.1:8080");
  EXPECT_EQ(env.at("NOMAD_META_owner"), "web-team");
  EXPECT_EQ(env.at("PATH"), "/bin");
}

TEST_F(TaskEnvTest, InterpolatesEnvBlockAndKeepsUnknownVerbatim) {
  TaskEnv te = Build();
  EXPECT_EQ(te.env().at("GREETING"), "hi from server on linux");
  EXPECT_EQ(te.env().at("UNKNOWN"), "${NOMAD_NOPE}");
  EXPECT_EQ(te.Interpolate("${node.unique.id}:${NOMAD_ALLOC_INDEX}"), "node-1:2");
  EXPECT_EQ(te.Interpolate("${env[\"PATH\"]}"), "/bin");
  EXPECT_EQ(te.Interpolate("unterminated ${"), "unterminated ${");
  model::Value cfg =
      model::Value::Object{{"command", "${NOMAD_TASK_DIR}/run"},
                           {"args", model::Value::Array{"--port", "${NOMAD_PORT_http}", 3}}};
  model::Value out = te.InterpolateValue(cfg);
  EXPECT_EQ(*out.Find("command")->as_string(), "/a/server/local/run");
  EXPECT_EQ(*(*out.Find("args")->as_array())[1].as_string(), "8080");
}

}  // namespace
}  // namespace drover::taskrunner
