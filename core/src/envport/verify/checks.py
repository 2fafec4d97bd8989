"""L1 generic checks that every JAX env must pass (pgx's ``api_test`` in spirit).

Each check returns a :class:`CheckResult`; :func:`envport.testing.check_env` raises on the
first failure for use in pytest. Every check is shown able to fail by a test that plants
exactly its bug (``core/tests/test_checks.py``).

The checks that compare two executions (determinism, jit == no-jit, vmap == loop) compare
bit for bit by default: a port is exact or it is not. jit == no-jit and vmap == loop compare
the first :data:`PAIRED_STEPS` steps (their second execution runs op by op or once per env, so
it is the slow part); determinism and the rollout checks go through all ``steps``.

A physics env cannot be bit-exact across two *compiled programs*: XLA fuses the jitted, the
eager and the vmapped step differently, and floating point is not associative. Such an env
declares a ``tolerance`` for the float fields of those two checks and ``paired_steps`` inside
its chaos horizon (the roundoff grows with every step of a chaotic system); integers and
booleans stay exact, and determinism (the same program twice) stays bit for bit.

A check that raises is a failed check whose detail is the exception, not a crash: an env
that cannot be traced fails the checks that trace it and says why.
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
from envport.verify.diff import as_tolerance, unequal

PAIRED_STEPS = 50  # steps compared by jit == no-jit and vmap == loop

SPEC = "shapes and dtypes match the spec"
DETERMINISM = "deterministic under the same key and actions"
JIT = "jit == no-jit"
VMAP = "vmap(batch) == loop of singles"
NO_NAN = "no NaN/inf in state or timestep"
LEGAL_MASK = "legal mask never empty"
TERMINAL = "terminal handling (never terminated and truncated at once)"
TERMINAL_BOTH_ALLOWED = "terminal handling (terminated and truncated together allowed by the spec)"
RETRACING = "no retracing of a jitted step"
ACTION_SPACE = "sampled actions lie in the action space"

PAIR = ("state", "timestep")  # what the checks compare: what reset and step return


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""


# -- comparing pytrees ---------------------------------------------------------------------------
def _host(x) -> np.ndarray:
    """A leaf as a numpy array; typed PRNG keys (``jax.random.key``) as their raw bits."""
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def _path(path: tuple, names: tuple[str, ...]) -> str:
    """A leaf's path, its first index named: ``state.pos`` rather than ``[0].pos``."""
    head = path[0] if path else None
    if isinstance(head, jax.tree_util.SequenceKey) and head.idx < len(names):
        return names[head.idx] + jax.tree_util.keystr(path[1:])
    return jax.tree_util.keystr(path) or "value"


def _leaves(tree, names: tuple[str, ...] = PAIR) -> list[tuple[str, np.ndarray]]:
    return [(_path(path, names), _host(x))
            for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _show(x: np.ndarray) -> str:
    return repr(x.item()) if x.size == 1 else f"{x.dtype}{list(x.shape)}"


def _leaf_mismatch(x: np.ndarray, y: np.ndarray, tolerance=0.0) -> str | None:
    if x.shape != y.shape or x.dtype != y.dtype:
        return f"{x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
    differs = unequal(x, y, tolerance)
    if not np.any(differs):
        return None
    idx = np.unravel_index(int(np.flatnonzero(np.ravel(differs))[0]), x.shape) if x.ndim else ()
    where = f" at {list(map(int, idx))}" if x.ndim else ""
    return f"{x[idx].item()!r} vs {y[idx].item()!r}{where}"


def _first_mismatch(a, b, tolerance=0.0) -> str | None:
    """Where two pytrees first differ (structure, shape, dtype, or bits: float leaves beyond
    ``tolerance`` where one is given), or None if equal."""
    sa, sb = jax.tree.structure(a), jax.tree.structure(b)
    if sa != sb:
        return f"structure differs: {sa} vs {sb}"
    for (path, x), (_, y) in zip(_leaves(a), _leaves(b), strict=True):
        found = _leaf_mismatch(x, y, tolerance)
        if found is not None:
            return f"{path}: {found}"
    return None


def _tree_equal(a, b) -> bool:
    return _first_mismatch(a, b) is None


def _signature(tree) -> dict[str, str]:
    """What a jit cache key sees of each leaf: shape, dtype and weak type."""
    out = {}
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        aval = getattr(x, "aval", None)
        weak = " (weak type)" if getattr(aval, "weak_type", False) else ""
        out[_path(path, ("state", "action"))] = f"{x.dtype}{list(np.shape(x))}{weak}"
    return out


def _signature_change(before: dict[str, str], after: dict[str, str]) -> str:
    if before.keys() != after.keys():
        return "the (state, action) structure changed"
    changed = [f"{k}: {before[k]} -> {after[k]}" for k in before if before[k] != after[k]]
    return "; ".join(changed[:3]) or "same shapes and dtypes (a static argument changed?)"


# -- the runner ----------------------------------------------------------------------------------
class _Runner:
    def __init__(self, env: Env, sample_action: Callable[[np.random.Generator], Any], steps: int,
                 batch: int, seed: int, tolerance=0.0, paired_steps: int = PAIRED_STEPS):
        self.env, self.sample_action = env, sample_action
        self.steps, self.batch = steps, batch
        # for jit == no-jit and vmap == loop only (see the module doc)
        self.tolerance, self.paired_steps = as_tolerance(tolerance), paired_steps
        self.rng = np.random.default_rng(seed)
        self.key = jax.random.PRNGKey(seed)
        self.traces = 0
        self.signatures: list[dict[str, str]] = []  # of (state, action), one per trace

        def counted_step(state, action):
            self.traces += 1  # runs only while tracing
            self.signatures.append(_signature((state, action)))
            return env.step(state, action)

        self.reset = jax.jit(env.reset)
        self.step = jax.jit(counted_step)

    def actions(self, n: int) -> list:
        return [self.sample_action(self.rng) for _ in range(n)]


# -- the checks ----------------------------------------------------------------------------------
def check_spec(r: _Runner) -> CheckResult:
    spec = r.env.spec
    state, ts = r.reset(r.key)
    problems = [f"reset: {p}" for p in _timestep_problems(spec, ts)]
    state, ts = r.step(state, r.actions(1)[0])
    problems += [f"step: {p}" for p in _timestep_problems(spec, ts)]
    return CheckResult(SPEC, not problems, "; ".join(problems))


def _timestep_problems(spec, ts: TimeStep) -> list[str]:
    out = []
    space = spec.observation_space
    obs = np.asarray(ts.obs)
    if obs.shape != tuple(space.shape):
        out.append(f"obs shape {obs.shape} != spec {tuple(space.shape)}")
    if obs.dtype != np.dtype(space.dtype):
        out.append(f"obs dtype {obs.dtype} != spec {np.dtype(space.dtype)}")
    reward = np.asarray(ts.reward)
    # one reward per player where the spec has several (or one shared); a scalar otherwise
    if spec.num_agents > 1 and reward.shape not in {(), (spec.num_agents,)}:
        out.append(f"reward must have shape ({spec.num_agents},) (num_agents) or (), got "
                   f"{reward.shape}")
    elif spec.num_agents <= 1 and reward.shape != ():
        out.append(f"reward must be a scalar, got shape {reward.shape}")
    if reward.dtype.kind != "f":
        out.append(f"reward must be floating, got {reward.dtype}")
    for name in ("terminated", "truncated"):
        val = np.asarray(getattr(ts, name))
        if val.shape != () or val.dtype != np.bool_:
            out.append(f"{name} must be a bool scalar, got {val.dtype}{list(val.shape)}")
    if ts.legal_mask is not None:
        mask = np.asarray(ts.legal_mask)
        space = spec.action_space
        ok = mask.dtype == np.bool_ and mask.ndim >= 1
        if ok and isinstance(space, Discrete):
            ok = mask.shape[-1] == space.n
        if not ok:
            n = space.n if isinstance(space, Discrete) else "n"
            out.append(f"legal_mask must be bool[..., {n}], got {mask.dtype}{list(mask.shape)}")
    return out


def _when(t: int) -> str:
    return "after reset" if t == 0 else f"after step {t}"


def check_determinism(r: _Runner) -> CheckResult:
    acts = r.actions(r.steps)

    def rollout():
        # a generator: the two rollouts run side by side, neither is kept in memory
        pair = r.reset(r.key)
        yield pair
        for a in acts:
            pair = r.step(pair[0], a)
            yield pair

    for t, (a, b) in enumerate(zip(rollout(), rollout(), strict=True)):
        found = _first_mismatch(a, b)
        if found is not None:
            return CheckResult(DETERMINISM, False, f"{_when(t)}: {found}")
    return CheckResult(DETERMINISM, True, f"{r.steps} steps, twice")


def _within(r: _Runner) -> str:
    return "" if r.tolerance.exact else f", float fields within {r.tolerance}"


def check_jit_equals_eager(r: _Runner) -> CheckResult:
    acts = r.actions(min(r.steps, r.paired_steps))
    jitted = r.reset(r.key)
    with jax.disable_jit():
        eager = r.env.reset(r.key)
    for t in range(len(acts) + 1):
        found = _first_mismatch(jitted, eager, r.tolerance)
        if found is not None:
            return CheckResult(JIT, False, f"{_when(t)}: {found} (jit vs eager{_within(r)})")
        if t == len(acts):
            break
        jitted = r.step(jitted[0], acts[t])
        with jax.disable_jit():
            eager = r.env.step(eager[0], acts[t])
    return CheckResult(JIT, True, f"{len(acts)} steps{_within(r)}")


def _batch_steppers(env):
    """(name, jitted batch reset, jitted batch step): ``vmap`` of the env's own, and the env's
    ``reset_batch``/``step_batch`` where it overrides them (each must equal the single env's)."""
    from envport.env import Env

    out = [("vmap", jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.step)))]
    if (type(env).reset_batch is not Env.reset_batch
            or type(env).step_batch is not Env.step_batch):
        out.append(("step_batch", jax.jit(env.reset_batch), jax.jit(env.step_batch)))
    return out


def check_vmap_equals_loop(r: _Runner) -> CheckResult:
    keys = jax.random.split(r.key, r.batch)
    steps = min(r.steps, r.paired_steps)
    acts = [r.actions(r.batch) for _ in range(steps)]
    names = []
    for name, vreset, vstep in _batch_steppers(r.env):
        names.append(name)
        batched = vreset(keys)
        singles = [r.reset(k) for k in keys]
        for t in range(steps + 1):
            for i, single in enumerate(singles):
                found = _first_mismatch(jax.tree.map(lambda x, i=i: x[i], batched), single,
                                        r.tolerance)
                if found is not None:
                    return CheckResult(VMAP, False, f"{_when(t)}, env {i}: {found} "
                                                    f"({name} vs single{_within(r)})")
            if t == steps:
                break
            batched = vstep(batched[0], jnp.stack([jnp.asarray(a) for a in acts[t]]))
            singles = [r.step(s, a) for (s, _), a in zip(singles, acts[t], strict=True)]
    also = ", vmap and step_batch" if len(names) > 1 else ""
    return CheckResult(VMAP, True, f"{steps} steps, {r.batch} envs{also}{_within(r)}")


def _non_finite(tree) -> str | None:
    for path, x in _leaves(tree):
        if x.dtype.kind in "fc" and not np.isfinite(x).all():
            return f"{path} = {_show(x[~np.isfinite(x)][:1])}"
    return None


def _both_allowed(spec) -> bool:
    return bool(getattr(spec, "terminated_and_truncated", False))


def _terminal_name(both_allowed: bool) -> str:
    return TERMINAL_BOTH_ALLOWED if both_allowed else TERMINAL


def _rollout(r: _Runner, state, ts):
    """``(when, state, timestep)`` after reset and after each of ``r.steps`` sampled actions."""
    yield _when(0), state, ts
    for t, a in enumerate(r.actions(r.steps), 1):
        state, ts = r.step(state, a)
        yield _when(t), state, ts


def check_rollout_sane(r: _Runner) -> list[CheckResult]:
    """No NaN, legal mask never empty, terminal flags consistent, no retracing."""
    both_allowed = _both_allowed(r.env.spec)
    first = r.reset(r.key)
    traces_before = r.traces
    nan_at = empty_at = bad_term = None
    terminals = both = 0
    for when, state, ts in _rollout(r, *first):
        if nan_at is None and (found := _non_finite((state, ts))) is not None:
            nan_at = f"first {when}: {found}"
        if ts.legal_mask is not None and empty_at is None and not np.asarray(ts.legal_mask).any():
            empty_at = f"no legal action {when}"
        term, trunc = bool(ts.terminated), bool(ts.truncated)
        both += term and trunc
        if term and trunc and bad_term is None and not both_allowed:
            bad_term = f"terminated and truncated both True {when}"
        terminals += term
    # the step's first trace is its compile (here, or in an earlier check); every trace after
    # it is one more signature of the same step: a state that changes dtype, shape or weak type
    retraced = r.traces - max(traces_before, 1)
    retrace_detail = ""
    if retraced:
        retrace_detail = (f"traced {retraced} more time(s) after the first call: "
                          f"{_signature_change(r.signatures[0], r.signatures[-1])}")
    term_detail = f"{terminals} terminal steps seen"
    if both_allowed:
        term_detail += f", {both} of them also truncated (the spec allows both at once)"
    return [
        CheckResult(NO_NAN, nan_at is None, nan_at or ""),
        CheckResult(LEGAL_MASK, empty_at is None, empty_at or ""),
        CheckResult(_terminal_name(both_allowed), bad_term is None, bad_term or term_detail),
        CheckResult(RETRACING, retraced == 0, retrace_detail),
    ]


def _action_problem(space, a: np.ndarray) -> str | None:
    if a.shape != tuple(space.shape):
        return f"shape {a.shape} (the space's is {tuple(space.shape)})"
    if isinstance(space, Discrete):
        if a.dtype.kind not in "iu":
            return f"dtype {a.dtype} for a discrete space"
        if not np.all(space.contains(a)):
            return f"{a.tolist()} outside 0..{space.n - 1}"
    if isinstance(space, Box):
        if a.dtype.kind != "f":
            return f"dtype {a.dtype} for a continuous space"
        if not np.all(space.contains(a)):
            return f"{np.array2string(a, separator=', ')} outside [{space.low}, {space.high}]"
    return None


def check_action_space(r: _Runner) -> CheckResult:
    space = r.env.spec.action_space
    bad = [p for a in r.actions(20) if (p := _action_problem(space, np.asarray(a))) is not None]
    return CheckResult(ACTION_SPACE, not bad,
                       f"{len(bad)} of 20: " + ", ".join(bad[:3]) if bad else "")


# -- all of them ---------------------------------------------------------------------------------
def raised(e: BaseException) -> str:
    """An exception as a check's detail: its type and first line (JAX's tracer errors go on for
    a page about where tracing began)."""
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else ""
    return f"raised {type(e).__name__}: {text[:500]}"


def _guarded(names: list[str], check: Callable[[], CheckResult | list[CheckResult]]
             ) -> list[CheckResult]:
    """Run one check; an exception fails each of its results with the exception as detail."""
    try:
        out = check()
    except Exception as e:  # noqa: BLE001 - the env's failure is the check's finding
        return [CheckResult(n, False, raised(e)) for n in names]
    return out if isinstance(out, list) else [out]


def run_checks(env: Env, sample_action: Callable[[np.random.Generator], Any], *, steps: int = 300,
               batch: int = 4, seed: int = 0, tolerance=0.0,
               paired_steps: int | None = None) -> list[CheckResult]:
    """Every L1 check; ``tolerance`` and ``paired_steps`` (None: :data:`PAIRED_STEPS`) apply
    to jit == no-jit and vmap == loop (module doc)."""
    paired_steps = PAIRED_STEPS if paired_steps is None else paired_steps
    if steps < 1 or batch < 1 or paired_steps < 1:
        raise ValueError(f"steps, batch and paired_steps must be >= 1, got steps={steps}, "
                         f"batch={batch}, paired_steps={paired_steps}")
    r = _Runner(env, sample_action, steps, batch, seed, tolerance, paired_steps)
    rollout_names = [NO_NAN, LEGAL_MASK, _terminal_name(_both_allowed(env.spec)), RETRACING]
    results = _guarded([ACTION_SPACE], lambda: check_action_space(r))
    results += _guarded([SPEC], lambda: check_spec(r))
    results += _guarded(rollout_names, lambda: check_rollout_sane(r))
    results += _guarded([DETERMINISM], lambda: check_determinism(r))
    results += _guarded([JIT], lambda: check_jit_equals_eager(r))
    results += _guarded([VMAP], lambda: check_vmap_equals_loop(r))
    return results
