#!/usr/bin/env bash
# `make run`: start a dev agent in the foreground and submit examples/hello.nomad.hcl once
# its API answers. Ctrl-C stops the agent (and, in dev mode, its tasks).
set -euo pipefail
drover="$1"
addr="${2:-127.0.0.1}"
port="${3:-4646}"
export NOMAD_ADDR="http://${addr}:${port}"

(
  for _ in $(seq 1 100); do
    if curl -fsS "${NOMAD_ADDR}/v1/agent/health" >/dev/null 2>&1; then
      echo
      echo "==> Submitting examples/hello.nomad.hcl"
      "$drover" job run examples/hello.nomad.hcl || true
      cat <<MSG

==> The dev agent is running the "hello" job. In another shell:
      export NOMAD_ADDR=${NOMAD_ADDR}
      $drover job status hello            # the job and its allocations
      $drover alloc status <alloc-id>     # task events of one allocation
      $drover node status                 # this node
      $drover job stop hello              # stop it
      $drover job init                    # write example.nomad.hcl to start your own
    Press Ctrl-C here to stop the agent.

MSG
      exit 0
    fi
    sleep 0.1
  done
  echo "agent did not answer on ${NOMAD_ADDR}" >&2
) &

exec "$drover" agent -dev -bind "$addr" -http-port "$port"
