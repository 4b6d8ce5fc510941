# A web tier driven by input variables. web_platform.vars.hcl overrides some of
# the defaults below (environment, replicas, datacenters, image); the rest keep
# their defaults.

variable "environment" {
  type        = string
  description = "Where this deployment runs."
  default     = "staging"

  validation {
    condition     = contains(["staging", "production"], var.environment)
    error_message = "The environment must be \"staging\" or \"production\"."
  }
}

variable "replicas" {
  type    = number
  default = 2
}

variable "debug" {
  type    = bool
  default = false
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

variable "labels" {
  type = map(string)
  default = {
    team        = "web"
    cost_center = "cc-1042"
  }
}

variable "image" {
  type = object({
    repository = string
    tag        = string
  })
  default = {
    repository = "registry.example.com/web/frontend"
    tag        = "1.0.0"
  }
}

variable "base_port" {
  type    = number
  default = 8000
}

locals {
  # Locals may refer to variables and to other locals, declared before or after.
  full_name   = "${local.prefix}-${var.environment}"
  prefix      = "web"
  is_prod     = var.environment == "production"
  image_ref   = "${var.image.repository}:${var.image.tag}"
  group_count = local.is_prod ? var.replicas * 2 : var.replicas
  all_labels  = merge(var.labels, { environment = var.environment, version = var.image.tag })

  # Three consecutive ports from base_port, and a name for each.
  ports      = [for i in range(3) : var.base_port + i]
  port_names = { for i, p in local.ports : format("port%d", i) => p }

  # Memory scales with the environment; CPU is a little arithmetic.
  memory_mb = local.is_prod ? 1024 : 256
  cpu_mhz   = 100 * var.replicas + 50
}

job "web-platform" {
  name        = local.full_name
  datacenters = var.datacenters
  type        = "service"
  priority    = local.is_prod ? 80 : 50

  # Meta given as an attribute holding a computed map.
  meta = local.all_labels

  group "frontend" {
    count = local.group_count

    network {
      port "http" {
        to = local.ports[0]
      }
      port "metrics" {
        to = local.ports[2]
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = local.image_ref
        ports = ["http", "metrics"]
        args = concat(
          ["--listen", ":${local.ports[0]}", "--metrics", ":${local.ports[2]}"],
          var.debug ? ["--log-level", "debug"] : [],
        )
        labels = local.port_names
      }

      env {
        ENVIRONMENT = upper(var.environment)
        DATACENTERS = join(",", var.datacenters)
        DC_COUNT    = length(var.datacenters)
        OWNER       = lookup(var.labels, "owner", "nobody")
        TEAM        = lookup(var.labels, "team", "nobody")
        SUMMARY     = format("%s v%s x%d", local.full_name, var.image.tag, local.group_count)
        PORT_LIST   = join(" ", [for p in local.ports : tostring(p)])
        ODD_PORTS   = join(" ", [for p in local.ports : "${p}" if p % 2 == 1])
        HALF_MEMORY = local.memory_mb / 2
        DEBUG       = var.debug ? "1" : "0"
      }

      resources {
        cpu    = local.cpu_mhz
        memory = local.memory_mb
      }
    }
  }
}
