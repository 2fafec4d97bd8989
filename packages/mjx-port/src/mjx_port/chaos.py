"""The chaos-horizon comparison (issue 22's L3 bar), per seeded episode:

- ``port_step``: the first step at which the port and Gymnasium (MuJoCo C) differ by more than
  ``threshold`` (1e-6) in qpos or qvel;
- ``self_step``: the first step at which Gymnasium differs by as much from itself, started from
  the same seeded reset with qpos perturbed by ``eps`` (1e-12): the chaos horizon;
- ``tight_step``: the first step past ``tight`` (1e-9) on any of qpos, qvel, obs, reward.

Bar: ``port_step >= self_step`` on >= 99% of episodes, and ``tight_step >= port_step``
elsewhere (every step before the port's divergence agrees within 1e-9). Episodes run to their
end (the TimeLimit included) with uniform random actions in the action space widened by 10%
from ``default_rng(seed)``; steps past an episode's end are not compared.

``python -m mjx_port.chaos HalfCheetah-v5 --episodes 100 --out reports/mjx/chaos`` writes
``<env>.json``. Not yet in ``envport verify`` (the core has no suite type for it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from mjx_port.backends import GymnasiumMujoco, MjxCandidate
from mjx_port.port import actions_for


def episode(
    env_id: str,
    seed: int,
    cand: MjxCandidate,
    threshold=1e-6,
    tight=1e-9,
    eps=1e-12,
    max_steps: int = 1000,
) -> dict:
    ref, other = GymnasiumMujoco(1, env_id), GymnasiumMujoco(1, env_id)
    ref.reset(seed)
    other.reset(seed)
    u = other.envs[0].unwrapped
    u.set_state(u.data.qpos + eps, u.data.qvel.copy())
    cand.reset(seed)
    rng = np.random.default_rng(seed)
    actions = actions_for(env_id)
    out = {"seed": seed, "port_step": None, "self_step": None, "tight_step": None, "steps": 0}
    for t in range(max_steps):
        a = actions(rng, 1)
        ref.step(a)
        other.step(a)
        cand.step(a)
        r, o, c = ref.state(), other.state(), cand.state()
        out["steps"] = t + 1
        dc = max(np.abs(r[k] - c[k]).max() for k in ("qpos", "qvel"))
        do = max(np.abs(r[k] - o[k]).max() for k in ("qpos", "qvel"))
        dt = max(np.abs(r[k] - c[k]).max() for k in ("qpos", "qvel", "obs", "reward"))
        if out["port_step"] is None and dc > threshold:
            out["port_step"] = t
        if out["self_step"] is None and do > threshold:
            out["self_step"] = t
        if out["tight_step"] is None and dt > tight:
            out["tight_step"] = t
        if r["terminated"][0] or r["truncated"][0] or c["terminated"][0] or c["truncated"][0]:
            break
        if None not in (out["port_step"], out["self_step"], out["tight_step"]):
            break
    return out


def run(env_id: str, episodes: int, first_seed: int = 0) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    cand = MjxCandidate(1, env_id, dtype="float64")
    rows = [episode(env_id, s, cand) for s in range(first_seed, first_seed + episodes)]

    def not_before(a, b):  # a never earlier than b (None: never happened)
        return a is None or (b is not None and a >= b)

    ok = [not_before(r["port_step"], r["self_step"]) for r in rows]
    tight_ok = [
        not_before(r["tight_step"], r["port_step"]) or r["tight_step"] is None for r in rows
    ]
    return {
        "env": env_id,
        "episodes": rows,
        "share_port_not_before_self": float(np.mean(ok)),
        "share_tight_until_port_divergence": float(np.mean(tight_ok)),
        "passed": bool(np.mean(ok) >= 0.99),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("env_id")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--out", type=Path, default=Path("reports/mjx/chaos"))
    args = p.parse_args(argv)
    result = run(args.env_id, args.episodes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.env_id}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "episodes"}))


if __name__ == "__main__":
    main()
