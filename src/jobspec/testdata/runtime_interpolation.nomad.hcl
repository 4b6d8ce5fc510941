# Runtime interpolation: ${var.*} and ${local.*} are expanded when the file is
# parsed, while node attributes, node meta, the task environment and NOMAD_*
# variables are resolved by the client when the task starts, so they stay as
# written - even when both kinds share one string.

variable "service_name" {
  type    = string
  default = "ledger"
}

variable "log_dir" {
  type    = string
  default = "/var/log/ledger"
}

variable "extra_path" {
  type    = string
  default = "/opt/ledger/bin"
}

locals {
  listen_host = "0.0.0.0"
}

job "ledger" {
  datacenters = ["dc1", "dc2"]

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  constraint {
    attribute = "${meta.rack}"
    operator  = "!="
    value     = "${var.service_name}-quarantine"
  }

  group "ledger" {
    count = 3

    network {
      port "http" {}
    }

    task "ledger" {
      driver = "raw_exec"

      config {
        command = "/opt/ledger/bin/${var.service_name}"
        args = [
          "--listen", "${local.listen_host}:${NOMAD_PORT_http}",
          "--node", "${attr.unique.hostname}",
          "--log", "${var.log_dir}/${NOMAD_ALLOC_ID}.log",
        ]
      }

      env {
        PATH         = "${var.extra_path}:${env["PATH"]}"
        INSTANCE     = "${var.service_name}-${NOMAD_ALLOC_INDEX}"
        LOCATION     = "${node.datacenter}/${meta.rack}/${attr.unique.hostname}"
        ADVERTISE    = "http://${attr.unique.network.ip-address}:${NOMAD_PORT_http}/${var.service_name}"
        UPSTREAM_URL = "http://${NOMAD_UPSTREAM_ADDR_db}/${var.service_name}"
        ALLOC        = "${NOMAD_ALLOC_ID}"
        ESCAPED      = "$${var.service_name} is kept literally"
      }

      meta {
        rack_and_service = "${meta.rack}:${var.service_name}"
        region_hint      = "${node.region}"
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
