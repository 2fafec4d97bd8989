"""Helpers for env packages' own test suites."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from envport.backend import Backend
from envport.env import Env
from envport.types import Box, Discrete
from envport.verify.checks import CheckResult, run_checks


def default_sampler(env: Env) -> Callable[[np.random.Generator], Any]:
    space = env.spec.action_space
    if isinstance(space, Discrete):
        return lambda rng: np.int32(rng.integers(0, space.n))
    if isinstance(space, Box):
        return lambda rng: rng.uniform(space.low, space.high, space.shape).astype(space.dtype)
    raise TypeError(f"no default sampler for {space!r}")


def _raise_failed(what: str, results: list[CheckResult]) -> list[CheckResult]:
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError(
            f"{what} failed {len(failed)} generic check(s):\n"
            + "\n".join(f"  - {r.name}: {r.detail}" for r in failed)
        )
    return results


def check_env(env: Env, sample_action: Callable[[np.random.Generator], Any] | None = None,
              **kwargs) -> list[CheckResult]:
    """Run the L1 generic checks of a JAX env; raise ``AssertionError`` listing every failure."""
    return _raise_failed(repr(env), run_checks(env, sample_action or default_sampler(env),
                                               **kwargs))


def check_backend(make_backend: Callable[[], Backend],
                  sample_actions: Callable[[np.random.Generator, int], np.ndarray] | None = None,
                  **kwargs) -> list[CheckResult]:
    """Run the L1 generic checks of a backend (any candidate, JAX or not: spec, shapes and
    dtypes, determinism under the same seed, terminal flags, no NaN, ``load(state())`` round
    trip); ``make_backend()`` makes a new one each call. Raise ``AssertionError`` listing
    every failure."""
    from envport.verify.backend_checks import run_backend_checks

    results = run_backend_checks(make_backend, sample_actions, **kwargs)
    return _raise_failed(f"backend from {getattr(make_backend, '__name__', make_backend)!r}",
                         results)


def assert_shortest_prefix(make_reference: Callable[[], Backend],
                           make_candidate: Callable[[], Backend], seed: int, prefix,
                           tolerance=0.0, first_episode_only: bool = False) -> None:
    """Check a shrunk L3 case on fresh backends: replaying ``prefix`` (actions, T first) from
    ``reset(seed)`` diverges at its last step, and one action less does not diverge at all
    (an empty prefix: the states differ right after ``reset``). Raises ``AssertionError``."""
    from envport.verify.l3 import replay_divergence

    prefix = np.asarray(prefix)
    ref, cand = make_reference(), make_candidate()
    try:
        found = replay_divergence(ref, cand, seed, prefix, tolerance, first_episode_only)
        assert found is not None, f"the prefix of {len(prefix)} actions does not diverge"
        assert found[0] == len(prefix) - 1, (
            f"the prefix of {len(prefix)} actions diverges at step {found[0]}, before its last "
            f"step: it is not the shortest")
        if len(prefix):
            shorter = replay_divergence(ref, cand, seed, prefix[:-1], tolerance,
                                        first_episode_only)
            assert shorter is None, (f"one action less ({len(prefix) - 1}) diverges too, at "
                                     f"step {shorter[0]}")
    finally:
        ref.close()
        cand.close()
