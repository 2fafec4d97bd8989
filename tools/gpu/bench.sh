#!/usr/bin/env bash
# The JAX side of `./dev bench-<env>` on an accelerator (a GPU or TPU machine with JAX and no
# network), for each env named: `python -m <env>.bench` (pokejax, tcgjax; the candidate at
# large batches on every local device, `envport.bench.candidate_main`). The references cannot
# run there (no node; a CPU reference belongs to a CPU host): their best figures are the ones
# `./dev bench-<env>` measures on a CPU host, and docs/benchmarks.md pairs the two with the
# hardware of each. From the repository root:  bash tools/gpu/bench.sh pokejax tcgjax
# It runs the repository's sources as they are, nothing installed (tools/gpu/common.sh).
# BATCH_SIZES and MIN_SECONDS override each env's defaults (its bench's --batch-sizes, 5 s).
# Writes $OUT (or reports/gpu-bench): device.txt, bench.log and <env>.json per env.
# Expect a few minutes per env: one XLA compile per batch size, then MIN_SECONDS of stepping.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: bash tools/gpu/bench.sh ENV [ENV...]" >&2; exit 2; }
source "$(dirname "$0")/common.sh" reports/gpu-bench
for env in "$@"; do
  args=(--min-seconds "${MIN_SECONDS:-5}" --out "$out/$env.json")
  [ -n "${BATCH_SIZES:-}" ] && args+=(--batch-sizes "$BATCH_SIZES")
  echo "== $env" | tee -a "$out/bench.log"
  python3 -m "$env.bench" "${args[@]}" 2>&1 | tee -a "$out/bench.log"
done
