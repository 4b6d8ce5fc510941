// A sysbatch job: run a cleanup script once on every matching node, then stop.
// Run it again to clean up once more.

/* Nodes in the "batch" pool accumulate scratch data fastest. */
job "disk-cleanup" {
  datacenters = ["dc1", "dc2"]
  node_pool   = "batch"
  type        = "sysbatch"

  # Skip nodes being drained by operators.
  constraint {
    attribute = "${meta.maintenance}" # set by the ops tooling
    operator  = "!="
    value     = "true"
  }

  group "cleanup" {
    /* Retry quickly a couple of times on the same node; sysbatch jobs are not
       rescheduled elsewhere. */
    restart {
      attempts = 2
      interval = "10m"
      delay    = "5s"
      mode     = "fail"
    }

    task "purge" {
      driver = "raw_exec"
      user   = "root"

      config {
        command = "/bin/sh"
        // Delete scratch files older than a week; the node name is for the log.
        args = ["-c", "find /srv/scratch -type f -mtime +7 -delete && echo cleaned ${node.unique.name}"]
      }

      resources {
        cpu    = 50
        memory = 32
      }

      logs {
        max_files     = 1
        max_file_size = 5 # MB
        # disabled    = true
      }
    }
  }
}
