# A parameterized job: a template that runs only when dispatched. Each dispatch makes a
# child job, greet/dispatch-<unix time>-<random>, with the dispatch's meta and payload
# (written to the task's local/input.txt):
#   drover job run examples/dispatch.nomad.hcl
#   echo "have a nice day" | drover job dispatch -meta name=world greet -
job "greet" {
  type        = "batch"
  datacenters = ["dc1"]

  parameterized {
    payload       = "optional"
    meta_required = ["name"]
    meta_optional = ["greeting"]
  }

  meta {
    greeting = "Hello"
  }

  group "greet" {
    task "greet" {
      driver = "raw_exec"

      dispatch_payload {
        file = "input.txt"
      }

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"${NOMAD_META_greeting}, ${NOMAD_META_name}!\"; cat ${NOMAD_TASK_DIR}/input.txt 2>/dev/null || true"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
