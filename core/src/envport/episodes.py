"""One episode per env on a numpy :class:`~envport.backend.Backend`: the loop behind L4's
evaluations on a backend, for a fixed policy (:func:`envport.verify.fixed_policy.play_episodes`)
and for a trained one (:func:`envport.train.host.evaluate_backend`).

Each env counts its first episode only: an env that finished keeps being stepped (the backend
resets it) but no longer counts. Taking the first ``n`` episodes that end, from fewer envs,
would favour short episodes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envport.backend import Backend, StepResult
from envport.errors import EnvportError, UnfinishedEpisodesError

__all__ = ["first_episode_scores"]


def first_episode_scores(backend: Backend, seed: int, act: Callable[[np.ndarray], np.ndarray],
                         points: Callable[[StepResult], np.ndarray] | None = None, *,
                         max_steps: int = 100_000,
                         progress: Callable[[int], None] | None = None,
                         what: str = "episodes") -> np.ndarray:
    """float64[backend.num_envs]: each env's first-episode total of ``points(result)`` (one
    step's float[num_envs]; default the reward) from ``backend.reset(seed)``, the actions being
    ``act(obs)`` of each step's observations. ``progress(k)`` gets the number of episodes that
    ended at each step. Raises :class:`UnfinishedEpisodesError` after ``max_steps``, and
    :class:`~envport.errors.EnvportError` when a running episode's points are NaN or
    infinite."""
    n = backend.num_envs
    obs = backend.reset(seed)
    total, done = np.zeros(n, np.float64), np.zeros(n, bool)
    for _ in range(max_steps):
        r = backend.step(act(obs))
        got = np.asarray(r.reward if points is None else points(r), np.float64).reshape(n)
        live = ~done
        if not np.all(np.isfinite(got[live])):
            raise EnvportError(f"{backend.name} returned a NaN or infinite reward")
        total[live] += got[live]
        ended = live & (np.asarray(r.terminated, bool) | np.asarray(r.truncated, bool)).reshape(n)
        done |= ended
        if progress is not None and ended.any():
            progress(int(ended.sum()))
        if done.all():
            return total
        obs = r.obs
    raise UnfinishedEpisodesError(f"{int((~done).sum())} of {n} {what} on {backend.name} were "
                                  f"still running after {max_steps} steps")
