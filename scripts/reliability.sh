#!/usr/bin/env bash
# Reliability suites against the running cluster (localhost:${KIP_PGPORT:-54329}):
#   load          16 clients mixing every kind of command, then the storage
#                 invariants (tests/bin/reliability_load.rs)
#   pathological  open hop walks over a dense cyclic graph, catastrophic
#                 regular expressions, huge LIMITs: KIP_4001/KIP_4002 within
#                 the budget while another session keeps answering
#   fuzz          random and mutated commands and parameters through
#                 kip_execute: always an envelope, never a backend crash
#   crash         kill -9 of a backend mid-capsule, immediate stop under a
#                 write stream: capsules are all or nothing, none acknowledged
#                 is lost. It resets every session of the cluster, so it runs
#                 last and alone, and leaves the cluster started.
#
#   bash scripts/reliability.sh [test|soak] [suite...]
#     test (default): the short versions, part of `make test` (about 3 min)
#     soak: the full ones, part of `make soak` (60 s load, 100,000 fuzz inputs)
#
# Each variable below can be overridden from the environment. KIP_FUZZ_SKIP
# lists hostile-input classes the fuzz suite does not generate (see
# tests/bin/reliability_fuzz.rs); empty means every class is exercised.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-test}
shift || true
SUITES=${*:-load pathological fuzz crash}
BIN=${CARGO_TARGET_DIR:-$(pwd)/target}/release
export KIP_PGPORT=${KIP_PGPORT:-54329}

if [ "$MODE" = soak ]; then
  export KIP_LOAD_CLIENTS=${KIP_LOAD_CLIENTS:-16} KIP_LOAD_SECS=${KIP_LOAD_SECS:-60}
  export KIP_PATHO_SESSIONS=${KIP_PATHO_SESSIONS:-2} KIP_PATHO_ROUNDS=${KIP_PATHO_ROUNDS:-5}
  export KIP_FUZZ_CASES=${KIP_FUZZ_CASES:-100000} KIP_FUZZ_CLIENTS=${KIP_FUZZ_CLIENTS:-2}
  export KIP_CRASH_ROUNDS=${KIP_CRASH_ROUNDS:-3} KIP_CRASH_STREAM_MS=${KIP_CRASH_STREAM_MS:-5000}
else
  export KIP_LOAD_CLIENTS=${KIP_LOAD_CLIENTS:-16} KIP_LOAD_SECS=${KIP_LOAD_SECS:-10}
  export KIP_PATHO_SESSIONS=${KIP_PATHO_SESSIONS:-2} KIP_PATHO_ROUNDS=${KIP_PATHO_ROUNDS:-1}
  # Generous bounds: the short run shares two cores with the rest of `make test`.
  export KIP_PATHO_SLACK_MS=${KIP_PATHO_SLACK_MS:-3000} KIP_PATHO_PROBE_MAX_MS=${KIP_PATHO_PROBE_MAX_MS:-5000}
  export KIP_FUZZ_CASES=${KIP_FUZZ_CASES:-5000} KIP_FUZZ_CLIENTS=${KIP_FUZZ_CLIENTS:-2} KIP_FUZZ_HOSTILE_REPEAT=${KIP_FUZZ_HOSTILE_REPEAT:-1}
  export KIP_CRASH_ROUNDS=${KIP_CRASH_ROUNDS:-1} KIP_CRASH_LARGE=${KIP_CRASH_LARGE:-1500} KIP_CRASH_STREAM_MS=${KIP_CRASH_STREAM_MS:-2000}
fi

cargo build --release -p kip-integration-tests --bins 2>&1 | grep -E '^(error|warning)' || true

status=0
for suite in $SUITES; do
  printf -- '-- reliability: %s (%s)\n' "$suite" "$MODE"
  t0=$(date +%s)
  if ! "$BIN/kip-reliability-$suite"; then
    echo "reliability: $suite FAILED"
    status=1
  fi
  echo "reliability: $suite took $(( $(date +%s) - t0 ))s"
done
# Whatever happened, leave the cluster up for the next steps.
bash scripts/cluster.sh start >/dev/null
exit $status
