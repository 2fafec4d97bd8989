"""Benchmark targets for ``envport bench mjx`` (not run in the tests: MJX on CPU is slow).

Port: the float32 env, vmapped with envport's auto-reset, ``k`` batched steps in one jitted
``fori_loop`` (no host sync per step). Reference: Gymnasium's envs (MuJoCo C) in a
``SyncVectorEnv`` (one process) and an ``AsyncVectorEnv`` (one process per env), same-step
autoreset. Both sides run the same env-steps; the core reports compile time apart.
Still missing (issue 22): raw ``mjx.step`` and Brax's MJX env as anchors, and the GPU script.
"""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from envport.registry import BenchTarget
from mjx_port.cases import sample_actions

ACTION_CACHE = 64


def _gymnasium_stepper(num_envs: int, env_id: str, asynchronous: bool):
    import gymnasium

    def make():
        return gymnasium.make(env_id)

    cls = gymnasium.vector.AsyncVectorEnv if asynchronous else gymnasium.vector.SyncVectorEnv
    envs = cls([make] * num_envs, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    return envs.step, envs.close


def _port_rollout(num_envs: int, env_id: str):
    from envport.wrappers import AutoResetWrapper, VmapWrapper
    from mjx_port.env import make

    env = VmapWrapper(AutoResetWrapper(make(env_id, "float32")))
    nu = env.spec.action_space.shape[0]
    cache = jnp.asarray(
        np.stack(
            [sample_actions(np.random.default_rng(i), num_envs, nu) for i in range(ACTION_CACHE)]
        )
    )

    @jax.jit
    def run(state, k):
        def body(i, s):
            s, _ = env.step(s, cache[i % ACTION_CACHE])
            return s

        return jax.lax.fori_loop(0, k, body, state)

    holder = {"state": env.reset(jax.random.split(jax.random.PRNGKey(0), num_envs))[0]}
    t0 = time.perf_counter()
    holder["state"] = jax.block_until_ready(run(holder["state"], 1))
    compile_s = time.perf_counter() - t0

    def steps(k: int) -> None:
        holder["state"] = jax.block_until_ready(run(holder["state"], k))

    return steps, compile_s


def bench_target(env_id: str, nu: int, asynchronous: bool) -> BenchTarget:
    side = "AsyncVectorEnv (a process per env)" if asynchronous else "SyncVectorEnv"
    return BenchTarget(
        name=f"{env_id}, Gymnasium {side}",
        reference_stepper=partial(_gymnasium_stepper, env_id=env_id, asynchronous=asynchronous),
        candidate_rollout=partial(_port_rollout, env_id=env_id),
        sample_actions=lambda rng, n: sample_actions(rng, n, nu),
        how_actions=(
            "Both sides cycle through 64 cached batches of uniform actions in [-1.1, 1.1]. "
            f"Reference: gymnasium.vector.{side.split()[0]} over gymnasium.make(env_id) "
            "(TimeLimit 1000, same-step autoreset), called from a Python loop. Port: float32, "
            "VmapWrapper(AutoResetWrapper(env)) stepped in one jitted fori_loop (no TimeLimit)."
        ),
        workload=env_id,
    )
