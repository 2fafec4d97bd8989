"""Backends: the numpy boundary that verification and benchmarks compare.

Both the reference (C, JS over a subprocess, Cython, MuJoCo, Python) and the candidate (JAX,
Rust) are wrapped as a :class:`Backend`. All arrays are batch-leading: ``num_envs`` first.

The canonical state (``state()``) is what the verifier diffs, field by field. What each level
needs of it:

- every level: a ``dict[str, np.ndarray]`` of batch-leading arrays (``shape[0] == num_envs``),
  the same keys, shapes and dtypes on both sides (a difference in any is reported as such);
- L3 also reads ``terminated`` and ``truncated`` (``bool[num_envs]``, the flags of the last
  step, both False after ``reset``): a seed runs until every env has ended an episode;
- L2 calls ``load(state)`` on both sides with the case's state, which may carry load-only keys
  (an RNG position, a recorded case id) besides the canonical ones.

The backends here add ``terminated``/``truncated`` themselves where their ``state_fn`` does not.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from envport.actions import validate_actions
from envport.errors import EnvportError
from envport.types import Box, Discrete, EnvSpec

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
        host_dtypes: dict[str, Any] | None = None,
    ):
        import jax

        self.spec, self.num_envs, self.name = spec, num_envs, name
        self._reset_fn = reset_fn
        self._step_fn = jax.jit(step_fn)
        self._state_fn = state_fn
        self._load_fn = load_fn
        self.supports_load = load_fn is not None
        self.allow_out_of_range = allow_out_of_range
        # fields cast on the host after the device computed them (float64 rewards, which a
        # JAX env without x64 cannot make, to match a reference whose rewards are Python floats)
        self._host_dtypes = dict(host_dtypes or {})
        self._state = None
        self._flags: dict[str, Any] = {}  # terminated/truncated of the last step

        def scan(state, actions):
            def body(s, a):
                s, ts = step_fn(s, a)
                return s, _with_flags(state_fn(s), ts.terminated, ts.truncated)

            return jax.lax.scan(body, state, actions)

        self._rollout_fn = jax.jit(scan)

    @classmethod
    def from_env(cls, env, num_envs: int = 1, state_fn: Callable[[Any], CanonicalState] | None = None,
                 name: str | None = None) -> JaxBackend:
        """``num_envs`` copies of a single (unbatched) :class:`envport.Env`, auto-reset.

        ``reset(seed)`` resets env ``i`` with key ``i`` of ``split(PRNGKey(seed), num_envs)``.
        The canonical state is ``obs`` (the observation the step produced: an episode's last
        one where it ended, as Gymnasium's single envs return it, although the env is already
        reset for the next step), ``reward`` (float64, as :class:`GymnasiumBackend` reports
        it), ``terminated``, ``truncated``, plus
        ``state_fn(env_state)`` when given (per-env fields of the batched pytree state).
        """
        import jax

        from envport.wrappers import AutoResetWrapper, VmapWrapper

        batched = VmapWrapper(AutoResetWrapper(env))
        n = int(num_envs)
        reset = jax.jit(batched.reset)

        def reset_fn(seed: int):
            state, ts = reset(jax.random.split(jax.random.PRNGKey(seed), n))
            return (state, ts), ts

        def step_fn(pair, action):
            state, ts, final_obs = batched.step_with_final(pair[0], action)
            ts = ts._replace(obs=final_obs)
            return (state, ts), ts

        def canonical(pair) -> CanonicalState:
            state, ts = pair
            out = {"obs": ts.obs, "reward": ts.reward, "terminated": ts.terminated,
                   "truncated": ts.truncated}
            if state_fn is not None:
                out.update(state_fn(state.inner))
            return out

        return cls(env.spec, n, reset_fn, step_fn, canonical, name=name or repr(env),
                   host_dtypes={"reward": np.float64})

    def reset(self, seed: int) -> np.ndarray:
        self._state, ts = self._reset_fn(seed)
        self._flags = {"terminated": ts.terminated, "truncated": ts.truncated}
        return np.asarray(ts.obs)

    def step(self, actions) -> StepResult:
        if self._state is None:
            raise RuntimeError("call reset(seed) before step()")
        actions = validate_actions(
            self.spec.action_space, actions, self.num_envs, allow_out_of_range=self.allow_out_of_range
        )
        self._state, ts = self._step_fn(self._state, actions)
        self._flags = {"terminated": ts.terminated, "truncated": ts.truncated}
        return StepResult(*(np.asarray(x) for x in (ts.obs, ts.reward, ts.terminated, ts.truncated)))

    def state(self) -> CanonicalState:
        if self._state is None:
            raise RuntimeError("call reset(seed) or load(state) before state()")
        out = _with_flags(self._state_fn(self._state), self._flags.get("terminated"),
                          self._flags.get("truncated"))
        return self._to_host(out)

    def _to_host(self, out: dict) -> CanonicalState:
        return {k: np.asarray(v).astype(self._host_dtypes[k]) if k in self._host_dtypes
                else np.asarray(v) for k, v in out.items()}

    def rollout(self, actions: np.ndarray) -> CanonicalState:
        """All steps in one ``lax.scan`` (one dispatch, no host sync per step)."""
        actions = np.asarray(actions)
        t = actions.shape[0]
        flat = validate_actions(self.spec.action_space, actions.reshape((t * self.num_envs, *actions.shape[2:])),
                                t * self.num_envs, allow_out_of_range=self.allow_out_of_range)
        self._state, states = self._rollout_fn(self._state, flat.reshape(actions.shape))
        states = self._to_host(states)
        if t:
            self._flags = {"terminated": states["terminated"][-1],
                           "truncated": states["truncated"][-1]}
        return states

    def load(self, state: CanonicalState) -> None:
        if self._load_fn is None:
            super().load(state)
        self._state = self._load_fn(state)
        none = np.zeros(self.num_envs, bool)
        self._flags = {k: np.asarray(state.get(k, none), bool) for k in ("terminated", "truncated")}


def _with_flags(canonical: dict, terminated, truncated) -> dict:
    """The canonical dict with the step's flags added where ``state_fn`` has none of its own."""
    out = dict(canonical)
    if "terminated" not in out and terminated is not None:
        out["terminated"] = terminated
    if "truncated" not in out and truncated is not None:
        out["truncated"] = truncated
    return out


class GymnasiumBackend(Backend):
    """A ``gymnasium`` env (single or ``gymnasium.vector``) as a backend.

    ``spec`` defaults to one read off the env's spaces (:func:`spec_from_gymnasium`). The
    canonical state is ``obs``, ``reward``, ``terminated`` and ``truncated`` of the last step
    (reward 0 and both flags False after ``reset``), plus whatever ``state_fn(env)`` reads.

    A single env is reset in the step that ends its episode (Gymnasium's same-step autoreset),
    with no seed, so its RNG goes on from the seeded reset: the step still returns (and
    ``state()`` shows) that step's own observation, and the next step starts the new episode.
    A vector env resets the way it was built to.
    """

    def __init__(self, env, spec: EnvSpec | None = None,
                 state_fn: Callable[[Any], CanonicalState] | None = None,
                 name: str = "gymnasium"):
        self.env, self.name = env, name
        self.spec = spec_from_gymnasium(env) if spec is None else spec
        self.num_envs = getattr(env, "num_envs", 1)
        self._vector = hasattr(env, "num_envs")
        self._state_fn = state_fn
        self._last: dict[str, np.ndarray] | None = None

    def _batch(self, x) -> np.ndarray:
        # copy: vector envs built with copy=False hand out the same buffer on every step
        x = np.array(x)
        return x if self._vector else x[None]

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        none = np.zeros(self.num_envs, bool)
        self._last = {"obs": self._batch(obs), "reward": np.zeros(self.num_envs, np.float64),
                      "terminated": none, "truncated": none.copy()}
        return self._last["obs"]

    def step(self, actions) -> StepResult:
        if self._last is None:
            raise RuntimeError("call reset(seed) before step()")
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        obs, rew, term, trunc, _ = self.env.step(actions if self._vector else actions[0])
        self._last = {"obs": self._batch(obs), "reward": self._batch(rew).astype(np.float64),
                      "terminated": self._batch(term).astype(bool),
                      "truncated": self._batch(trunc).astype(bool)}
        if not self._vector and (term or trunc):
            self.env.reset()
        return StepResult(*(self._last[k].copy() for k in StepResult._fields))

    def state(self) -> CanonicalState:
        if self._last is None:
            raise RuntimeError("call reset(seed) before state()")
        out = {k: v.copy() for k, v in self._last.items()}
        if self._state_fn is not None:
            out.update(self._state_fn(self.env))
        return out

    def close(self) -> None:
        self.env.close()


def _bound(b):
    """A Box bound as one float when it is the same everywhere, else the array."""
    b = np.asarray(b)
    return float(b.flat[0]) if b.size and np.all(b == b.flat[0]) else b.copy()


def spec_from_gymnasium(env) -> EnvSpec:
    """An :class:`EnvSpec` from a Gymnasium env's (single-env) spaces: ``Discrete`` and
    ``Box`` only; ``terminated_and_truncated`` is True, as Gymnasium allows both at once."""
    from envport.extras import require

    gymnasium = require("gymnasium", "gym", "a Gymnasium env as a backend")

    def convert(space, what: str):
        if isinstance(space, gymnasium.spaces.Discrete):
            if int(space.start) != 0:
                raise EnvportError(f"the {what} space {space} starts at {space.start}; envport's "
                                   "Discrete actions are 0..n-1: wrap the env to shift them")
            return Discrete(int(space.n))
        if isinstance(space, gymnasium.spaces.Box):
            return Box(_bound(space.low), _bound(space.high), tuple(space.shape),
                       space.dtype.type)
        raise EnvportError(f"the {what} space {space!r} is not supported: envport backends take "
                           "Discrete and Box spaces (flatten or wrap the others)")

    obs_space = getattr(env, "single_observation_space", env.observation_space)
    act_space = getattr(env, "single_action_space", env.action_space)
    env_id = getattr(getattr(env, "spec", None), "id", None) or type(env).__name__
    return EnvSpec(str(env_id), "gymnasium", convert(obs_space, "observation"),
                   convert(act_space, "action"), terminated_and_truncated=True)


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
            "truncated": np.array(self.env.truncations, bool),
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
