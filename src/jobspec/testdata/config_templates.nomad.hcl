# A reverse proxy whose configuration is rendered from templates. Shows both
# heredoc forms: <<EOF keeps the text exactly, <<-EOF strips the indentation
# common to all lines, so the body can be indented with the rest of the file.

variable "upstream_service" {
  type    = string
  default = "orders-api"
}

job "edge-proxy" {
  datacenters = ["dc1"]
  type        = "service"

  group "proxy" {
    count = 2

    network {
      port "https" {
        static = 443
      }
      port "status" {}
    }

    task "nginx" {
      driver = "docker"

      config {
        image = "nginx:1.27-alpine"
        ports = ["https", "status"]
        volumes = [
          "local/nginx.conf:/etc/nginx/nginx.conf",
          "secrets/tls:/etc/nginx/tls",
        ]
      }

      # Static assets, unpacked into local/www.
      artifact {
        source      = "https://assets.example.com/site/site-2024.11.tar.gz"
        destination = "local/www"
        mode        = "dir"
        options {
          checksum = "md5:5d41402abc4b2a76b9719d911017c592"
          archive  = "tar.gz"
        }
      }

      # A single file, fetched with a request header.
      artifact {
        source      = "https://assets.example.com/errors/50x.html"
        destination = "local/www/50x.html"
        mode        = "file"
        headers {
          X-Asset-Channel = "stable"
        }
      }

      # <<EOF: every character up to the closing marker is kept, including the
      # leading spaces. Consul-template markers stay as they are; ${var...} is
      # expanded by the parser and ${NOMAD_...} is left for the client.
      template {
        destination   = "local/nginx.conf"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        splay         = "10s"
        data          = <<EOF
events {}
http {
  upstream backend {
{{- range service "${var.upstream_service}" }}
    server {{ .Address }}:{{ .Port }};
{{- end }}
  }
  server {
    listen 443 ssl;
    listen ${NOMAD_PORT_status};
    root   /local/www;
  }
}
EOF
      }

      # <<-EOF: the common indentation is removed from each line.
      template {
        destination = "secrets/tls/cert.pem"
        perms       = "0600"
        change_mode = "restart"
        data        = <<-EOF
          {{ with secret "pki/issue/edge" "common_name=edge.example.com" }}
          {{ .Data.certificate }}
            {{ .Data.issuing_ca }}
          {{ end }}
        EOF
      }

      # Environment variables from a template, with custom delimiters.
      template {
        destination     = "secrets/env"
        env             = true
        left_delimiter  = "[["
        right_delimiter = "]]"
        data            = "UPSTREAM=[[ key \"edge/upstream\" ]]\nALLOC=${NOMAD_ALLOC_ID}\n"

        wait {
          min = "2s"
          max = "20s"
        }
      }

      # A template file shipped inside the artifact.
      template {
        source      = "local/www/robots.tmpl"
        destination = "local/www/robots.txt"
        change_mode = "noop"
      }

      resources {
        cpu    = 300
        memory = 128
      }
    }
  }
}
