"""L1 generic checks of a backend: any candidate, JAX or not (a Rust emulator behind PyO3, a C
library), driven at the numpy boundary (:class:`envport.backend.Backend`).

:func:`run_backend_checks` returns one :class:`CheckResult` per check;
:func:`envport.testing.check_backend` raises on failures for use in pytest. The contract they
hold a backend to, beyond the :class:`Backend` signatures:

- ``spec`` is an :class:`EnvSpec` and ``num_envs`` a positive int;
- ``reset(seed)`` returns obs ``(num_envs, *observation_space.shape)`` of the space's dtype;
  ``step(actions)`` a :class:`StepResult` of numpy arrays: that obs, reward ``(num_envs,)``
  (``(num_envs, num_agents)`` when ``spec.num_agents > 1``) floating, ``terminated`` and
  ``truncated`` ``bool[num_envs]``;
- ``state()`` is a dict of numpy arrays, each batch-leading (``shape[0] == num_envs``), with
  the same keys, shapes and dtypes at every step, and carries ``terminated`` and ``truncated``
  (``bool[num_envs]``) equal to the last StepResult's flags, both False after ``reset`` (L3
  reads them to know when episodes end);
- what ``reset``, ``step`` and ``state`` return is the caller's: later steps must not change
  it (copy buffers the engine reuses);
- the same seed and actions give bit-identical states and results, on one backend reset
  again and on another one made by ``make_backend()``;
- one step never reports terminated and truncated together, unless
  ``spec.terminated_and_truncated``;
- no NaN/inf in obs, reward or any floating state field;
- with ``supports_load``: ``load(state())`` into a new backend (not reset first, as L2 loads)
  makes its ``state()`` equal the loaded one, and the same actions then keep both equal. Each
  env is compared up to the step that ends its episode: a new episode may start from RNG that
  the canonical state need not carry (L2 cases add such load-only keys);
- an action batch of the wrong shape raises :class:`envport.errors.ActionError` (never a
  silent reshape, never a bare ValueError).

A check that raises fails with the exception as its detail; nothing here crashes on a broken
backend. Three backends at most are made (the rollout's, a second one for determinism, a new
one to load into), and each is closed by the check that made it (the rollout's at the end).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envport.backend import Backend, StepResult
from envport.errors import ActionError
from envport.types import EnvSpec
from envport.verify.checks import TERMINAL, TERMINAL_BOTH_ALLOWED, CheckResult, raised
from envport.verify.diff import diff_states, unequal

ActionSampler = Callable[[np.random.Generator, int], np.ndarray]

SPEC = "spec is an EnvSpec and num_envs a positive int"
SHAPES = "reset/step obs, reward and flags: numpy arrays of the spec's shapes and dtypes"
STATE = "canonical state: batch-leading numpy arrays with the last step's flags"
DETERMINISM = "deterministic under the same seed and actions"
NO_NAN = "no NaN/inf in obs, reward or state"
LOAD = "load(state()) round trip"
BAD_INPUT = "a wrong-shape action batch raises ActionError"
CLOSE = "close() succeeds"
FLAGS = ("terminated", "truncated")


# -- recording one rollout -----------------------------------------------------------------------
@dataclass
class _Recording:
    """What the rollout backend returned: copies (so a reused buffer cannot rewrite history),
    plus the first objects themselves to see whether later steps changed them."""

    num_envs: int
    actions: list[np.ndarray] = field(default_factory=list)
    reset_obs: Any = None
    results: list[Any] = field(default_factory=list)  # step t+1's StepResult at index t
    states: list[Any] = field(default_factory=list)  # after reset at 0, after step t at t
    handed_out: dict[str, Any] = field(default_factory=dict)  # the first objects returned
    error: str | None = None  # where the rollout stopped

    @property
    def steps(self) -> int:
        return len(self.results)


def _copy(x):
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


def _copy_state(state):
    return {k: _copy(v) for k, v in state.items()} if isinstance(state, dict) else state


def _copy_result(res):
    return tuple(_copy(x) for x in res) if isinstance(res, tuple) else res


def _when(t: int) -> str:
    return "after reset" if t == 0 else f"after step {t}"


def _record(backend: Backend, sample: ActionSampler, steps: int, seed: int) -> _Recording:
    rec = _Recording(0)
    rng = np.random.default_rng(seed)
    where = f"reset({seed})"
    try:
        rec.num_envs = int(backend.num_envs)
        rec.reset_obs = _copy(obs := backend.reset(seed))
        rec.handed_out["reset obs"] = obs
        where = "state() after reset"
        rec.states.append(_copy_state(state := backend.state()))
        rec.handed_out["state after reset"] = state
        for t in range(1, steps + 1):
            where = f"sample_actions at step {t}"
            rec.actions.append(np.array(sample(rng, rec.num_envs), copy=True))
            where = f"step {t}"
            rec.results.append(_copy_result(res := backend.step(rec.actions[-1].copy())))
            rec.handed_out.setdefault("step 1 result", res)
            where = f"state() after step {t}"
            rec.states.append(_copy_state(backend.state()))
    except Exception as e:  # noqa: BLE001 - the backend's failure is the finding
        rec.error = f"the rollout stopped: {where} {raised(e)}"
    return rec


def _changed_after(original, copy) -> str | None:
    """Which array of something handed out differs from the copy taken when it was returned."""
    if isinstance(original, dict) and isinstance(copy, dict):
        pairs = [(f"[{k!r}]", original.get(k), copy[k]) for k in copy]
    elif isinstance(original, tuple) and isinstance(copy, tuple):
        pairs = [(f".{name}", x, y) for name, x, y in zip(StepResult._fields, original, copy,
                                                          strict=False)]
    else:
        pairs = [("", original, copy)]
    for name, x, y in pairs:
        if isinstance(x, np.ndarray) and (x.shape != y.shape or np.any(unequal(y, x))):
            return name
    return None


def _aliasing(rec: _Recording, keys: tuple[str, ...]) -> str | None:
    copies = {"reset obs": rec.reset_obs, "state after reset": rec.states[0] if rec.states
              else None, "step 1 result": rec.results[0] if rec.results else None}
    for what in keys:
        if what in rec.handed_out:
            name = _changed_after(rec.handed_out[what], copies[what])
            if name is not None:
                return (f"the {what}{name} changed during later steps: return copies, not "
                        f"buffers the backend reuses")
    return None


# -- the checks on the recording -----------------------------------------------------------------
def check_spec(backend: Backend) -> CheckResult:
    problems = []
    if not isinstance(backend.spec, EnvSpec):
        problems.append(f"spec is a {type(backend.spec).__name__}, not an envport EnvSpec")
    n = backend.num_envs
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        problems.append(f"num_envs must be a positive int, got {n!r}")
    return CheckResult(SPEC, not problems, "; ".join(problems))


def _array_problem(what: str, x, shape: tuple, dtype_ok: Callable[[np.dtype], bool],
                   dtype_wanted: str) -> str | None:
    if not isinstance(x, np.ndarray):
        return f"{what} is a {type(x).__name__}, not a numpy array"
    if x.shape != shape:
        return f"{what} shape {x.shape} != {shape}"
    if not dtype_ok(x.dtype):
        return f"{what} dtype {x.dtype}, expected {dtype_wanted}"
    return None


def _result_problems(spec: EnvSpec, n: int, res) -> list[str]:
    if not isinstance(res, tuple) or len(res) != 4:
        return [f"step returned a {type(res).__name__}, not a StepResult"]
    obs, reward, terminated, truncated = res
    space = spec.observation_space
    reward_shape = (n, spec.num_agents) if spec.num_agents > 1 else (n,)
    found = [
        _array_problem("obs", obs, (n, *space.shape), lambda d: d == np.dtype(space.dtype),
                       str(np.dtype(space.dtype))),
        _array_problem("reward", reward, reward_shape, lambda d: d.kind == "f", "floating"),
        _array_problem("terminated", terminated, (n,), lambda d: d == np.bool_, "bool"),
        _array_problem("truncated", truncated, (n,), lambda d: d == np.bool_, "bool"),
    ]
    return [p for p in found if p is not None]


def check_shapes(spec: EnvSpec, rec: _Recording) -> CheckResult:
    if rec.error:
        return CheckResult(SHAPES, False, rec.error)
    space, n = spec.observation_space, rec.num_envs
    problem = _array_problem("reset obs", rec.reset_obs, (n, *space.shape),
                             lambda d: d == np.dtype(space.dtype), str(np.dtype(space.dtype)))
    if problem:
        return CheckResult(SHAPES, False, problem)
    for t, res in enumerate(rec.results, 1):
        problems = _result_problems(spec, n, res)
        if problems:
            return CheckResult(SHAPES, False, f"step {t}: " + "; ".join(problems))
    aliased = _aliasing(rec, ("reset obs", "step 1 result"))
    return CheckResult(SHAPES, aliased is None, aliased or "")


def _layout(state: dict) -> dict[str, tuple]:
    return {k: (v.shape, v.dtype) for k, v in state.items() if isinstance(v, np.ndarray)}


def _state_problems(state, n: int, flags: tuple[np.ndarray, np.ndarray] | None) -> list[str]:
    """What is wrong with one state(); ``flags`` are the step's (None after reset: all False)."""
    if not isinstance(state, dict):
        return [f"state() returned a {type(state).__name__}, not a dict"]
    out = []
    for k, v in state.items():
        if not isinstance(k, str):
            out.append(f"key {k!r} is not a str")
        elif not isinstance(v, np.ndarray):
            out.append(f"{k!r} is a {type(v).__name__}, not a numpy array")
        elif v.dtype.hasobject:
            out.append(f"{k!r} has dtype {v.dtype}: fields hold numbers, bools or fixed-width "
                       "strings, whose bits are the value")
        elif v.ndim == 0 or v.shape[0] != n:
            out.append(f"{k!r} has shape {v.shape}: not batch-leading (num_envs={n})")
    for i, name in enumerate(FLAGS):
        v = state.get(name)
        want = np.zeros(n, bool) if flags is None else np.asarray(flags[i])
        if v is None:
            out.append(f"no {name!r} key (bool[num_envs], the last step's flags)")
        elif not isinstance(v, np.ndarray) or v.dtype != np.bool_ or v.shape != (n,):
            out.append(f"{name!r} must be bool[{n}], got {_describe(v)}")
        elif want.shape == v.shape and np.any(v != want):
            env = int(np.flatnonzero(v != want)[0])
            out.append(f"{name!r} is {v.tolist()} but the step returned {want.tolist()} "
                       f"(first at env {env})")
    return out


def _describe(v) -> str:
    return f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray) else type(v).__name__


def check_state(rec: _Recording) -> CheckResult:
    if rec.error:
        return CheckResult(STATE, False, rec.error)
    first = rec.states[0]
    for t, state in enumerate(rec.states):
        flags = None if t == 0 else tuple(rec.results[t - 1][2:4])
        problems = _state_problems(state, rec.num_envs, flags)
        if not problems and _layout(state) != _layout(first):
            problems = [_layout_change(_layout(first), _layout(state))]
        if problems:
            return CheckResult(STATE, False, f"{_when(t)}: " + "; ".join(problems[:3]))
    aliased = _aliasing(rec, ("state after reset",))
    return CheckResult(STATE, aliased is None, aliased or f"{len(first)} fields")


def _layout_change(before: dict, after: dict) -> str:
    if before.keys() != after.keys():
        return (f"the keys changed since reset: {sorted(before)} -> {sorted(after)}")
    k = next(k for k in before if before[k] != after[k])
    return (f"{k!r} changed since reset from {before[k][1]}{list(before[k][0])} to "
            f"{after[k][1]}{list(after[k][0])}")


def _flag(x, n: int) -> np.ndarray:
    """A step's flag as bool[n], whatever its shape (the shapes check reports that)."""
    x = np.asarray(x)
    if x.size != n:
        raise ValueError(f"a flag of shape {x.shape} for num_envs={n}")
    return x.reshape(n).astype(bool)


def check_terminal(spec: EnvSpec, rec: _Recording) -> CheckResult:
    both_allowed = bool(spec.terminated_and_truncated)
    name = TERMINAL_BOTH_ALLOWED if both_allowed else TERMINAL
    if rec.error:
        return CheckResult(name, False, rec.error)
    terminals = both = 0
    for t, res in enumerate(rec.results, 1):
        term, trunc = _flag(res[2], rec.num_envs), _flag(res[3], rec.num_envs)
        together = term & trunc
        if together.any() and not both_allowed:
            env = int(np.flatnonzero(together)[0])
            return CheckResult(name, False,
                               f"terminated and truncated both True at step {t}, env {env}")
        terminals += int(term.sum())
        both += int(together.sum())
    detail = f"{terminals} terminal env-steps seen"
    if both_allowed:
        detail += f", {both} of them also truncated (the spec allows both at once)"
    return CheckResult(name, True, detail)


def _non_finite(what: str, x) -> str | None:
    x = np.asarray(x)
    if x.dtype.kind not in "fc" or np.isfinite(x).all():
        return None
    bad = ~np.isfinite(x)
    env = int(np.flatnonzero(bad.reshape(len(x), -1).any(axis=1))[0]) if x.ndim else 0
    return f"{what} env {env} = {x[bad][0].item()!r}"


def check_no_nan(rec: _Recording) -> CheckResult:
    if rec.error:
        return CheckResult(NO_NAN, False, rec.error)
    for t, state in enumerate(rec.states):
        arrays = [("obs", rec.reset_obs)] if t == 0 else [
            ("obs", rec.results[t - 1][0]), ("reward", rec.results[t - 1][1])]
        arrays += [(f"state[{k!r}]", v) for k, v in state.items()]
        for what, x in arrays:
            found = _non_finite(what, x)
            if found:
                return CheckResult(NO_NAN, False, f"{_when(t)}: {found}")
    return CheckResult(NO_NAN, True)


# -- the checks that drive backends again --------------------------------------------------------
def _observed(state: dict, res=None) -> dict:
    """The state plus what the step returned, compared together."""
    out = dict(state)
    if res is not None:
        out.update({f"StepResult.{k}": v for k, v in zip(StepResult._fields, res, strict=True)})
    return out


def _replay_mismatch(backend: Backend, rec: _Recording, seed: int) -> str | None:
    """Reset ``backend`` with ``seed``, replay the recorded actions; the first difference."""
    backend.reset(seed)
    for t in range(rec.steps + 1):
        res = None
        if t:
            res = backend.step(rec.actions[t - 1].copy())
        got = _observed(backend.state(), res)
        want = _observed(rec.states[t], rec.results[t - 1] if t else None)
        diffs = diff_states(want, got)
        if diffs:
            more = f" (and {len(diffs) - 1} more field(s))" if len(diffs) > 1 else ""
            return f"{_when(t)}: {diffs[0]}{more} (first run = reference)"
    return None


def check_determinism(backend: Backend, make_backend: Callable[[], Backend], rec: _Recording,
                      seed: int) -> CheckResult:
    if rec.error:
        return CheckResult(DETERMINISM, False, rec.error)
    found = _replay_mismatch(backend, rec, seed)
    if found:
        return CheckResult(DETERMINISM, False, f"the same backend, reset again, {found}")
    other = make_backend()
    try:
        found = _replay_mismatch(other, rec, seed)
    finally:
        other.close()
    if found:
        return CheckResult(DETERMINISM, False, f"a second backend from make_backend(), {found}")
    return CheckResult(DETERMINISM, True,
                       f"{rec.steps} steps, twice on one backend and once on a second")


def _batch_leading(v, n: int) -> bool:
    return np.ndim(v) > 0 and len(v) == n


def _rows(state: dict, envs: np.ndarray, n: int) -> dict:
    """The rows of ``envs`` of every batch-leading field (other fields whole)."""
    return {k: np.asarray(v)[envs] if _batch_leading(v, n) else v for k, v in state.items()}


def _ended(res, n: int) -> np.ndarray:
    return _flag(res[2], n) | _flag(res[3], n)


def _follow(backend: Backend, rec: _Recording, k: int, end: int) -> tuple[str | None, int]:
    """Load the state after step ``k`` into ``backend``, step it to ``end`` with the recorded
    actions; the first difference from the recording (or None) and the env-steps compared."""
    n, loaded = rec.num_envs, rec.states[k]
    backend.load(_copy_state(loaded))
    diffs = diff_states(loaded, backend.state())
    if diffs:
        return f"state() right after load(state after step {k}) differs from it: {diffs[0]}", 0
    # an env that ended at step k starts a new episode next, maybe from hidden RNG
    alive = ~_ended(rec.results[k - 1], n)
    compared = 0
    for t in range(k + 1, end + 1):
        if not alive.any():
            break
        res = backend.step(rec.actions[t - 1].copy())
        want = _observed(rec.states[t], rec.results[t - 1])
        diffs = diff_states(_rows(want, alive, n), _rows(_observed(backend.state(), res), alive, n))
        if diffs:
            d = diffs[0]
            if getattr(d, "kind", "value") == "value" and _batch_leading(want[d.field], n):
                d.env = int(np.flatnonzero(alive)[d.env])  # it indexed the alive envs
            return (f"loaded the state after step {k}; {t - k} step(s) later: {d} "
                    "(reference = the run without load)"), compared
        compared += int(alive.sum())
        alive &= ~_ended(rec.results[t - 1], n)
    return None, compared


def check_load(make_backend: Callable[[], Backend], supports_load: bool,
               rec: _Recording) -> CheckResult:
    """Load recorded states into one new backend in turn (it was never reset, then it holds
    the previous load: L2 reuses backends so), each followed for a quarter of the rollout."""
    if not supports_load:
        return CheckResult(LOAD, True, "backend does not support load (supports_load is False): "
                                       "skipped")
    if rec.error:
        return CheckResult(LOAD, False, rec.error)
    gap = max(1, rec.steps // 4)
    points = list(range(gap, rec.steps, gap))
    compared = 0
    fresh = make_backend()
    try:
        for k in points:
            found, n = _follow(fresh, rec, k, min(k + gap, rec.steps))
            if found:
                return CheckResult(LOAD, False, found)
            compared += n
    finally:
        fresh.close()
    return CheckResult(LOAD, True, f"the states after steps {points} loaded in turn into a new "
                                   f"backend; then {compared} env-steps matched")


def _wrong_shapes(actions: np.ndarray) -> list[np.ndarray]:
    """Valid values in shapes no backend may accept: one env too many, an extra last axis."""
    actions = np.atleast_1d(actions)
    return [np.concatenate([actions, actions[:1]]), np.stack([actions, actions], axis=-1)]


def check_bad_input(spec: EnvSpec, backend: Backend, rec: _Recording, seed: int) -> CheckResult:
    """Each wrong shape raises ActionError and leaves the state as it was (nothing applied)."""
    if not rec.actions:
        return CheckResult(BAD_INPUT, False, rec.error or "no actions were sampled")
    want = (rec.num_envs, *spec.action_space.shape)
    wrong = _wrong_shapes(rec.actions[0])
    for bad in wrong:
        backend.reset(seed)
        before = _copy_state(backend.state())
        try:
            backend.step(bad)
        except ActionError:
            diffs = diff_states(before, backend.state())
            if diffs:
                return CheckResult(BAD_INPUT, False, f"actions of shape {bad.shape} raised "
                                   f"ActionError but changed the state: {diffs[0]}")
            continue
        except Exception as e:  # noqa: BLE001 - the wrong error is the finding
            return CheckResult(BAD_INPUT, False, f"actions of shape {bad.shape} (expected "
                               f"{want}) {raised(e)}, not envport.errors.ActionError")
        return CheckResult(BAD_INPUT, False, f"actions of shape {bad.shape} were accepted "
                           f"(expected {want}): raise envport.errors.ActionError")
    return CheckResult(BAD_INPUT, True, f"shapes {', '.join(str(b.shape) for b in wrong)} "
                       f"refused (expected {want}), the state left as it was")


# -- all of them ---------------------------------------------------------------------------------
def _guarded(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    try:
        return check()
    except Exception as e:  # noqa: BLE001 - the backend's failure is the check's finding
        return CheckResult(name, False, raised(e))


def _uniform(spec: EnvSpec) -> ActionSampler:
    return lambda rng, n: spec.action_space.sample(rng, (n,))


def run_backend_checks(make_backend: Callable[[], Backend],
                       sample_actions: ActionSampler | None = None, *, steps: int = 100,
                       seed: int = 0) -> list[CheckResult]:
    """The backend-level L1 checks (see the module doc); ``make_backend()`` makes a new backend
    each call, ``sample_actions(rng, num_envs)`` one batch of actions (default: uniform over the
    spec's action space). ``steps`` steps from ``reset(seed)``."""
    if steps < 2:
        raise ValueError(f"steps must be >= 2 (load is checked between two steps), got {steps}")
    names = [SPEC, SHAPES, STATE, DETERMINISM, TERMINAL, NO_NAN, LOAD, BAD_INPUT]
    try:
        backend = make_backend()
    except Exception as e:  # noqa: BLE001
        return [CheckResult(n, False, f"make_backend() {raised(e)}") for n in names]
    try:
        results = _checks_on(backend, make_backend, sample_actions, steps, seed)
    except Exception as e:  # noqa: BLE001 - e.g. a spec property that raises
        results = [CheckResult(n, False, raised(e)) for n in names]
    finally:
        closed = _guarded(CLOSE, lambda: _close(backend))
    # close() is no check of its own unless it fails: its failure must not go unseen
    return results if closed.passed else [*results, closed]


def _close(backend: Backend) -> CheckResult:
    backend.close()
    return CheckResult(CLOSE, True)


def _checks_on(backend: Backend, make_backend: Callable[[], Backend],
               sample_actions: ActionSampler | None, steps: int, seed: int) -> list[CheckResult]:
    results = [_guarded(SPEC, lambda: check_spec(backend))]
    spec = backend.spec
    terminal = TERMINAL_BOTH_ALLOWED if getattr(spec, "terminated_and_truncated", 0) else TERMINAL
    rec = _record(backend, sample_actions or _uniform(spec), steps, seed)
    results += [
        _guarded(SHAPES, lambda: check_shapes(spec, rec)),
        _guarded(STATE, lambda: check_state(rec)),
        _guarded(DETERMINISM, lambda: check_determinism(backend, make_backend, rec, seed)),
        _guarded(terminal, lambda: check_terminal(spec, rec)),
        _guarded(NO_NAN, lambda: check_no_nan(rec)),
        _guarded(LOAD, lambda: check_load(make_backend, bool(backend.supports_load), rec)),
        _guarded(BAD_INPUT, lambda: check_bad_input(spec, backend, rec, seed)),
    ]
    return results
