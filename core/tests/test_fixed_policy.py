"""L4 with a fixed random policy on two numpy backends (``envport.verify.fixed_policy``).

The backend here is a numpy "push": each step's reward is the mean of the action (plus a
planted ``bias``), and an env's episode ends after a length drawn from its seeded RNG at reset
(a later episode after the backend's own auto-reset is twice as long), so every count below is
known exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from envport.backend import Backend, StepResult
from envport.errors import EnvportError, UnfinishedEpisodesError
from envport.types import Box, EnvSpec
from envport.verify.fixed_policy import play_episodes, random_policy_suite, uniform_actions
from envport.verify.l4 import run_l4

SPEC = EnvSpec(id="push", version="0", observation_space=Box(-np.inf, np.inf, (1,)),
               action_space=Box(-1.0, 1.0, (2,)))


class Push(Backend):
    name, spec = "push", SPEC

    def __init__(self, num_envs: int, bias: float = 0.0, lengths=None, nan_at: int | None = None):
        self.num_envs, self.bias, self.nan_at = num_envs, bias, nan_at
        self.fixed_lengths = lengths
        self.actions: list[np.ndarray] = []
        self.closed = False

    def reset(self, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        self.length = (np.asarray(self.fixed_lengths) if self.fixed_lengths is not None
                       else rng.integers(1, 20, self.num_envs))
        self.t = np.zeros(self.num_envs, np.int64)
        self.steps = 0
        return np.zeros((self.num_envs, 1), np.float32)

    def step(self, actions) -> StepResult:
        actions = np.asarray(actions)
        self.actions.append(actions)
        self.steps += 1
        self.t += 1
        reward = actions.mean(axis=1) + self.bias
        if self.nan_at is not None and self.steps == self.nan_at:
            reward[0] = np.nan
        ended = self.t >= self.length
        self.t[ended] = 0
        self.length = np.where(ended, 2 * self.length, self.length)  # the next episode: longer
        return StepResult(np.zeros((self.num_envs, 1), np.float32), reward, ended,
                          np.zeros(self.num_envs, bool))

    def state(self) -> dict:
        return {"t": self.t.copy()}

    def close(self) -> None:
        self.closed = True


def test_each_env_counts_its_first_episode_only() -> None:
    # reward 1 per step (action 0, bias 1): env i's first episode lasts i + 1 steps; the
    # backend resets it and the next episode would add more, but it no longer counts
    b = Push(4, bias=1.0, lengths=[1, 2, 3, 4])
    zero = lambda rng, n: np.zeros((n, 2), np.float32)  # noqa: E731
    ticks: list[int] = []
    returns = play_episodes(b, seed=0, sample_actions=zero, progress=ticks.append)
    assert returns.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert b.steps == 4 and ticks == [1, 1, 1, 1]


def test_uniform_actions_cover_the_box_and_reach_the_backend() -> None:
    b = Push(500)
    returns = play_episodes(b, seed=3)
    acts = np.concatenate(b.actions)
    assert acts.shape[1:] == (2,) and acts.dtype == np.float32
    assert acts.min() >= -1.0 and acts.max() <= 1.0 and acts.min() < -0.99 and acts.max() > 0.99
    # the returns are sums of the drawn actions' means: centred on 0
    assert abs(returns.mean()) < 0.2 and returns.std() > 0.5
    # the same seed, the same actions and returns
    again = Push(500)
    assert np.array_equal(play_episodes(again, seed=3), returns)
    assert np.array_equal(np.concatenate(again.actions), acts)
    assert uniform_actions(b)(np.random.default_rng(0), 7).shape == (7, 2)


def test_equal_backends_are_equivalent_and_a_planted_bias_is_not() -> None:
    made: list[Push] = []

    def maker(bias):
        def make(n):
            made.append(Push(n, bias))
            return made[-1]
        return make

    same = random_policy_suite("push", maker(0.0), maker(0.0), margin=0.5, episodes=2000)
    res = run_l4(same)
    assert res.test.equivalent and res.test.p_value < 1e-6
    assert res.episodes == 2000 and res.reference_scores.shape == (2000,)
    assert all(b.closed for b in made)  # each evaluation closes its backend
    # reference and candidate play independent seeds (the verifier's seed and seed + 1)
    assert not np.array_equal(res.reference_scores, res.candidate_scores)

    # a bias of 0.1 per step over ~10-step episodes moves the mean return by ~1 > margin 0.5
    gap = run_l4(random_policy_suite("push", maker(0.0), maker(0.1), margin=0.5, episodes=2000))
    assert not gap.test.equivalent
    assert 0.7 < gap.test.difference < 1.3


def test_unfinished_episodes_and_nan_rewards_are_errors() -> None:
    with pytest.raises(UnfinishedEpisodesError, match="2 of 2 episodes on push were still "
                       "running after 5 steps"):
        play_episodes(Push(2, lengths=[10, 10]), seed=0, max_steps=5)
    with pytest.raises(EnvportError, match="push returned a NaN or infinite reward"):
        play_episodes(Push(2, lengths=[10, 10], nan_at=3), seed=0)
    # a NaN in an env whose counted episode already ended is not read
    returns = play_episodes(Push(2, lengths=[1, 5], nan_at=3), seed=0)
    assert returns.shape == (2,) and np.all(np.isfinite(returns))
