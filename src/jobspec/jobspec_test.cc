#include "jobspec/jobspec.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::jobspec {
namespace {

using ::testing::HasSubstr;

Json Parse(const std::string& src, ParseOptions options = {}) {
  absl::StatusOr<Json> j = ParseJob("job.nomad", src, options);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

std::string Error(const std::string& src, ParseOptions options = {}) {
  absl::StatusOr<Json> j = ParseJob("job.nomad", src, options);
  EXPECT_FALSE(j.ok()) << j->dump();
  return j.ok() ? "" : std::string(j.status().message());
}

TEST(JobspecTest, MinimalJob) {
  Json j = Parse(R"(job "hello" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
)");
  EXPECT_EQ(j, Json::parse(R"({
    "ID": "hello", "Name": "hello",
    "TaskGroups": [{"Name": "g", "Tasks": [
      {"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]})"));
}

TEST(JobspecTest, NameAttributeOverridesTheLabelForNameOnly) {
  Json j = Parse("job \"id1\" {\n  name = \"Pretty\"\n}\n");
  EXPECT_EQ(j["ID"], "id1");
  EXPECT_EQ(j["Name"], "Pretty");
}

TEST(JobspecTest, ConstraintShorthands) {
  Json j = Parse(R"(job "x" {
  constraint {
    distinct_hosts = true
  }
  constraint {
    distinct_property = "${meta.rack}"
    value             = "2"
  }
  constraint {
    attribute = "${attr.os.version}"
    version   = ">= 22.04"
  }
  constraint {
    attribute = "${attr.kernel.name}"
    regexp    = "^lin"
  }
  constraint {
    attribute = "${meta.tags}"
    operator  = "set_contains"
    value     = "a,b"
  }
}
)");
  EXPECT_EQ(j["Constraints"], Json::parse(R"([
    {"Operand": "distinct_hosts"},
    {"Operand": "distinct_property", "LTarget": "${meta.rack}", "RTarget": "2"},
    {"Operand": "version", "LTarget": "${attr.os.version}", "RTarget": ">= 22.04"},
    {"Operand": "regexp", "LTarget": "${attr.kernel.name}", "RTarget": "^lin"},
    {"Operand": "set_contains", "LTarget": "${meta.tags}", "RTarget": "a,b"}])"));
}

TEST(JobspecTest, DisconnectSettingsAreDecoded) {
  Json j = Parse(R"(job "x" {
  group "g" {
    max_client_disconnect = "1h"
    disconnect {
      lost_after = "30m"
      replace    = false
    }
  }
}
)");
  EXPECT_EQ(j["TaskGroups"][0]["MaxClientDisconnect"], 3'600'000'000'000LL);
  EXPECT_EQ(j["TaskGroups"][0]["Disconnect"]["LostAfter"], 1'800'000'000'000LL);
  EXPECT_EQ(j["TaskGroups"][0]["Disconnect"]["Replace"], false);
}

TEST(JobspecTest, SizesAndDurationsUseNomadUnits) {
  Json j = Parse(R"(job "x" {
  group "g" {
    ephemeral_disk {
      size = "2GiB"
    }
    task "t" {
      resources {
        memory     = "512MB"
        memory_max = 1024
      }
      kill_timeout = "1m30s"
    }
  }
}
)");
  EXPECT_EQ(j["TaskGroups"][0]["EphemeralDisk"]["SizeMB"], 2048);
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Resources"]["MemoryMB"], 512);
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Resources"]["MemoryMaxMB"], 1024);
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["KillTimeout"], 90'000'000'000LL);
}

TEST(JobspecTest, MetaAndEnvAsAttributesOrBlocks) {
  Json j = Parse(R"(job "x" {
  meta = { "a.b" = 1, c = true }
  group "g" {
    task "t" {
      env {
        PORT = 8080
      }
    }
  }
}
)");
  EXPECT_EQ(j["Meta"], Json::parse(R"({"a.b": "1", "c": "true"})"));
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Env"], Json::parse(R"({"PORT": "8080"})"));
}

TEST(JobspecTest, DriverConfigKeepsNestedBlocksAsLists) {
  Json j = Parse(R"(job "x" {
  group "g" {
    task "t" {
      config {
        image = "redis"
        mount {
          type   = "bind"
          target = "/data"
        }
        mount {
          type = "tmpfs"
        }
        labels = { a = 1 }
      }
    }
  }
}
)");
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Config"], Json::parse(R"({
    "image": "redis", "labels": {"a": 1},
    "mount": [{"type": "bind", "target": "/data"}, {"type": "tmpfs"}]})"));
}

TEST(JobspecErrorTest, UnknownAttributesAndBlocksNameTheirPosition) {
  EXPECT_EQ(Error("job \"x\" {\n  group \"g\" {\n    cont = 1\n  }\n}\n"),
            "job.nomad:3,5-9: Unsupported argument; An argument named \"cont\" is not expected "
            "here.");
  EXPECT_EQ(Error("job \"x\" {\n  grop \"g\" {\n  }\n}\n"),
            "job.nomad:2,3-7: Unsupported block type; Blocks of type \"grop\" are not expected "
            "here.");
  EXPECT_THAT(Error("job \"x\" {\n  group \"g\" {\n    count {\n    }\n  }\n}\n"),
              HasSubstr("Did you mean to define argument \"count\"?"));
  EXPECT_THAT(Error("job \"x\" {\n  group \"g\" {\n    restart = {}\n  }\n}\n"),
              HasSubstr("Did you mean to define a block of type \"restart\"?"));
  EXPECT_THAT(Error("service \"x\" {\n}\n"), HasSubstr("job.nomad:1,1-8: Unsupported block type"));
}

TEST(JobspecErrorTest, StructureErrors) {
  EXPECT_THAT(Error("variable \"a\" {\n}\n"), HasSubstr("Missing job block"));
  EXPECT_THAT(Error("job \"a\" {\n}\njob \"b\" {\n}\n"),
              HasSubstr("job.nomad:3,1-4: Duplicate job block"));
  EXPECT_THAT(Error("job {\n}\n"), HasSubstr("job.nomad:1,1-4: Missing name for job"));
  EXPECT_THAT(Error("job \"a\" {\n  group {\n  }\n}\n"),
              HasSubstr("job.nomad:2,3-8: Missing name for group"));
  EXPECT_THAT(
      Error("job \"a\" {\n  group \"g\" {\n    restart {\n    }\n    restart {\n    }\n  }\n}\n"),
      HasSubstr("job.nomad:5,5-12: Duplicate restart block"));
  EXPECT_THAT(Error("job \"a\" {\n  group \"g\" {\n  }\n  group \"g\" {\n  }\n}\n"),
              HasSubstr("job.nomad:4,9-12: Duplicate group \"g\""));
  EXPECT_THAT(Error("job \"a\" {\n  meta = {}\n  meta {\n  }\n}\n"),
              HasSubstr("Duplicate meta block"));
}

TEST(JobspecErrorTest, TypeMismatches) {
  EXPECT_EQ(Error("job \"a\" {\n  priority = \"high\"\n}\n"),
            "job.nomad:2,14-20: Incorrect attribute value type; Inappropriate value for attribute "
            "\"priority\": number required, got string.");
  EXPECT_THAT(Error("job \"a\" {\n  datacenters = \"dc1\"\n}\n"),
              HasSubstr("list of string required, got string"));
  EXPECT_THAT(Error("job \"a\" {\n  all_at_once = 3\n}\n"), HasSubstr("bool required"));
  EXPECT_THAT(Error("job \"a\" {\n  priority = 1.5\n}\n"), HasSubstr("a whole number"));
  EXPECT_THAT(Error("job \"a\" {\n  group \"g\" {\n    shutdown_delay = \"5 parsecs\"\n  }\n}\n"),
              HasSubstr("\"5 parsecs\" is not a duration"));
  EXPECT_THAT(Error("job \"a\" {\n  group \"g\" {\n    ephemeral_disk {\n      size = \"lots\"\n"
                    "    }\n  }\n}\n"),
              HasSubstr("a size with a unit"));
  EXPECT_THAT(Error("job \"a\" {\n  meta = { a = [1] }\n}\n"), HasSubstr("element \"a\" is tuple"));
}

TEST(JobspecErrorTest, UnknownFunctionsAndUndefinedVariables) {
  EXPECT_THAT(Error("job \"a\" {\n  region = nope(1)\n}\n"),
              HasSubstr("job.nomad:2,12-19: Call to unknown function"));
  EXPECT_THAT(Error("job \"a\" {\n  region = var.r\n}\n"),
              HasSubstr("job.nomad:2,12-17: Reference to undeclared input variable"));
  EXPECT_THAT(Error("job \"a\" {\n  region = local.r\n}\n"),
              HasSubstr("Reference to undeclared local value"));
}

constexpr char kVariablesJob[] = R"(
variable "region" {
  type    = string
  default = "global"
}
variable "count" {
  type = number
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variable "labels" {
  type    = map(string)
  default = {}
}
variable "enabled" {
  type    = bool
  default = true
}
variable "port" {
  type    = number
  default = 8080
  validation {
    condition     = var.port > 1024
    error_message = "The port must be above 1024."
  }
}
locals {
  name  = "web-${var.region}"
  label = join(",", [for k, v in var.labels : "${k}=${v}"])
}
job "web" {
  region      = var.region
  datacenters = var.dcs
  meta = {
    label   = local.label
    enabled = var.enabled
    port    = var.port
  }
  group "g" {
    count = var.count
    task "t" {
      env {
        NAME = local.name
      }
    }
  }
}
)";

TEST(JobspecVariablesTest, DefaultsVarFilesAndAssignments) {
  ParseOptions options;
  options.var_files = {{"a.vars.hcl", "count = 2\nregion = \"eu\"\n"},
                       {"b.json", R"({"labels": {"x": "1", "y": 2}})"}};
  options.var_assignments = {"count=3", "dcs=[\"a\", \"b\"]", "enabled=false"};
  Json j = Parse(kVariablesJob, options);
  EXPECT_EQ(j["Region"], "eu");
  EXPECT_EQ(j["Datacenters"], Json::parse(R"(["a","b"])"));
  EXPECT_EQ(j["TaskGroups"][0]["Count"], 3);  // -var wins over the var file
  EXPECT_EQ(j["Meta"], Json::parse(R"({"label": "x=1,y=2", "enabled": "false", "port": "8080"})"));
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Env"]["NAME"], "web-eu");
}

TEST(JobspecVariablesTest, EnvironmentValuesAreTheWeakest) {
  ParseOptions options;
  options.var_environment = {"count=5", "region=from-env", "not_declared=1"};
  options.var_files = {{"a.vars.hcl", "region = \"from-file\"\n"}};
  Json j = Parse(kVariablesJob, options);
  EXPECT_EQ(j["Region"], "from-file");
  EXPECT_EQ(j["TaskGroups"][0]["Count"], 5);
}

TEST(JobspecVariablesTest, Errors) {
  EXPECT_THAT(Error(kVariablesJob), HasSubstr("job.nomad:6,10-17: Unset variable \"count\""));
  ParseOptions bad_type;
  bad_type.var_assignments = {"count=many"};
  EXPECT_THAT(Error(kVariablesJob, bad_type),
              HasSubstr("Invalid value for -var \"count\": var.count: number required"));
  ParseOptions undeclared;
  undeclared.var_assignments = {"count=1", "nope=1"};
  EXPECT_THAT(Error(kVariablesJob, undeclared), HasSubstr("Undefined -var variable"));
  ParseOptions undeclared_file;
  undeclared_file.var_files = {{"v.hcl", "count = 1\nzzz = 2\n"}};
  EXPECT_THAT(Error(kVariablesJob, undeclared_file), HasSubstr("v.hcl:2,1-4: Undefined variable"));
  ParseOptions invalid;
  invalid.var_assignments = {"count=1", "port=80"};
  EXPECT_THAT(Error(kVariablesJob, invalid),
              HasSubstr("Invalid value for variable; The port must be above 1024."));
  ParseOptions no_equals;
  no_equals.var_assignments = {"count"};
  EXPECT_THAT(Error(kVariablesJob, no_equals), HasSubstr("expected NAME=VALUE"));
  EXPECT_THAT(Error("variable \"x\" {\n  type = strin\n}\njob \"a\" {\n}\n"),
              HasSubstr("job.nomad:2,10-15: Invalid type specification"));
  EXPECT_THAT(Error("variable \"x\" {\n  type = number\n  default = \"z\"\n}\njob \"a\" {\n}\n"),
              HasSubstr("Invalid default value for variable"));
}

TEST(JobspecTest, LooksLikeJson) {
  EXPECT_TRUE(LooksLikeJson("  {\"Job\": {}}"));
  EXPECT_FALSE(LooksLikeJson("job \"x\" {\n}\n"));
  EXPECT_FALSE(LooksLikeJson(""));
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(JobspecTest, NomadCompatibleCornerCases) {
  Json j = Parse(R"(job "x" {
  constraint {
    attribute = attr.kernel.name
    operator  = "regexp"
    regexp    = "^lin"
  }
  group "g" {
    network {
      port "http" {
        static = 0
        to     = 80
      }
    }
    task "t" {
      kill_timeout = 5000000000
    }
  }
}
)");
  EXPECT_EQ(
      j["Constraints"][0],
      Json::parse(R"({"LTarget": "${attr.kernel.name}", "Operand": "regexp", "RTarget": "^lin"})"));
  EXPECT_EQ(j["TaskGroups"][0]["Networks"][0],
            Json::parse(R"({"DynamicPorts": [{"Label": "http", "Value": 0, "To": 80}]})"));
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["KillTimeout"], 5'000'000'000LL);
}

TEST(JobspecErrorTest, UnusedLocalsAreStillEvaluated) {
  EXPECT_THAT(Error("locals {\n  unused = nosuchfn(1)\n}\njob \"a\" {\n}\n"),
              HasSubstr("job.nomad:2,12-23: Call to unknown function"));
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(JobspecDynamicTest, DynamicBlocksExpandWithTheirIterator) {
  Json j = Parse(R"(locals {
  ports = { http = 8080, admin = 9000 }
  tasks = ["a", "b"]
}
job "x" {
  group "g" {
    network {
      dynamic "port" {
        for_each = local.ports
        labels   = [port.key]
        content {
          to = port.value
        }
      }
    }
    dynamic "task" {
      for_each = local.tasks
      iterator = t
      labels   = ["worker-${t.value}"]
      content {
        driver = "raw_exec"
        env {
          INDEX = t.key
        }
        config {
          dynamic "mount" {
            for_each = [1, 2]
            content {
              target = "/m${mount.value}-${t.value}"
            }
          }
        }
      }
    }
  }
}
)");
  EXPECT_EQ(j["TaskGroups"][0]["Networks"][0]["DynamicPorts"], Json::parse(R"([
    {"Label": "admin", "To": 9000}, {"Label": "http", "To": 8080}])"));
  const Json& tasks = j["TaskGroups"][0]["Tasks"];
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[1]["Name"], "worker-b");
  EXPECT_EQ(tasks[1]["Env"]["INDEX"], "1");
  EXPECT_EQ(tasks[1]["Config"]["mount"],
            Json::parse(R"([{"target": "/m1-b"}, {"target": "/m2-b"}])"));
}

TEST(JobspecDynamicTest, Errors) {
  EXPECT_THAT(Error("job \"x\" {\n  group \"g\" {\n    dynamic \"task\" {\n      for_each = 3\n"
                    "      content {\n      }\n    }\n  }\n}\n"),
              HasSubstr("job.nomad:4,18-19: Invalid dynamic for_each value"));
  EXPECT_THAT(Error("job \"x\" {\n  dynamic \"constraint\" {\n    for_each = [1]\n  }\n}\n"),
              HasSubstr("Incomplete dynamic block"));
  EXPECT_THAT(Error("job \"x\" {\n  dynamic \"grop\" {\n    for_each = [1]\n    content {\n"
                    "    }\n  }\n}\n"),
              HasSubstr("Blocks of type \"grop\" are not expected here."));
  // Generated blocks are checked like written ones: a task needs its label.
  EXPECT_THAT(Error("job \"x\" {\n  group \"g\" {\n    dynamic \"task\" {\n      for_each = [1]\n"
                    "      content {\n      }\n    }\n  }\n}\n"),
              HasSubstr("Missing name for task"));
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(ReviewRegressionTest, SizeStringsWithoutAUnitAreMegabytes) {
  ParseOptions options;
  options.var_assignments = {"mem=512"};
  Json j = Parse(R"(variable "mem" {
}
job "x" {
  group "g" {
    ephemeral_disk {
      size = "300"
    }
    task "t" {
      resources {
        memory = var.mem
      }
    }
  }
}
)",
                 options);
  EXPECT_EQ(j["TaskGroups"][0]["EphemeralDisk"]["SizeMB"], 300);
  EXPECT_EQ(j["TaskGroups"][0]["Tasks"][0]["Resources"]["MemoryMB"], 512);
}

TEST(ReviewRegressionTest, HostileVarFilesAreRefused) {
  ParseOptions deep;
  deep.var_files = {
      {"deep.json", "{\"x\": " + std::string(300000, '[') + std::string(300000, ']') + "}"}};
  EXPECT_THAT(Error("variable \"x\" {\n}\njob \"a\" {\n}\n", deep), HasSubstr("nest more than"));
  // A large set(...) conversion is O(n log n), not quadratic.
  std::string list = "[";
  for (int i = 0; i < 200000; ++i) {
    list += "\"" + std::to_string(i) + "\",";
  }
  list += "\"0\"]";
  ParseOptions big;
  big.var_files = {{"big.json", "{\"s\": " + list + "}"}};
  Json j = Parse(
      "variable \"s\" {\n  type = set(string)\n}\njob \"a\" {\n  meta = {\n"
      "    n = length(var.s)\n  }\n}\n",
      big);
  EXPECT_EQ(j["Meta"]["n"], "200000");
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(JobspecServiceTest, ServicesAndChecksAreRead) {
  Json j = Parse(R"(job "web" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["v1"]
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }
    task "t" {
      driver = "raw_exec"
    }
  }
}
)");
  EXPECT_EQ(j["TaskGroups"][0]["Services"], Json::parse(R"([{"Name": "web", "PortLabel": "http",
    "Provider": "nomad", "Tags": ["v1"], "Checks": [{"Type": "http", "Path": "/health",
    "Interval": 10000000000, "Timeout": 2000000000}]}])"));
}

}  // namespace
}  // namespace drover::jobspec
