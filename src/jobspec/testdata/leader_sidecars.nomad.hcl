# A service job with a leader task, lifecycle sidecars and runtime interpolations.
job "web" {
  datacenters = ["dc1"]
  type        = "service"
  priority    = 60

  meta {
    team = "platform"
    tier = 2
  }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "frontend" {
    count = 2

    network {
      port "http" {
        to = 8080
      }
      port "admin" {
        static = 9000
      }
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "delay"
    }

    task "init-db" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo init ${NOMAD_ALLOC_ID} > ${NOMAD_ALLOC_DIR}/init"]
      }
    }

    task "server" {
      driver = "raw_exec"
      leader = true
      config {
        command = "/usr/bin/python3"
        args    = ["-m", "http.server", "${NOMAD_PORT_http}"]
      }
      env {
        GREETING = "hello from ${node.unique.name}"
        RACK     = "${meta.rack}"
        HOME_DIR = "${env["HOME"]}"
      }
      resources {
        cpu    = 200
        memory = 128
      }
      kill_timeout = "20s"
      kill_signal  = "SIGINT"
    }

    task "log-shipper" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "tail -F ${NOMAD_ALLOC_DIR}/logs/server.stdout.0"]
      }
      logs {
        max_files     = 3
        max_file_size = "5MB"
      }
    }

    task "cleanup" {
      driver = "raw_exec"
      lifecycle {
        hook = "poststop"
      }
      config {
        command = "/bin/true"
      }
    }
  }
}
