"""The toy Corridor env: the behaviour the docs and the other tests rely on."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport import Box, Discrete, Env, TimeStep
from envport.toy import LEFT, RIGHT, STAY, Corridor, CorridorState

L = 5


@pytest.fixture(scope="module")
def env() -> Corridor:
    return Corridor(L)


@pytest.fixture(scope="module")
def fns(env):
    return jax.jit(env.reset), jax.jit(env.step)


def at(pos: int) -> CorridorState:
    return CorridorState(jnp.int32(pos), jax.random.PRNGKey(0))


# Actions are always passed as np.int32 so that each jitted function compiles once.
A = np.int32


def test_spec(env):
    assert isinstance(env, Env)
    assert env.spec.action_space == Discrete(3)
    assert env.spec.observation_space == Box(0.0, 1.0, (L,))
    with pytest.raises(ValueError, match="length"):
        Corridor(1)
    with pytest.raises(ValueError, match="slip"):
        Corridor(L, slip=1.0)


def test_reset_start_positions_cover_all_but_goal(fns):
    reset, _ = fns
    starts = set()
    for seed in range(40):
        state, ts = reset(jax.random.PRNGKey(seed))
        assert isinstance(ts, TimeStep)
        pos = int(state.pos)
        starts.add(pos)
        np.testing.assert_array_equal(ts.obs, np.eye(L, dtype=np.float32)[pos])
        assert ts.obs.dtype == jnp.float32 and ts.reward.dtype == jnp.float32
        assert not ts.terminated and not ts.truncated
    assert starts == set(range(L - 1))  # never starts on the goal, every other cell reachable


def test_reset_is_deterministic_in_the_key(fns):
    reset, _ = fns
    a, _ = reset(jax.random.PRNGKey(7))
    b, _ = reset(jax.random.PRNGKey(7))
    assert int(a.pos) == int(b.pos)
    np.testing.assert_array_equal(jax.random.key_data(a.key), jax.random.key_data(b.key))


@pytest.mark.parametrize(("pos", "action", "new_pos"), [
    (0, LEFT, 0), (0, STAY, 0), (0, RIGHT, 1), (2, LEFT, 1), (2, STAY, 2), (2, RIGHT, 3),
])
def test_moves(fns, pos, action, new_pos):
    _, step = fns
    state, ts = step(at(pos), A(action))
    assert int(state.pos) == new_pos
    assert float(ts.reward) == 0.0 and not ts.terminated and not ts.truncated


def test_goal_rewards_and_terminates(fns):
    _, step = fns
    state, ts = step(at(L - 2), A(RIGHT))
    assert int(state.pos) == L - 1
    assert float(ts.reward) == 1.0 and bool(ts.terminated) and not ts.truncated


def test_legal_mask_forbids_left_only_at_zero(fns):
    _, step = fns
    for pos in range(L - 1):
        _, ts = step(at(pos), A(STAY))
        np.testing.assert_array_equal(ts.legal_mask, [pos > 0, True, True])
        assert ts.legal_mask.any()


def test_step_advances_the_rng_in_the_state(fns):
    _, step = fns
    s0 = at(1)
    s1, _ = step(s0, A(STAY))
    assert not np.array_equal(jax.random.key_data(s0.key), jax.random.key_data(s1.key))


def test_slip_uses_the_state_rng():
    env = Corridor(L, slip=0.5)
    step = jax.jit(jax.vmap(env.step))
    keys = jax.random.split(jax.random.PRNGKey(3), 256)
    states = CorridorState(jnp.full(256, 1, jnp.int32), keys)
    new, _ = step(states, np.full(256, RIGHT, np.int32))
    moved = np.asarray(new.pos) == 2
    assert set(np.unique(np.asarray(new.pos))) == {1, 2}
    assert 0.3 < moved.mean() < 0.7
    again, _ = step(states, np.full(256, RIGHT, np.int32))
    np.testing.assert_array_equal(new.pos, again.pos)  # deterministic given the keys
