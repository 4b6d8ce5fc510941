# An isolated task (exec driver, needs root): chroot, its own pid namespace, user
# nobody, a 64 MB memory cgroup and at most 32 processes.
job "isolated" {
  type        = "service"
  datacenters = ["dc1"]

  group "box" {
    task "look" {
      driver       = "exec"
      kill_timeout = "2s"

      config {
        command = "/bin/sh"
        args = ["-c", <<-EOT
          trap 'exit 0' INT TERM
          echo "pid $$ as $(id -un), / holds: $(ls / | tr '\n' ' ')"
          while true; do sleep 5 & wait $!; done
          EOT
        ]
        pids_limit = 32
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
