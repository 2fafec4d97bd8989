"""Helpers for env packages' own test suites."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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


def check_env(env: Env, sample_action: Callable[[np.random.Generator], Any] | None = None,
              **kwargs) -> list[CheckResult]:
    """Run the L1 generic checks; raise ``AssertionError`` listing every failure."""
    results = run_checks(env, sample_action or default_sampler(env), **kwargs)
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError(
            f"{env!r} failed {len(failed)} generic check(s):\n"
            + "\n".join(f"  - {r.name}: {r.detail}" for r in failed)
        )
    return results
