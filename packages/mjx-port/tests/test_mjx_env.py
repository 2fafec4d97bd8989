"""Quick checks (no MJX compile): arguments, spaces, time limits, Gymnasium's reset stream,
numpy's sum, and each env's observation, reward, termination and info terms computed on
MuJoCo C's own data (the physics step itself is compared in test_mjx_new_envs.py)."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.errors import ActionError, EnvportError
from mjx_port.env import (
    ENV_IDS,
    RENDER_ARGS,
    _numpy_pairwise_sum,
    _NumpyDraws,
    gymnasium_defaults,
    make,
)


def test_gymnasium_is_the_pinned_release():
    assert gymnasium.__version__ == "1.4.0"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_defaults_are_gymnasiums_own(env_id):
    d = gymnasium_defaults(env_id)
    assert d["frame_skip"] == gymnasium.make(env_id).unwrapped.frame_skip
    assert "xml_file" in d and not set(d) & RENDER_ARGS
    # the reset noise is an argument of the envs whose reset_model scales it
    assert ("reset_noise_scale" in d) == (env_id not in ("Reacher-v5", "Pusher-v5"))


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
        ("Swimmer-v5", {}),
        ("Swimmer-v5", {"exclude_current_positions_from_observation": False}),
        ("Reacher-v5", {}),
        ("Pusher-v5", {}),
        ("InvertedPendulum-v5", {}),
        ("InvertedDoublePendulum-v5", {}),
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


@pytest.mark.parametrize(
    "env_id,argument",
    [
        ("Swimmer-v5", "healthy_reward"),
        ("Reacher-v5", "reset_noise_scale"),
        ("Pusher-v5", "ctrl_cost_weight"),
        ("InvertedPendulum-v5", "healthy_reward"),
        ("InvertedDoublePendulum-v5", "terminate_when_unhealthy"),
    ],
)
def test_an_argument_of_another_env_is_refused_by_name(env_id, argument):
    with pytest.raises(EnvportError, match=f"{env_id} has no argument '{argument}'") as e:
        make(env_id, **{argument: 1.0})
    assert ", ".join(gymnasium_defaults(env_id)) in str(e.value)  # its own arguments listed


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_time_limit_is_gymnasiums_registered_one(env_id):
    assert make(env_id).max_episode_steps == gymnasium.spec(env_id).max_episode_steps
    assert make(env_id, max_episode_steps=7).max_episode_steps == 7


def test_time_limits_differ_per_env():
    limits = {e: make(e).max_episode_steps for e in ("Reacher-v5", "Pusher-v5", "Swimmer-v5")}
    assert limits == {"Reacher-v5": 50, "Pusher-v5": 100, "Swimmer-v5": 1000}


def test_float64_needs_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 already on in this process")
    with pytest.raises(EnvportError, match="jax_enable_x64"):
        make("Hopper-v5", dtype=jnp.float64)


def test_float32_refuses_x64_at_trace_time():
    """x64 turned on after a float32 env was built (as `envport verify mjx` does for its
    float64 levels): its reset and step say so instead of failing inside MJX's frame loop
    (a scan carry whose qpos came back float64). Only traced (eval_shape), nothing compiled."""
    env = make("Hopper-v5")  # float32
    state, _ = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        msg = "physics is float32 but jax_enable_x64 is on"
        with pytest.raises(EnvportError, match=msg):
            jax.eval_shape(env.reset, jax.random.PRNGKey(0))
        with pytest.raises(EnvportError, match=msg):
            jax.eval_shape(env.step, state, jax.ShapeDtypeStruct((3,), jnp.float32))
    finally:
        jax.config.update("jax_enable_x64", before)
    assert jax.eval_shape(env.step, state, jax.ShapeDtypeStruct((3,), jnp.float32))[0] is not None


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


class _CountingDraws(_NumpyDraws):
    """Gymnasium's stream, counting the draws its rejection loops throw away."""

    rejected = 0

    def until(self, draw, accept):
        def counted(value):
            ok = accept(value)
            self.rejected += not ok
            return ok

        return super().until(draw, counted)


@pytest.mark.parametrize("env_id", ["Reacher-v5", "Pusher-v5"])
def test_rejection_loops_are_gymnasiums(env_id):
    """Reacher's goal (a point of the square kept inside the disc of radius 0.2) and Pusher's
    cylinder (kept more than 0.17 from the goal): the same draws, rejections included, over
    seeded and continued resets."""
    env, g = make(env_id), gymnasium.make(env_id)
    draws = _CountingDraws(np.random.default_rng(11))
    for seed in (11,) + (None,) * 19:
        g.reset(seed=seed)
        qpos, qvel = env._draw_qpos_qvel(draws)
        np.testing.assert_array_equal(qpos, g.unwrapped.data.qpos)
        np.testing.assert_array_equal(qvel, g.unwrapped.data.qvel)
    assert draws.rejected > 0  # the loops did reject (deterministic for these seeds)


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


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_terms_on_c_data_are_gymnasiums(env_id, x64):
    """The env's own terms (observation, reward, terminated, info) computed by the port on the
    data MuJoCo C leaves after each of Gymnasium's steps equal Gymnasium's (no MJX step, so no
    compile: the physics is compared in test_mjx_new_envs.py and the verifier's suites)."""
    from mujoco import mjx

    env, g = make(env_id, dtype=jnp.float64), gymnasium.make(env_id)
    u = g.unwrapped
    g.reset(seed=5)
    rng = np.random.default_rng(5)
    low, high = g.action_space.low, g.action_space.high
    for _ in range(6):
        before = env._position(mjx.put_data(u.model, u.data))
        action = rng.uniform(1.1 * low, 1.1 * high).astype(np.float32)
        obs, reward, terminated, _, info = g.step(action)
        d = mjx.put_data(u.model, u.data)
        ours_reward, ours_info, ours_terminated = env._reward(d, before, jnp.asarray(action))
        assert np.abs(np.asarray(env._obs(d)) - obs).max() <= 1e-12
        assert abs(float(ours_reward) - reward) <= 1e-12
        assert bool(ours_terminated) == terminated
        assert sorted(ours_info) == sorted(info)
        for k, v in info.items():
            assert abs(float(ours_info[k]) - v) <= 1e-12, k
        if terminated:
            g.reset(seed=6)


@pytest.mark.parametrize(
    "action,message",
    [
        (np.zeros(5, np.float32), r"shape \(6,\), got \(5,\)"),
        (np.zeros((1, 6), np.float32), r"shape \(6,\), got \(1, 6\)"),
        (np.float32(0.5), r"shape \(6,\), got \(\)"),
        (np.zeros(6, np.int32), "continuous: a float array, got dtype int32"),
        (np.zeros(6, bool), "got dtype bool"),
        ("forward", "float array of shape \\(6,\\), got str"),
        ({"a": 1}, "got dict"),
    ],
)
def test_a_bad_action_is_refused_before_the_physics(action, message):
    """Shape, dtype and type are checked when the step is traced (they are static), before
    any physics: an ActionError that says what is wrong (Gymnasium refuses a wrong shape as
    well). Values are not: MuJoCo C takes any (clamped; a NaN zeroes ctrl, see
    test_mjx_equivalence)."""
    env = make("HalfCheetah-v5")
    with pytest.raises(ActionError, match=message):
        env.step(None, action)
