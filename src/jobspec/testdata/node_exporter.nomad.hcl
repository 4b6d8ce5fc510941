# A system job: one node-exporter on every eligible Linux client.
// Comments may start with a hash, with two slashes,
/* or be block comments, which may span
   several lines and sit anywhere whitespace may. */
job "node-exporter" {
  datacenters = ["*"] # every datacenter
  type        = "system" // placed on each node, not counted
  priority    = /* above the default of 50 */ 75

  /*
   * System jobs roll one node at a time.
   */
  update {
    max_parallel = 1    # one node at a time
    stagger      = "10s" // between batches
  }

  constraint {
    attribute = "${attr.kernel.name}" /* linux only */
    value     = "linux"
  }

  group "exporter" {
    # The group holds a single task, # and this hash is inside a comment.
    restart {
      attempts = 3
      interval = "10m"
      delay    = "20s"
      mode     = "delay"
    }

    network {
      port "metrics" {
        static = 9100 // the well-known node-exporter port
      }
    }

    task "node-exporter" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/node_exporter"
        args = [
          "--web.listen-address=:${NOMAD_PORT_metrics}", # runtime port
          "--collector.textfile.directory=/var/lib/node_exporter", // textfile collector
          /* "--collector.systemd", disabled for now */
          "--no-collector.wifi",
        ]
      }

      # Strings may contain comment markers; they are not comments there.
      env {
        NOTE    = "# not a comment // nor this /* nor this */"
        HOMEPAGE = "https://prometheus.io/docs/guides/node-exporter/"
      }

      resources {
        cpu    = 100 # MHz
        memory = 64  // MB
      }
    }
  }
}
