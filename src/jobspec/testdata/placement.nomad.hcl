# A replicated key-value store with careful placement: constraint shorthands,
# affinities, spreads with targets, job and group meta, and a host volume mounted
# into the task.
job "kv-store" {
  datacenters = ["us-west-1", "us-west-2", "us-west-3"]
  type        = "service"

  meta {
    owner   = "storage-team"
    runbook = "https://wiki.example.com/runbooks/kv-store"
    shards  = 3
  }

  # Only on 64-bit Linux with a recent enough kernel and Docker.
  constraint {
    attribute = "${attr.cpu.arch}"
    value     = "amd64"
  }

  constraint {
    attribute = "${attr.kernel.version}"
    version   = ">= 5.10"
  }

  constraint {
    attribute = "${attr.driver.docker.version}"
    semver    = ">= 24.0.0"
  }

  # Prefer the newer hardware generation, and avoid nodes marked as spot.
  affinity {
    attribute = "${meta.hw_generation}"
    value     = "g3"
    weight    = 75
  }

  affinity {
    attribute = "${node.class}"
    operator  = "!="
    value     = "spot"
    weight    = -50
  }

  # Spread allocations evenly across datacenters, weighted toward us-west-1.
  spread {
    attribute = "${node.datacenter}"
    weight    = 100

    target "us-west-1" {
      percent = 50
    }
    target "us-west-2" {
      percent = 30
    }
    target "us-west-3" {
      percent = 20
    }
  }

  group "replica" {
    count = 5

    meta {
      role      = "replica"
      fsync     = true
      max_conns = 4096
    }

    # Every replica on its own host, and at most two per rack.
    constraint {
      distinct_hosts = true
    }

    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }

    # Node names follow kv-<n>; the node must carry the ssd and nvme tags.
    constraint {
      attribute = "${attr.unique.hostname}"
      regexp    = "^kv-[0-9]+$"
    }

    constraint {
      attribute    = "${meta.storage_tags}"
      set_contains = "ssd,nvme"
    }

    constraint {
      attribute = "${attr.unique.storage.volume}"
      operator  = "is_set"
    }

    affinity {
      attribute        = "${meta.features}"
      set_contains_any = "fast-network,large-cache"
      weight           = 30
    }

    spread {
      attribute = "${meta.rack}"
    }

    volume "data" {
      type      = "host"
      source    = "kv-data"
      read_only = false
    }

    volume "certs" {
      type      = "host"
      source    = "tls-certs"
      read_only = true
    }

    network {
      port "client" {
        static = 2379
      }
      port "peer" {
        static = 2380
      }
    }

    task "kv" {
      driver = "docker"

      config {
        image = "registry.example.com/kv:3.5.16"
        ports = ["client", "peer"]
      }

      volume_mount {
        volume      = "data"
        destination = "/var/lib/kv"
        read_only   = false
      }

      volume_mount {
        volume           = "certs"
        destination      = "/etc/kv/tls"
        read_only        = true
        propagation_mode = "private"
      }

      # A task-level constraint as well.
      constraint {
        attribute = "${attr.os.name}"
        operator  = "set_contains_any"
        value     = "ubuntu,debian"
      }

      resources {
        cpu    = 1000
        memory = 2048
      }
    }
  }
}
