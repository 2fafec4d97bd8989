"""L1: Pong-specific behaviour of the JAX port (the generic checks run over every registered
env in core/tests/test_registered_envs.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pong_port import Pong, PongConfig, PufferVecPong
from pong_port.backends import canonical_state


def test_vec_of_one_equals_single_env():
    single, vec = Pong(), PufferVecPong(1)
    s1, _ = single.reset_from_seed(7)
    s2, _ = vec.reset(7)
    step1, step2 = jax.jit(single.step), jax.jit(vec.step)
    rng = np.random.default_rng(0)
    for _ in range(400):
        a = rng.integers(0, 3)
        s1, _ = step1(s1, jnp.int32(a))
        s2, _ = step2(s2, jnp.asarray([a], jnp.int32))
    for k, v in canonical_state(s1).items():
        np.testing.assert_array_equal(np.asarray(v), np.asarray(canonical_state(s2)[k])[0], err_msg=k)


def test_point_leaves_stale_observation():
    """After a non-final point the reference does not recompute observations."""
    env = Pong()
    state, ts = env.reset_from_seed(0)
    step = jax.jit(env.step)
    for _ in range(2000):
        prev_obs = ts.obs
        state, ts = step(state, jnp.int32(0))
        if ts.reward in (1.0, -1.0) and not ts.terminated:
            np.testing.assert_array_equal(ts.obs, prev_obs)
            assert float(state.game.ball_x) == float(PongConfig().f32("width") / np.float32(5))
            return
    pytest.fail("no point scored in 2000 steps")


@pytest.mark.parametrize("bad", [dict(max_score=0), dict(frameskip=0), dict(width=float("nan"))])
def test_config_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        PongConfig(**bad)


def test_seed_range_is_checked():
    with pytest.raises(ValueError, match="seed"):
        PufferVecPong(16).reset(2**31 // 8)
    with pytest.raises(ValueError, match="seed"):
        PufferVecPong(2).reset(-1)
