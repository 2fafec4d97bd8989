"""Wrappers: batching, episode limits and auto-reset, checked against the unwrapped toy env."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.toy import LEFT, RIGHT, STAY, Corridor, CorridorState
from envport.wrappers import (
    AutoResetState,
    AutoResetWrapper,
    BatchedAutoResetWrapper,
    EpisodeLimitWrapper,
    LimitState,
    VmapWrapper,
)

L = 5
GOAL = L - 1
B = 16
A = np.int32  # one action dtype everywhere, so each jitted function compiles once


def at(pos: int, seed: int = 0) -> CorridorState:
    return CorridorState(np.int32(pos), np.asarray(jax.random.PRNGKey(seed)))


def one_hot(pos: int) -> np.ndarray:
    return np.eye(L, dtype=np.float32)[pos]


# -- VmapWrapper -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def slippery() -> Corridor:
    return Corridor(L, slip=0.3)  # the state RNG matters, so key handling is checked too


def test_vmap_equals_a_loop_of_singles(slippery):
    venv = VmapWrapper(slippery)
    vreset, vstep = jax.jit(venv.reset), jax.jit(venv.step)
    reset, step = jax.jit(slippery.reset), jax.jit(slippery.step)
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(42), B))
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 3, size=(6, B)).astype(np.int32)

    batched = vreset(keys)
    singles = [reset(k) for k in keys]
    for t in range(actions.shape[0] + 1):
        bstate, bts = jax.device_get(batched)  # numpy: indexing jax arrays compiles per index
        for i, (s, ts) in enumerate(jax.device_get(singles)):
            assert int(bstate.pos[i]) == int(s.pos), (t, i)
            np.testing.assert_array_equal(bstate.key[i], s.key)
            for name in ("obs", "reward", "terminated", "truncated", "legal_mask"):
                np.testing.assert_array_equal(getattr(bts, name)[i], getattr(ts, name),
                                              err_msg=f"{name} t={t} env={i}")
        if t == actions.shape[0]:
            break
        batched = vstep(batched[0], actions[t])
        singles = [step(s, actions[t, i]) for i, (s, _) in enumerate(singles)]
    assert bts.obs.shape == (B, L) and bts.legal_mask.shape == (B, 3)


# -- EpisodeLimitWrapper ---------------------------------------------------------------------

MAX = 3


@pytest.fixture(scope="module")
def limited():
    env = EpisodeLimitWrapper(Corridor(L), MAX)
    return env, jax.jit(env.reset), jax.jit(env.step)


def test_episode_limit_rejects_nonpositive():
    with pytest.raises(ValueError, match="max_steps"):
        EpisodeLimitWrapper(Corridor(L), 0)


def test_episode_limit_truncates_exactly_at_max_steps(limited):
    env, reset, step = limited
    state, ts = reset(np.asarray(jax.random.PRNGKey(0)))
    assert int(state.steps) == 0 and not ts.truncated
    state = LimitState(at(0), state.steps)  # STAY at 0 never terminates
    flags = []
    for _ in range(MAX):
        state, ts = step(state, A(STAY))
        flags.append((bool(ts.terminated), bool(ts.truncated)))
    assert flags == [(False, False)] * (MAX - 1) + [(False, True)]
    assert int(state.steps) == MAX


def test_episode_limit_does_not_truncate_a_terminating_step(limited):
    _, _, step = limited
    state = LimitState(at(GOAL - 1), np.int32(MAX - 1))  # the last allowed step reaches the goal
    state, ts = step(state, A(RIGHT))
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.reward) == 1.0


def test_episode_limit_keeps_inner_truncation(limited):
    env, _, _ = limited
    # an inner env that truncates on its own must stay truncated before the limit
    class Truncating(Corridor):
        def step(self, state, action):
            state, ts = super().step(state, action)
            return state, ts._replace(truncated=jnp.ones((), bool))

    _, ts = jax.jit(EpisodeLimitWrapper(Truncating(L), 100).step)(LimitState(at(0), np.int32(0)),
                                                                   A(STAY))
    assert bool(ts.truncated)


# -- AutoResetWrapper ------------------------------------------------------------------------

class Turns(Corridor):
    """Reports ``player = pos`` so the test can see whether ``player`` follows a reset."""

    def _timestep(self, state, reward, terminated):
        return super()._timestep(state, reward, terminated)._replace(player=state.pos)


@pytest.fixture(scope="module")
def auto():
    env = AutoResetWrapper(Turns(L))
    return env, jax.jit(env.step_with_final), jax.jit(env.env.reset)


def test_autoreset_resets_after_termination_and_keeps_final_reward(auto):
    _, step, inner_reset = auto
    state = AutoResetState(at(GOAL - 1), np.asarray(jax.random.PRNGKey(5)))
    new, ts, final_obs = jax.device_get(step(state, A(RIGHT)))
    # reward and flags are those of the step that ended the episode
    assert float(ts.reward) == 1.0 and bool(ts.terminated) and not bool(ts.truncated)
    # ... the state and observation are the new episode's
    start = int(new.inner.pos)
    assert start != GOAL
    np.testing.assert_array_equal(ts.obs, one_hot(start))
    np.testing.assert_array_equal(ts.legal_mask, [start > 0, True, True])
    assert int(ts.player) == start
    # ... and the final observation is the goal
    np.testing.assert_array_equal(final_obs, one_hot(GOAL))
    # the reset used the carried key, which moved on
    assert not np.array_equal(new.key, state.key)
    # which start it picked is exactly what reset() of the inner env gives for the key it split
    fresh, _ = inner_reset(np.asarray(jax.random.split(state.key))[1])
    assert int(fresh.pos) == start


def test_autoreset_passes_through_when_not_done(auto):
    _, step, _ = auto
    state = AutoResetState(at(1), np.asarray(jax.random.PRNGKey(5)))
    new, ts, final_obs = jax.device_get(step(state, A(LEFT)))
    assert int(new.inner.pos) == 0 and float(ts.reward) == 0.0 and not bool(ts.terminated)
    np.testing.assert_array_equal(ts.obs, one_hot(0))
    np.testing.assert_array_equal(final_obs, ts.obs)
    np.testing.assert_array_equal(ts.legal_mask, [False, True, True])
    assert int(ts.player) == 0


def test_autoreset_after_truncation_restarts_the_step_count():
    env = AutoResetWrapper(EpisodeLimitWrapper(Corridor(L), 2))
    step = jax.jit(env.step)
    state = AutoResetState(LimitState(at(0), np.int32(0)), np.asarray(jax.random.PRNGKey(1)))
    state, ts = step(state, A(STAY))
    assert not bool(ts.truncated) and int(state.inner.steps) == 1
    state, ts = step(state, A(STAY))
    assert bool(ts.truncated) and not bool(ts.terminated) and float(ts.reward) == 0.0
    assert int(state.inner.steps) == 0  # the new episode starts from zero steps


def test_vmapped_autoreset_only_resets_the_done_envs():
    env = VmapWrapper(AutoResetWrapper(Corridor(L)))
    step = jax.jit(env.step_with_final)
    pos = np.array([GOAL - 1, 0, 2, GOAL - 1], np.int32)
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(3), 8)).reshape(2, 4, 2)
    state = AutoResetState(CorridorState(pos, keys[0]), keys[1])
    new, ts, final_obs = jax.device_get(step(state, np.array([RIGHT, STAY, RIGHT, STAY], A)))
    np.testing.assert_array_equal(ts.terminated, [True, False, False, False])
    np.testing.assert_array_equal(ts.reward, [1, 0, 0, 0])
    np.testing.assert_array_equal(new.inner.pos[1:], [0, 3, GOAL - 1])
    assert int(new.inner.pos[0]) != GOAL
    np.testing.assert_array_equal(final_obs[0], one_hot(GOAL))
    np.testing.assert_array_equal(final_obs[1:], ts.obs[1:])
    np.testing.assert_array_equal(ts.obs[0], one_hot(int(new.inner.pos[0])))


# -- BatchedAutoResetWrapper -----------------------------------------------------------------

class TypedKeys(Turns):
    """Turns whose state carries a typed PRNG key (``jax.random.key``), as newer envs do."""

    def reset(self, key):
        state, ts = super().reset(key)
        return state._replace(key=jax.random.wrap_key_data(state.key)), ts

    def step(self, state, action):
        inner = state._replace(key=jax.random.key_data(state.key))
        new, ts = super().step(inner, action)
        return new._replace(key=jax.random.wrap_key_data(new.key)), ts


def _rollout(batched, keys, actions):
    """Every step's (state, TimeStep, final_obs) of ``batched`` from ``reset(keys)``."""
    def body(state, action):
        state, ts, final_obs = batched.step_with_final(state, action)
        return state, (state, ts, final_obs)
    state, _ = batched.reset(keys)
    return jax.lax.scan(body, state, actions)[1]


def _as_bits(x):
    return np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)


@pytest.mark.parametrize("env", [EpisodeLimitWrapper(Corridor(L, slip=0.3), 6),
                                 EpisodeLimitWrapper(TypedKeys(L), 6)],
                         ids=["slippery", "typed keys, legal mask, player"])
@pytest.mark.parametrize("max_resets", [1, 3, None])
def test_batched_autoreset_equals_vmapped_autoreset(env, max_resets):
    """Bit for bit the plain path's results, through steps where no env, a few envs and more
    than ``max_resets`` envs ended (the test counts that each kind of step occurred): four envs
    walk right and end at the goal at their own times, the others stay and are all truncated
    together every sixth step."""
    steps, n = 30, 24
    keys = jax.random.split(jax.random.PRNGKey(11), n)
    actions = np.where(np.arange(n) < 4, RIGHT, STAY).astype(A)[None].repeat(steps, 0)
    plain = jax.jit(lambda k, a: _rollout(VmapWrapper(AutoResetWrapper(env)), k, a))(keys, actions)
    wrapper = BatchedAutoResetWrapper(env, max_resets)
    batched = jax.jit(lambda k, a: _rollout(wrapper, k, a))(keys, actions)
    assert jax.tree.structure(plain) == jax.tree.structure(batched)
    for x, y in zip(jax.tree.leaves(plain), jax.tree.leaves(batched), strict=True):
        np.testing.assert_array_equal(_as_bits(x), _as_bits(y))
    ts = plain[1]
    ended = np.asarray(ts.terminated | ts.truncated).sum(axis=1)
    m = max_resets or n // 8
    assert (ended == 0).any() and ((ended > 0) & (ended <= m)).any() and (ended > m).any(), ended


def test_batched_autoreset_rejects_nonpositive_max_resets():
    with pytest.raises(ValueError, match="max_resets must be >= 1"):
        BatchedAutoResetWrapper(Corridor(L), 0)


# -- an env's own batch step -----------------------------------------------------------------

class CountsBatchCalls(Corridor):
    """Corridor with ``reset_batch``/``step_batch`` overridden (``vmap``'s results), counting
    how often each is traced."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = {"reset_batch": 0, "step_batch": 0}

    def reset_batch(self, keys):
        self.calls["reset_batch"] += 1
        return jax.vmap(self.reset)(keys)

    def step_batch(self, states, actions):
        self.calls["step_batch"] += 1
        return jax.vmap(self.step)(states, actions)


def test_batching_wrappers_use_the_envs_batch_step_and_other_wrappers_do_not_hand_it_out():
    keys = jax.random.split(jax.random.PRNGKey(5), 8)
    acts = np.full(8, RIGHT, A)
    env = CountsBatchCalls(L)
    s, _ = VmapWrapper(env).reset(keys)
    VmapWrapper(env).step(s, acts)
    assert env.calls == {"reset_batch": 1, "step_batch": 1}
    wrapped = BatchedAutoResetWrapper(env)
    s, _ = wrapped.reset(keys)
    wrapped.step(s, acts)
    assert env.calls["step_batch"] == 2 and env.calls["reset_batch"] >= 3
    # a wrapper's batch step is the vmap of its own step: the inner batch step would lose the
    # limit's truncation
    limited = EpisodeLimitWrapper(CountsBatchCalls(L), 1)
    s, _ = limited.reset_batch(keys)
    _, ts = limited.step_batch(s, np.full(8, STAY, A))
    assert limited.env.calls == {"reset_batch": 0, "step_batch": 0}
    assert np.asarray(ts.truncated).all()
