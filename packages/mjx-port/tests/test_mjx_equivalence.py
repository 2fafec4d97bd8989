"""The port against Gymnasium's own envs (MuJoCo C), float64, through the verifier's suites.

HalfCheetah's L2 and seeded steps run with the default tests (one MJX compile, ~40-70 s on 2
CPU cores); whole L2+L3 runs per env with the slow ones.
"""

import numpy as np
import pytest

from envport.verify import run_suites
from mjx_port.backends import GymnasiumMujoco, MjxCandidate
from mjx_port.cases import sample_actions, sample_states
from mjx_port.port import NU, PORT, l2_suite, l3_suite

N = 4  # envs per batch: L2 and L3 share one compiled step


def verify(env_id: str, horizon: int, episodes: int = 2):
    return run_suites(
        "mjx",
        PORT.reference,
        PORT.candidate,
        l2=[l2_suite(env_id, cases=2 * N, batch=N)],
        l3=[l3_suite(env_id, episodes=episodes, horizon=horizon, num_envs=N)],
        tolerance=PORT.tolerance,
        levels=["L2", "L3"],
    )


def test_halfcheetah_l2(x64):
    result = run_suites(
        "mjx",
        PORT.reference,
        PORT.candidate,
        l2=[l2_suite("HalfCheetah-v5", cases=2 * N, batch=N)],
        tolerance=PORT.tolerance,
        levels=["L2"],
    )
    assert result.levels["L2"]["cases"] == 2 * N and result.levels["L2"]["mismatches"] == 0


def test_halfcheetah_seeded_episode_start(x64):
    """L3's path (Gymnasium's seeded reset, then matched steps) with the backends L2 compiled
    (the L3 suite's own TimeLimit makes another compile: that one runs with the slow tests)."""
    ref, cand = GymnasiumMujoco(N, "HalfCheetah-v5"), MjxCandidate(N, "HalfCheetah-v5")
    np.testing.assert_array_equal(ref.reset(5), cand.reset(5))
    rng = np.random.default_rng(5)
    for _ in range(10):
        actions = sample_actions(rng, N, NU["HalfCheetah-v5"])
        ref.step(actions)
        cand.step(actions)
        r, c = ref.state(), cand.state()
        for k in ("qpos", "qvel", "obs", "reward"):
            assert np.abs(r[k] - c[k]).max() <= PORT.tolerance[k], k
        for k in ("terminated", "truncated", "t"):
            np.testing.assert_array_equal(r[k], c[k])


def test_a_perturbed_state_is_caught(x64):
    """The comparison can fail: the candidate loaded 1e-7 off in one joint angle differs."""
    rng = np.random.default_rng(3)
    state = sample_states(rng, N, "HalfCheetah-v5")
    actions = sample_actions(rng, N, NU["HalfCheetah-v5"])
    ref, cand = GymnasiumMujoco(N, "HalfCheetah-v5"), MjxCandidate(N, "HalfCheetah-v5")
    ref.load(state)
    off = {**state, "qpos": state["qpos"].copy()}
    off["qpos"][:, 2] += 1e-7
    cand.load(off)
    ref.step(actions)
    cand.step(actions)
    diff = np.abs(ref.state()["qpos"] - cand.state()["qpos"]).max()
    assert diff > PORT.tolerance["qpos"]


def test_nan_action_as_mujoco_c(x64):
    """The jitted step (below the backends' NaN check) does what Gymnasium's MuJoCo C does: a
    NaN in the action zeroes the whole ctrl for the step (mjWARN_BADCTRL), the state stays
    finite, the reward is NaN; inf is clamped to the actuator range."""
    import jax.numpy as jnp

    rng = np.random.default_rng(4)
    state = sample_states(rng, N, "HalfCheetah-v5")
    actions = sample_actions(rng, N, NU["HalfCheetah-v5"])
    actions[0, 2], actions[1, 0] = np.nan, np.inf
    ref, cand = GymnasiumMujoco(N, "HalfCheetah-v5"), MjxCandidate(N, "HalfCheetah-v5")
    ref.load(state)
    cand.load(state)
    out = [e.step(a) for e, a in zip(ref.envs, actions, strict=True)]
    qpos = np.stack([e.unwrapped.data.qpos for e in ref.envs])
    new, ts = cand._step(cand._state, jnp.asarray(actions))
    assert np.abs(np.asarray(new.data.qpos) - qpos).max() <= 1e-9
    reward = np.asarray(ts.reward)
    assert np.isnan(reward[0]) and np.isnan(out[0][1])
    assert np.isneginf(reward[1]) and np.isneginf(out[1][1])
    assert np.abs(reward[2:] - [o[1] for o in out[2:]]).max() <= 1e-9


def test_a_blown_up_state_resets_as_mujoco_c(x64):
    """mj_step's checks: a NaN or |x| > 1e10 in qpos or qvel resets the data before forward;
    a huge qacc after forward resets it and runs forward again. Gymnasium's MuJoCo C goes on
    from the model's reference pose; the port does the same (MJX alone carries the NaN on)."""
    rng = np.random.default_rng(6)
    state = sample_states(rng, N, "HalfCheetah-v5")
    state["qvel"][0] = 1e11  # bad qvel (mjWARN_BADQVEL)
    state["qvel"][1] = 1e9  # finite, but qacc blows past 1e10 (mjWARN_BADQACC)
    state["qpos"][2, 1] = np.nan  # bad qpos (mjWARN_BADQPOS)
    ref, cand = GymnasiumMujoco(N, "HalfCheetah-v5"), MjxCandidate(N, "HalfCheetah-v5")
    ref.load(state)
    cand.load(state)
    for _ in range(3):
        actions = sample_actions(rng, N, NU["HalfCheetah-v5"])
        ref.step(actions)
        cand.step(actions)
        r, c = ref.state(), cand.state()
        for k in ("qpos", "qvel", "obs", "reward"):
            assert np.isfinite(c[k]).all(), k
            assert np.abs(r[k] - c[k]).max() <= PORT.tolerance[k], k
    np.testing.assert_array_equal(np.asarray(cand._state.autoresets), [1, 1, 1, 0])


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id,horizon", [("Hopper-v5", 200), ("Walker2d-v5", 200), ("Ant-v5", 20)]
)
def test_l2_l3(env_id, horizon, x64):
    result = verify(env_id, horizon=horizon, episodes=4)
    assert result.levels["L2"]["mismatches"] == 0 and result.levels["L3"]["mismatches"] == 0, (
        result.summary()
    )


@pytest.mark.slow
def test_a_loaded_state_at_the_time_limit_truncates(x64):
    """L2 loads states up to step 999: the step truncates on both sides (and the candidate
    resets without a seed of its own)."""
    rng = np.random.default_rng(9)
    state = sample_states(rng, N, "HalfCheetah-v5")
    state["t"][:] = 999
    actions = sample_actions(rng, N, NU["HalfCheetah-v5"])
    ref, cand = GymnasiumMujoco(N, "HalfCheetah-v5"), MjxCandidate(N, "HalfCheetah-v5")
    ref.load(state)
    cand.load(state)
    assert ref.step(actions).truncated.all() and cand.step(actions).truncated.all()
    np.testing.assert_array_equal(ref.state()["t"], cand.state()["t"])


def test_chaos_suites_are_declared_for_every_env():
    from mjx_port.chaos import LONG_EPISODES
    from mjx_port.port import ENVS

    names = [s.name for s in PORT.chaos]
    assert len(names) == len(ENVS) + len(LONG_EPISODES) and len(set(names)) == len(names)
    assert all(any(n.startswith(f"{e}, float64") for n in names) for e in ENVS)
    # the bar: 1e-6 against C's own horizon from qpos + 1e-12, 99% of 100 episodes
    assert {(s.threshold, s.eps, s.share, s.episodes) for s in PORT.chaos} == {
        (1e-6, 1e-12, 0.99, 100)}


@pytest.mark.slow
def test_halfcheetah_is_not_earlier_than_cs_own_chaos_horizon(x64):
    """The issue's L3 bar on 10 seeded episodes (measured: the port parts at 1e-6 30-60 steps
    after C parts from itself started 1e-12 away)."""
    from envport.verify.chaos import run_chaos

    suite = PORT.chaos[0]
    assert suite.name == "HalfCheetah-v5, float64, 1e-6 vs C + 1e-12"
    res = run_chaos(suite, episodes=10)
    assert res.passed and res.share == 1.0
    # both sides do part within the episode: the comparison is not vacuous
    assert all(e.candidate_step is not None and e.reference_step is not None
               for e in res.episodes)
