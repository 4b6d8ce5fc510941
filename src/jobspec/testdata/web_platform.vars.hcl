# Production overrides for web_platform.nomad.hcl; "labels", "debug" and
# "base_port" keep their defaults.
environment = "production"
replicas    = 3
datacenters = ["us-east-1", "us-east-2"]

image = {
  repository = "registry.example.com/web/frontend"
  tag        = "1.4.2"
}
