"""Quick checks (no MJX compile): arguments, spaces, Gymnasium's reset stream, numpy's sum."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.errors import EnvportError
from mjx_port.env import ENV_IDS, _numpy_pairwise_sum, gymnasium_defaults, make


def test_gymnasium_is_the_pinned_release():
    assert gymnasium.__version__ == "1.4.0"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_defaults_are_gymnasiums_own(env_id):
    d = gymnasium_defaults(env_id)
    assert d["frame_skip"] == gymnasium.make(env_id).unwrapped.frame_skip
    assert "reset_noise_scale" in d and "xml_file" in d


@pytest.mark.parametrize(
    "env_id,kwargs",
    [
        ("HalfCheetah-v5", {}),
        ("HalfCheetah-v5", {"exclude_current_positions_from_observation": False}),
        ("Hopper-v5", {}),
        ("Walker2d-v5", {"exclude_current_positions_from_observation": False}),
        ("Ant-v5", {}),
        ("Ant-v5", {"include_cfrc_ext_in_observation": False}),
        ("Ant-v5", {"exclude_current_positions_from_observation": False}),
    ],
)
def test_spaces_match_gymnasium(env_id, kwargs):
    env = make(env_id, **kwargs)
    g = gymnasium.make(env_id, **kwargs)
    assert env.spec.observation_space.shape == g.observation_space.shape
    assert env.spec.action_space.shape == g.action_space.shape
    assert np.all(env.spec.action_space.low == g.action_space.low)
    assert np.all(env.spec.action_space.high == g.action_space.high)


def test_unknown_env_and_argument_are_refused():
    with pytest.raises(EnvportError, match="unknown env 'Cheetah-v5'"):
        make("Cheetah-v5")
    with pytest.raises(EnvportError, match="has no argument 'healthy_reward'"):
        make("HalfCheetah-v5", healthy_reward=1.0)
    with pytest.raises(EnvportError, match="dtype must be float32 or float64"):
        make("Hopper-v5", dtype=jnp.int32)
    with pytest.raises(EnvportError, match="frame_skip must be >= 1"):
        make("Hopper-v5", frame_skip=0)
    make("Hopper-v5", render_mode="rgb_array", width=64)  # rendering arguments: accepted


def test_float64_needs_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 already on in this process")
    with pytest.raises(EnvportError, match="jax_enable_x64"):
        make("Hopper-v5", dtype=jnp.float64)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_reset_stream(env_id):
    """The host-side reset draws what Gymnasium draws, seeded and then continued unseeded."""
    env = make(env_id)
    g = gymnasium.make(env_id)
    rng = np.random.default_rng(7)
    for seed in (7, None, None):
        g.reset(seed=seed)
        qpos, qvel = env.gymnasium_reset_qpos_qvel(rng)
        np.testing.assert_array_equal(qpos, g.unwrapped.data.qpos)
        np.testing.assert_array_equal(qvel, g.unwrapped.data.qvel)


@pytest.mark.parametrize("n", [1, 3, 6, 8, 11, 17, 24, 35])
def test_pairwise_sum_is_numpys(n):
    rng = np.random.default_rng(n)
    xs = rng.standard_normal((300, n)).astype(np.float32) ** 2
    ours = np.array([np.float32(_numpy_pairwise_sum(jnp.asarray(x))) for x in xs[:40]])
    np.testing.assert_array_equal(ours, np.sum(xs[:40], axis=1))


def test_ctrl_cost_is_numpys_to_the_bit(x64):
    """Gymnasium: ctrl_cost_weight * np.sum(np.square(action)) on a float32 action (float32
    arithmetic). A plain jitted float32 expression differs by an ulp now and then (XLA fuses)."""
    env = make("Ant-v5", dtype=jnp.float64)
    cost = jax.jit(jax.vmap(env._ctrl_cost))
    rng = np.random.default_rng(0)
    a = rng.uniform(-1.2, 1.2, (4000, env.nu)).astype(np.float32)
    want = np.array([0.5 * np.sum(np.square(x)) for x in a])
    assert want.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(cost(a)), want.astype(np.float64))
