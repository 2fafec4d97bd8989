"""Play a trained policy for whole episodes on a JAX env: one episode per env, in parallel.

Each of the ``episodes`` envs plays its first episode only (a finished env is frozen with a
select, so envs whose step after the end is undefined are safe); the loop is one
``lax.while_loop`` that stops when every episode ended or after ``max_steps``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from envport.env import Env
from envport.errors import UnfinishedEpisodesError
from envport.wrappers import VmapWrapper


def evaluate(ppo, params, env: Env, episodes: int, seed: int, *, max_steps: int = 100_000,
             greedy: bool = False, score=None) -> np.ndarray:
    """float64[episodes]: each episode's score (``score(ts)`` summed; default ``ppo.score``).
    ``greedy``: the most likely action instead of a sample. Raises
    :class:`UnfinishedEpisodesError` when an episode is still running after ``max_steps``.

    The compiled player is kept per (ppo, env, episodes, max_steps, greedy, score), with the
    parameters as its argument: a training run's periodic evaluations of one env compile once
    (they compiled at every call while the parameters were baked into the program)."""
    play = _player(ppo, env, int(episodes), int(max_steps), bool(greedy), score or ppo.score)
    total, done = jax.device_get(play(params, jax.random.PRNGKey(seed)))
    if not np.all(done):
        n = int(episodes)
        raise UnfinishedEpisodesError(
            f"{int((~done).sum())} of {n} evaluation episodes were still running after "
            f"{max_steps} steps")
    return np.asarray(total, np.float64)


@functools.lru_cache(maxsize=4)  # a few envs' programs at most (each can be large)
def _player(ppo, env: Env, n: int, max_steps: int, greedy: bool, score):
    batched = VmapWrapper(env)

    def features(ts):
        return ts.obs, ppo.legal(ts, n)  # act() flattens the observations itself

    @jax.jit
    def play(params, key):
        key, k_reset = jax.random.split(key)
        state, ts = batched.reset(jax.random.split(k_reset, n))
        obs, mask = features(ts)
        carry = (state, obs, mask, jnp.zeros(n, jnp.float32), jnp.zeros(n, bool), key,
                 jnp.int32(0))

        def cond(c):
            return ~jnp.all(c[4]) & (c[6] < max_steps)

        def body(c):
            state, obs, mask, total, done, key, t = c
            key, k_act = jax.random.split(key)
            action = ppo.act(params, obs, mask, None if greedy else k_act)
            new_state, ts = batched.step(state, action)
            live = ~done
            total = total + jnp.where(live, jnp.asarray(score(ts), jnp.float32).reshape(n), 0.0)
            ended = jnp.asarray(ts.terminated | ts.truncated, bool).reshape(n)
            keep = lambda new, old: jnp.where(  # noqa: E731
                live.reshape((n,) + (1,) * (new.ndim - 1)), new, old)
            state = jax.tree.map(keep, new_state, state)
            new_obs, new_mask = features(ts)
            return (state, keep(new_obs, obs), keep(new_mask, mask), total, done | (live & ended),
                    key, t + 1)

        _, _, _, total, done, _, _ = jax.lax.while_loop(cond, body, carry)
        return total, done

    return play
