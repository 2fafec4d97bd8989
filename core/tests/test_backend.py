"""Backends: the numpy boundary. Shapes, dtypes, copies, validation and closing."""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import pytest

from envport import ActionError, Box, Discrete, EnvSpec
from envport.backend import GymnasiumBackend, JaxBackend, PufferBackend, StepResult
from envport.toy import RIGHT, STAY, Corridor
from envport.wrappers import AutoResetWrapper, VmapWrapper

L, N = 5, 4
CARTPOLE = EnvSpec("CartPole", "v1", Box(-np.inf, np.inf, (4,)), Discrete(2))


# -- JaxBackend ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_fns():
    env = VmapWrapper(AutoResetWrapper(Corridor(L)))
    reset = jax.jit(env.reset)
    return env.spec, (lambda seed: reset(jax.random.split(jax.random.PRNGKey(seed), N))), env.step


def make_jax_backend(jax_fns, **kw) -> JaxBackend:
    spec, reset_fn, step_fn = jax_fns
    return JaxBackend(spec, N, reset_fn, step_fn,
                      state_fn=lambda s: {"pos": s.inner.pos}, **kw)


def test_jax_backend_shapes_dtypes_and_state(jax_fns):
    b = make_jax_backend(jax_fns)
    with pytest.raises(RuntimeError, match="reset"):
        b.step(np.zeros(N, np.int32))
    obs = b.reset(0)
    assert isinstance(obs, np.ndarray) and obs.shape == (N, L) and obs.dtype == np.float32
    pos = b.state()["pos"]
    assert isinstance(pos, np.ndarray) and pos.shape == (N,)
    np.testing.assert_array_equal(obs, np.eye(L, dtype=np.float32)[pos])
    res = b.step(np.full(N, RIGHT, np.int64))  # int64 is accepted and cast
    assert isinstance(res, StepResult)
    assert res.obs.shape == (N, L) and res.reward.shape == (N,)
    assert res.reward.dtype == np.float32
    assert res.terminated.dtype == bool and res.truncated.dtype == bool
    # every env moved right by one; those that reached the goal were rewarded and reset
    goal = pos + 1 == L - 1
    np.testing.assert_array_equal(res.terminated, goal)
    np.testing.assert_array_equal(res.reward, goal.astype(np.float32))
    np.testing.assert_array_equal(b.state()["pos"][~goal], pos[~goal] + 1)


def test_jax_backend_is_reproducible_from_the_seed(jax_fns):
    a, b = make_jax_backend(jax_fns), make_jax_backend(jax_fns)
    np.testing.assert_array_equal(a.reset(3), b.reset(3))
    acts = np.full(N, STAY, np.int32)
    np.testing.assert_array_equal(a.step(acts).obs, b.step(acts).obs)


def test_jax_backend_validates_actions(jax_fns):
    b = make_jax_backend(jax_fns)
    b.reset(0)
    with pytest.raises(ActionError, match="out of range"):
        b.step(np.array([0, 1, 3, 0]))
    with pytest.raises(ActionError, match="shape"):
        b.step(np.zeros(N + 1, np.int32))
    with pytest.raises(ActionError, match="integers"):
        b.step(np.zeros(N, np.float32))


def test_jax_backend_state_carries_the_step_flags(jax_fns):
    b = make_jax_backend(jax_fns)
    b.reset(0)
    state = b.state()
    assert set(state) == {"pos", "terminated", "truncated"}
    assert not state["terminated"].any() and not state["truncated"].any()
    res = b.step(np.full(N, RIGHT, np.int32))
    np.testing.assert_array_equal(b.state()["terminated"], res.terminated)
    # the scan rollout carries them per step too
    rolled = b.rollout(np.full((6, N), RIGHT, np.int32))
    assert rolled["terminated"].shape == (6, N) and rolled["terminated"].any()
    np.testing.assert_array_equal(b.state()["terminated"], rolled["terminated"][-1])


def test_jax_backend_from_env():
    b = JaxBackend.from_env(Corridor(L, start=0), num_envs=3)
    obs = b.reset(1)
    assert obs.shape == (3, L)
    np.testing.assert_array_equal(obs, np.eye(L, dtype=np.float32)[[0, 0, 0]])
    for _ in range(L - 2):
        b.step(np.full(3, RIGHT, np.int32))
    res = b.step(np.full(3, RIGHT, np.int32))  # reaches the goal: reset for the next step
    state = b.state()
    assert set(state) == {"obs", "reward", "terminated", "truncated"}
    assert state["reward"].dtype == np.float64 and state["terminated"].all()
    # the step's own observation (the goal), as Gymnasium's single envs return it
    np.testing.assert_array_equal(state["obs"], np.eye(L, dtype=np.float32)[[L - 1] * 3])
    np.testing.assert_array_equal(res.obs, state["obs"])
    b.step(np.full(3, STAY, np.int32))  # the new episode, from the start cell
    np.testing.assert_array_equal(b.state()["obs"], np.eye(L, dtype=np.float32)[[0, 0, 0]])


def test_jax_backend_load(jax_fns):
    b = make_jax_backend(jax_fns)
    assert not b.supports_load
    with pytest.raises(NotImplementedError, match="cannot load"):
        b.load({})


# -- GymnasiumBackend ------------------------------------------------------------------------

def cartpole_state(env) -> dict[str, np.ndarray]:
    envs = env.envs if hasattr(env, "envs") else [env]
    return {"physics": np.stack([np.asarray(e.unwrapped.state, np.float64) for e in envs])}


def test_gymnasium_backend_single_env():
    env = gymnasium.make("CartPole-v1")
    closed = []
    env.close = lambda: closed.append(True)  # spy on the instance
    with GymnasiumBackend(env, CARTPOLE, state_fn=cartpole_state) as b:
        assert b.num_envs == 1
        obs = b.reset(0)
        assert obs.shape == (1, 4) and obs.dtype == np.float32
        ref, _ = gymnasium.make("CartPole-v1").reset(seed=0)
        np.testing.assert_array_equal(obs[0], ref)
        res = b.step(np.array([1]))
        assert res.obs.shape == (1, 4) and res.reward.shape == (1,)
        assert res.terminated.shape == (1,) and res.truncated.shape == (1,)
        assert res.terminated.dtype == bool and res.truncated.dtype == bool
        assert np.issubdtype(res.reward.dtype, np.floating) and res.reward[0] == 1.0
        b.step(1)  # a scalar is fine for a single env
        state = b.state()
        assert state["physics"].shape == (1, 4)
        np.testing.assert_allclose(state["obs"], state["physics"].astype(np.float32))
        with pytest.raises(ActionError, match="out of range"):
            b.step(np.array([2]))
        with pytest.raises(ActionError, match="integers"):
            b.step(np.array([0.0]))
    assert closed == [True]  # __exit__ closed the env


def test_gymnasium_backend_state_flags_spec_and_same_step_reset():
    env = gymnasium.make("CartPole-v1")
    b = GymnasiumBackend(env)  # the spec read off the env's spaces
    assert b.spec.observation_space.shape == (4,) and b.spec.action_space.n == 2
    assert b.spec.terminated_and_truncated  # Gymnasium allows both at once
    b.reset(0)
    state = b.state()
    assert set(state) == {"obs", "reward", "terminated", "truncated"}
    assert state["reward"].dtype == np.float64 and not state["terminated"].any()
    for _ in range(500):  # always push right: the pole falls within a few dozen steps
        res = b.step(np.array([1]))
        if res.terminated[0] or res.truncated[0]:
            break
    assert res.terminated[0] and b.state()["terminated"][0]
    ended_obs = b.state()["obs"].copy()
    res = b.step(np.array([1]))  # the env was reset in the ending step: a new episode goes on
    assert not res.terminated[0] and np.abs(res.obs[0, 2]) < np.abs(ended_obs[0, 2])


def test_gymnasium_spaces_other_than_discrete_and_box_are_refused():
    from envport import EnvportError
    from envport.backend import spec_from_gymnasium

    env = gymnasium.make("Blackjack-v1")  # a Tuple observation space
    with pytest.raises(EnvportError, match="not supported"):
        spec_from_gymnasium(env)


def test_gymnasium_backend_vector_env_returns_copies():
    # copy=False: the vector env hands out the same buffer every step
    env = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("CartPole-v1")] * N, copy=False)
    b = GymnasiumBackend(env, CARTPOLE)
    assert b.num_envs == N
    obs0 = b.reset(5)
    assert obs0.shape == (N, 4)
    saved0 = obs0.copy()
    r1 = b.step(np.zeros(N, np.int32))
    saved1 = r1.obs.copy()
    b.step(np.ones(N, np.int32))
    np.testing.assert_array_equal(obs0, saved0)
    np.testing.assert_array_equal(r1.obs, saved1)
    assert r1.reward.shape == (N,) and r1.terminated.dtype == bool
    # state() is not a view of what step() returned either
    state_obs = b.state()["obs"]
    state_obs[:] = 0
    assert b.state()["obs"].any()
    b.close()
    assert env.closed


# -- PufferBackend ---------------------------------------------------------------------------

class FakePuffer:
    """Follows the PufferEnv protocol: preallocated buffers, rewritten in place each step.

    Each agent holds a counter; the action is added to it, reward is the action, an agent
    terminates when its counter reaches 3 and is then put back to 0.
    """

    def __init__(self, num_agents: int):
        self.num_agents = num_agents
        self.observations = np.zeros((num_agents, 2), np.float32)
        self.rewards = np.zeros(num_agents, np.float32)
        self.terminals = np.zeros(num_agents, np.uint8)  # C envs often use bytes
        self.truncations = np.zeros(num_agents, np.uint8)
        self.closed = False
        self.seeds: list[int] = []

    def reset(self, seed):
        self.seeds.append(seed)
        self.observations[:, 0] = 0
        self.observations[:, 1] = seed
        return self.observations, {}

    def step(self, actions):
        assert actions.dtype == np.int32 and actions.shape == (self.num_agents,)
        count = self.observations[:, 0] + actions
        self.terminals[:] = count >= 3
        self.observations[:, 0] = np.where(count >= 3, 0, count)
        self.rewards[:] = actions
        return self.observations, self.rewards, self.terminals, self.truncations, {}

    def close(self):
        self.closed = True


def test_puffer_backend_copies_converts_and_closes():
    env = FakePuffer(N)
    spec = EnvSpec("fake", "v0", Box(0, np.inf, (2,)), Discrete(3))
    b = PufferBackend(env, spec, state_fn=lambda e: {"seed_seen": np.array(e.seeds[-1:])})
    assert b.num_envs == N and not b.supports_load
    obs0 = b.reset(7)
    assert env.seeds == [7] and obs0.shape == (N, 2) and obs0.dtype == np.float32
    assert not np.shares_memory(obs0, env.observations)
    r1 = b.step(np.array([2, 1, 0, 2], np.int64))
    saved = [x.copy() for x in r1]
    r2 = b.step(np.array([2, 1, 0, 0]))
    for x, y in zip(r1, saved, strict=True):
        np.testing.assert_array_equal(x, y)  # step 2 did not overwrite what step 1 returned
    for x, buf in zip(r1, (env.observations, env.rewards, env.terminals, env.truncations),
                      strict=True):
        assert not np.shares_memory(x, buf)
    assert r2.terminated.dtype == bool and r2.truncated.dtype == bool
    np.testing.assert_array_equal(r2.terminated, [True, False, False, False])
    np.testing.assert_array_equal(r2.reward, [2, 1, 0, 0])
    np.testing.assert_array_equal(r2.obs[:, 0], [0, 2, 0, 2])
    state = b.state()
    assert set(state) == {"obs", "reward", "terminated", "truncated", "seed_seen"}
    assert state["terminated"].dtype == bool and state["truncated"].dtype == bool
    assert not np.shares_memory(state["obs"], env.observations)
    with pytest.raises(ActionError, match="out of range"):
        b.step(np.array([0, 0, 3, 0]))
    b.close()
    assert env.closed


def test_puffer_backend_load_and_allow_out_of_range():
    env = FakePuffer(2)
    spec = EnvSpec("fake", "v0", Box(0, np.inf, (2,)), Discrete(3))
    loaded = []
    b = PufferBackend(env, spec, load_fn=lambda e, s: loaded.append(s), allow_out_of_range=True)
    assert b.supports_load
    b.load({"obs": np.zeros((2, 2))})
    assert len(loaded) == 1
    b.reset(0)
    np.testing.assert_array_equal(b.step(np.array([5, 0])).reward, [5, 0])
    with PufferBackend(FakePuffer(1), spec) as plain:
        with pytest.raises(NotImplementedError, match="cannot load"):
            plain.load({})
    assert plain.env.closed
