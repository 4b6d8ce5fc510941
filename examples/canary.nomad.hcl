# A service rolled out with a canary: a new version first places one allocation beside
# the three running ones, waits for `drover deployment promote`, then replaces the
# rest one at a time, each once it has run for 3 s. A failed rollout registers the
# last stable version again. Run it, then run it again with `-var version=2`.
variable "version" {
  type    = string
  default = "1"
}

job "canary" {
  type        = "service"
  datacenters = ["dc1"]

  update {
    max_parallel      = 1
    canary            = 1
    auto_revert       = true
    health_check      = "task_states"
    min_healthy_time  = "3s"
    healthy_deadline  = "1m"
    progress_deadline = "5m"
  }

  group "web" {
    count = 3

    task "server" {
      driver       = "raw_exec"
      kill_timeout = "1s"

      env {
        VERSION = var.version
      }

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"version $VERSION\"; exec sleep 3600"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
