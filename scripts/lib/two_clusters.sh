# Shared by the tests that run two throwaway clusters of their own
# (scripts/standby_test.sh, scripts/subscriber_test.sh). Set before sourcing:
#   TEST        the test's name, for messages ("standby")
#   CLUSTERS    the two clusters' names, the first one first ("primary standby")
#   FIRST_PORT  where to look for two free ports from
#   DB          the database psql_at connects to
# It sets BIN (PostgreSQL's programs), DIR (the clusters' directory, owned
# by the postgres OS user), PORT1 and PORT2 (the first two free ports from
# FIRST_PORT; the clusters listen on Unix sockets in /tmp only), defines
# as_postgres, psql_at and fail, and traps EXIT: the clusters are stopped,
# DIR is removed when the test passed and kept, with the logs shown, when
# it failed. A test may define `cleanup` for files of its own.
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
BIN=$("$PG_CONFIG" --bindir)
read -r -a CLUSTER_NAMES <<< "$CLUSTERS"

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else sudo -u postgres "$@"; fi
}
port_free() { [ ! -e "/tmp/.s.PGSQL.$1" ] && [ ! -e "/tmp/.s.PGSQL.$1.lock" ]; }
PORT1=$FIRST_PORT
while ! port_free "$PORT1" || ! port_free $((PORT1 + 1)); do PORT1=$((PORT1 + 2)); done
PORT2=$((PORT1 + 1))
DIR=$(as_postgres mktemp -d "/tmp/kip-$TEST-test.XXXXXX")

stop_all() {
  local i
  for ((i = ${#CLUSTER_NAMES[@]} - 1; i >= 0; i--)); do
    local d="$DIR/${CLUSTER_NAMES[$i]}"
    if as_postgres test -f "$d/postmaster.pid"; then
      as_postgres "$BIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
}
finish() {
  local rc=$?
  if declare -F cleanup >/dev/null; then cleanup; fi
  stop_all
  if [ "$rc" = 0 ]; then
    as_postgres rm -rf "$DIR"
  else
    for log in "${CLUSTER_NAMES[@]}"; do
      echo "--- $DIR/$log.log (last lines)"
      as_postgres tail -15 "$DIR/$log.log" 2>/dev/null || true
    done
    echo "$TEST test: clusters stopped, their directories kept in $DIR"
  fi
}
fail() { echo "$TEST test FAILED: $*"; exit 1; }
trap finish EXIT

psql_at() { # port, sql...
  local port=$1; shift
  local args=()
  for sql in "$@"; do args+=(-c "$sql"); done
  "$BIN/psql" -X -q -tA -h /tmp -p "$port" -U postgres -d "$DB" "${args[@]}" 2>&1
}
