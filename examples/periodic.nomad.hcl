# A periodic batch job: at every time its cron names (here every 5 minutes, UTC) the
# servers launch a child job, report/periodic-<unix time>, that runs once.
# prohibit_overlap skips a launch while the last child still runs.
#   drover job run examples/periodic.nomad.hcl
#   drover job periodic force report   # launch one now
#   drover job status report           # the next launch, and the children
job "report" {
  type        = "batch"
  datacenters = ["dc1"]

  periodic {
    crons            = ["*/5 * * * *"]
    time_zone        = "UTC"
    prohibit_overlap = true
  }

  group "report" {
    task "report" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"report from ${NOMAD_JOB_ID}\""]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
