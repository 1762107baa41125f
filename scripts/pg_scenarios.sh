#!/usr/bin/env bash
# Runs each pg_test/*.sql in a fresh database on the project's cluster and
# compares psql's output with pg_test/expected/<name>.out.
# KIP_ACCEPT=1 rewrites the expected files from the actual output.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${KIP_PGPORT:-54329}
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql -X -q -h localhost -p "$PORT" -U postgres --no-psqlrc -v ON_ERROR_STOP=1 -P pager=off)
mkdir -p pg_test/expected
pass=0; fail=0
for f in pg_test/*.sql; do
  name=$(basename "$f" .sql)
  db="kip_scenario_$name"
  "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS \"$db\"" -c "CREATE DATABASE \"$db\"" >/dev/null
  actual=$("${PSQL[@]}" -d "$db" -f "$f" 2>&1 || true)
  "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS \"$db\"" >/dev/null
  expected_file=pg_test/expected/$name.out
  if [ "${KIP_ACCEPT:-0}" = 1 ]; then printf '%s\n' "$actual" > "$expected_file"; fi
  if [ -f "$expected_file" ] && diff -u "$expected_file" <(printf '%s\n' "$actual") >/tmp/kip-scenario-$name.diff; then
    pass=$((pass+1)); echo "scenario $name: ok"
  else
    fail=$((fail+1)); echo "scenario $name: FAILED"; cat /tmp/kip-scenario-$name.diff 2>/dev/null | head -60
  fi
done
echo "scenarios: $pass passed, $fail failed"
[ "$fail" = 0 ]
