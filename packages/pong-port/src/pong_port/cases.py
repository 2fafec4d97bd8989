"""L2 cases for Pong: arbitrary states, deliberately dense near the branches of ``c_step``.

The C reference can load any state into its ``struct Pong`` (through ctypes), but its RNG is
libc's global generator, which can only be positioned by ``srand(seed)`` and ``draws`` calls
to ``rand()``. So a case's RNG position is such a pair, applied to both sides.
"""

from __future__ import annotations

import numpy as np

from pong_port.config import PongConfig


def sample_states(rng: np.random.Generator, n: int, config: PongConfig) -> dict[str, np.ndarray]:
    c = config
    f = np.float32
    lo, hi = float(c.min_paddle_y), float(c.max_paddle_y)

    def mix(*options, p=None):
        """Per env, pick one of several candidate arrays."""
        idx = rng.choice(len(options), size=n, p=p)
        return np.choose(idx, options)

    paddle = lambda: mix(rng.uniform(lo - 20, hi + 20, n), np.full(n, lo), np.full(n, hi),  # noqa: E731
                         rng.uniform(lo, hi, n), p=[0.3, 0.1, 0.1, 0.5]).astype(f)
    ball_x = mix(rng.uniform(0, c.width - c.ball_width, n),
                 rng.uniform(-2 * c.ball_initial_speed_x, 2 * c.ball_initial_speed_x, n),
                 c.width - c.ball_width + rng.uniform(-2, 2, n) * c.ball_initial_speed_x,
                 p=[0.4, 0.3, 0.3]).astype(f)
    ball_y = mix(rng.uniform(0, c.height - c.ball_height, n), rng.uniform(-15, 15, n),
                 c.height - c.ball_height + rng.uniform(-15, 15, n), p=[0.6, 0.2, 0.2]).astype(f)
    speed_x = c.ball_initial_speed_x
    ball_vx = mix(np.full(n, speed_x), np.full(n, -speed_x), rng.uniform(-2 * speed_x, 2 * speed_x, n),
                  p=[0.45, 0.45, 0.1]).astype(f)
    my = c.ball_max_speed_y
    ball_vy = mix(rng.uniform(-my, my, n), np.full(n, my), np.full(n, -my), np.zeros(n),
                  rng.uniform(-0.02, 0.02, n), rng.integers(-4, 5, n) * c.ball_speed_y_increment,
                  p=[0.5, 0.1, 0.1, 0.1, 0.1, 0.1]).astype(f)
    near_end = rng.random(n) < 0.3
    score = lambda: np.where(near_end, c.max_score - 1, rng.integers(0, c.max_score, n)).astype(np.uint32)  # noqa: E731
    state = {
        "paddle_yl": paddle(), "paddle_yr": paddle(), "ball_x": ball_x, "ball_y": ball_y,
        "ball_vx": ball_vx, "ball_vy": ball_vy, "score_l": score(), "score_r": score(),
        "paddle_dir": rng.choice(np.array([-1, 0, 1], f), n),
        "tick": rng.integers(0, 5000, n).astype(np.int32),
        "n_bounces": rng.integers(0, 100, n).astype(np.int32),
        "win": rng.integers(0, 2, n).astype(np.int32),
        # a stale observation must survive a step that ends with a point
        "obs": rng.uniform(-0.5, 1.5, (n, 8)).astype(f),
        "reward": rng.choice(np.array([0, 0.1, 1, -1], f), n),
        "terminated": rng.random(n) < 0.1,
    }
    for name in ("perf", "score", "episode_return", "episode_length", "n"):
        state["log_" + name] = rng.integers(0, 50, n).astype(f)
    # the libc stream position: srand(seed) followed by `draws` rand() calls
    state["rng"] = np.array([rng.integers(0, 2**31 - 1), rng.integers(0, 64)], np.int64)
    return state


def sample_actions(rng: np.random.Generator, n: int, config: PongConfig,
                   out_of_range: float = 0.0) -> np.ndarray:
    """Random actions; for discrete envs a fraction ``out_of_range`` lies outside 0..2,
    which the reference treats as 'still'."""
    if config.continuous:
        # mostly inside [-1, 1]; some outside, which the Python wrapper clips
        return rng.uniform(-1.2, 1.2, (n, 1)).astype(np.float32)
    acts = rng.integers(0, 3, n)
    if out_of_range:
        wild = rng.random(n) < out_of_range
        acts = np.where(wild, rng.choice(np.array([-7, -1, 3, 4, 100]), n), acts)
    return acts.astype(np.int32)
