// jobspec_parse: parse a generated ~2,000-line job file (many groups and tasks, with
// variables, locals, interpolations, heredocs and function calls) and report MB/s of
// HCL source, for the syntax alone and for the whole pipeline (variables, evaluation,
// decoding to the API's JSON). Same-run baseline: nlohmann parsing the job's JSON form
// (what a JSON job file costs). Target (issue 6): >= 20 MB/s for the whole pipeline.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "jobspec/jobspec.h"
#include "jobspec/parser.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string MakeJobFile(int groups) {
  std::string s = R"(# Generated for the jobspec_parse benchmark.
variable "image_tag" {
  type    = string
  default = "1.4.2"
}
variable "replicas" {
  type    = number
  default = 2
}
variable "datacenters" {
  type    = list(string)
  default = ["dc1", "dc2"]
}
locals {
  owner  = "platform"
  labels = { team = local.owner, tier = "backend" }
}
job "bench" {
  datacenters = var.datacenters
  type        = "service"
  priority    = 60
  meta        = local.labels
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  update {
    max_parallel     = 2
    min_healthy_time = "10s"
    healthy_deadline = "5m"
  }
)";
  for (int g = 0; g < groups; ++g) {
    absl::StrAppend(&s, R"(
  group "svc-)",
                    g, R"(" {
    count = var.replicas + )",
                    g % 3, R"(
    network {
      port "http" {
        to = 8080
      }
    }
    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "delay"
    }
    ephemeral_disk {
      size   = 300
      sticky = true
    }
)");
    for (int t = 0; t < 2; ++t) {
      absl::StrAppend(&s, R"(
    task "worker-)",
                      t, R"(" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/server"
        args    = ["--port", "${NOMAD_PORT_http}", "--name", format("%s-%d", "svc", )",
                      g, R"()]
      }
      env {
        VERSION = var.image_tag
        OWNER   = upper(local.owner)
        ALLOC   = "${NOMAD_ALLOC_ID}"
      }
      resources {
        cpu    = 100 * )",
                      t + 1, R"(
        memory = 256
      }
      logs {
        max_files     = 5
        max_file_size = 10
      }
      kill_timeout = "20s"
    }
)");
    }
    s += "  }\n";
  }
  s += "}\n";
  return s;
}

int CountLines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// MB/s of `fn`'s fastest run over repeated runs for about `budget`: the least noisy
// estimate on a shared VM, where whole seconds can run at half speed.
template <typename Fn>
double MeasureMBps(size_t bytes, Fn fn, std::chrono::milliseconds budget) {
  std::vector<double> rates;
  const auto end = Clock::now() + budget;
  while (Clock::now() < end || rates.size() < 5) {
    const auto start = Clock::now();
    fn();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    rates.push_back(static_cast<double>(bytes) / 1e6 / seconds);
  }
  return *std::max_element(rates.begin(), rates.end());
}

void Emit(const char* workload, double value, double baseline, int lines, size_t bytes) {
  nlohmann::ordered_json j = {{"bench", "jobspec_parse"},
                              {"workload", workload},
                              {"lines", lines},
                              {"bytes", bytes},
                              {"unit", "MB/s"},
                              {"value", value},
                              {"baseline", baseline},
                              {"ratio", value / baseline},
                              {"target", 20.0}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  const std::string hcl = MakeJobFile(31);  // about 2,000 lines
  const int lines = CountLines(hcl);
  absl::StatusOr<nlohmann::json> job =
      drover::jobspec::ParseJob("bench.nomad.hcl", hcl, drover::jobspec::ParseOptions{});
  if (!job.ok()) {
    std::fprintf(stderr, "jobspec_parse: the generated file does not parse: %s\n",
                 std::string(job.status().message()).c_str());
    return 1;
  }
  const std::string json = job->dump(2);
  const auto budget = std::chrono::milliseconds(3000);
  const double json_mbps = MeasureMBps(
      json.size(), [&] { nlohmann::json::parse(json).size(); }, budget);
  // Baseline in HCL bytes: the time nlohmann needs for the same job, scaled to the HCL
  // file's size, so both figures are "MB of job file per second".
  const double json_as_hcl = json_mbps * static_cast<double>(hcl.size()) / json.size();
  const double syntax = MeasureMBps(
      hcl.size(), [&] { (void)drover::jobspec::ParseFile("bench.nomad.hcl", hcl); }, budget);
  const double full = MeasureMBps(
      hcl.size(),
      [&] {
        (void)drover::jobspec::ParseJob("bench.nomad.hcl", hcl, drover::jobspec::ParseOptions{});
      },
      budget);
  Emit("syntax", syntax, json_as_hcl, lines, hcl.size());
  Emit("full", full, json_as_hcl, lines, hcl.size());
  return 0;
}
