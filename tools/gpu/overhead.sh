#!/usr/bin/env bash
# `envport overhead <env>` for each env named on the command line, on a CUDA GPU, prepared for
# a machine with JAX (CUDA), flax, optax, tqdm and matplotlib installed and no network.
# From the repository root:  bash tools/gpu/overhead.sh pong pokejax
# It runs the repository's sources as they are, nothing installed (tools/gpu/common.sh).
# Each env is measured at the four sizes (0.1M, 2M, 20M, 200M), in two batches:
#   - 128 envs x 8 steps, the batch of the CPU table in docs/benchmarks.md (comparable);
#   - the env's training batch (its first training target's num_envs x num_steps), --no-phases.
# BATCHES="cpu" or BATCHES="train" runs one of them; SIZES, UPDATES, MAX_SECONDS override.
# Writes $OUT (or reports/gpu-overhead): device.txt (nvidia-smi, jax), overhead.log, each
# report's overhead.md flat (<env>-<batch>.md) and all reports (json, md, png) in
# overhead-reports.tar.gz. Expect minutes per env and batch, mostly XLA compiles.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: bash tools/gpu/overhead.sh ENV [ENV...]" >&2; exit 2; }
source "$(dirname "$0")/common.sh" reports/gpu-overhead
sizes=${SIZES:-0.1M,2M,20M,200M}
common=(--sizes "$sizes" --updates "${UPDATES:-3}" --max-seconds "${MAX_SECONDS:-60}" --no-progress)
train_batch() {  # the env's first training target's num_envs and num_steps as CLI flags
  python3 -c 'import sys; from envport import registry
c = registry.get(sys.argv[1]).train[0].config
print("--num-envs", c["num_envs"], "--num-steps", c["num_steps"])' "$1"
}
run() {  # env batch-name extra-args...
  local env=$1 batch=$2
  shift 2
  python3 -m envport.cli overhead "$env" "${common[@]}" --out "$work/$batch" "$@" 2>&1 \
    | tee -a "$out/overhead.log"
  cp "$work/$batch/$env/overhead/overhead.md" "$out/$env-$batch.md"
}
for batch in ${BATCHES:-cpu train}; do
  for env in "$@"; do
    case $batch in
      cpu) run "$env" cpu --num-envs 128 --num-steps 8 ;;
      train) run "$env" train $(train_batch "$env") --no-phases ;;
      *) echo "unknown batch $batch (cpu, train)" >&2; exit 2 ;;
    esac
  done
done
tar -czf "$out/overhead-reports.tar.gz" -C "$work" --exclude=trace $(cd "$work" && ls -d cpu train 2>/dev/null)
echo "reports in $out"
