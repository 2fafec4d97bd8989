"""A small numpy env as a Backend, with planted bugs, for the verifier's own tests.

``Walk``: ``num_envs`` walkers on a line. Action 0 left, 1 stay, 2 right; reaching ``GOAL``
terminates (reward 1), ``max_steps`` steps truncate; an ended env restarts at the start of
its next step, from the backend's own generator (seeded by ``reset``), so the state of the
step that ends an episode shows how it ended. The canonical state carries an int position,
counters, a float ``score`` and the flags.

Planted bugs (candidate side), each a difference of exactly one kind:

- ``"score"``: the score gains 0.5 more whenever a walker stands on cell 3 (one field, L2);
- ``"third_right"``: a walker's third step right moves it two cells (L3: diverges at the step
  of the first third right, which only the actions decide);
- ``"score_noise"``: the score is off by ``noise`` (a tolerance question);
- ``"score_nan"``: the score becomes NaN on cell 3;
- ``"reset_draw"``: restarts after an episode draw from another generator (later episodes
  differ; the first one of each env does not);
- ``"int32_pos"``: the position is an int32 (a dtype difference).

``kill_on_seed`` makes ``reset(seed)`` kill its own process (a worker dying), once if a
``marker`` file is given (it is created first), always otherwise.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envport.actions import validate_actions
from envport.backend import Backend, StepResult
from envport.types import Box, Discrete, EnvSpec

GOAL = 6
SPEC = EnvSpec("test/Walk", "v0", Box(0.0, float(GOAL), (1,), np.float32), Discrete(3))


@dataclass
class Tally:
    """Counters a suite's backends increment (merged from worker processes)."""

    resets: int = 0
    steps: int = 0


class Walk(Backend):
    name, spec, supports_load = "walk", SPEC, True

    def __init__(self, num_envs: int = 4, bug: str | None = None, max_steps: int = 40,
                 noise: float = 1e-9, tally: Tally | None = None, kill_on_seed: int | None = None,
                 marker: str | Path | None = None):
        self.num_envs, self.bug, self.max_steps, self.noise = num_envs, bug, max_steps, noise
        self.tally, self.kill_on_seed, self.marker = tally, kill_on_seed, marker
        self._fields()
        self.rng = np.random.default_rng(0)
        self.other = np.random.default_rng(99)

    def _fields(self) -> None:
        n = self.num_envs
        self.pos = np.zeros(n, np.int32 if self.bug == "int32_pos" else np.int64)
        self.t = np.zeros(n, np.int64)
        self.rights = np.zeros(n, np.int64)
        self.score = np.zeros(n, np.float64)
        self.reward = np.zeros(n, np.float64)
        self.term = np.zeros(n, bool)
        self.trunc = np.zeros(n, bool)

    def _obs(self) -> np.ndarray:
        return self.pos[:, None].astype(np.float32)

    def reset(self, seed: int) -> np.ndarray:
        if self.kill_on_seed is not None and seed == self.kill_on_seed:
            if self.marker is None or not Path(self.marker).exists():
                if self.marker is not None:
                    Path(self.marker).touch()
                os.kill(os.getpid(), signal.SIGKILL)
        if self.tally is not None:
            self.tally.resets += 1
        self.rng = np.random.default_rng(seed)
        self.other = np.random.default_rng(seed + 1000)
        self._fields()
        self.pos[:] = self.rng.integers(0, 3, self.num_envs)
        return self._obs()

    def step(self, actions) -> StepResult:
        a = validate_actions(self.spec.action_space, actions, self.num_envs).astype(np.int64)
        if self.tally is not None:
            self.tally.steps += 1
        self._restart(self.term | self.trunc)
        self.rights += a == 2
        move = a - 1
        if self.bug == "third_right":
            move = np.where((a == 2) & (self.rights == 3), 2, move)
        self.pos = np.maximum(self.pos + move, 0).astype(self.pos.dtype)
        self.t += 1
        self.term = self.pos >= GOAL
        self.trunc = (self.t >= self.max_steps) & ~self.term
        self.reward = self.term.astype(np.float64)
        self.score = self.score + self.reward
        on3 = self.pos == 3
        if self.bug == "score":
            self.score = self.score + 0.5 * on3
        elif self.bug == "score_noise":
            self.score = self.score + self.noise
        elif self.bug == "score_nan":
            self.score = np.where(on3, np.nan, self.score)
        return StepResult(self._obs(), self.reward.astype(np.float32), self.term.copy(),
                          self.trunc.copy())

    def _restart(self, done: np.ndarray) -> None:
        if not done.any():
            return
        gen = self.other if self.bug == "reset_draw" else self.rng
        fresh = gen.integers(0, 3, self.num_envs)
        self.pos = np.where(done, fresh, self.pos).astype(self.pos.dtype)
        for arr in (self.t, self.rights):
            arr[done] = 0
        self.score = np.where(done, 0.0, self.score)

    def state(self) -> dict:
        return {"pos": self.pos.copy(), "t": self.t.copy(), "rights": self.rights.copy(),
                "score": self.score.copy(), "reward": self.reward.copy(),
                "terminated": self.term.copy(), "truncated": self.trunc.copy()}

    def load(self, state: dict) -> None:
        self.pos = np.asarray(state["pos"]).astype(self.pos.dtype).copy()
        for name in ("t", "rights"):
            setattr(self, name, np.asarray(state[name], np.int64).copy())
        self.score = np.asarray(state["score"], np.float64).copy()
        self.reward = np.asarray(state.get("reward", np.zeros(self.num_envs)), np.float64).copy()
        self.term = np.asarray(state["terminated"], bool).copy()
        self.trunc = np.asarray(state["truncated"], bool).copy()


def actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 3, n).astype(np.int32)


def stay(n: int) -> np.ndarray:
    return np.ones(n, np.int32)


def cases(rng: np.random.Generator, n: int) -> tuple[dict, np.ndarray]:
    """L2 cases: any position, counters, score; flags off."""
    state = {"pos": rng.integers(0, GOAL, n), "t": rng.integers(0, 30, n),
             "rights": rng.integers(0, 3, n), "score": rng.integers(0, 4, n).astype(np.float64),
             "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool)}
    return state, actions(rng, n)
