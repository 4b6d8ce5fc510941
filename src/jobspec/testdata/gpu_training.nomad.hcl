# Batch training and evaluation jobs that need GPUs.
#
# Device requests name a device at any of three levels of detail:
#   "gpu"                  - any vendor's GPU
#   "nvidia/gpu"           - an NVIDIA GPU of any model
#   "nvidia/gpu/Tesla T4"  - exactly that model
job "model-training" {
  datacenters = ["gpu-east"]
  node_pool   = "gpu"
  type        = "batch"
  priority    = 40

  group "train" {
    count = 1

    # Checkpoints are large; 20 GiB, written as a plain number of megabytes.
    ephemeral_disk {
      size = 20480
    }

    restart {
      attempts = 1
      delay    = "30s"
      mode     = "fail"
    }

    reschedule {
      attempts  = 2
      interval  = "24h"
      delay     = "2m"
      unlimited = false
    }

    task "trainer" {
      driver = "docker"

      config {
        image   = "registry.example.com/ml/trainer:3.1"
        command = "python"
        args    = ["-m", "trainer.run", "--epochs", "40", "--gpus", "2"]
      }

      resources {
        cpu    = 8000
        memory = 32768

        # Two NVIDIA GPUs with enough memory, ideally H100s, not T4s.
        device "nvidia/gpu" {
          count = 2

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "4 GiB"
          }

          constraint {
            attribute = "${device.attr.compute_capability}"
            version   = ">= 8.0"
          }

          affinity {
            attribute = "${device.model}"
            value     = "H100"
            weight    = 50
          }

          affinity {
            attribute = "${device.model}"
            value     = "Tesla T4"
            weight    = -25
          }
        }
      }
    }
  }

  group "evaluate" {
    task "scorer" {
      driver = "docker"

      config {
        image = "registry.example.com/ml/scorer:3.1"
      }

      resources {
        cores  = 4
        memory = 8192

        # Any GPU from any vendor will do; count defaults to 1 on the server.
        device "gpu" {}
      }
    }

    task "inference-smoke" {
      driver = "docker"

      config {
        image = "registry.example.com/ml/infer:3.1"
      }

      resources {
        cpu    = 1000
        memory = 4096

        # Exactly this model, identified by vendor/type/name.
        device "nvidia/gpu/Tesla T4" {
          count = 1

          affinity {
            attribute = "${device.attr.driver_version}"
            operator  = "regexp"
            value     = "^5[0-9]{2}\\."
            weight    = 20
          }
        }
      }
    }
  }
}
