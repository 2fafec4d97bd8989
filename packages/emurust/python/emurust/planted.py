"""A planted sim gap for power tests of L4: game.gb on emurust's ``VecEnv`` with the joypad one
step late.

:class:`LateInput` is :class:`emurust.train.VecEnvBackend` except that each step holds the
buttons of the *previous* step (none on an episode's first step): the bug of a port that
latches the new button mask only after the step's frames have run, or double-buffers the
joypad and swaps the buffers in the wrong place. Nothing else differs (spec, observations,
rewards, resets), so only a policy's play shows it: a policy reacts 4 frames late, and the
faster blocks of a good game get away. On 500k-step PPO policies it takes the mean catches per
game from 17.1 to 5.4 and from 19.5 to 4.9 (seeds 0 and 1, 1,000 games each; docs/training.md).
"""

from __future__ import annotations

import numpy as np

from emurust.train import VecEnvBackend
from envport.actions import validate_actions
from envport.backend import Backend, StepResult


class LateInput(Backend):
    """``num_envs`` game.gb envs on ``VecEnv`` whose actions take effect one step late."""

    def __init__(self, num_envs: int, **kwargs):
        self.inner = VecEnvBackend(num_envs, **kwargs)
        self.num_envs, self.spec = self.inner.num_envs, self.inner.spec
        self.name = f"{self.inner.name}, input one step late (planted)"
        self._held = np.zeros(self.num_envs, np.int64)

    def reset(self, seed: int) -> np.ndarray:
        self._held[:] = 0
        return self.inner.reset(seed)

    def step(self, actions) -> StepResult:
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        result = self.inner.step(self._held)
        # this step's buttons go in next step; a restarted game starts with none held
        self._held = np.where(result.terminated | result.truncated, 0, actions).astype(np.int64)
        return result

    def state(self) -> dict[str, np.ndarray]:
        return self.inner.state()

    def close(self) -> None:
        self.inner.close()
