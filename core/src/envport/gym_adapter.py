"""Any :class:`envport.Env` as a ``gymnasium.vector.VectorEnv``.

Users with gymnasium training code can drop a JAX env in without touching the loop::

    from envport.gym_adapter import JaxVectorEnv
    envs = JaxVectorEnv(env, num_envs=64, seed=0, max_episode_steps=500)
    obs, infos = envs.reset()
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Autoreset semantics: ``AutoresetMode.SAME_STEP`` (gymnasium >= 1.1). An env whose episode ends
is reset inside the same ``step``: the returned ``obs`` is the new episode's first observation,
while ``rewards``/``terminations``/``truncations`` are those of the step that ended the old
one. The old episode's last observation is in ``infos["final_obs"]`` (an object array holding
an observation where ``infos["_final_obs"]`` is true and ``None`` elsewhere, as gymnasium's own
``SyncVectorEnv`` reports it); those keys are present only on steps where some episode ended.
Everything runs as one jitted, vmapped function per call; only the numpy conversion and the
action check happen in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.actions import validate_actions
from envport.env import Env
from envport.extras import require
from envport.wrappers import AutoResetWrapper, EpisodeLimitWrapper, VmapWrapper

gymnasium = require("gymnasium", "gym", "envport.gym_adapter")
batch_space = require("gymnasium.vector.utils", "gym", "envport.gym_adapter").batch_space


class JaxVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` independent copies of a JAX env behind the gymnasium vector API.

    ``seed`` seeds the key used by ``reset()`` when no seed is given; ``reset(seed=s)`` restarts
    that key from ``s`` (so ``reset(seed=0)`` equals the first ``reset()`` of an env built with
    ``seed=0``). ``max_episode_steps`` truncates episodes (``EpisodeLimitWrapper``). Returned
    arrays are fresh, writable numpy copies: rewards are float32, flags bool. Actions are
    checked with :func:`envport.actions.validate_actions` and bad ones raise
    :class:`envport.ActionError`. When the env provides a legal-action mask it is in
    ``infos["legal_mask"]`` (for the returned, i.e. possibly new-episode, observation).
    """

    def __init__(self, env: Env, num_envs: int, seed: int = 0,
                 max_episode_steps: int | None = None):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.env = env
        self.num_envs = int(num_envs)
        self.max_episode_steps = max_episode_steps
        limited = env if max_episode_steps is None else EpisodeLimitWrapper(env, max_episode_steps)
        # autoreset per env, batch outside: the done test must not see the batch axis
        self._batched = VmapWrapper(AutoResetWrapper(limited))
        self._reset_fn = jax.jit(self._batched.reset)
        self._step_fn = jax.jit(self._batched.step_with_final)
        self._key = jax.random.PRNGKey(seed)
        self._state: Any = None

        self._action_spec = env.spec.action_space
        self.single_observation_space = env.spec.observation_space.to_gymnasium()
        self.single_action_space = self._action_spec.to_gymnasium()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # the AutoresetMode enum exists from gymnasium 1.1; 1.0 has no way to declare the mode
        mode = getattr(gymnasium.vector, "AutoresetMode", None)
        self.metadata = {} if mode is None else {"autoreset_mode": mode.SAME_STEP}

    def _keys(self, seed: int | Sequence[int] | None) -> jax.Array:
        if seed is None:
            self._key, sub = jax.random.split(self._key)
            return jax.random.split(sub, self.num_envs)
        if isinstance(seed, int | np.integer):
            self._key = jax.random.PRNGKey(int(seed))
            return self._keys(None)
        seeds = list(seed)
        if len(seeds) != self.num_envs or not all(isinstance(s, int | np.integer) for s in seeds):
            raise ValueError(f"seed must be None, an int or {self.num_envs} ints (one per env), "
                             f"got {seed!r}")
        # one key per env from its own seed; later unseeded resets continue from the first
        self._key = jax.random.fold_in(jax.random.PRNGKey(int(seeds[0])), self.num_envs)
        return jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env. ``options`` is not supported (there is no partial reset)."""
        if options:
            raise ValueError(f"JaxVectorEnv.reset takes no options, got {sorted(options)}")
        super().reset(seed=seed if isinstance(seed, int | np.integer) else None)
        self._state, ts = self._reset_fn(self._keys(seed))
        return np.array(ts.obs), self._infos(ts)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      dict[str, Any]]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = validate_actions(self._action_spec, actions, self.num_envs)
        self._state, ts, final = self._step_fn(self._state, actions)
        terminated = np.array(ts.terminated, dtype=bool)
        truncated = np.array(ts.truncated, dtype=bool)
        infos = self._infos(ts)
        done = terminated | truncated
        if done.any():
            final = np.asarray(final)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i].copy()
            # same keys as gymnasium's SyncVectorEnv in SAME_STEP mode (our envs have no infos)
            infos.update(final_obs=final_obs, _final_obs=done, final_info={},
                         _final_info=done.copy())
        rewards = np.array(ts.reward, dtype=np.float32)
        return np.array(ts.obs), rewards, terminated, truncated, infos

    def _infos(self, ts) -> dict[str, Any]:
        if ts.legal_mask is None:
            return {}
        return {"legal_mask": np.array(ts.legal_mask, dtype=bool),
                "_legal_mask": np.ones(self.num_envs, dtype=bool)}

    def close_extras(self, **kwargs: Any) -> None:
        self._state = None
