#!/usr/bin/env bash
# kip on a physical hot standby: a small primary cluster of its own, a
# standby made by pg_basebackup, then
#   - every kind of read answers on the standby what it answers on the
#     primary (FIND, a CURSOR page, DESCRIBE, EXPORT, keyword SEARCH,
#     kip_execute_readonly);
#   - a write is a KIP error that says the server is a standby, a space the
#     standby has not seen says to create it on the primary, the functions
#     that raise SQL errors say the same, and kip_embedding_status() does
#     not send the user to kip_embed_pending();
#   - kip's background workers stay quiet on the standby, and after
#     promotion the same server writes.
# Both clusters run as the `postgres` OS user on the first two free ports
# from 54341, in a directory of their own, removed when the test passes
# (kept, with the logs shown, when it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=standby CLUSTERS="primary standby" FIRST_PORT=${KIP_STANDBY_TEST_PORT:-54341} DB=kip_standby
source scripts/lib/two_clusters.sh
PRIMARY_PORT=$PORT1
STANDBY_PORT=$PORT2

on_primary() { psql_at "$PRIMARY_PORT" "SET kip.space = 'team'" "$@"; }
on_standby() { psql_at "$STANDBY_PORT" "SET kip.space = 'team'" "$@"; }
# Wait until the standby has replayed everything the primary wrote so far.
catch_up() {
  local lsn
  lsn=$(psql_at "$PRIMARY_PORT" "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 600); do
    [ "$(psql_at "$STANDBY_PORT" "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")" = t ] && return 0
    sleep 0.1
  done
  fail "the standby did not replay up to $lsn"
}

# 1. The primary, with kip's workers, and a memory.
as_postgres "$BIN/initdb" -D "$DIR/primary" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
cat <<CONF | as_postgres tee -a "$DIR/primary/postgresql.conf" >/dev/null
port = $PRIMARY_PORT
listen_addresses = ''
unix_socket_directories = '/tmp'
shared_preload_libraries = 'kip'
kip.worker_databases = '$DB'
# Nothing may change the memory behind the test's back while it compares
# the two servers' answers: no maintenance cycle, no embeddings, and no
# autovacuum (an ANALYZE between the standby's catch-up and a read would
# change the word statistics keyword SEARCH scores with on one side only).
kip.maintenance_interval = 0
kip.embedding_provider = 'none'
autovacuum = off
CONF
as_postgres "$BIN/pg_ctl" -D "$DIR/primary" -l "$DIR/primary.log" -w -t 60 start >/dev/null
"$BIN/createdb" -h /tmp -p "$PRIMARY_PORT" -U postgres $DB
psql_at "$PRIMARY_PORT" "SET client_min_messages = warning" "CREATE EXTENSION kip CASCADE" >/dev/null
out=$(on_primary "SELECT kip_execute('UPSERT {
  CONCEPT ?t { {type: \"\$ConceptType\", name: \"Drug\"} SET ATTRIBUTES { description: \"A medicine.\" } }
  CONCEPT ?s { {type: \"\$ConceptType\", name: \"Symptom\"} SET ATTRIBUTES { description: \"A symptom.\" } }
  CONCEPT ?p { {type: \"\$PropositionType\", name: \"treats\"} SET ATTRIBUTES { description: \"Drug treats symptom.\" } }
}')")
echo "$out" | grep -q '"result"' || fail "schema on the primary: $out"
for drug in Aspirin Ibuprofen Naproxen Paracetamol; do
  out=$(on_primary "SELECT kip_execute('UPSERT {
    CONCEPT ?h { {type: \"Symptom\", name: \"Headache\"} }
    CONCEPT ?d { {type: \"Drug\", name: \"$drug\"} SET ATTRIBUTES { description: \"$drug relieves pain\" } SET PROPOSITIONS { (\"treats\", ?h) } }
  }')")
  echo "$out" | grep -q '"result"' || fail "memory on the primary: $out"
done

# 2. The standby.
as_postgres "$BIN/pg_basebackup" -h /tmp -p "$PRIMARY_PORT" -U postgres -D "$DIR/standby" -R -X stream -c fast
echo "port = $STANDBY_PORT" | as_postgres tee -a "$DIR/standby/postgresql.conf" >/dev/null
as_postgres "$BIN/pg_ctl" -D "$DIR/standby" -l "$DIR/standby.log" -w -t 60 start >/dev/null
[ "$(psql_at "$STANDBY_PORT" "SELECT pg_is_in_recovery()")" = t ] || fail "the standby is not in recovery"
catch_up
echo "standby on port $STANDBY_PORT replays the primary on port $PRIMARY_PORT"

# 3. Reads answer the same on both.
reads=(
  "SELECT kip_execute('FIND(?d.name, ?s.name) WHERE { ?d {type: \"Drug\"} (?d, \"treats\", ?s) } ORDER BY ?d.name ASC')"
  "SELECT kip_execute('FIND(?d) WHERE { ?d {type: \"Drug\"} } ORDER BY ?d.name ASC LIMIT 2')"
  "SELECT kip_execute('FIND(COUNT(?d)) WHERE { ?d {type: \"Drug\"} }')"
  "SELECT kip_execute('DESCRIBE PRIMER')"
  "SELECT kip_execute('DESCRIBE CONCEPT TYPE \"Drug\"')"
  "SELECT kip_execute('EXPORT ?d WHERE { ?d {type: \"Drug\"} } LIMIT 10')"
  "SELECT kip_execute('SEARCH CONCEPT \"ibuprofen\" WITH TYPE \"Drug\" LIMIT 3')"
  "SELECT kip_execute_readonly('FIND(?d.name) WHERE { ?d {type: \"Drug\"} } ORDER BY ?d.name DESC')"
)
for sql in "${reads[@]}"; do
  p=$(on_primary "$sql"); s=$(on_standby "$sql")
  echo "$s" | grep -q '"result"' || fail "on the standby: $sql => $s"
  [ "$p" = "$s" ] || fail "the standby answers otherwise: $sql
primary: $p
standby: $s"
done
# A cursor issued by the primary pages on the standby.
cursor=$(on_primary "SELECT kip_execute('FIND(?d.name) WHERE { ?d {type: \"Drug\"} } ORDER BY ?d.name ASC LIMIT 2') ->> 'next_cursor'")
[ -n "$cursor" ] || fail "no cursor from the primary"
page="SELECT kip_execute('FIND(?d.name) WHERE { ?d {type: \"Drug\"} } ORDER BY ?d.name ASC LIMIT 2 CURSOR \"$cursor\"') -> 'result'"
[ "$(on_standby "$page")" = '["Naproxen", "Paracetamol"]' ] || fail "the primary's cursor on the standby: $(on_standby "$page")"
echo "reads: ${#reads[@]} commands answer the same on the standby, and the primary's cursor pages there"

# 4. Writes and administration are refused with the reason.
for kml in 'UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }' \
           'UPDATE ?d SET ATTRIBUTES { checked: true } WHERE { ?d {type: "Drug"} }' \
           'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Naproxen"} }'; do
  out=$("$BIN/psql" -X -q -tA -h /tmp -p "$STANDBY_PORT" -U postgres -d $DB -v cmd="$kml" <<'SQL' 2>&1
SET kip.space = 'team';
SELECT kip_execute(:'cmd') -> 'error' ->> 'code', kip_execute(:'cmd') -> 'error' ->> 'message';
SQL
)
  echo "$out" | grep -q '^KIP_4003|write refused: this server is a standby' || fail "$kml on the standby: $out"
done
out=$(psql_at "$STANDBY_PORT" "SET kip.space = 'elsewhere'" "SELECT kip_execute('FIND(?x) WHERE { ?x {type: \"Drug\"} }') -> 'error' ->> 'hint'")
echo "$out" | grep -q 'created on the primary' || fail "a space the standby has not seen: $out"
for call in "kip_create_space('elsewhere')" "kip_drop_space('team')" "kip_embed_pending()"; do
  out=$(psql_at "$STANDBY_PORT" "SELECT $call" || true)
  echo "$out" | grep -q 'this server is a standby' || fail "$call on the standby: $out"
done
out=$(psql_at "$STANDBY_PORT" "SELECT kip_embedding_status() ->> 'worker'")
echo "$out" | grep -q 'standby' || fail "kip_embedding_status on the standby: $out"
echo "writes: refused on the standby with the reason (KML, a new space, kip_create_space, kip_drop_space, kip_embed_pending), kip_embedding_status says standby"

# 5. The primary's later writes reach the standby.
on_primary "SELECT kip_execute('UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"Zolmitriptan\"} } }')" >/dev/null
catch_up
out=$(on_standby "SELECT kip_execute('FIND(COUNT(?d)) WHERE { ?d {type: \"Drug\"} }') -> 'result'")
[ "$out" = 5 ] || fail "the primary's new concept on the standby: $out"

# 6. No kip worker runs on the standby; after promotion one starts, and
#    the server writes.
workers() { psql_at "$STANDBY_PORT" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'kip worker'"; }
[ "$(workers)" = 0 ] || fail "a kip worker runs on the standby"
as_postgres "$BIN/pg_ctl" -D "$DIR/standby" -w promote >/dev/null
for _ in $(seq 1 100); do
  [ "$(psql_at "$STANDBY_PORT" "SELECT pg_is_in_recovery()")" = f ] && break
  sleep 0.1
done
for _ in $(seq 1 300); do [ "$(workers)" = 1 ] && break; sleep 0.1; done
[ "$(workers)" = 1 ] || fail "no kip worker after promotion: $(workers)"
out=$(on_standby "SELECT kip_execute('UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"Triptan\"} } }') ? 'result'")
[ "$out" = t ] || fail "a write after promotion: $(on_standby "SELECT kip_execute('UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"Triptan\"} } }')")"
echo "no kip worker on the standby; after promotion one starts and the former standby writes"
echo "standby test passed"
