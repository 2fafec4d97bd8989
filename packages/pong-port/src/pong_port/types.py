"""Pong state: flat scalars, exactly the fields of the C ``struct Pong`` that change."""

from __future__ import annotations

from typing import NamedTuple

import jax


class GlibcStream(NamedTuple):
    """A stretch of the glibc ``rand()`` sequence, precomputed ahead of use.

    ``words[:31]`` is the generator window before the next unconsumed value and
    ``words[31 + k]`` the raw word behind the k-th next ``rand()`` (output ``word >> 1``);
    ``used`` counts values consumed from ``words[31:]``.
    """

    words: jax.Array  # uint32[31 + capacity]
    used: jax.Array  # int32


class PongLog(NamedTuple):
    """``struct Log``: running sums over finished episodes (PufferLib averages them)."""

    perf: jax.Array
    score: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array
    n: jax.Array


class PongState(NamedTuple):
    paddle_yl: jax.Array  # float32
    paddle_yr: jax.Array
    ball_x: jax.Array
    ball_y: jax.Array
    ball_vx: jax.Array
    ball_vy: jax.Array
    score_l: jax.Array  # uint32
    score_r: jax.Array
    paddle_dir: jax.Array  # float32
    tick: jax.Array  # int32
    n_bounces: jax.Array
    win: jax.Array
    obs: jax.Array  # float32[8]; may be stale after a point, as in the reference
    reward: jax.Array  # float32
    terminal: jax.Array  # bool
    log: PongLog
