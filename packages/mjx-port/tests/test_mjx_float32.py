"""The float32 port in L2 (``mjx_port.precision``): its backend runs in float32 inside verify's
x64 process, every env has declared per-field tolerances, and a batch of cases (other than
the ones they were measured on) stays within them."""

import jax
import numpy as np
import pytest

from envport.verify.l2 import run_l2
from mjx_port.backends import MjxCandidate
from mjx_port.port import ENVS, PORT, l2_suite
from mjx_port.precision import F32_TOLERANCE, FLOAT_FIELDS, HEADROOM, declared

ENV = "InvertedPendulum-v5"


def test_declared_tolerance_is_the_headroom_rounded_up_to_1_2_5() -> None:
    assert HEADROOM == 10
    assert declared(3.08e-08) == 5e-07 and declared(1.17e-03) == 2e-02
    assert declared(1e-4) == 1e-3 and declared(1.01e-4) == 2e-3 and declared(0.0) == 1e-11


def test_every_env_has_a_float32_suite_with_a_tolerance_per_float_field() -> None:
    assert set(F32_TOLERANCE) == set(ENVS)
    for env_id, tol in F32_TOLERANCE.items():
        assert set(tol) == set(FLOAT_FIELDS) and all(v > 0 for v in tol.values())
        (suite,) = [s for s in PORT.l2 if s.name == f"{env_id}, float32"]
        assert suite.tolerance == tol and suite.cases == 10_000
    assert all(s.tolerance is None for s in PORT.l2 if s.name.endswith("float64"))


@pytest.mark.usefixtures("x64")
def test_a_float32_backend_steps_in_float32_inside_an_x64_process() -> None:
    backend = MjxCandidate(3, ENV, dtype="float32")
    obs = backend.reset(0)
    r = backend.step(np.zeros((3, 1), np.float32))
    assert jax.config.jax_enable_x64  # untouched outside the backend
    assert backend.env.dtype == np.float32 and backend._state.data.qpos.dtype == np.float32
    assert obs.dtype == r.obs.dtype == np.float64 == backend.spec.observation_space.dtype
    backend.close()


@pytest.mark.usefixtures("x64")
def test_float32_l2_cases_stay_within_the_declared_tolerances() -> None:
    res = run_l2(l2_suite(ENV, dtype="float32", cases=500, batch=250))
    assert res.cases == 500 and res.mismatches == 0, res.examples[:1]
    for field in FLOAT_FIELDS:
        assert res.max_abs_err[field] <= F32_TOLERANCE[ENV][field]
    assert res.max_abs_err["qvel"] > 1e-9  # float32: not the float64 port's agreement


@pytest.mark.usefixtures("x64")
def test_an_rk4_model_steps_in_float64_and_float32_in_one_process() -> None:
    """verify mjx traces float64 and float32 steps in one process; on an RK4 model JAX 0.10.2
    failed to lower the second precision's step (``env.enter_precision`` says why); both
    switches, float64 to float32 and back."""
    for dtype in ("float64", "float32", "float64"):
        backend = MjxCandidate(2, "Reacher-v5", dtype=dtype)
        backend.reset(0)
        r = backend.step(np.zeros((2, 2), np.float32))
        assert np.all(np.isfinite(r.obs)) and r.obs.shape == (2, 10)
        backend.close()
