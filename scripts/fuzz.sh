#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS seconds: `make test` runs short sessions, `make
# fuzz` long ones. Each fuzzer has its seeds (below) and its own corpus in
# build/fuzz/corpus/<name>, where new inputs accumulate; a crash, hang or leak leaves its
# input in build/fuzz/artifacts and fails the run.
set -euo pipefail
FUZZER=${1:?usage: fuzz.sh FUZZER SECONDS}
SECONDS_TO_RUN=${2:?usage: fuzz.sh FUZZER SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=$(basename "$FUZZER")
CORPUS="$ROOT/build/fuzz/corpus/$NAME"
ARTIFACTS="$ROOT/build/fuzz/artifacts"
mkdir -p "$CORPUS" "$ARTIFACTS"
case "$NAME" in
  jobspec_fuzz) SEEDS=("$ROOT/src/jobspec/testdata") OPTS=(-dict="$ROOT/src/jobspec/fuzz/hcl.dict" -max_len=65536) ;;
  http_fuzz) SEEDS=("$ROOT/src/api/fuzz/corpus") OPTS=(-dict="$ROOT/src/api/fuzz/http.dict" -max_len=65536) ;;
  protocol_fuzz) SEEDS=("$ROOT/src/supervisor/fuzz/corpus") OPTS=(-max_len=16384) ;;
  snapshot_fuzz) SEEDS=("$ROOT/src/client/allocdir/fuzz/corpus") OPTS=(-max_len=65536) ;;
  *) echo "fuzz: unknown fuzzer $NAME" >&2; exit 2 ;;
esac
echo "fuzz: $NAME for ${SECONDS_TO_RUN}s (corpus $CORPUS)" >&2
LOG="$ROOT/build/fuzz/last-run-$NAME.log"
"$FUZZER" "$CORPUS" "${SEEDS[@]}" "${OPTS[@]}" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$NAME-" >"$LOG" 2>&1 &&
  status=0 || status=$?
# The end of libFuzzer's report: the failure (if any) and the run's statistics.
grep -E '^(==[0-9]+==|SUMMARY|Done |stat::|artifact_prefix|Test unit written|ERROR|    #[0-9])' \
  "$LOG" | tail -n 40 >&2
exit "$status"
