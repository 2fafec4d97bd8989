"""L4 with a fixed, untrained policy played on two numpy backends.

The statistical half of a float port's verification: when a chaotic physics port parts from its
reference within tens of steps (roundoff grows), the per-step comparisons of L3 stop at the
chaos horizon, and what remains to show is that the *distribution* of episodes is the same.
:func:`random_policy_suite` makes an :class:`~envport.registry.L4Suite` in which a uniformly
random policy (or any action sampler) plays one episode per env on each backend and TOST
compares the mean episode returns.

Each env counts its first episode only, as :func:`envport.train.host.evaluate_backend` does for
trained policies: both play through :func:`envport.episodes.first_episode_scores`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envport.backend import Backend
from envport.episodes import first_episode_scores
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
    :class:`~envport.errors.EnvportError` for a NaN or infinite reward
    (:func:`envport.episodes.first_episode_scores`)."""
    n = backend.num_envs
    sample = sample_actions or uniform_actions(backend)
    rng = np.random.default_rng(seed)
    return first_episode_scores(backend, seed, lambda obs: sample(rng, n),
                                max_steps=max_steps, progress=progress)


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
