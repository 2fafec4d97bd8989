"""The smoke test of one installed distribution, run by the index test in a fresh venv outside
the repository (``python smoke.py <distribution>``): what a user does first after ``pip
install``. Generic: every env the distribution registers (entry points ``envport.envs``) is
listed by ``envport list``, and its first L1 target runs a few steps -- a JAX env jitted
(reset + steps), a backend (e.g. a Rust emulator) reset and stepped. Prints one line per check.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

STEPS = 3


def smoke_jax_env(target) -> None:
    import jax

    env = target.make_env()
    rng = np.random.default_rng(0)
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    for _ in range(STEPS):
        state, ts = step(state, target.sample_action(rng))
    jax.block_until_ready(ts)
    assert np.all(np.isfinite(np.asarray(ts.reward))), ts.reward
    print(f"ok: {target.name}: jitted reset + {STEPS} jitted steps")


def smoke_backend(target) -> None:
    backend = target.make_backend()
    try:
        rng = np.random.default_rng(0)
        backend.reset(0)
        for _ in range(STEPS):
            n = backend.num_envs
            backend.step(target.sample_actions(rng, n) if target.sample_actions
                         else backend.spec.action_space.sample(rng, (n,)))
        state = backend.state()
        assert state, "empty canonical state"
    finally:
        backend.close()
    print(f"ok: {target.name}: reset + {STEPS} steps, {len(state)} state fields")


def main(dist: str) -> int:
    from envport.registry import L1Target, get

    envs = [ep.name for ep in metadata.distribution(dist).entry_points
            if ep.group == "envport.envs"]
    listing = subprocess.run([str(Path(sys.executable).with_name("envport")), "list"],
                             check=True, capture_output=True, text=True).stdout
    for name in envs:
        assert any(line.startswith(f"{name}  (") for line in listing.splitlines()), listing
        assert "error loading" not in listing, listing
        print(f"ok: envport list shows {name}")
        port = get(name)
        target = port.l1[0]
        (smoke_jax_env if isinstance(target, L1Target) else smoke_backend)(target)
    if not envs:  # the core alone: its toy env
        from envport.registry import L1Target
        from envport.toy import Corridor

        assert "no envs installed" in listing, listing
        smoke_jax_env(L1Target("envport.toy.Corridor", lambda: Corridor(5),
                               lambda rng: np.int32(rng.integers(0, 3))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
