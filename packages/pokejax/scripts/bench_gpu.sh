#!/usr/bin/env bash
# pokejax on a GPU, prepared for the device machine (one H200; JAX with CUDA, no node, no
# network). From the repository root:  bash packages/pokejax/scripts/bench_gpu.sh
# It runs the repository's sources as they are (no install), times pokejax's side of
# `./dev bench-pokejax` on the GPU at large batches, and writes $OUT (or reports/pokejax-gpu)
# /bench_gpu.json and gpu.txt. Showdown cannot run there (no node): its best figure is the one
# `./dev bench-pokejax` measures on a CPU host, and docs/benchmarks.md pairs the two with the
# hardware of each. A run takes about 5 minutes (four sizes, compile included).
set -euo pipefail
out=${OUT:-reports/pokejax-gpu}
mkdir -p "$out"
export PYTHONPATH="$PWD/core/src:$PWD/packages/pokejax/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
else
  echo "no nvidia-smi: JAX's default backend is measured as it is" | tee "$out/gpu.txt"
fi
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())' | tee -a "$out/gpu.txt"
python3 -m pokejax.bench --batch-sizes "${BATCH_SIZES:-2048,8192,32768,131072}" \
  --min-seconds "${MIN_SECONDS:-5}" --out "$out/bench_gpu.json" 2>&1 | tee "$out/bench_gpu.log"
