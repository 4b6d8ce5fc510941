# A batch job that counts down and completes. The count comes from a variable:
#   drover job run -var from=5 examples/batch.nomad.hcl
variable "from" {
  type        = number
  default     = 3
  description = "Where the countdown starts"
}

job "countdown" {
  type        = "batch"
  datacenters = ["dc1"]

  group "count" {
    task "count" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "for i in ${join(" ", [for n in range(var.from, 0, -1) : tostring(n)])}; do echo $i; sleep 1; done"]
      }

      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
