# An agent configuration file (docs/agent-config.md):
#   drover agent -dev -config examples/agent.hcl
# Flags given on the command line win over the file.
datacenter = "dc1"
log_level  = "info"

ports {
  http = 4646
}

client {
  node_class = "dev"
  meta {
    rack = "r1"
  }
  # Keep some of the machine for the host itself.
  reserved {
    cpu    = 200
    memory = "256MB"
  }
  gc_max_allocs = 50
}

# raw_exec runs tasks without isolation; -dev enables it by default, other agents
# need this.
plugin "raw_exec" {
  config {
    enabled = true
  }
}

telemetry {
  collection_interval = "1s"
}
