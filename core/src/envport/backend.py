"""Backends: the numpy boundary that verification and benchmarks compare.

Both the reference (C, JS over a subprocess, Cython, MuJoCo, Python) and the candidate (JAX,
Rust) are wrapped as a :class:`Backend`. All arrays are batch-leading: ``num_envs`` first.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from envport.actions import validate_actions
from envport.types import EnvSpec

CanonicalState = dict[str, np.ndarray]


class StepResult(NamedTuple):
    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray


class Backend(abc.ABC):
    """What the verifier and the benchmark drive. Subclasses own any process they start."""

    name: str = "backend"
    spec: EnvSpec
    num_envs: int
    supports_load: bool = False

    @abc.abstractmethod
    def reset(self, seed: int) -> np.ndarray: ...

    @abc.abstractmethod
    def step(self, actions: np.ndarray) -> StepResult: ...

    @abc.abstractmethod
    def state(self) -> CanonicalState:
        """The canonical state, a dict of batch-leading arrays (the fields that are diffed)."""

    def load(self, state: CanonicalState) -> None:
        raise NotImplementedError(f"{self.name} cannot load an arbitrary state")

    def rollout(self, actions: np.ndarray) -> CanonicalState:
        """Apply ``actions[t]`` for each step ``t``; return the canonical state after every
        step, stacked (``T`` first). Backends override this when they can do it faster."""
        states = []
        for a in actions:
            self.step(a)
            states.append(self.state())
        return {k: np.stack([s[k] for s in states]) for k in states[0]} if states else {}

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def describe(self) -> str:
        return self.name


class JaxBackend(Backend):
    """Drives a JAX env (already batched) through jitted functions.

    ``reset_fn(seed) -> (state, ts)`` and ``step_fn(state, action) -> (state, ts)`` are the
    batched functions; ``state_fn`` maps the pytree state to the canonical dict and
    ``load_fn`` the other way (optional).
    """

    def __init__(
        self,
        spec: EnvSpec,
        num_envs: int,
        reset_fn: Callable[[int], tuple[Any, Any]],
        step_fn: Callable[[Any, Any], tuple[Any, Any]],
        state_fn: Callable[[Any], CanonicalState],
        load_fn: Callable[[CanonicalState], Any] | None = None,
        name: str = "jax",
        allow_out_of_range: bool = False,
    ):
        import jax

        self.spec, self.num_envs, self.name = spec, num_envs, name
        self._reset_fn = reset_fn
        self._step_fn = jax.jit(step_fn)
        self._state_fn = state_fn
        self._load_fn = load_fn
        self.supports_load = load_fn is not None
        self.allow_out_of_range = allow_out_of_range
        self._state = None

        def scan(state, actions):
            def body(s, a):
                s, _ = step_fn(s, a)
                return s, state_fn(s)

            return jax.lax.scan(body, state, actions)

        self._rollout_fn = jax.jit(scan)

    def reset(self, seed: int) -> np.ndarray:
        self._state, ts = self._reset_fn(seed)
        return np.asarray(ts.obs)

    def step(self, actions) -> StepResult:
        if self._state is None:
            raise RuntimeError("call reset(seed) before step()")
        actions = validate_actions(
            self.spec.action_space, actions, self.num_envs, allow_out_of_range=self.allow_out_of_range
        )
        self._state, ts = self._step_fn(self._state, actions)
        return StepResult(*(np.asarray(x) for x in (ts.obs, ts.reward, ts.terminated, ts.truncated)))

    def state(self) -> CanonicalState:
        return {k: np.asarray(v) for k, v in self._state_fn(self._state).items()}

    def rollout(self, actions: np.ndarray) -> CanonicalState:
        """All steps in one ``lax.scan`` (one dispatch, no host sync per step)."""
        actions = np.asarray(actions)
        t = actions.shape[0]
        flat = validate_actions(self.spec.action_space, actions.reshape((t * self.num_envs, *actions.shape[2:])),
                                t * self.num_envs, allow_out_of_range=self.allow_out_of_range)
        self._state, states = self._rollout_fn(self._state, flat.reshape(actions.shape))
        return {k: np.asarray(v) for k, v in states.items()}

    def load(self, state: CanonicalState) -> None:
        if self._load_fn is None:
            super().load(state)
        self._state = self._load_fn(state)


class GymnasiumBackend(Backend):
    """A ``gymnasium`` env (single or ``gymnasium.vector``) as a backend.

    ``state_fn(env) -> dict`` exposes whatever canonical state the env allows reading; the
    observation is always part of it.
    """

    def __init__(self, env, spec: EnvSpec, state_fn: Callable[[Any], CanonicalState] | None = None,
                 name: str = "gymnasium"):
        self.env, self.spec, self.name = env, spec, name
        self.num_envs = getattr(env, "num_envs", 1)
        self._vector = hasattr(env, "num_envs")
        self._state_fn = state_fn
        self._obs = None

    def _batch(self, x) -> np.ndarray:
        # copy: vector envs built with copy=False hand out the same buffer on every step
        x = np.array(x)
        return x if self._vector else x[None]

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        self._obs = self._batch(obs)
        return self._obs

    def step(self, actions) -> StepResult:
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        obs, rew, term, trunc, _ = self.env.step(actions if self._vector else actions[0])
        self._obs = self._batch(obs)
        return StepResult(self._obs, self._batch(rew), self._batch(term), self._batch(trunc))

    def state(self) -> CanonicalState:
        out = {"obs": self._obs.copy()}
        if self._state_fn is not None:
            out.update(self._state_fn(self.env))
        return out

    def close(self) -> None:
        self.env.close()


class PufferBackend(Backend):
    """A PufferLib native env (``pufferlib.PufferEnv`` protocol) as a backend.

    Such an env owns preallocated ``observations/rewards/terminals/truncations`` buffers,
    ``reset(seed)`` and ``step(actions)``. ``state_fn(env)`` reads any hidden state the
    env exposes and ``load_fn(env, state)`` writes it (optional).
    """

    def __init__(self, env, spec: EnvSpec, state_fn: Callable[[Any], CanonicalState] | None = None,
                 load_fn: Callable[[Any, CanonicalState], None] | None = None,
                 name: str = "pufferlib", allow_out_of_range: bool = False):
        self.env, self.spec, self.name = env, spec, name
        self.num_envs = int(env.num_agents)
        self._state_fn, self._load_fn = state_fn, load_fn
        self.supports_load = load_fn is not None
        self.allow_out_of_range = allow_out_of_range

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed)
        return np.array(obs, copy=True)

    def step(self, actions) -> StepResult:
        actions = validate_actions(
            self.spec.action_space, actions, self.num_envs, allow_out_of_range=self.allow_out_of_range
        )
        obs, rew, term, trunc, _ = self.env.step(actions)
        # the env reuses its buffers on the next step: copy what we hand out
        return StepResult(np.array(obs), np.array(rew), np.array(term, bool), np.array(trunc, bool))

    def state(self) -> CanonicalState:
        out = {
            "obs": np.array(self.env.observations),
            "reward": np.array(self.env.rewards),
            "terminated": np.array(self.env.terminals, bool),
        }
        if self._state_fn is not None:
            out.update(self._state_fn(self.env))
        return out

    def load(self, state: CanonicalState) -> None:
        if self._load_fn is None:
            super().load(state)
        self._load_fn(self.env, state)

    def close(self) -> None:
        self.env.close()
