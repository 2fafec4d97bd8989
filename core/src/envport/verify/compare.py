"""``envport.compare``: the verification hierarchy as one library call on any two backends.

No env package needed: give the reference and the candidate (a :class:`~envport.backend.Backend`,
a function that makes one, or for the candidate a JAX :class:`~envport.env.Env`), how to draw
L3 actions and, for L2, cases; get a :class:`~envport.verify.engine.Comparison` back. Reports
are written only when ``report_dir`` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from envport.backend import Backend, JaxBackend
from envport.env import Env
from envport.errors import EnvportError
from envport.registry import ActionSampler, L1BackendTarget, L2Suite, L3Suite, L4Suite
from envport.verify.diff import ToleranceSpec, field_tolerances
from envport.verify.engine import LEVELS, Comparison, run_suites
from envport.verify.l3 import CHUNK
from envport.verify.workers import check_pair, check_workers

BackendLike = Backend | Callable[[], Backend]
CaseSampler = Callable[[np.random.Generator, int], tuple[dict, np.ndarray]]


class _Borrowed(Backend):
    """A backend the caller owns: used as is, never closed by the verifier."""

    def __init__(self, inner: Backend):
        self.inner = inner
        self.name, self.spec, self.num_envs = inner.name, inner.spec, inner.num_envs
        self.supports_load = inner.supports_load

    def reset(self, seed):
        return self.inner.reset(seed)

    def step(self, actions):
        return self.inner.step(actions)

    def state(self):
        return self.inner.state()

    def load(self, state):
        return self.inner.load(state)

    def rollout(self, actions):
        return self.inner.rollout(actions)

    def describe(self) -> str:
        return self.inner.describe()


def _factory(x, what: str, workers: int) -> Callable[[], Backend]:
    if isinstance(x, Backend):
        if workers > 1:
            raise EnvportError(
                f"workers={workers} needs the {what} as a function that makes a backend (each "
                f"worker makes its own, with its own process); got a {type(x).__name__} object")
        return lambda: _Borrowed(x)
    if callable(x) and not isinstance(x, Env):
        return x
    raise EnvportError(f"the {what} must be an envport Backend or a function returning one, "
                       f"got {type(x).__name__}")


def _made(factory: Callable[[], Backend], what: str) -> Backend:
    b = factory()
    if not isinstance(b, Backend):
        raise EnvportError(f"the {what} factory returned {type(b).__name__}, not an envport "
                           "Backend")
    return b


def _uniform(space) -> ActionSampler:
    return lambda rng, n: space.sample(rng, (n,))


def _fast_rollout(b: Backend) -> bool:
    inner = b.inner if isinstance(b, _Borrowed) else b
    return type(inner).rollout is not Backend.rollout


def compare(
    reference: BackendLike, candidate: BackendLike | Env, *,
    actions: ActionSampler | None = None, episodes: int = 100, max_steps: int = 10_000,
    cases: CaseSampler | None = None, n_cases: int = 1000,
    tolerance: ToleranceSpec = 0.0, levels: Sequence[str] | None = None,
    l4: Sequence[L4Suite] = (), first_episode_only: bool = True, chunk: int | None = None,
    neutral_action: Callable[[int], np.ndarray] | None = None,
    workers: int = 1, ray: str | bool | None = None, report_dir: Path | str | None = None,
    name: str = "compare", progress: bool = False, l1_steps: int = 100,
) -> Comparison:
    """Verify ``candidate`` against ``reference`` at every level the arguments allow.

    - **L1**: the candidate's generic checks (``check_backend``; a JAX ``Env`` candidate also
      gets ``check_env``'s jit/vmap/retracing checks).
    - **L2** (only with ``cases``): ``cases(rng, num_envs) -> (state, actions)``; both
      backends ``load`` the state and take the actions; ``n_cases`` cases in all.
    - **L3**: seeds 0, 1, ... reset both; ``actions(rng, num_envs)`` (default: uniform over the
      action space) drives both; every step compared until ``episodes`` episodes ended. With
      ``first_episode_only`` (the default) each env is compared up to the end of its first
      episode: later episodes start from resets that need not agree (an unseeded Gymnasium
      reset, a JAX key); ports that carry the reference's RNG can compare everything (False).
      A divergence is shrunk to the shortest diverging action prefix (``neutral_action(n)``
      also simplifies it).
    - **L4**: the given :class:`~envport.registry.L4Suite` s.

    ``reference``/``candidate``: a :class:`Backend` (used as is, never closed), a function
    returning a new one (needed for ``workers > 1`` or ``ray``: each worker makes its own), or
    for the candidate a single JAX :class:`Env`, run as ``JaxBackend.from_env`` with the
    reference's ``num_envs``. Both must have the same ``num_envs`` and spaces.
    ``tolerance``: 0 bit-exact; a number (absolute), ``Tolerance(atol, rtol)``, or a dict of
    those per field (unnamed fields exact). Equivalent when L1 and L3 (and L2 with ``cases``,
    L4 with suites) ran and passed. ``report_dir``: also write ``<report_dir>/<name>/verify.json``
    and ``verify.md`` (and the L3 regression cases).

    Before any level runs, one reference and one candidate are made (or the given objects
    used) to check the pair: same ``num_envs`` and spaces, tolerance fields that exist. Bad
    input raises :class:`~envport.errors.EnvportError` saying what is wrong.
    """
    check_workers(workers)
    parallel = workers > 1 or (ray is not None and ray is not False)
    ref_factory = _factory(reference, "reference", 2 if parallel else 1)
    ref = _made(ref_factory, "reference")
    try:
        if isinstance(candidate, Env):
            env, n = candidate, ref.num_envs
            cand_factory = lambda: JaxBackend.from_env(env, n)  # noqa: E731
        else:
            cand_factory = _factory(candidate, "candidate", 2 if parallel else 1)
        cand = _made(cand_factory, "candidate")
        try:
            check_pair(ref, cand, name)
            ref.reset(0)
            cand.reset(0)
            field_tolerances(tolerance, set(ref.state()) | set(cand.state()))
            spec, num_envs = ref.spec, ref.num_envs
            describe = (ref.describe(), cand.describe())
            fast = _fast_rollout(ref) and _fast_rollout(cand)
            can_load = ref.supports_load and cand.supports_load
        finally:
            cand.close()
    finally:
        ref.close()
    if cases is not None and not can_load:
        raise EnvportError("L2 cases were given but the reference or the candidate cannot load a "
                           "state (supports_load is False): L2 starts both from the same state")
    l1 = [L1BackendTarget(f"{describe[1]} (backend checks)", cand_factory, actions,
                          steps=l1_steps)]
    env_targets = []
    if isinstance(candidate, Env):
        from envport.registry import L1Target
        from envport.testing import default_sampler

        env_targets = [L1Target(f"{candidate!r} (JAX env checks)", lambda: candidate,
                                default_sampler(candidate))]
    l3 = L3Suite(name=name, make_reference=ref_factory, make_candidate=cand_factory,
                 sample_actions=actions or _uniform(spec.action_space), episodes=episodes,
                 max_steps_per_seed=max_steps, neutral_action=neutral_action,
                 chunk=chunk or (CHUNK if fast else 16), first_episode_only=first_episode_only)
    l2 = [] if cases is None else [
        L2Suite(name=name, make_reference=lambda _n: ref_factory(),
                make_candidate=lambda _n: cand_factory(), make_cases=cases, cases=n_cases,
                batch=num_envs)]
    required = {"L1", "L3"} | ({"L2"} if l2 else set()) | ({"L4"} if l4 else set())
    if levels is None:
        levels = [lv for lv in LEVELS if lv in required]
    out = run_suites(name, describe[0], describe[1], l1=env_targets + l1, l2=l2, l3=[l3],
                     l4=l4, tolerance=tolerance, levels=levels, required=required,
                     workers=workers, ray=ray, progress=progress,
                     regressions_dir=None if report_dir is None
                     else Path(report_dir) / name / "regressions")
    if report_dir is not None:
        out.write(report_dir)
    return out


__all__ = ["compare", "CaseSampler", "BackendLike"]
