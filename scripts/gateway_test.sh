#!/usr/bin/env bash
# Tests of the kip-server gateway against the running cluster
# (localhost:${KIP_PGPORT:-54329}, user postgres, kip installed).
#
#   bash scripts/gateway_test.sh         the gateway's part of `make test`:
#     1. kip-server unit tests and integration tests (server/tests/gateway):
#        every status code, auth on and off, per-key spaces, read-only keys,
#        list_logs, MCP over HTTP and stdio, reconnect, graceful shutdown
#     2. a short mixed load (16 clients, 3 s): no 5xx, p50/p99 printed
#     3. MCP handshake with the Python `mcp` package's clients (stdio, HTTP)
#     4. the official kip-mcp-server (TypeScript, built from
#        ../shared/reference/kip-mcp-server) against kip-server, unchanged
#   bash scripts/gateway_test.sh soak    64 clients for 30 s, then Postgres
#     restarted under load (KIP_GATEWAY_PG_RESTART, default
#     `bash scripts/cluster.sh restart`): only 503 while it is down, then 200.
#
# Each run recreates the database kip_gateway_test. Steps 3 and 4 are skipped
# with a message when Python's venv/pip or npm cannot provide the clients.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PORT=${KIP_PGPORT:-54329}
DB=kip_gateway_test
export KIP_GATEWAY_TEST_DATABASE_URL="postgres://postgres@localhost:$PORT/$DB"
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/kip-server
SHARED=${KIP_SHARED_DIR:-$ROOT/../shared}
CACHE=${KIP_CACHE_DIR:-$HOME/.cache/kip}
MODE=${1:-test}
say() { printf -- '-- %s\n' "$*"; }

say "build kip-server (release)"
cargo build --release -p kip-server 2>&1 | grep -E '^(error|warning)' || true
[ -x "$BIN" ] || { echo "kip-server was not built" >&2; exit 1; }

say "database $DB with the kip extension"
psql -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d postgres \
  -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$DB" \
  -c "SET client_min_messages = warning" -c "CREATE EXTENSION kip CASCADE"

if [ "$MODE" = soak ]; then
  say "soak: 64 clients x 30 s, then a Postgres restart under load"
  KIP_GATEWAY_LOAD_CLIENTS=${KIP_GATEWAY_LOAD_CLIENTS:-64} KIP_GATEWAY_LOAD_SECS=${KIP_GATEWAY_LOAD_SECS:-30} \
  KIP_GATEWAY_PG_RESTART=${KIP_GATEWAY_PG_RESTART:-"bash $ROOT/scripts/cluster.sh restart"} \
    cargo test --release -p kip-server --test gateway -- load --nocapture 2>&1
  exit 0
fi

say "kip-server unit and integration tests"
cargo test --release -p kip-server -- --test-threads=3 --skip load 2>&1

say "short mixed load (the full one is make soak)"
cargo test --release -p kip-server --test gateway -- load --nocapture 2>&1

# Gateways for the third-party clients: one with authentication, one without.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PIDS=()
stop_gateways() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_gateways EXIT
start_gateway() { # PORT [ENV=VALUE...]
  local port=$1; shift
  env "$@" DATABASE_URL="$KIP_GATEWAY_TEST_DATABASE_URL" KIP_LISTEN="127.0.0.1:$port" \
    "$BIN" >"/tmp/kip-gateway-test-$port.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "kip-server did not start on port $port" >&2; cat "/tmp/kip-gateway-test-$port.log" >&2; return 1
}
OPEN_PORT=$(free_port); start_gateway "$OPEN_PORT"
KEY="gateway-test-$RANDOM$RANDOM"
AUTH_PORT=$(free_port); start_gateway "$AUTH_PORT" API_KEY="$KEY"

say "a gateway connected as a non-superuser role: held to its grants"
# kip_gw_writer may write space gw_granted and nothing else; Postgres's
# row-level security and kip's grant check apply to the gateway's pool.
psql -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$DB" >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_gw_writer') THEN
    CREATE ROLE kip_gw_writer LOGIN NOSUPERUSER IN ROLE kip_writer;
  END IF;
END $$;
SELECT kip_grant('gw_granted', 'kip_gw_writer', 'write');
SQL

ROLE_PORT=$(free_port)
KIP_GATEWAY_TEST_DATABASE_URL="postgres://kip_gw_writer@localhost:$PORT/$DB" start_gateway "$ROLE_PORT"
call() { # SPACE COMMAND -> "status body"
  curl -s -o /tmp/kip-gw-role-body -w '%{http_code}' "http://127.0.0.1:$ROLE_PORT/kip" -H "X-KIP-Space: $1" -H 'Content-Type: application/json' \
    -d "$(python3 -c 'import json, sys; print(json.dumps({"method": "execute_kip", "params": {"command": sys.argv[1]}}))' "$2")"
  echo " $(cat /tmp/kip-gw-role-body)"
}
out=$(call gw_granted 'UPSERT { CONCEPT ?p { {type: "Person", name: "Gateway Writer"} SET ATTRIBUTES { person_class: "AI" } } }')
case "$out" in 200*'"result"'*) ;; *) echo "write to a granted space: $out" >&2; exit 1;; esac
out=$(call gw_granted 'FIND(?p.name) WHERE { ?p {type: "Person", name: "Gateway Writer"} }')
case "$out" in 200*'Gateway Writer'*) ;; *) echo "read of a granted space: $out" >&2; exit 1;; esac
out=$(call gw_other 'FIND(?p.name) WHERE { ?p {type: "Person"} }')
case "$out" in 403*KIP_3004*) ;; *) echo "read of a space without a grant: $out" >&2; exit 1;; esac
out=$(call gw_other 'UPSERT { CONCEPT ?p { {type: "Person", name: "Intruder"} } }')
case "$out" in 403*KIP_3004*) ;; *) echo "write to a space without a grant: $out" >&2; exit 1;; esac
[ "$(psql -X -tA -h localhost -p "$PORT" -U postgres -d "$DB" -c "SELECT count(*) FROM kip.spaces WHERE name = 'gw_other'")" = 0 ] \
  || { echo "a refused call created space gw_other" >&2; exit 1; }
echo "granted space: written and read (200); other space: refused (403, KIP_3004), not created"

say "MCP handshake with the Python mcp package (stdio and streamable HTTP)"
VENV=$CACHE/mcp-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import mcp' 2>/dev/null; then
  mkdir -p "$CACHE"
  { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q 'mcp>=1.10'; } >/tmp/kip-gateway-pip.log 2>&1 || true
fi
if "$VENV/bin/python" -c 'import mcp' 2>/dev/null; then
  "$VENV/bin/python" server/tests/clients/mcp_handshake.py stdio "$BIN" "$KIP_GATEWAY_TEST_DATABASE_URL" gw_python
  "$VENV/bin/python" server/tests/clients/mcp_handshake.py http "http://127.0.0.1:$OPEN_PORT/mcp"
else
  echo "skipped: the Python mcp package could not be installed (see /tmp/kip-gateway-pip.log)"
fi

say "the official kip-mcp-server against kip-server"
SRC=$SHARED/reference/kip-mcp-server
BUILD=/tmp/kip-mcp-server-build
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "skipped: node/npm not available"
elif [ ! -d "$SRC" ]; then
  echo "skipped: $SRC not found (set KIP_SHARED_DIR)"
else
  # A fresh copy of its sources each run; node_modules is kept between runs.
  mkdir -p "$BUILD"
  rm -rf "$BUILD/src" "$BUILD/test" "$BUILD/docs" "$BUILD/dist"
  cp -r "$SRC/." "$BUILD/" && chmod -R u+w "$BUILD"
  if (cd "$BUILD" && npm install --no-audit --no-fund --loglevel=error && npx tsc -p tsconfig.json) >/tmp/kip-gateway-npm.log 2>&1; then
    cp server/tests/clients/kip_mcp_server_check.mjs "$BUILD/"
    (cd "$BUILD" && node kip_mcp_server_check.mjs "http://127.0.0.1:$AUTH_PORT/kip" "$KEY")
    # Its own backend test (no API key): DESCRIBE PRIMER and list_logs.
    (cd "$BUILD" && KIP_BACKEND_URL="http://127.0.0.1:$OPEN_PORT/kip" node --test test/integration.test.mjs 2>&1 | tail -n 8)
  else
    echo "skipped: kip-mcp-server could not be built (see /tmp/kip-gateway-npm.log)"
  fi
fi

say "no API key in the gateways' logs"
if grep -q "$KEY" /tmp/kip-gateway-test-*.log; then echo "the API key appears in a log" >&2; exit 1; fi
echo "ok"
