"""Swimmer, Reacher, Pusher, InvertedPendulum and InvertedDoublePendulum against Gymnasium's own
envs (MuJoCo C), float64, through the verifier's backends: seeded resets, one step from
Gymnasium's states, seeded episodes through their ends and Gymnasium's continued resets.

One compile per env for the module (the backends' shared cache). InvertedPendulum and Reacher
run with the default tests; InvertedDoublePendulum, Swimmer and Pusher (longer compiles) with
the slow ones. Each env's observation, reward and info terms are also checked without a compile,
on MuJoCo C's data (test_mjx_env.py::test_terms_on_c_data_are_gymnasiums).
"""

import numpy as np
import pytest

from mjx_port.backends import GymnasiumMujoco, MjxCandidate
from mjx_port.cases import sample_states
from mjx_port.port import PORT, actions_for

N = 4
SLOW = pytest.mark.slow
ENVS = [
    "InvertedPendulum-v5",
    "Reacher-v5",
    pytest.param("InvertedDoublePendulum-v5", marks=SLOW),
    pytest.param("Swimmer-v5", marks=SLOW),
    pytest.param("Pusher-v5", marks=SLOW),
]
# steps of test_seeded_episodes: past the TimeLimit (Reacher 50, Pusher 100) into the next
# episode; the pendulums fall within a few steps under random actions
STEPS = {"Reacher-v5": 55, "Pusher-v5": 105}


@pytest.fixture(scope="module")
def sides(x64):
    made = {}

    def get(env_id):
        if env_id not in made:
            made[env_id] = GymnasiumMujoco(N, env_id), MjxCandidate(N, env_id)
        return made[env_id]

    return get


def assert_same(ref, cand):
    r, c = ref.state(), cand.state()
    for k in ("qpos", "qvel", "obs", "reward"):
        err = np.abs(r[k] - c[k]).max()
        assert err <= PORT.tolerance[k], (k, err)
    for k in ("terminated", "truncated", "t"):
        np.testing.assert_array_equal(r[k], c[k], err_msg=k)


@pytest.mark.parametrize("env_id", ENVS)
def test_seeded_reset(env_id, sides):
    """Gymnasium's seeded reset: qpos and qvel equal to the bit (the numpy stream, rejection
    loops included); the observation too, up to an ulp where it holds body positions from the
    forward kinematics (Reacher, Pusher: 3e-17 seen)."""
    ref, cand = sides(env_id)
    for seed in (0, 100):
        ref.reset(seed)
        cand.reset(seed)
        r, c = ref.state(), cand.state()
        np.testing.assert_array_equal(r["qpos"], c["qpos"])
        np.testing.assert_array_equal(r["qvel"], c["qvel"])
        assert np.abs(r["obs"] - c["obs"]).max() <= 1e-15


@pytest.mark.parametrize("env_id", ENVS)
def test_one_step_from_gymnasium_states(env_id, sides):
    """L2's comparison: states from Gymnasium's rollouts loaded into both sides, one step."""
    ref, cand = sides(env_id)
    rng = np.random.default_rng(21)
    actions = actions_for(env_id)
    for _ in range(2):
        states, a = sample_states(rng, N, env_id), actions(rng, N)
        ref.load(states)
        cand.load(states)
        ref.step(a)
        cand.step(a)
        assert_same(ref, cand)


@pytest.mark.parametrize("env_id", ENVS)
def test_seeded_episodes(env_id, sides):
    """L3's path: seeded resets, then every step compared, through episode ends and the resets
    that continue Gymnasium's numpy stream."""
    ref, cand = sides(env_id)
    ref.reset(3)
    cand.reset(3)
    rng = np.random.default_rng(3)
    actions = actions_for(env_id)
    ended = 0
    for _ in range(STEPS.get(env_id, 40)):
        a = actions(rng, N)
        ref.step(a)
        cand.step(a)
        assert_same(ref, cand)
        ended += int((ref.state()["terminated"] | ref.state()["truncated"]).sum())
    if env_id != "Swimmer-v5":  # Swimmer's episodes last 1000 steps
        assert ended > 0
