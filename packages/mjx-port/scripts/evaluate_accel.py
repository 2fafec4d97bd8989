"""A trained HalfCheetah/Hopper policy on the float32 port, on an accelerator.

L4 in ``envport verify mjx`` plays trained policies on the float64 port (the verify process
runs in x64 for L1-L3), stepped on the host's CPU. This script plays a training run's policy on
the float32 port -- the env it was trained on -- with ``envport.train.evaluate`` (every episode
vmapped in one jitted loop), which needs an accelerator at 1,000 episodes (on the 2-vCPU VM
it was unfinished after 50 min). It writes the per-episode returns and their mean/sd to
``--out`` (JSON), to compare with the same policy's Gymnasium returns (TOST, ``--reference``
a JSON of Gymnasium returns written by the same script with ``--gymnasium``).

From the repository root, with the run folder carried along:
  PYTHONPATH=core/src:packages/mjx-port/src python3 packages/mjx-port/scripts/evaluate_accel.py \
      reports/mjx/train/halfcheetah-1M-s0 --episodes 1000 --seed 100001 --out $OUT/port.json
The machine needs what ``envport[train]`` needs (flax, optax and matplotlib, which
``envport.train`` checks at import) beside mujoco-mjx; bench_gpu.sh says how to carry wheels.
On one TPU v5e chip 250 episodes took ~190 s and 100 took ~143 s (compile included), so a
10-minute call holds two 250-episode runs (seeds 100001..100004 make 1,000).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import numpy as np


def _policy(run_dir: Path):
    from envport.train.run import load_policy, read_config
    from mjx_port.train import TARGETS

    target = next(t for t in TARGETS if t.name == read_config(run_dir)["target"])
    return (*load_policy(run_dir, target, what="evaluate_accel"), target)


def on_port(run_dir: Path, episodes: int, seed: int) -> np.ndarray:
    from envport.train.evaluate import evaluate

    ppo, params, target = _policy(run_dir)
    return evaluate(ppo, params, target.make_env(), episodes, seed, max_steps=1000)


def on_gymnasium(run_dir: Path, episodes: int, seed: int) -> np.ndarray:
    from envport.train.host import evaluate_backend
    from mjx_port.backends import GymnasiumMujoco

    ppo, params, target = _policy(run_dir)
    backend = GymnasiumMujoco(episodes, target.name)
    try:
        return evaluate_backend(ppo, params, backend, seed, max_steps=1000)
    finally:
        backend.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=100_001)
    ap.add_argument("--gymnasium", action="store_true", help="play on Gymnasium (MuJoCo C)")
    ap.add_argument("--reference", type=Path, help="Gymnasium returns (JSON) for a TOST")
    ap.add_argument("--margin", type=float, default=50.0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    t = time.time()
    play = on_gymnasium if args.gymnasium else on_port
    returns = play(args.run_dir, args.episodes, args.seed)
    report = {"run": str(args.run_dir), "side": "gymnasium" if args.gymnasium else "port-float32",
              "devices": [str(d) for d in jax.devices()], "episodes": args.episodes,
              "seed": args.seed, "wall_s": round(time.time() - t, 1),
              "mean": float(returns.mean()), "sd": float(returns.std(ddof=1)),
              "returns": returns.tolist()}
    if args.reference is not None:
        from envport.verify.l4 import tost

        ref = np.asarray(json.loads(args.reference.read_text())["returns"])
        result = tost(ref, returns, args.margin)
        report["tost"] = dataclasses.asdict(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, default=float))
    print({k: v for k, v in report.items() if k != "returns"}, flush=True)


if __name__ == "__main__":
    main()
