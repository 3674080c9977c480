#!/usr/bin/env bash
#===- bench.sh - OTC vs PyTorch benchmarks ---------------------------------===#
#
# usage: tools/bench.sh [BUILD_DIR] [bench_mlp.py options]
#        (default BUILD_DIR: build; e.g. --threads 1,2 --steps 300 --repeat 3)
#
# Runs test/bench/bench_mlp.py and bench_models.py: training step time and
# peak memory of the MLP, ResNet-18, a GPT-style decoder and a
# TransformerEncoder model, OTC vs PyTorch eager, side by side at the same
# thread counts, and prints the tables with the ratios; bench_peers.py (the
# same against torch 2.x eager, torch.compile and ONNX Runtime Training,
# from PyPI into BUILD/pyenv); then bench_sdp.py
# (SDP vs data parallelism), bench_recipes.py (the cost of clipping and
# accumulation), otc-compress-bench (compression kernels vs
# memcpy), bench_cuda.py (CUDA programs vs their CPU builds; needs a device)
# and bench_compress.py (compressed all-reduce, 2 and 4 ranks).
# Results also go to BUILD_DIR/bench/*.json.
# Run it on an otherwise idle machine: timings share the cores.
#
#===----------------------------------------------------------------------===#

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
[ $# -gt 0 ] && shift
[ -x "$BUILD/bin/otc-compile" ] || {
  echo "bench: $BUILD/bin/otc-compile not found: build the project first" >&2
  exit 1
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The peers of bench_peers.py: torch 2.x in BUILD/pyenv (tools/install-deps.sh)
# and ONNX Runtime Training in BUILD/ortenv (tools/requirements-bench.txt),
# created here when missing or when the requirements change.
"$ROOT/tools/install-deps.sh" "$BUILD"
want=$(sha256sum "$ROOT/tools/requirements-bench.txt" | cut -d' ' -f1)
if [ "$(cat "$BUILD/ortenv/.requirements" 2>/dev/null)" != "$want" ]; then
  echo "bench: installing tools/requirements-bench.txt into $BUILD/ortenv"
  rm -rf "$BUILD/ortenv"
  /usr/bin/python3 -m venv --system-site-packages "$BUILD/ortenv"
  "$BUILD/ortenv/bin/pip" install --quiet --disable-pip-version-check \
    --no-input -r "$ROOT/tools/requirements-bench.txt"
  echo "$want" > "$BUILD/ortenv/.requirements"
fi
/usr/bin/python3 "$ROOT/test/bench/bench_mlp.py" --build-dir "$BUILD" "$@"
# ResNet-18, the GPT-style decoder and the TransformerEncoder model (AdamW):
# step time and training memory, OTC vs PyTorch eager: bench_models.json.
/usr/bin/python3 "$ROOT/test/bench/bench_models.py" --build-dir "$BUILD"
# The MLP, the residual CNN, ResNet-18, the GPT-style decoder and the BERT-style
# encoder against torch 2.x eager, torch.compile and ONNX Runtime Training at
# 1 and 2 threads, with GFLOP/s against the sgemm ceiling: bench_peers.json
# and bench_peers.png.
/usr/bin/python3 "$ROOT/test/bench/bench_peers.py" --build-dir "$BUILD"
# SDP (block / neuron, C = 0.5 / 0.75) vs data parallelism on 4 ranks: per-rank
# peak memory and step time of the 8-block GPT-style decoder and the residual
# CNN: bench_sdp.json.
/usr/bin/python3 "$ROOT/test/bench/bench_sdp.py" --build-dir "$BUILD"
# The step-time cost of --clip-grad-norm and --accumulate 4 against the plain
# step of the MLP, as ratios measured in the same run: bench_recipes.json.
/usr/bin/python3 "$ROOT/test/bench/bench_recipes.py" --build-dir "$BUILD"
# The compression kernels on one core against memcpy of the same 64 MiB,
# measured in the same run (topk-int8, ratio 0.1, block 256).
"$BUILD/bin/otc-compress-bench" 64 1
# CUDA programs against their CPU builds (step time, peak): bench_cuda.json;
# says it skipped on a machine without a CUDA device.
/usr/bin/python3 "$ROOT/test/bench/bench_cuda.py" --build-dir "$BUILD"
# Then the compressed all-reduce on a 1 Gbit/s link vs PyTorch DDP (a netns of
# its own: root; otherwise its shaped part is skipped), 2 ranks and 4 ranks:
# bench_compress.json, bench_compress_w4.json. (Time to accuracy on
# Fashion-MNIST: make bench-tta.)
/usr/bin/python3 "$ROOT/test/bench/bench_compress.py" --build-dir "$BUILD"
exec /usr/bin/python3 "$ROOT/test/bench/bench_compress.py" --build-dir "$BUILD" \
  --world-size 4
