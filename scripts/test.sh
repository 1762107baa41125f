#!/usr/bin/env bash
# Every test suite of the project, in order; exits non-zero on the first failure.
#   0. the layering rule (scripts/check_layers.py, no build)
#   1. kip-lang unit, corpus, property and fuzz tests (no Postgres)
#   2. cargo pgrx test pg15: unit tests and #[pg_test] tests inside Postgres
#   3. integration tests from a client against the project's cluster
#      (release build installed, cluster started on localhost:${KIP_PGPORT:-54329}),
#      then the read, write and conformance suites again as a non-superuser
#   4. reliability suites, short versions (scripts/reliability.sh): load,
#      pathological queries, fuzz through SQL, then crashes (these reset
#      every session of the cluster, so they run alone, after the rest);
#      load, pathological and fuzz again as the non-superuser
#   5. the `make run` demo and a DESCRIBE PRIMER over psql
#   6. the upgrade from the previous release (scripts/upgrade_test.sh)
#   7. a hot standby of a small primary of its own (scripts/standby_test.sh),
#      and a logical replication subscriber (scripts/subscriber_test.sh)
#   8. pg_test/ SQL scenarios (a .sql script and its expected output)
#   9. the kip-server gateway (scripts/gateway_test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export KIP_PGPORT=${KIP_PGPORT:-54329}
# PG_CONFIG selects the PostgreSQL installation kip is built for and installed
# into (default: the system one); cargo pgrx test reads $PGRX_HOME/config.toml.
export PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
step() { printf '\n== %s\n' "$*"; }
t0=$(date +%s)

step "layering: compile/ is pure, no import cycle between layers"
python3 scripts/check_layers.py

step "kip-lang tests"
cargo test --release -p kip-lang -p kip-mutate 2>&1

step "cargo pgrx test pg15"
# cargo pgrx test installs kip.so into the server's directories; the project
# cluster preloads it, so stop the cluster first (never overwrite a loaded .so).
bash scripts/cluster.sh stop
export CARGO_PGRX_TEST_RUNAS=postgres
export CARGO_PGRX_TEST_PGDATA=${CARGO_PGRX_TEST_PGDATA:-/tmp/kip-pgrx-test-pgdata}
cargo pgrx test pg15 2>&1

step "install the release build and start the cluster"
cargo pgrx install --release --pg-config "$PG_CONFIG" --sudo >/tmp/kip-install.log 2>&1 || { tail -50 /tmp/kip-install.log; exit 1; }
bash scripts/cluster.sh start

step "integration tests"
cargo test --release -p kip-integration-tests -- --test-threads=4 --skip conformance_fixtures 2>&1

step "integration tests again as a non-superuser (kip_test_admin, member of kip_admin)"
# Row-level security and the table privileges of the kip roles apply to
# this role (superusers bypass them); tests/governance.rs covers readers
# and writers held to their grants.
psql -X -q -h localhost -p "$KIP_PGPORT" -U postgres -d postgres -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_test_admin') THEN
    CREATE ROLE kip_test_admin LOGIN NOSUPERUSER IN ROLE kip_admin; END IF; END \$\$" \
  -c "GRANT SET ON PARAMETER deadlock_timeout TO kip_test_admin"
KIP_TEST_USER=kip_test_admin cargo test --release -p kip-integration-tests --test kql --test kml --test search \
  --test export --test envelope --test fidelity --test concurrency --test conformance -- --test-threads=4 2>&1

step "conformance fixtures (passed/total per file)"
cargo test --release -p kip-integration-tests --test conformance -- --nocapture 2>&1

step "reliability suites (short; make soak runs the full ones)"
# Every hostile-input class is exercised (KIP_FUZZ_SKIP lists classes not
# to generate, for diagnosis).
export KIP_FUZZ_SKIP=${KIP_FUZZ_SKIP-}
bash scripts/reliability.sh test
# The same load, pathological and fuzz suites as the non-superuser (the crash
# suite restarts the cluster; it runs once, above).
KIP_TEST_USER=kip_test_admin bash scripts/reliability.sh test load pathological fuzz

step "make run smoke test: demo database and a DESCRIBE PRIMER envelope over psql"
bash scripts/demo.sh kip_demo_check >/tmp/kip-demo-check.log 2>&1 || { cat /tmp/kip-demo-check.log; exit 1; }
envelope=$(psql -X -tA -h localhost -p "$KIP_PGPORT" -U postgres kip_demo_check \
  -c "SET kip.space = 'demo'" -c "SELECT kip_execute('DESCRIBE PRIMER') ? 'result'" | tail -1)
psql -X -q -h localhost -p "$KIP_PGPORT" -U postgres postgres -c "DROP DATABASE kip_demo_check"
if [ "$envelope" != t ]; then echo "DESCRIBE PRIMER did not return a result envelope"; exit 1; fi
echo "DESCRIBE PRIMER returned a result envelope"

step "upgrade from the previous release (ALTER EXTENSION kip UPDATE)"
bash scripts/upgrade_test.sh 2>&1

step "a hot standby: reads as on the primary, writes refused with the reason, promotion"
bash scripts/standby_test.sh 2>&1
step "a logical replication subscriber: the memory copied, revokes reach open sessions, no cycle there"
bash scripts/subscriber_test.sh 2>&1
step "pg_test SQL scenarios"
bash scripts/pg_scenarios.sh

step "kip-server gateway: HTTP, MCP, auth, status codes, kip-mcp-server"
bash scripts/gateway_test.sh

echo
echo "all test suites passed in $(( $(date +%s) - t0 ))s"
