"""JaxVectorEnv: a JAX env behind the gymnasium vector API, with same-step autoreset."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector.utils import batch_space

from envport import ActionError
from envport.gym_adapter import JaxVectorEnv
from envport.toy import LEFT, RIGHT, STAY, Corridor

L, N, MAX = 5, 8, 3
GOAL = np.eye(L, dtype=np.float32)[L - 1]


@pytest.fixture(scope="module")
def venv():
    env = JaxVectorEnv(Corridor(L), N, seed=0)
    yield env
    env.close()


@pytest.fixture(scope="module")
def limited():
    env = JaxVectorEnv(Corridor(L), N, seed=0, max_episode_steps=MAX)
    yield env
    env.close()


def positions(obs: np.ndarray) -> np.ndarray:
    assert (obs.sum(axis=1) == 1).all()
    return obs.argmax(axis=1)


def test_spaces_and_metadata(venv):
    assert venv.num_envs == N
    assert venv.single_observation_space == gymnasium.spaces.Box(0.0, 1.0, (L,), np.float32)
    assert venv.single_action_space == gymnasium.spaces.Discrete(3)
    assert venv.observation_space == batch_space(venv.single_observation_space, N)
    assert venv.action_space == gymnasium.spaces.MultiDiscrete([3] * N)
    assert venv.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert isinstance(venv, gymnasium.vector.VectorEnv)
    with pytest.raises(ValueError, match="num_envs"):
        JaxVectorEnv(Corridor(L), 0)


def test_reset_shapes_and_infos(venv):
    obs, infos = venv.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.shape == (N, L) and obs.dtype == np.float32
    assert obs.flags.writeable
    assert venv.observation_space.contains(obs)
    pos = positions(obs)
    assert (pos < L - 1).all()
    assert infos["legal_mask"].shape == (N, 3) and infos["legal_mask"].dtype == bool
    np.testing.assert_array_equal(infos["legal_mask"][:, LEFT], pos > 0)
    assert infos["_legal_mask"].all()
    assert "final_obs" not in infos


def test_reset_seeding(venv):
    fresh = JaxVectorEnv(Corridor(L), N, seed=0)
    first, _ = fresh.reset()
    second, _ = fresh.reset()
    # reset(seed=s) restarts the stream the constructor's seed=s starts
    np.testing.assert_array_equal(venv.reset(seed=0)[0], first)
    np.testing.assert_array_equal(venv.reset()[0], second)  # unseeded: continues the stream
    unseeded = [venv.reset()[0] for _ in range(3)]
    assert not all(np.array_equal(unseeded[0], u) for u in unseeded[1:])
    np.testing.assert_array_equal(venv.reset(seed=11)[0], venv.reset(seed=11)[0])
    per_env, _ = venv.reset(seed=list(range(N)))
    assert per_env.shape == (N, L)
    with pytest.raises(ValueError, match="one per env"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="options"):
        venv.reset(options={"reset_mask": np.ones(N, bool)})


def test_step_before_reset_raises():
    env = JaxVectorEnv(Corridor(L), 2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int32))


def test_step_shapes_and_dtypes(venv):
    venv.reset(seed=2)
    obs, rew, term, trunc, infos = venv.step(np.full(N, STAY))
    assert obs.shape == (N, L) and obs.dtype == np.float32 and obs.flags.writeable
    assert rew.shape == (N,) and rew.dtype == np.float32
    assert term.shape == trunc.shape == (N,) and term.dtype == trunc.dtype == bool
    assert not term.any() and not trunc.any() and (rew == 0).all()
    assert infos["legal_mask"].shape == (N, 3)
    assert "final_obs" not in infos  # only present on steps where an episode ended


def test_same_step_autoreset(venv):
    obs, _ = venv.reset(seed=3)
    ended = np.zeros(N, bool)
    for _ in range(L):  # always right: every env reaches the goal within L-1 steps
        pos = positions(obs)
        obs, rew, term, trunc, infos = venv.step(np.full(N, RIGHT, np.int32))
        done_now = pos + 1 == L - 1
        np.testing.assert_array_equal(term, done_now)
        assert not trunc.any()
        np.testing.assert_array_equal(rew, done_now.astype(np.float32))
        new_pos = positions(obs)
        np.testing.assert_array_equal(new_pos[~done_now], pos[~done_now] + 1)
        # the returned obs of a finished env is already the new episode's first observation
        assert (new_pos[done_now] < L - 1).all()
        if done_now.any():
            np.testing.assert_array_equal(infos["_final_obs"], done_now)
            np.testing.assert_array_equal(infos["_final_info"], done_now)
            for i in range(N):
                if done_now[i]:
                    np.testing.assert_array_equal(infos["final_obs"][i], GOAL)
                else:
                    assert infos["final_obs"][i] is None
        else:
            assert "final_obs" not in infos
        np.testing.assert_array_equal(infos["legal_mask"][:, LEFT], new_pos > 0)
        ended |= done_now
    assert ended.all()


def test_episode_limit_truncates_and_resets(limited):
    start, _ = limited.reset(seed=4)
    for t in range(1, 2 * MAX + 1):
        obs, rew, term, trunc, infos = limited.step(np.full(N, STAY, np.int32))
        assert not term.any() and (rew == 0).all()
        expect = t % MAX == 0  # STAY never reaches the goal: every env truncates together
        assert trunc.all() == expect and trunc.any() == expect, t
        if expect:
            # STAY: the episode's last observation is its first one
            np.testing.assert_array_equal(np.stack(infos["final_obs"]), start)
            start = obs
        else:
            np.testing.assert_array_equal(obs, start)
            assert "final_obs" not in infos


def test_random_rollout_200_steps(limited):
    """Stand-in for gymnasium's env_checker (single envs only): spaces hold, flags are sane."""
    wrapped = gymnasium.wrappers.vector.RecordEpisodeStatistics(limited)
    obs, infos = wrapped.reset(seed=5)
    wrapped.action_space.seed(5)
    returns = []
    for _ in range(200):
        obs, rew, term, trunc, infos = wrapped.step(wrapped.action_space.sample())
        assert limited.observation_space.contains(obs)
        assert not (term & trunc).any()
        np.testing.assert_array_equal(rew, term.astype(np.float32))  # reward only at the goal
        np.testing.assert_array_equal(infos["legal_mask"][:, LEFT], positions(obs) > 0)
        if "episode" in infos:
            done = term | trunc
            np.testing.assert_array_equal(infos["_episode"], done)
            np.testing.assert_array_equal(infos["episode"]["r"][done], term[done])
            assert (infos["episode"]["l"][done] <= MAX).all()
            assert (infos["episode"]["l"][trunc] == MAX).all()
            returns.extend(infos["episode"]["r"][done])
    assert len(returns) >= 200 * N // MAX  # every episode ends within MAX steps
    assert 0 < np.mean(returns) < 1  # both goals and truncations happened


@pytest.mark.parametrize(("actions", "match"), [
    (np.zeros(N - 1, np.int32), "shape"),
    (np.zeros((N, 1), np.int32), "shape"),
    (np.zeros(N, np.float32), "integers"),
    (np.full(N, np.nan), "integers"),
    (np.array([0, 1, 2, 3, 0, 1, 2, 0]), "out of range"),
    (np.array([0, 1, 2, -1, 0, 1, 2, 0]), "out of range"),
])
def test_bad_actions_raise_action_error(venv, actions, match):
    venv.reset(seed=6)
    with pytest.raises(ActionError, match=match):
        venv.step(actions)
    venv.step(np.zeros(N, np.int32))  # the env is still usable
