#!/usr/bin/env bash
# `make run`: start a dev agent in the foreground and submit examples/hello.nomad.hcl once
# its API answers. Ctrl-C stops the agent (and, in dev mode, its tasks).
# `make run-gpus`: the same with four fake GPUs (examples/devices/fake-gpus.hcl) and the
# two-task GPU job examples/gpus.nomad.hcl.
# Usage: run-dev.sh DROVER [ADDR [PORT [JOB [AGENT ARGS...]]]]
set -euo pipefail
drover="$1"
addr="${2:-127.0.0.1}"
port="${3:-4646}"
job="${4:-examples/hello.nomad.hcl}"
job_name="$(basename "$job" .nomad.hcl)"
shift $(( $# < 4 ? $# : 4 ))
export NOMAD_ADDR="http://${addr}:${port}"

(
  for _ in $(seq 1 100); do
    if curl -fsS "${NOMAD_ADDR}/v1/agent/health" >/dev/null 2>&1; then
      echo
      echo "==> Submitting ${job}"
      "$drover" job run "$job" || true
      cat <<MSG

==> The dev agent is running the "${job_name}" job. In another shell:
      export NOMAD_ADDR=${NOMAD_ADDR}
      $drover job status ${job_name}            # the job and its allocations
      $drover alloc status -stats <alloc-id>     # task events and usage of one allocation
      $drover node status -verbose <node-id>    # this node (with its devices, if any)
      $drover job stop ${job_name}              # stop it
      $drover job init                          # write example.nomad.hcl to start your own
    With four fake GPUs instead: make run-gpus (docs/devices.md).
    Press Ctrl-C here to stop the agent.

MSG
      exit 0
    fi
    sleep 0.1
  done
  echo "agent did not answer on ${NOMAD_ADDR}" >&2
) &

exec "$drover" agent -dev -bind "$addr" -http-port "$port" "$@"
