#!/usr/bin/env bash
# `envport overhead <env>` for each env named on the command line, on a CUDA GPU, prepared for
# a machine with JAX (CUDA), flax, optax, tqdm and matplotlib installed and no network.
# From the repository root:  bash tools/gpu/overhead.sh pong pokejax
# It runs the repository's sources as they are (no install): PYTHONPATH points at core/ and
# every env package's sources, and a throw-away entry-point record in a temp dir registers the
# packages' `envport.envs` entry points (read from their pyproject.toml) the way `pip install`
# would. Nothing else is installed.
# Each env is measured at the four sizes (0.1M, 2M, 20M, 200M), in two batches:
#   - 128 envs x 8 steps, the batch of the CPU table in docs/benchmarks.md (comparable);
#   - the env's training batch (its first training target's num_envs x num_steps), --no-phases.
# BATCHES="cpu" or BATCHES="train" runs one of them; SIZES, UPDATES, MAX_SECONDS override.
# Writes $OUT (or reports/gpu-overhead): gpu.txt (nvidia-smi, jax), overhead.log, each
# report's overhead.md flat (<env>-<batch>.md) and all reports (json, md, png) in
# overhead-reports.tar.gz. Expect minutes per env and batch, mostly XLA compiles.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: bash tools/gpu/overhead.sh ENV [ENV...]" >&2; exit 2; }
out=${OUT:-reports/gpu-overhead}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
eps="$work/eps/envport_gpu_overhead-0.dist-info"
mkdir -p "$eps"
printf 'Metadata-Version: 2.1\nName: envport-gpu-overhead\nVersion: 0\n' > "$eps/METADATA"
src=$(python3 - "$eps/entry_points.txt" <<'PY'
import glob, os, sys, tomllib
lines, paths = ["[envport.envs]"], []
for pyproject in sorted(glob.glob("packages/*/pyproject.toml")):
    project = tomllib.load(open(pyproject, "rb"))["project"]
    for name, target in project.get("entry-points", {}).get("envport.envs", {}).items():
        lines.append(f"{name} = {target}")
    folder = os.path.dirname(pyproject)
    paths += [p for p in (f"{folder}/src", f"{folder}/python") if os.path.isdir(p)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print(":".join(os.path.abspath(p) for p in paths))
PY
)
export PYTHONPATH="$work/eps:$PWD/core/src:$src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
else
  echo "no nvidia-smi: JAX's default backend is measured as it is" | tee "$out/gpu.txt"
fi
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())' | tee -a "$out/gpu.txt"
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
