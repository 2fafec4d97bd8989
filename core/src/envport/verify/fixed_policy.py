"""L4 with a fixed, untrained policy played on two numpy backends.

The statistical half of a float port's verification: when a chaotic physics port parts from its
reference within tens of steps (roundoff grows), the per-step comparisons of L3 stop at the
chaos horizon, and what remains to show is that the *distribution* of episodes is the same.
:func:`random_policy_suite` makes an :class:`~envport.registry.L4Suite` in which a uniformly
random policy (or any action sampler) plays one episode per env on each backend and TOST
compares the mean episode returns.

Each env counts its first episode only (an env that finished keeps being stepped, its backend
resets it, but it no longer counts), as :func:`envport.train.host.evaluate_backend` does for
trained policies: taking the first ``n`` episodes that end from fewer envs would favour short
ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envport.backend import Backend
from envport.errors import EnvportError, UnfinishedEpisodesError
from envport.registry import ActionSampler, L4Suite

__all__ = ["play_episodes", "random_policy_suite", "uniform_actions"]


def uniform_actions(backend: Backend) -> ActionSampler:
    """Uniform over the backend's action space (Box bounds or Discrete values)."""
    space = backend.spec.action_space
    return lambda rng, n: space.sample(rng, (n,))


def play_episodes(backend: Backend, seed: int, sample_actions: ActionSampler | None = None, *,
                  max_steps: int = 100_000, progress: Callable[[int], None] | None = None
                  ) -> np.ndarray:
    """float64[backend.num_envs]: each env's first-episode return from ``backend.reset(seed)``,
    actions drawn by ``sample_actions(rng, num_envs)`` from ``numpy.random.default_rng(seed)``
    (default: uniform over the action space). ``progress(k)`` gets the number of episodes that
    ended at each step. Raises :class:`UnfinishedEpisodesError` after ``max_steps``, and
    :class:`~envport.errors.EnvportError` for a NaN or infinite reward."""
    n = backend.num_envs
    sample = sample_actions or uniform_actions(backend)
    rng = np.random.default_rng(seed)
    backend.reset(seed)
    total, done = np.zeros(n, np.float64), np.zeros(n, bool)
    for _ in range(max_steps):
        r = backend.step(sample(rng, n))
        reward = np.asarray(r.reward, np.float64).reshape(n)
        live = ~done
        if not np.all(np.isfinite(reward[live])):
            raise EnvportError(f"{backend.name} returned a NaN or infinite reward")
        total[live] += reward[live]
        ended = live & (np.asarray(r.terminated, bool) | np.asarray(r.truncated, bool)).reshape(n)
        done |= ended
        if progress is not None and ended.any():
            progress(int(ended.sum()))
        if done.all():
            return total
    raise UnfinishedEpisodesError(f"{int((~done).sum())} of {n} episodes on {backend.name} were "
                                  f"still running after {max_steps} steps")


def random_policy_suite(name: str, make_reference: Callable[[int], Backend],
                        make_candidate: Callable[[int], Backend], *, margin: float,
                        episodes: int = 1000, metric: str = "episode return",
                        sample_actions: ActionSampler | None = None, max_steps: int = 100_000,
                        note: str = "", seed: int = 0, alpha: float = 0.05) -> L4Suite:
    """An L4 suite: ``sample_actions`` (default uniform over the action space) plays one
    episode on each of ``episodes`` envs of ``make_reference(episodes)`` and of
    ``make_candidate(episodes)`` (independent seeds, as every L4 suite), and TOST with
    ``margin`` (in return units) compares the mean returns. Each backend is closed after."""

    def on(make_backend: Callable[[int], Backend]):
        def play(n: int, eval_seed: int, tick) -> np.ndarray:
            backend = make_backend(n)
            try:
                return play_episodes(backend, eval_seed, sample_actions, max_steps=max_steps,
                                     progress=tick)
            finally:
                backend.close()
        return play

    return L4Suite(name=name, evaluate_reference=on(make_reference),
                   evaluate_candidate=on(make_candidate), metric=metric, episodes=episodes,
                   margin=margin, alpha=alpha, seed=seed, note=note,
                   info={"policy": "fixed: " + ("uniform over the action space"
                                                if sample_actions is None else "given sampler")})
