#!/usr/bin/env bash
# The project's own local PostgreSQL cluster: data directory inside the
# checkout (.pgdata, ignored by git), run as the `postgres` OS user, listening
# on localhost:${KIP_PGPORT:-54329} so it never clashes with a system server.
#
#   scripts/cluster.sh start    initdb if needed, start if not running
#   scripts/cluster.sh stop     stop if running
#   scripts/cluster.sh status
#   scripts/cluster.sh crash    stop -m immediate: no shutdown checkpoint, the
#                               next start replays the WAL as after a power
#                               loss (crash tests)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PGBIN=${PGBIN:-$(${PG_CONFIG:-/usr/bin/pg_config} --bindir)}
PGDATA_DIR=${KIP_PGDATA:-$ROOT/.pgdata}
PORT=${KIP_PGPORT:-54329}
LOG=$PGDATA_DIR/server.log

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else sudo -u postgres "$@"; fi
}

running() { [ -f "$PGDATA_DIR/postmaster.pid" ] && as_postgres "$PGBIN/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; }

case "${1:-status}" in
  start)
    if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
      mkdir -p "$PGDATA_DIR"
      chown postgres:postgres "$PGDATA_DIR" 2>/dev/null || true
      chmod 700 "$PGDATA_DIR"
      as_postgres "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
      cat >> "$PGDATA_DIR/postgresql.conf" <<CONF
# kip development cluster
listen_addresses = 'localhost'
port = $PORT
unix_socket_directories = '/tmp'
max_connections = 50
shared_buffers = 512MB
work_mem = 32MB
maintenance_work_mem = 256MB
max_wal_size = 2GB
# the kip background workers (src/maintenance/worker.rs)
shared_preload_libraries = 'kip'
kip.maintenance_database = 'kip'
CONF
    fi
    # One kip background worker per database: the demo database, and the
    # database of the background-worker test (tests/embedding.rs).
    if ! grep -q '^kip.worker_databases' "$PGDATA_DIR/postgresql.conf"; then
      echo "kip.worker_databases = 'kip, kip_worker_test'" | as_postgres tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
    fi
    if running; then
      echo "kip cluster already running on port $PORT"
    else
      as_postgres "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$LOG" -w -t 60 start >/dev/null
      echo "kip cluster started on port $PORT"
    fi
    # The database of the maintenance worker (kip.maintenance_database above).
    if ! as_postgres "$PGBIN/psql" -h localhost -p "$PORT" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'kip'" | grep -q 1; then
      as_postgres "$PGBIN/createdb" -h localhost -p "$PORT" -U postgres kip || true
    fi
    ;;
  stop)
    if running; then
      as_postgres "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null
      echo "kip cluster stopped"
    else
      echo "kip cluster not running"
    fi
    ;;
  crash)
    if running; then
      as_postgres "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null
      echo "kip cluster stopped (immediate)"
    else
      echo "kip cluster not running"
    fi
    ;;
  restart)
    "$0" stop; "$0" start ;;
  status)
    if running; then echo "running on port $PORT"; else echo "stopped"; exit 3; fi ;;
  *) echo "usage: $0 start|stop|crash|restart|status" >&2; exit 2 ;;
esac
