"""L1 generic checks that every JAX env must pass (pgx's ``api_test`` in spirit).

Each check returns a :class:`CheckResult`; :func:`envport.testing.check_env` raises on the
first failure for use in pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.env import Env
from envport.types import Box, Discrete, TimeStep
from envport.verify.diff import unequal


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""


def _tree_equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype or np.any(unequal(x, y)):
            return False
    return True


def _first_mismatch(a, b) -> str:
    paths = jax.tree_util.tree_flatten_with_path(a)[0]
    for (path, x), y in zip(paths, jax.tree.leaves(b), strict=True):
        if not _tree_equal(x, y):
            return f"{jax.tree_util.keystr(path)}: {np.asarray(x)!r} vs {np.asarray(y)!r}"
    return "structure differs"


class _Runner:
    def __init__(self, env: Env, sample_action: Callable[[np.random.Generator], Any], steps: int,
                 batch: int, seed: int):
        self.env, self.sample_action = env, sample_action
        self.steps, self.batch = steps, batch
        self.rng = np.random.default_rng(seed)
        self.key = jax.random.PRNGKey(seed)
        self.traces = 0

        def counted_step(state, action):
            self.traces += 1  # runs only while tracing
            return env.step(state, action)

        self.reset = jax.jit(env.reset)
        self.step = jax.jit(counted_step)

    def actions(self, n: int) -> list:
        return [self.sample_action(self.rng) for _ in range(n)]


def check_spec(r: _Runner) -> CheckResult:
    spec = r.env.spec
    state, ts = r.reset(r.key)
    problems = _timestep_problems(spec, ts)
    state, ts = r.step(state, r.actions(1)[0])
    problems += _timestep_problems(spec, ts)
    return CheckResult("shapes and dtypes match the spec", not problems, "; ".join(problems))


def _timestep_problems(spec, ts: TimeStep) -> list[str]:
    out = []
    space = spec.observation_space
    obs = np.asarray(ts.obs)
    if obs.shape != tuple(space.shape):
        out.append(f"obs shape {obs.shape} != spec {space.shape}")
    if obs.dtype != np.dtype(space.dtype):
        out.append(f"obs dtype {obs.dtype} != spec {np.dtype(space.dtype)}")
    for name in ("reward", "terminated", "truncated"):
        val = np.asarray(getattr(ts, name))
        if val.shape != ():
            out.append(f"{name} must be a scalar per env, got shape {val.shape}")
    if np.asarray(ts.terminated).dtype != np.bool_ or np.asarray(ts.truncated).dtype != np.bool_:
        out.append("terminated/truncated must be bool")
    if np.asarray(ts.reward).dtype.kind != "f":
        out.append(f"reward must be floating, got {np.asarray(ts.reward).dtype}")
    if ts.legal_mask is not None:
        n = spec.action_space.n if isinstance(spec.action_space, Discrete) else None
        mask = np.asarray(ts.legal_mask)
        if mask.dtype != np.bool_ or (n is not None and mask.shape[-1] != n):
            out.append(f"legal_mask must be bool[{n}], got {mask.dtype}{list(mask.shape)}")
    return out


def check_determinism(r: _Runner) -> CheckResult:
    acts = r.actions(r.steps)

    def rollout():
        state, ts = r.reset(r.key)
        out = [ts]
        for a in acts:
            state, ts = r.step(state, a)
            out.append(ts)
        return state, out

    a, b = rollout(), rollout()
    ok = _tree_equal(a, b)
    return CheckResult("deterministic under the same key and actions", ok,
                       "" if ok else _first_mismatch(a, b))


def check_jit_equals_eager(r: _Runner) -> CheckResult:
    acts = r.actions(min(r.steps, 50))
    s_jit, ts_jit = r.reset(r.key)
    with jax.disable_jit():
        s_eager, ts_eager = r.env.reset(r.key)
    for i, a in enumerate(acts):
        if not _tree_equal((s_jit, ts_jit), (s_eager, ts_eager)):
            return CheckResult("jit == no-jit", False,
                               f"step {i}: {_first_mismatch((s_jit, ts_jit), (s_eager, ts_eager))}")
        s_jit, ts_jit = r.step(s_jit, a)
        with jax.disable_jit():
            s_eager, ts_eager = r.env.step(s_eager, a)
    ok = _tree_equal((s_jit, ts_jit), (s_eager, ts_eager))
    return CheckResult("jit == no-jit", ok, "" if ok else _first_mismatch(s_jit, s_eager))


def check_vmap_equals_loop(r: _Runner) -> CheckResult:
    keys = jax.random.split(r.key, r.batch)
    vreset, vstep = jax.jit(jax.vmap(r.env.reset)), jax.jit(jax.vmap(r.env.step))
    states, _ = vreset(keys)
    singles = [r.reset(k)[0] for k in keys]
    for t in range(min(r.steps, 50)):
        acts = r.actions(r.batch)
        states, vts = vstep(states, jnp.stack([jnp.asarray(a) for a in acts]))
        outs = [r.step(s, a) for s, a in zip(singles, acts, strict=True)]
        singles = [o[0] for o in outs]
        for i, (s, ts) in enumerate(outs):
            batched = jax.tree.map(lambda x, i=i: x[i], (states, vts))
            if not _tree_equal(batched, (s, ts)):
                return CheckResult("vmap(batch) == loop of singles", False,
                                   f"step {t} env {i}: {_first_mismatch(batched, (s, ts))}")
    return CheckResult("vmap(batch) == loop of singles", True)


def check_rollout_sane(r: _Runner) -> list[CheckResult]:
    """No NaN, legal mask never empty, terminal flags consistent, no retracing."""
    state, ts = r.reset(r.key)
    traces_before = r.traces
    nan_at = empty_at = bad_term = None
    terminals = 0
    for t, a in enumerate(r.actions(r.steps)):
        state, ts = r.step(state, a)
        leaves = [np.asarray(x) for x in jax.tree.leaves((state, ts))]
        if nan_at is None and any(x.dtype.kind == "f" and not np.isfinite(x).all() for x in leaves):
            nan_at = t
        if ts.legal_mask is not None and empty_at is None and not np.asarray(ts.legal_mask).any():
            empty_at = t
        if bool(ts.terminated) and bool(ts.truncated) and bad_term is None:
            bad_term = t
        terminals += int(bool(ts.terminated))
    retraced = r.traces - traces_before
    return [
        CheckResult("no NaN/inf in state or timestep", nan_at is None,
                    "" if nan_at is None else f"first at step {nan_at}"),
        CheckResult("legal mask never empty", empty_at is None,
                    "" if empty_at is None else f"empty at step {empty_at}"),
        CheckResult("terminal handling (never terminated and truncated at once)", bad_term is None,
                    f"{terminals} terminal steps seen" if bad_term is None else f"both at step {bad_term}"),
        CheckResult("no retracing of a jitted step", retraced == 0,
                    f"traced {retraced} more time(s) after the first call" if retraced else ""),
    ]


def check_action_space(r: _Runner) -> CheckResult:
    space = r.env.spec.action_space
    bad = []
    for a in r.actions(20):
        a = np.asarray(a)
        if isinstance(space, Discrete) and not (a.dtype.kind in "iu" and 0 <= a < space.n):
            bad.append(repr(a))
        if isinstance(space, Box) and a.shape != tuple(space.shape):
            bad.append(f"shape {a.shape}")
    return CheckResult("sampled actions lie in the action space", not bad, ", ".join(bad[:3]))


def run_checks(env: Env, sample_action: Callable[[np.random.Generator], Any], *, steps: int = 300,
               batch: int = 4, seed: int = 0) -> list[CheckResult]:
    r = _Runner(env, sample_action, steps, batch, seed)
    results = [check_action_space(r), check_spec(r)]
    results += check_rollout_sane(r)
    results += [check_determinism(r), check_jit_equals_eager(r), check_vmap_equals_loop(r)]
    return results
