# Two tasks, each given one GPU (run on an agent with GPUs, e.g. `make run-gpus`).
# `drover alloc status -stats <alloc>` shows each task's own GPU.
job "gpus" {
  datacenters = ["dc1"]

  group "train" {
    task "worker-a" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"worker-a got GPU $NVIDIA_VISIBLE_DEVICES\"; exec sleep 3600"]
      }

      resources {
        cpu    = 100
        memory = 64

        device "nvidia/gpu" {
          count = 1

          # Attributes compare with units: 16 GiB >= 8 GiB.
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "8 GiB"
          }
        }
      }
    }

    task "worker-b" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"worker-b got GPU $NVIDIA_VISIBLE_DEVICES\"; exec sleep 3600"]
      }

      resources {
        cpu    = 100
        memory = 64

        device "gpu" {
          # Prefer GPUs with many CUDA cores where there is a choice.
          affinity {
            attribute = "${device.attr.cuda_cores}"
            operator  = ">="
            value     = "2000"
            weight    = 50
          }
        }
      }
    }
  }
}
