# A raw_exec service that prints a greeting every 10 s (`make run` submits it).
# ${NOMAD_ALLOC_NAME} and ${NOMAD_DC} are filled in by the client when the task starts.
job "hello" {
  type        = "service"
  datacenters = ["dc1"]

  group "greeter" {
    count = 1

    task "greet" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do echo \"hello from ${NOMAD_ALLOC_NAME} on ${NOMAD_DC}\"; sleep 10; done"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
