# A periodic batch job: dump the database every night at 02:30 Berlin time.
job "nightly-backup" {
  datacenters = ["dc1"]
  type        = "batch"
  priority    = 30

  # Never start a new run while the previous one is still going.
  periodic {
    cron             = "30 2 * * *"
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
    enabled          = true
  }

  meta {
    owner     = "dba-team"
    retention = "14d"
  }

  group "backup" {
    # A failed run is retried once on the same node, then left for the next night.
    restart {
      attempts = 1
      interval = "24h"
      delay    = "10m"
      mode     = "fail"
    }

    reschedule {
      attempts  = 0
      unlimited = false
    }

    task "pg-dump" {
      driver = "exec"

      config {
        command = "/usr/local/bin/backup.sh"
        args    = ["--database", "orders", "--out", "${NOMAD_TASK_DIR}/orders.sql.gz"]
      }

      env {
        PGHOST     = "db.service.consul"
        BACKUP_RUN = "${NOMAD_JOB_ID}"
      }

      resources {
        cpu    = 300
        memory = 512
      }

      logs {
        max_files     = 2
        max_file_size = 20
      }

      kill_timeout = "2m"
      kill_signal  = "SIGTERM"
    }
  }
}
