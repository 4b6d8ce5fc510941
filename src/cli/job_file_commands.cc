// drover job validate / inspect / init (Nomad's command/job_validate.go, job_inspect.go,
// job_init.go).
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/lookup.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

constexpr char kDefaultInitFile[] = "example.nomad.hcl";

// The example job of `job init`: runs as-is on a dev agent (raw_exec, /bin/sh only).
constexpr char kExampleJob[] =
    R"(# An example job. Run it with `drover job run example.nomad.hcl`, watch it with
# `drover job status example`, and stop it with `drover job stop example`.
#
# Variables can be set with -var name=value, -var-file FILE or NOMAD_VAR_name.
variable "message" {
  type        = string
  default     = "hello from Drover"
  description = "What the task prints"
}

job "example" {
  # Where the job may run; a dev agent's datacenter is "dc1".
  datacenters = ["dc1"]
  # "service" keeps the task running and restarts it if it fails; "batch" runs it to
  # completion.
  type = "service"

  group "app" {
    # How many copies of this group to run.
    count = 1

    # What to do when the task exits: up to 2 restarts within 30 minutes, 15 seconds
    # apart, then give up until the scheduler places the group again.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    # Scratch space the group's tasks share (MB).
    ephemeral_disk {
      size = 100
    }

    task "greeter" {
      # raw_exec runs the command directly on the host as the agent's user.
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        # ${NOMAD_ALLOC_ID} and ${NOMAD_TASK_NAME} are filled in by the client when the
        # task starts; ${var.message} is filled in when the file is parsed.
        args = ["-c", "while true; do echo \"${var.message} (task ${NOMAD_TASK_NAME}, alloc ${NOMAD_ALLOC_ID})\"; sleep 10; done"]
      }

      env {
        GREETING = var.message
      }

      # CPU in MHz and memory in MB reserved for the task.
      resources {
        cpu    = 100
        memory = 64
      }

      # Keep at most 3 log files of 5 MB each per stream.
      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
  }
}
)";

constexpr char kShortExampleJob[] = R"(job "example" {
  datacenters = ["dc1"]

  group "app" {
    task "greeter" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do echo hello from ${NOMAD_ALLOC_ID}; sleep 10; done"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
)";

}  // namespace

int RunJobValidate(const JobFileOptions& options, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> job = LoadJobFile(options);
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error getting job struct: ", job.status().message()));
    return kExitError;
  }
  codec::Json request = codec::Json::object();
  request["Job"] = *job;
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", "/v1/validate/job", codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error validating job: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  if (!result.ok() || !result->is_object()) {
    ui.Error("Error validating job: malformed response");
    return kExitError;
  }
  if (const std::string error = result->value("Error", ""); !error.empty()) {
    ui.Error(absl::StrCat("Job validation errors:\n", error));
    return kExitError;
  }
  if (const std::string warnings = result->value("Warnings", ""); !warnings.empty()) {
    ui.Output(absl::StrCat("Job Warnings:\n", warnings, "\n"));
  }
  ui.Output("Job validation successful");
  return kExitOk;
}

int RunJobInspect(const std::string& id, HttpClient& client, Ui& ui) {
  std::optional<std::string> job_id = LookupJobId(client, ui, id);
  if (!job_id) {
    return kExitError;
  }
  absl::StatusOr<HttpResponse> response =
      client.Do("GET", absl::StrCat("/v1/job/", PathEscape(*job_id)));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error inspecting job: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> job = codec::ParseJson(response->body);
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error inspecting job: malformed response: ", job.status().message()));
    return kExitError;
  }
  codec::Json wrapped = codec::Json::object();
  wrapped["Job"] = std::move(*job);
  ui.Output(codec::Dump(wrapped, /*pretty=*/true));
  return kExitOk;
}

int RunJobInit(const std::string& file, bool short_form, Ui& ui) {
  const std::string path = file.empty() ? kDefaultInitFile : file;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    ui.Error(absl::StrCat("Job '", path, "' already exists"));
    return kExitError;
  }
  std::ofstream out(path, std::ios::binary);
  out << (short_form ? kShortExampleJob : kExampleJob);
  out.close();
  if (!out) {
    ui.Error(absl::StrCat("Failed to write '", path, "'"));
    return kExitError;
  }
  ui.Output(absl::StrCat("Example job file written to ", path));
  return kExitOk;
}

}  // namespace drover::cli
