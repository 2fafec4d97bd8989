"""A host-side corridor for the host-loop tests: numpy, auto-resetting, the same task as
``envport.toy.Corridor`` (random start before the goal, reward 1 at the goal)."""

from __future__ import annotations

import numpy as np

from envport import Box, Discrete, EnvSpec
from envport.backend import Backend, StepResult


class NumpyCorridor(Backend):
    """A host-side corridor (numpy, auto-resetting) for the host-loop driver."""

    name = "numpy-corridor"

    def __init__(self, num_envs: int, length: int = 6, nan_at: int | None = None):
        self.num_envs, self.length, self.nan_at, self.t = num_envs, length, nan_at, 0
        self.spec = EnvSpec("test/NumpyCorridor", "v0", Box(0.0, 1.0, (length,)), Discrete(3))

    def _obs(self):
        obs = np.eye(self.length, dtype=np.float32)[self.pos]
        if self.nan_at is not None and self.t >= self.nan_at:
            obs[1, 0] = np.nan
        return obs

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)
        self.pos = self.rng.integers(0, self.length - 1, self.num_envs)
        return self._obs()

    def legal_mask(self):
        return np.stack([self.pos > 0, np.ones_like(self.pos, bool), np.ones_like(self.pos, bool)], 1)

    def step(self, actions):
        assert not np.any((actions == 0) & (self.pos == 0)), "an illegal action reached the backend"
        self.t += 1
        self.pos = np.clip(self.pos + actions - 1, 0, self.length - 1)
        goal = self.pos == self.length - 1
        self.pos = np.where(goal, self.rng.integers(0, self.length - 1, self.num_envs), self.pos)
        return StepResult(self._obs(), goal.astype(np.float32), goal, np.zeros_like(goal))

    def state(self):
        return {"pos": self.pos}
