# An order-processing API rolled out with canaries.
#
# The job-level update, reschedule and migrate blocks are defaults for every group;
# the "api" group overrides them with its own, while "worker" keeps the job's.
job "orders-api" {
  region      = "eu-west"
  namespace   = "commerce"
  datacenters = ["eu-west-1a", "eu-west-1b"]
  type        = "service"
  priority    = 70

  # Job-wide rollout: one allocation at a time, roll back on a failed deployment.
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "10s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    auto_revert       = true
    stagger           = "30s"
  }

  # Failed allocations are placed elsewhere at most 3 times an hour, backing off.
  reschedule {
    attempts       = 3
    interval       = "1h"
    delay          = "30s"
    delay_function = "exponential"
    max_delay      = "10m"
    unlimited      = false
  }

  # Draining a node moves two allocations at a time.
  migrate {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "15s"
    healthy_deadline = "3m"
  }

  group "api" {
    count = 4

    # Canary deployment: two canaries, promoted automatically once healthy.
    update {
      max_parallel     = 2
      canary           = 2
      auto_promote     = true
      auto_revert      = true
      min_healthy_time = "30s"
      healthy_deadline = "2m30s"
    }

    # Keep trying forever, with a Fibonacci back-off capped at 1.5 hours.
    reschedule {
      delay          = "5s"
      delay_function = "fibonacci"
      max_delay      = "1h30m"
      unlimited      = true
    }

    migrate {
      max_parallel     = 1
      health_check     = "checks"
      min_healthy_time = "20s"
      healthy_deadline = "4m"
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    # The local cache survives updates and follows the allocation to a new node.
    ephemeral_disk {
      sticky  = true
      migrate = true
      size    = "2GiB"
    }

    network {
      port "http" {
        to = 8080
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = "registry.example.com/orders-api:2.4.1"
        ports = ["http"]
      }

      # A task's restart block overrides the group's, field by field.
      restart {
        attempts         = 5
        delay            = "1s"
        render_templates = true
      }

      resources {
        cpu        = 500
        memory     = 256
        memory_max = 512
      }

      shutdown_delay = "5s"
      kill_timeout   = "45s"
    }
  }

  group "worker" {
    count = 2

    restart {
      attempts = 10
      interval = "5m"
      delay    = "25s"
      mode     = "delay"
    }

    ephemeral_disk {
      size = 300
    }

    task "consumer" {
      driver = "docker"

      config {
        image   = "registry.example.com/orders-worker:2.4.1"
        command = "consume"
        args    = ["--queue", "orders", "--prefetch", "20"]
      }

      resources {
        cpu    = 250
        memory = 384
      }
    }
  }
}
