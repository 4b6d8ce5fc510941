#!/usr/bin/env bash
# Runs the jobspec libFuzzer target for SECONDS seconds: `make test` runs a short
# session, `make fuzz` a long one. Seeds are the job file corpus; new inputs accumulate
# in build/fuzz/corpus; a crash, hang or leak leaves its input in build/fuzz/artifacts
# and fails the run.
set -euo pipefail
FUZZER=${1:?usage: fuzz.sh FUZZER SECONDS}
SECONDS_TO_RUN=${2:?usage: fuzz.sh FUZZER SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORPUS="$ROOT/build/fuzz/corpus"
ARTIFACTS="$ROOT/build/fuzz/artifacts"
mkdir -p "$CORPUS" "$ARTIFACTS"
echo "fuzz: jobspec_fuzz for ${SECONDS_TO_RUN}s (corpus $CORPUS)" >&2
"$FUZZER" "$CORPUS" "$ROOT/src/jobspec/testdata" \
  -dict="$ROOT/src/jobspec/fuzz/hcl.dict" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" >"$ROOT/build/fuzz/last-run.log" 2>&1 &&
  status=0 || status=$?
# The end of libFuzzer's report: the failure (if any) and the run's statistics.
grep -E '^(==[0-9]+==|SUMMARY|Done |stat::|artifact_prefix|Test unit written|ERROR|    #[0-9])' \
  "$ROOT/build/fuzz/last-run.log" | tail -n 40 >&2
exit "$status"
