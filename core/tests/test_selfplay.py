"""Self-play (envport.train.selfplay): a two-player race trained with both players acting from
the learning policy, including steps where one player has nothing to choose."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport import Box, Discrete, Env, EnvSpec, TimeStep
from envport.registry import TrainTarget
from envport.toy import Corridor
from envport.train import PPO, PPOConfig
from envport.train.run import TrainRun, read_config, read_metrics, train
from envport.train.selfplay import SelfPlayBatch, SelfPlayError

LENGTH = 5
LEFT, STAY, RIGHT = 0, 1, 2


class RaceState(NamedTuple):
    pos: jax.Array  # int32[2]
    t: jax.Array


class Race(Env):
    """Two players on their own line of LENGTH cells, both starting at 0; the first to the
    last cell wins (+1 / -1; both at once: 0). Player 1 waits every third step (its legal mask
    is all False and its action is ignored), so rows without a choice occur."""

    @property
    def spec(self):
        return EnvSpec("test/Race", "v0", Box(0.0, 1.0, (2, 2 * LENGTH)),
                       Discrete(3, shape=(2,)), num_agents=2)

    def _ts(self, s: RaceState, reward, done) -> TimeStep:
        mine = jax.nn.one_hot(s.pos, LENGTH)
        obs = jnp.stack([jnp.concatenate([mine[0], mine[1]]),
                         jnp.concatenate([mine[1], mine[0]])])
        waits = (s.t % 3) == 2
        mask = jnp.stack([jnp.ones(3, bool), jnp.where(waits, False, jnp.ones(3, bool))])
        return TimeStep(obs, reward, done, jnp.bool_(False), mask)

    def reset(self, key):
        s = RaceState(jnp.zeros(2, jnp.int32), jnp.int32(0))
        return s, self._ts(s, jnp.zeros(2), jnp.bool_(False))

    def step(self, s: RaceState, action):
        move = jnp.asarray(action, jnp.int32) - 1
        move = move.at[1].set(jnp.where((s.t % 3) == 2, 0, move[1]))
        pos = jnp.clip(s.pos + move, 0, LENGTH - 1)
        at_goal = pos == LENGTH - 1
        done = jnp.any(at_goal) | (s.t >= 40)
        reward = jnp.where(at_goal[0] & ~at_goal[1], jnp.array([1.0, -1.0]),
                           jnp.where(at_goal[1] & ~at_goal[0], jnp.array([-1.0, 1.0]), 0.0))
        s = RaceState(pos, s.t + 1)
        return s, self._ts(s, reward, done)


def test_rows_are_players_of_games():
    sp = SelfPlayBatch(Race(), 6)
    assert sp.spec.num_agents == 1 and sp.spec.observation_space.shape == (2 * LENGTH,)
    assert sp.spec.action_space == Discrete(3)
    state, ts = sp.reset(jax.random.split(jax.random.PRNGKey(0), 6))
    assert ts.obs.shape == (6, 2 * LENGTH) and ts.legal_mask.shape == (6, 3)
    # game 0: player 0 right, player 1 left (clipped); game 1 both right; game 2 stay
    actions = jnp.array([RIGHT, LEFT, RIGHT, RIGHT, STAY, STAY])
    state, ts, final = sp.step_with_final(state, actions)
    np.testing.assert_array_equal(np.asarray(state.inner.pos), [[1, 0], [1, 1], [0, 0]])
    # row 2g + p sees its own position first
    assert int(jnp.argmax(ts.obs[0][:LENGTH])) == 1 and int(jnp.argmax(ts.obs[1][:LENGTH])) == 0
    assert ts.terminated.shape == (6,) and final.shape == (6, 2 * LENGTH)


def test_self_play_is_refused_where_it_cannot_work():
    with pytest.raises(SelfPlayError, match="two-player env"):
        SelfPlayBatch(Corridor(), 4)
    with pytest.raises(SelfPlayError, match="even number of envs"):
        SelfPlayBatch(Race(), 5)


def test_a_row_without_a_choice_adds_no_policy_gradient():
    ppo = PPO(Race(), PPOConfig(num_envs=4, policy="8"), self_play=True)
    params = ppo.init_params(jax.random.PRNGKey(0))
    obs = jax.random.uniform(jax.random.PRNGKey(1), (4, 2 * LENGTH))
    none = jnp.zeros((4, 3), bool)

    def logp(p):
        head, log_std, _ = ppo._dist(p, obs, none)
        return ppo._logp(head, log_std, jnp.array([0, 1, 2, 0])).sum()

    grads = jax.grad(logp)(params)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree.leaves(grads))


def test_self_play_learns_to_race(tmp_path):
    target = TrainTarget(name="race", make_env=Race, self_play=True, score_name="return")
    cfg = PPOConfig(num_envs=32, num_steps=16, total_steps=32 * 16 * 30, policy="32,32",
                    learning_rate=3e-3)
    summary = train(TrainRun("race", target, cfg, tmp_path / "r", progress=False))
    rows, _ = read_metrics(tmp_path / "r")
    assert summary["finished"] and read_config(tmp_path / "r")["env_id"] == "test/Race/self-play"
    # both sides learn to run: the games get shorter
    assert rows[-1]["episode_length"] < 0.6 * rows[0]["episode_length"]
    ppo = PPO(Race(), cfg, self_play=True)
    from flax import serialization

    raw = serialization.msgpack_restore((tmp_path / "r" / "checkpoint.msgpack").read_bytes())
    params = serialization.from_state_dict(ppo.init_params(jax.random.PRNGKey(0)), raw["params"])
    obs = jnp.stack([jnp.concatenate([jax.nn.one_hot(i, LENGTH), jax.nn.one_hot(j, LENGTH)])
                     for i in range(LENGTH - 1) for j in range(LENGTH - 1)])
    greedy = np.asarray(ppo.act(params, obs, jnp.ones((len(obs), 3), bool)))
    assert np.mean(greedy == RIGHT) > 0.9
