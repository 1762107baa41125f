#!/usr/bin/env bash
# Creates the demo database (if missing) with the kip extension, loads a small
# demo memory and runs a few KIP commands, then prints how to connect.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-kip}
PORT=${KIP_PGPORT:-54329}
PSQL=(psql -X -q -h localhost -p "$PORT" -U postgres --no-psqlrc -P pager=off)
if ! "${PSQL[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
  "${PSQL[@]}" -d postgres -c "CREATE DATABASE \"$DB\""
fi
"${PSQL[@]}" -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS kip CASCADE" 2>&1 | grep -v NOTICE || true
# A database made by an earlier release is brought to the installed version.
"${PSQL[@]}" -d "$DB" -c "ALTER EXTENSION kip UPDATE" 2>&1 | grep -v NOTICE || true
echo "== demo memory (space 'demo')"
"${PSQL[@]}" -d "$DB" -f scripts/demo.sql
cat <<MSG

kip is running. Connect with:

    psql -h localhost -p $PORT -U postgres $DB

and try:

    SET kip.space = 'demo';
    SELECT jsonb_pretty(kip_execute('DESCRIBE PRIMER'));
    SELECT kip_execute('FIND(?d.name) WHERE { ?d {type: "Drug"} }');

Stop the server with: make stop
MSG
