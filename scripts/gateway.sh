#!/usr/bin/env bash
# The kip-server gateway (HTTP /kip and /mcp) against the local cluster.
#
#   scripts/gateway.sh start [DB]   build (release) and start it in the background
#   scripts/gateway.sh stop         stop it (SIGTERM: requests in flight finish)
#   scripts/gateway.sh status
#
# Listens on ${KIP_LISTEN:-127.0.0.1:8080}; database DB (default kip) on
# localhost:${KIP_PGPORT:-54329}. API_KEY / KIP_API_KEYS_FILE, when set in the
# environment, turn authentication on. Pid and log: .run/kip-server.{pid,log}.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${KIP_PGPORT:-54329}
LISTEN=${KIP_LISTEN:-127.0.0.1:8080}
RUN_DIR=.run
PIDFILE=$RUN_DIR/kip-server.pid
LOG=$RUN_DIR/kip-server.log
BIN=${CARGO_TARGET_DIR:-target}/release/kip-server

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "${1:-status}" in
  start)
    DB=${2:-kip}
    if running; then echo "kip-server already running (pid $(cat "$PIDFILE")) on $LISTEN"; exit 0; fi
    cargo build --release -p kip-server 2>&1 | grep -E '^(error|warning: unused)' || true
    [ -x "$BIN" ] || { echo "kip-server was not built ($BIN)" >&2; exit 1; }
    mkdir -p "$RUN_DIR"
    DATABASE_URL="postgres://postgres@localhost:$PORT/$DB" KIP_LISTEN="$LISTEN" \
      nohup "$BIN" >>"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
      if curl -fs "http://$LISTEN/" >/dev/null 2>&1; then
        echo "kip-server started on http://$LISTEN (database $DB, log $LOG)"
        exit 0
      fi
      running || break
      sleep 0.1
    done
    echo "kip-server did not start; last log lines:" >&2
    tail -20 "$LOG" >&2
    exit 1
    ;;
  stop)
    if ! running; then echo "kip-server not running"; rm -f "$PIDFILE"; exit 0; fi
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid"
    for _ in $(seq 1 350); do
      kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; echo "kip-server stopped"; exit 0; }
      sleep 0.1
    done
    echo "kip-server did not stop within 35 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
    ;;
  status)
    if running; then echo "running (pid $(cat "$PIDFILE")) on $LISTEN"; else echo "stopped"; exit 3; fi ;;
  *) echo "usage: $0 start [DB]|stop|status" >&2; exit 2 ;;
esac
