# A parameterized batch job: each `nomad job dispatch` transcodes one video. The
# dispatcher sends a JSON payload (written to local/input.json) and meta values.
job "video-transcode" {
  datacenters = ["media"]
  type        = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["input_url", "profile"]
    meta_optional = ["priority", "callback_url"]
  }

  meta {
    codec = "h264"
  }

  group "transcode" {
    ephemeral_disk {
      size = 4096
    }

    task "ffmpeg" {
      driver = "exec"

      # The dispatch payload lands in the task's local/ directory.
      dispatch_payload {
        file = "input.json"
      }

      artifact {
        source      = "https://releases.example.com/transcoder/v1.8.0/transcoder_linux_amd64.tar.gz"
        destination = "local/bin"
        options {
          checksum = "sha256:7c1f8e9b2a4d6c3e5f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6"
        }
      }

      config {
        command = "local/bin/transcoder"
        args = [
          "--spec", "${NOMAD_TASK_DIR}/input.json",
          "--source", "${NOMAD_META_input_url}",
          "--profile", "${NOMAD_META_profile}",
          "--codec", "${NOMAD_META_codec}",
        ]
      }

      resources {
        cpu    = 4000
        memory = 2048
      }
    }
  }
}
