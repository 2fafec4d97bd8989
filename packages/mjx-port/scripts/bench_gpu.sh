#!/usr/bin/env bash
# mjx-port on a GPU, prepared for the device machine (one H100 or H200; JAX with CUDA, no
# network). From the repository root:  bash packages/mjx-port/scripts/bench_gpu.sh
# It runs the repository's sources as they are (no install of envport or mjx-port) and times
# the anchors bench (`python -m mjx_port.bench`, documented there) on the GPU: the float32 port
# with auto-reset, raw mjx.step x frame_skip on the same model (`mjx`), the same under the
# port's C contacts and solver (`mjx-c`), Brax's MJX HalfCheetah (`brax`, a speed anchor only)
# and Gymnasium's SyncVectorEnv on the host's CPU up to 256 envs, at num_envs 1..4096. It writes
# $OUT (or reports/mjx-gpu) /bench_anchors.json, bench_anchors.md, gpu.txt and bench_gpu.log.
#
# The device image has jax but not mujoco, mujoco-mjx, gymnasium or brax: carry them as wheels
# in .whl/ (ignored by git; see /work/.library/device/README.md), downloaded beforehand for the
# device's Python (3.11 on the TPU v5e machine, where flax, jaxopt, pillow, etils, trimesh and the
# other pure-Python needs of `python -c "import brax.envs, gymnasium"` came along too) with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 -d .whl mujoco==3.17.0 mujoco-mjx==3.17.0 \
#     gymnasium==1.4.0 farama-notifications brax==0.14.2 ml-collections jaxopt tensorboardx \
#     flask-cors flask itsdangerous blinker trimesh glfw pyopengl
# (run(carry=[".whl"])); the script installs them into /tmp/site when .whl/ is there.
# BATCH_SIZES, MIN_SECONDS and ANCHORS override the defaults (a CPU check:
# BATCH_SIZES=1 MIN_SECONDS=0.2 ANCHORS=port,mjx bash packages/mjx-port/scripts/bench_gpu.sh).
# On an H100 expect about 10 minutes (five compiles per size on the first run). On a TPU v5e
# chip each anchor compiled for 23-145 s per size: one size per 10-minute call (the report is
# rewritten after every measurement, so a call stopped at its limit keeps what it measured).
set -euo pipefail
out=${OUT:-reports/mjx-gpu}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site  # after the machine's own JAX
fi
export PYTHONPATH="$PWD/core/src:$PWD/packages/mjx-port/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
else
  echo "no nvidia-smi: JAX's default backend is measured as it is" | tee "$out/gpu.txt"
fi
"$py" -c 'import jax, mujoco; print("jax", jax.__version__, jax.devices(), "mujoco", mujoco.__version__)' \
  | tee -a "$out/gpu.txt"
"$py" -m mjx_port.bench --env "${ENV_ID:-HalfCheetah-v5}" \
  --batch-sizes "${BATCH_SIZES:-1,16,256,1024,4096}" --min-seconds "${MIN_SECONDS:-3}" \
  --anchors "${ANCHORS:-port,mjx,mjx-c,brax,gymnasium}" --gymnasium-max 256 \
  --out "$out" 2>&1 | tee "$out/bench_gpu.log"
