# A web server in a container (docker driver): busybox httpd on port 8080 inside the
# container, published on the node's address at the port the scheduler picks (NOMAD_HOST_PORT_http).
# Needs a Docker daemon on the node and an image with busybox, e.g. `busybox:1.36`.
job "web" {
  type        = "service"
  datacenters = ["dc1"]

  group "web" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "httpd" {
      driver       = "docker"
      kill_timeout = "5s"

      config {
        image   = "busybox:1.36"
        command = "/bin/sh"
        args = ["-c", <<-EOT
          echo "hello from $NOMAD_ALLOC_ID" > /local/index.html
          exec httpd -f -v -p 8080 -h /local
          EOT
        ]
        ports      = ["http"]
        pids_limit = 64
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
