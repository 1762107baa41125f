#!/usr/bin/env bash
# kip on a logical replication subscriber: a publisher and a subscriber
# cluster of their own (wal_level = logical), kip's tables published as
# README's "Logical replication" says, then
#   - the memory arrives and reads answer as on the publisher;
#   - a revoke made on the publisher reaches a subscriber session that is
#     already open and had read the space (kip's memo of grants is
#     forgotten by row triggers: the apply fires no statement trigger);
#   - the subscriber's kip worker leaves the replicated tables alone (no
#     maintenance cycle, whose log would collide with the publisher's), and
#     kip_embedding_status() says so.
# Both clusters run as the `postgres` OS user on the first two free ports
# from 54351, in a directory of their own, removed when the test passes
# (kept, with the logs shown, when it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=subscriber CLUSTERS="publisher subscriber" FIRST_PORT=${KIP_SUBSCRIBER_TEST_PORT:-54351} DB=kip_subscriber
source scripts/lib/two_clusters.sh
PUB_PORT=$PORT1
SUB_PORT=$PORT2
SESSION_OUT=$(mktemp /tmp/kip-subscriber-session.XXXXXX)
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  rm -f "$SESSION_OUT"
}

on_pub() { psql_at "$PUB_PORT" "SET kip.space = 'team'" "$@"; }
on_sub() { psql_at "$SUB_PORT" "SET kip.space = 'team'" "$@"; }
# Wait until `sql` answers `want` on the subscriber.
wait_sub() { # sql, want, what
  for _ in $(seq 1 300); do
    [ "$(psql_at "$SUB_PORT" "$1")" = "$2" ] && return 0
    sleep 0.1
  done
  fail "$3: the subscriber answers $(psql_at "$SUB_PORT" "$1") to $1, not $2"
}

# 1. Two clusters with kip (the subscriber's worker serves the database).
for side in publisher subscriber; do
  port=$PUB_PORT; [ $side = subscriber ] && port=$SUB_PORT
  as_postgres "$BIN/initdb" -D "$DIR/$side" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  cat <<CONF | as_postgres tee -a "$DIR/$side/postgresql.conf" >/dev/null
port = $port
listen_addresses = ''
unix_socket_directories = '/tmp'
wal_level = logical
CONF
  as_postgres "$BIN/pg_ctl" -D "$DIR/$side" -l "$DIR/$side.log" -w -t 60 start >/dev/null
  "$BIN/createdb" -h /tmp -p "$port" -U postgres $DB
  psql_at "$port" "SET client_min_messages = warning" "CREATE EXTENSION kip CASCADE" \
    "CREATE ROLE agent LOGIN IN ROLE kip_reader" >/dev/null
  # The worker, once its database exists: a cycle every second.
  cat <<CONF | as_postgres tee -a "$DIR/$side/postgresql.conf" >/dev/null
shared_preload_libraries = 'kip'
kip.worker_databases = '$DB'
kip.maintenance_interval = 1
kip.embedding_provider = 'none'
CONF
  as_postgres "$BIN/pg_ctl" -D "$DIR/$side" -l "$DIR/$side.log" -w -t 60 restart >/dev/null
done

# 2. A memory on the publisher, readable by agent, published.
out=$(on_pub "SELECT kip_execute('UPSERT {
  CONCEPT ?t { {type: \"\$ConceptType\", name: \"Drug\"} SET ATTRIBUTES { description: \"A medicine.\" } }
  CONCEPT ?a { {type: \"Drug\", name: \"Aspirin\"} }
  CONCEPT ?b { {type: \"Drug\", name: \"Ibuprofen\"} }
}')" "SELECT kip_grant('team', 'agent', 'read')")
echo "$out" | grep -q '"result"' || fail "memory on the publisher: $out"
psql_at "$PUB_PORT" "CREATE PUBLICATION kip_memory FOR TABLE kip.spaces, kip.concepts, kip.propositions, kip.space_grants" >/dev/null
psql_at "$SUB_PORT" "CREATE SUBSCRIPTION kip_memory CONNECTION 'host=/tmp port=$PUB_PORT dbname=$DB user=postgres' PUBLICATION kip_memory" >/dev/null 2>&1
# The tables are copied by at most two workers at a time, in no set
# order (concepts may arrive before the space that owns them): wait until
# every one of the four is ready.
wait_sub "SELECT count(*) FILTER (WHERE srsubstate = 'r') || '/' || count(*) FROM pg_subscription_rel" 4/4 "initial copy"
want=$(psql_at "$PUB_PORT" "SELECT count(*) FROM kip.concepts")
wait_sub "SELECT count(*) FROM kip.concepts" "$want" "initial copy of the concepts"
wait_sub "SELECT count(*) FROM kip.space_grants WHERE role = 'agent'" 1 "initial copy of the grants"
subscribed_at=$(psql_at "$SUB_PORT" "SELECT now()")
find="SELECT kip_execute_readonly('FIND(?d.name) WHERE { ?d {type: \"Drug\"} } ORDER BY ?d.name ASC') -> 'result'"
[ "$(on_sub "$find")" = "$(on_pub "$find")" ] || fail "a FIND answers $(on_sub "$find") on the subscriber, $(on_pub "$find") on the publisher"
echo "subscriber on port $SUB_PORT has the publisher's memory (port $PUB_PORT)"

# 3. A revoke on the publisher reaches an open subscriber session.
"$BIN/psql" -X -q -tA -h /tmp -p "$SUB_PORT" -U agent -d $DB > "$SESSION_OUT" 2>&1 <<SQL &
SET kip.space = 'team';
SELECT 'before ' || ($find)::text;
DO \$\$ BEGIN
  FOR i IN 1..1200 LOOP
    EXIT WHEN NOT EXISTS (SELECT 1 FROM kip.space_grants WHERE role = 'agent');
    PERFORM pg_sleep(0.05);
  END LOOP;
END \$\$;
SELECT 'after ' || (kip_execute_readonly('FIND(?d.name) WHERE { ?d {type: "Drug"} }') #>> '{error,code}');
SELECT 'rows ' || count(*) FROM kip.concepts;
SQL
session=$!
for _ in $(seq 1 600); do grep -q '^before' "$SESSION_OUT" && break; sleep 0.1; done
grep -q '^before \["Aspirin", "Ibuprofen"\]' "$SESSION_OUT" || fail "agent's first read on the subscriber: $(cat "$SESSION_OUT")"
on_pub "SELECT kip_revoke('team', 'agent', 'read')" >/dev/null
wait "$session" || true
grep -q '^after KIP_3004' "$SESSION_OUT" || fail "after the revoke replicated, agent's open session still reads: $(cat "$SESSION_OUT")"
grep -q '^rows 0' "$SESSION_OUT" || fail "after the revoke replicated, agent's open session still sees rows: $(cat "$SESSION_OUT")"
echo "a revoke on the publisher holds in an open subscriber session"

# 4. The subscriber's worker runs no cycle on replicated tables (before
#    the subscription it did); the publisher's does, every second here.
said=
for _ in $(seq 1 50); do
  if as_postgres grep -q "are logical replication targets" "$DIR/subscriber.log"; then said=1; break; fi
  sleep 0.1
done
[ -n "$said" ] || fail "the subscriber's worker did not say it leaves the replicated tables alone"
sleep 2.5
as_postgres grep -q "kip maintenance cycle done" "$DIR/publisher.log" || fail "no maintenance cycle on the publisher"
cycles=$(psql_at "$SUB_PORT" "SELECT count(*) FROM kip.maintenance_log WHERE ran_at > '$subscribed_at'")
[ "$cycles" = 0 ] || fail "the subscriber's worker logged $cycles maintenance rows after the subscription"
status=$(psql_at "$SUB_PORT" "SELECT kip_embedding_status() ->> 'worker'")
case "$status" in "left to the publisher"*) ;; *) fail "kip_embedding_status() on the subscriber says worker: $status" ;; esac
echo "the subscriber's kip worker leaves the replicated tables to the publisher's, and kip_embedding_status() says so"
psql_at "$SUB_PORT" "DROP SUBSCRIPTION kip_memory" >/dev/null 2>&1
echo "subscriber test passed"
