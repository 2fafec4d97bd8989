# Sourced by the accelerator scripts in tools/gpu (not run on its own). Runs the repository's
# sources as they are, with no install: PYTHONPATH points at core/ and every env package's
# sources, and a throw-away entry-point record in a temp dir registers the packages'
# `envport.envs` entry points (read from their pyproject.toml) the way `pip install` would.
# Sets $out (from $OUT, else the caller's default) and $work (removed on exit), and writes
# $out/device.txt: the accelerator (nvidia-smi where there is one) and JAX's devices.
out=${OUT:-$1}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
eps="$work/eps/envport_gpu_scripts-0.dist-info"
mkdir -p "$eps"
printf 'Metadata-Version: 2.1\nName: envport-gpu-scripts\nVersion: 0\n' > "$eps/METADATA"
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
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
else
  echo "no nvidia-smi: JAX's default backend is measured as it is" | tee "$out/device.txt"
fi
python3 -c 'import jax; print("jax", jax.__version__, jax.default_backend(), jax.devices())' \
  | tee -a "$out/device.txt"
