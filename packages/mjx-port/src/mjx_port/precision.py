"""The float32 port's L2 tolerances: one env step from the same state as MuJoCo C (float64), per
field, declared from measurement.

The float32 port starts each case from C's float64 state rounded to float32 (a relative change of
up to 6e-8 in every coordinate) and steps in float32, so it cannot equal C to 1e-9 as the
float64 port does. What it can be held to is measured here: ``python -m mjx_port.precision``
runs each env's float32 L2 suite on cases the verifier never uses (L2 seed 1; verify uses 0),
with every float field's tolerance opened up, and prints the largest error per field and the
count of cases whose exact fields (``terminated``, ``truncated``, ``t``) differ.
:data:`F32_TOLERANCE` declares, per env and field, ``HEADROOM`` times the measured largest
error, rounded up to one significant digit in a 1-2-5 step; the verify report shows each suite's
declared tolerance beside the largest error it met (its ``max_abs_err``).
"""

from __future__ import annotations

import argparse
import math
import time

HEADROOM = 10
FLOAT_FIELDS = ("qpos", "qvel", "obs", "reward")

# env -> field -> absolute tolerance of the float32 port against MuJoCo C over one env step:
# HEADROOM x the largest error over 10,000 cases of L2 seed 1 (in the comment: qpos, qvel, obs,
# reward measured), rounded up; python -m mjx_port.precision, 2026-12-07, 2-vCPU AMD EPYC VM,
# no case differed in an exact field (terminated, truncated, t). Ant's obs bound is set by its
# contact forces (cfrc_ext, in the observation); its positions and velocities are held by the
# qpos/qvel bounds.
F32_TOLERANCE: dict[str, dict[str, float]] = {
    # 2.0e-4, 6.7e-3, 6.7e-3, 1.3e-3
    "HalfCheetah-v5": {"qpos": 5e-3, "qvel": 0.1, "obs": 0.1, "reward": 0.02},
    # 2.5e-7, 2.0e-5, 2.0e-5, 9.3e-6
    "Hopper-v5": {"qpos": 5e-6, "qvel": 5e-4, "obs": 5e-4, "reward": 1e-4},
    # 1.4e-6, 2.4e-4, 2.2e-4, 1.5e-5
    "Walker2d-v5": {"qpos": 2e-5, "qvel": 5e-3, "obs": 5e-3, "reward": 2e-4},
    # 3.3e-5, 9.2e-4, 0.17, 6.7e-4
    "Ant-v5": {"qpos": 5e-4, "qvel": 0.01, "obs": 2.0, "reward": 0.01},
    # 2.5e-7, 7.6e-6, 7.6e-6, 3.5e-6
    "Swimmer-v5": {"qpos": 5e-6, "qvel": 1e-4, "obs": 1e-4, "reward": 5e-5},
    # 6.2e-6, 1.2e-3, 1.2e-3, 3.4e-7
    "Reacher-v5": {"qpos": 1e-4, "qvel": 0.02, "obs": 0.02, "reward": 5e-6},
    # 9.6e-4, 3.1e-2, 6.7e-3, 4.1e-4 (the capsule-cylinder contact: docs/mjx.md)
    "Pusher-v5": {"qpos": 0.01, "qvel": 0.5, "obs": 0.1, "reward": 5e-3},
    # 3.4e-8, 6.6e-7, 6.6e-7, 0 (the reward is 1 while the pole is up)
    "InvertedPendulum-v5": {"qpos": 5e-7, "qvel": 1e-5, "obs": 1e-5, "reward": 1e-11},
    # 2.5e-7, 6.3e-6, 6.3e-6, 1.3e-6
    "InvertedDoublePendulum-v5": {"qpos": 5e-6, "qvel": 1e-4, "obs": 1e-4, "reward": 2e-5},
}


def declared(measured: float) -> float:
    """``HEADROOM`` x ``measured`` rounded up to 1, 2 or 5 times a power of ten."""
    x = HEADROOM * max(float(measured), 1e-12)
    exp = math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if step * 10.0**exp >= x * (1 - 1e-12):
            return float(f"{step * 10.0 ** exp:.0e}")
    raise AssertionError("unreachable")


def measure(env_id: str, cases: int = 10_000, seed: int = 1):
    """The float32 L2 suite of ``env_id`` with every float field's tolerance opened up: its
    largest error per float field and how many cases differ in an exact field."""
    from envport.verify.l2 import run_l2
    from mjx_port.port import l2_suite

    suite = l2_suite(env_id, dtype="float32", cases=cases)
    suite.tolerance = {k: 1e30 for k in FLOAT_FIELDS}
    return run_l2(suite, cases=cases, seed=seed)


def main(argv=None) -> None:
    from mjx_port.port import ENVS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", default=",".join(ENVS))
    ap.add_argument("--cases", type=int, default=10_000)
    args = ap.parse_args(argv)
    for env_id in args.envs.split(","):
        t = time.time()
        res = measure(env_id, args.cases)
        errs = ", ".join(f"{k} {res.max_abs_err.get(k, float('nan')):.3g}" for k in FLOAT_FIELDS)
        tol = {k: declared(res.max_abs_err[k]) for k in FLOAT_FIELDS if k in res.max_abs_err}
        print(f"{env_id}: {res.cases} cases, largest error {errs}; cases differing in an "
              f"exact field: {res.mismatches}; declare {tol} ({time.time() - t:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
