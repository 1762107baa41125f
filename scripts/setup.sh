#!/usr/bin/env bash
# Idempotent machine set-up for building, running and testing the kip extension.
# Installs: apt packages (PostgreSQL 15 server headers, clang, sudo, ...),
# cargo-pgrx 0.18.0, the pgrx configuration for the system PostgreSQL 15,
# and pgvector (built from Debian's source package). Each step is skipped when
# its result is already present, so a second run takes seconds.
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
PGRX_VERSION=0.18.0
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

log() { printf '[setup] %s\n' "$*"; }
start=$(date +%s)

# 1. Debian packages.
need_pkgs=()
for p in postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-contrib libclang-dev clang sudo \
         pkg-config libssl-dev make dpkg-dev python3; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing apt packages: ${need_pkgs[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
else
  log "apt packages present"
fi

# 2. cargo-pgrx.
if cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
  log "cargo-pgrx $PGRX_VERSION present"
else
  log "installing cargo-pgrx $PGRX_VERSION (a few minutes)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

# 3. pgrx configured against the system PostgreSQL.
if grep -q "pg$PG_MAJOR" "${PGRX_HOME:-$HOME/.pgrx}/config.toml" 2>/dev/null; then
  log "pgrx configured for pg$PG_MAJOR"
else
  log "cargo pgrx init --pg$PG_MAJOR $PG_CONFIG"
  cargo pgrx init --pg$PG_MAJOR "$PG_CONFIG"
fi

# 4. pgvector.
sharedir=$($PG_CONFIG --sharedir)
if [ -f "$sharedir/extension/vector.control" ]; then
  log "pgvector present"
else
  log "building pgvector from Debian's source package"
  src_list=/etc/apt/sources.list.d/kip-trixie-src.sources
  if [ ! -f "$src_list" ]; then
    $SUDO tee "$src_list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $SUDO apt-get update -qq
  work=$(mktemp -d)
  ( cd "$work" && apt-get source --download-only pgvector >/dev/null 2>&1 \
      && tar xzf pgvector_*.orig.tar.gz \
      && cd "$(find . -maxdepth 1 -type d -name 'pgvector*' | head -1)" \
      && make -s PG_CONFIG="$PG_CONFIG" >/dev/null && $SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null )
  rm -rf "$work"
  [ -f "$sharedir/extension/vector.control" ] || { echo "pgvector install failed" >&2; exit 1; }
fi

log "done in $(( $(date +%s) - start ))s"
