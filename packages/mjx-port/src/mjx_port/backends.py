"""The two sides the verifier compares, as :class:`envport.backend.Backend` s.

- :class:`GymnasiumMujoco`: ``num_envs`` of Gymnasium's own envs (MuJoCo C, its registered
  TimeLimit unless given),
  env ``i`` reset with ``seed + i``; ``load`` goes through Gymnasium's ``set_state``.
- :class:`MjxCandidate`: the port, batched (vmap; ``lax.map`` on CPU) and jitted, reset the way Gymnasium resets (numpy's
  ``default_rng(seed + i)`` stream, continued by the reset after an episode ends), so L3 starts
  both sides from seeds rather than injected states.

Canonical state: ``qpos``, ``qvel``, ``obs``, ``reward`` (float64), ``terminated``,
``truncated`` and ``t`` (the episode's step count), all as the step left them, before an
ended episode's reset. ``load`` also takes ``warmstart`` (``qacc_warmstart``: the Newton
solver starts from it, so a matched single step needs the same one on both sides).
"""

from __future__ import annotations

import contextlib
import dataclasses
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.actions import validate_actions
from envport.backend import Backend, CanonicalState, StepResult, spec_from_gymnasium
from mjx_port.env import MjxEnv, enter_precision, make, registered_max_episode_steps

FIELDS = ("qpos", "qvel", "obs", "reward", "terminated", "truncated", "t")


def make_gymnasium(
    env_id: str, kwargs: dict[str, Any] | None = None, max_episode_steps: int | None = None
):
    """``gymnasium.make``: TimeLimit ``max_episode_steps``, or the registered one if None."""
    import gymnasium

    return gymnasium.make(env_id, max_episode_steps=max_episode_steps, **(kwargs or {}))


class _LastStep(Backend):
    """What both sides share: ``_last`` holds the canonical state after the latest reset, step
    or load; ``state()`` and a step's result are copies of it."""

    _last: CanonicalState | None = None

    def _result(self) -> StepResult:
        return StepResult(*(self._last[k].copy() for k in StepResult._fields))

    def state(self) -> CanonicalState:
        if self._last is None:
            raise RuntimeError("call reset(seed) or load(state) before state()")
        return {k: v.copy() for k, v in self._last.items()}


class GymnasiumMujoco(_LastStep):
    name = "gymnasium (MuJoCo C)"
    supports_load = True

    def __init__(
        self,
        num_envs: int,
        env_id: str,
        kwargs: dict[str, Any] | None = None,
        spec=None,
        max_episode_steps: int | None = None,
    ):
        self.num_envs = int(num_envs)
        self.envs = [
            make_gymnasium(env_id, kwargs, max_episode_steps) for _ in range(self.num_envs)
        ]
        self.spec = spec if spec is not None else spec_from_gymnasium(self.envs[0])
        self._last: CanonicalState | None = None

    def _snapshot(self, obs, rew, term, trunc) -> CanonicalState:
        data = [e.unwrapped.data for e in self.envs]
        return {
            "qpos": np.stack([d.qpos.copy() for d in data]),
            "qvel": np.stack([d.qvel.copy() for d in data]),
            "obs": np.stack(obs).astype(np.float64),
            "reward": np.asarray(rew, np.float64),
            "terminated": np.asarray(term, bool),
            "truncated": np.asarray(trunc, bool),
            "t": np.array([e._elapsed_steps for e in self.envs], np.int64),
        }

    def reset(self, seed: int) -> np.ndarray:
        obs = [e.reset(seed=int(seed) + i)[0] for i, e in enumerate(self.envs)]
        none = np.zeros(self.num_envs, bool)
        self._last = self._snapshot(obs, np.zeros(self.num_envs), none, none)
        return self._last["obs"]

    def step(self, actions) -> StepResult:
        if self._last is None:
            raise RuntimeError("call reset(seed) or load(state) before step()")
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        out = [e.step(a) for e, a in zip(self.envs, actions, strict=True)]
        self._last = self._snapshot(
            [o[0] for o in out], [o[1] for o in out], [o[2] for o in out], [o[3] for o in out]
        )
        for e, o in zip(self.envs, out, strict=True):
            if o[2] or o[3]:
                e.reset()  # unseeded: np_random goes on from the seeded reset
        return self._result()

    def load(self, state: CanonicalState) -> None:
        obs = []
        for i, e in enumerate(self.envs):
            if e._elapsed_steps is None:  # TimeLimit and OrderEnforcing want a reset first
                e.reset(seed=0)
            u = e.unwrapped
            u.set_state(
                np.asarray(state["qpos"][i], np.float64), np.asarray(state["qvel"][i], np.float64)
            )
            if "warmstart" in state:
                u.data.qacc_warmstart[:] = state["warmstart"][i]
            e._elapsed_steps = int(state["t"][i]) if "t" in state else 0
            obs.append(u._get_obs())
        none = np.zeros(self.num_envs, bool)
        self._last = _keep_last_step(
            self._snapshot(obs, np.zeros(self.num_envs), none, none), state
        )


def _keep_last_step(snapshot: CanonicalState, state: CanonicalState) -> CanonicalState:
    """A loaded state keeps the step results it was taken with (reward, terminated,
    truncated describe the transition into it, which loading the physics cannot recompute):
    ``state()`` right after ``load(s)`` is ``s``, as the generic L1 round trip checks."""
    for k in ("reward", "terminated", "truncated"):
        if k in state:
            snapshot[k] = np.asarray(state[k], snapshot[k].dtype).copy()
    return snapshot


def _batched(f):
    """``f`` over the leading axis: ``vmap`` on accelerators; on CPU ``lax.map`` (one env after
    the other), as a vmapped MJX step computes every branch of the solver's and collision
    loops for all envs: Pusher-v5, 64 envs, 118 s a step vmapped against 0.2 s mapped."""
    if jax.default_backend() != "cpu":
        return jax.vmap(f)
    return lambda *args: jax.lax.map(lambda xs: f(*xs), args)


def _jitted(env: MjxEnv):
    def reset_where(state, done, qpos, qvel):
        fresh, _ = _batched(env.reset_to)(qpos, qvel)

        def pick(a, b):
            return jnp.where(done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)

        return jax.tree_util.tree_map(pick, fresh, state)

    return (
        jax.jit(_batched(env.step)),
        jax.jit(_batched(env.reset_to)),
        jax.jit(reset_where),
    )


@cache
def _compiled(env_id: str, dtype: str, kwargs_items: tuple, max_episode_steps: int):
    """One env and one set of jitted functions per configuration: every backend the verifier
    makes (one per suite) reuses the compiled code (MJX compiles for tens of seconds on CPU).
    ``max_episode_steps`` is given resolved, so the registered limit and None share one."""
    env = make(env_id, dtype, max_episode_steps, **dict(kwargs_items))
    return (env, *_jitted(env))


class MjxCandidate(_LastStep):
    name = "mjx-port"
    supports_load = True

    def __init__(
        self,
        num_envs: int,
        env_id: str,
        kwargs: dict[str, Any] | None = None,
        dtype=jnp.float64,
        env: MjxEnv | None = None,
        max_episode_steps: int | None = None,
    ):
        self.num_envs = int(num_envs)
        # float32 physics runs with x64 off whatever the process's setting (a verify process
        # turns it on for the float64 candidates): the env is built, traced and called in that
        # scope, and only numpy arrays leave the backend
        self._float32 = (env.dtype if env is not None else jnp.dtype(dtype)) == jnp.float32
        with self._precision():
            if env is None:
                if max_episode_steps is None:
                    max_episode_steps = registered_max_episode_steps(env_id)
                self.env, self._step, self._reset_to, self._reset_where = _compiled(
                    env_id,
                    jnp.dtype(dtype).name,
                    tuple(sorted((kwargs or {}).items())),
                    max_episode_steps,
                )
            else:
                self.env = env
                self._step, self._reset_to, self._reset_where = _jitted(env)
        # what the backend hands back: observations as float64 (its canonical state), in
        # float32 physics too, as Gymnasium's
        space = self.env.spec.observation_space
        self.spec = dataclasses.replace(
            self.env.spec, observation_space=dataclasses.replace(space, dtype=np.float64))
        self._rngs: list[np.random.Generator] = []
        self._state = None
        self._last: CanonicalState | None = None

    @contextlib.contextmanager
    def _precision(self):
        with jax.enable_x64(False) if self._float32 else contextlib.nullcontext():
            enter_precision()
            yield

    def _snapshot(self, ts) -> CanonicalState:
        d = self._state.data
        return {
            "qpos": np.asarray(d.qpos, np.float64),
            "qvel": np.asarray(d.qvel, np.float64),
            "obs": np.asarray(ts.obs, np.float64),
            "reward": np.asarray(ts.reward, np.float64),
            "terminated": np.asarray(ts.terminated, bool),
            "truncated": np.asarray(ts.truncated, bool),
            "t": np.asarray(self._state.t, np.int64),
        }

    def reset(self, seed: int) -> np.ndarray:
        self._rngs = [np.random.default_rng(int(seed) + i) for i in range(self.num_envs)]
        qpos, qvel = self._draw(range(self.num_envs))
        # warmstart and t given explicitly: the same traced signature as load's (one compile)
        ws = np.zeros((self.num_envs, self.env.nv))
        with self._precision():
            self._state, ts = self._reset_to(qpos, qvel, ws, np.zeros(self.num_envs, np.int32))
        self._last = self._snapshot(ts)
        return self._last["obs"]

    def _draw(self, envs) -> tuple[np.ndarray, np.ndarray]:
        pairs = [self.env.gymnasium_reset_qpos_qvel(self._rngs[i]) for i in envs]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])

    def step(self, actions) -> StepResult:
        if self._state is None:
            raise RuntimeError("call reset(seed) or load(state) before step()")
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        with self._precision():
            self._state, ts = self._step(self._state, jnp.asarray(actions))
        self._last = self._snapshot(ts)
        done = self._last["terminated"] | self._last["truncated"]
        if done.any():
            # Gymnasium's reset draws only for the envs that ended; the others keep theirs
            qpos, qvel = (
                np.zeros((self.num_envs, self.env.nq)),
                np.zeros((self.num_envs, self.env.nv)),
            )
            ended = np.flatnonzero(done)
            qpos[ended], qvel[ended] = self._draw(ended)
            with self._precision():
                self._state = self._reset_where(self._state, jnp.asarray(done), qpos, qvel)
        return self._result()

    def load(self, state: CanonicalState) -> None:
        n = self.num_envs
        ws = state.get("warmstart", np.zeros((n, self.env.nv)))
        t = state.get("t", np.zeros(n, np.int64))
        with self._precision():
            self._state, ts = self._reset_to(state["qpos"], state["qvel"], ws,
                                             np.asarray(t, np.int32))
        self._last = _keep_last_step(self._snapshot(ts), state)
        # a loaded state has no reset stream of its own; an episode that ends after it (L2:
        # a state at step 999) is reset from these, which need not match the reference's reset
        # (only the step's own results are compared)
        self._rngs = [np.random.default_rng(i) for i in range(n)]
