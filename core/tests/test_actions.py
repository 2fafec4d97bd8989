"""validate_actions: what reaches an engine is well-formed, and the errors say what was wrong."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from envport import ActionError, Box, Discrete
from envport.actions import validate_actions

D = Discrete(4)
BOX = Box(-1.0, 1.0, (2,))
SCALAR_BOX = Box(-2.0, 2.0, ())


# -- shape -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("space", "actions", "num_envs"), [
    (D, np.zeros(2, np.int32), 3),
    (D, np.zeros((3, 1), np.int32), 3),
    (D, np.zeros((), np.int32), 3),  # a scalar is only accepted for a single env
    (BOX, np.zeros((3, 3), np.float32), 3),
    (BOX, np.zeros(6, np.float32), 3),
    (BOX, np.zeros(2, np.float32), 3),
])
def test_wrong_shape_names_expected_and_actual(space, actions, num_envs):
    with pytest.raises(ActionError, match="shape") as e:
        validate_actions(space, actions, num_envs)
    msg = str(e.value)
    assert str((num_envs, *space.shape)) in msg and str(actions.shape) in msg


def test_action_error_is_a_value_error():
    with pytest.raises(ValueError):
        validate_actions(D, [1, 2], 3)


@pytest.mark.parametrize(("space", "action", "expected"), [
    (D, 3, np.array([3], np.int32)),
    (D, np.int64(2), np.array([2], np.int32)),
    (BOX, [0.5, -0.5], np.array([[0.5, -0.5]], np.float32)),
    (SCALAR_BOX, 1.5, np.array([1.5], np.float32)),
])
def test_scalar_accepted_for_a_single_env(space, action, expected):
    out = validate_actions(space, action, 1)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_scalar_box_accepts_a_trailing_unit_axis():
    out = validate_actions(SCALAR_BOX, np.zeros((3, 1), np.float32), 3)
    assert out.shape == (3,)


# -- dtype -----------------------------------------------------------------------------------

@pytest.mark.parametrize("actions", [
    np.array([1.0, 2.0, 0.0]), np.array([1.0, 2.0, 0.0], np.float32), np.array([True, False, True]),
])
def test_discrete_rejects_non_integers(actions):
    with pytest.raises(ActionError, match="discrete actions must be integers") as e:
        validate_actions(D, actions, 3)
    assert str(actions.dtype) in str(e.value)


@pytest.mark.parametrize("actions", [
    np.array([[1, 0], [0, 1]], np.int32), np.array([[1, 0], [0, 1]], np.int64),
    np.array([[True, False], [False, True]]),
])
def test_continuous_rejects_non_floats(actions):
    with pytest.raises(ActionError, match="continuous actions must be floating point") as e:
        validate_actions(BOX, actions, 2)
    assert str(actions.dtype) in str(e.value)


# -- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_continuous_rejects_nan_and_inf(bad):
    actions = np.zeros((3, 2), np.float32)
    actions[1, 1] = bad
    with pytest.raises(ActionError, match="NaN/inf not allowed") as e:
        validate_actions(BOX, actions, 3)
    assert "index 3" in str(e.value) and str(np.float32(bad)) in str(e.value)


@pytest.mark.parametrize(("actions", "value", "env"), [
    ([0, 4, 1], 4, 1), ([0, 1, -1], -1, 2), ([7, 1, 2], 7, 0),
])
def test_discrete_out_of_range_names_value_env_and_range(actions, value, env):
    with pytest.raises(ActionError, match="out of range") as e:
        validate_actions(D, np.array(actions, np.int64), 3)
    msg = str(e.value)
    assert f"action {value} " in msg and f"env {env} " in msg and "0..3" in msg


def test_out_of_range_names_the_env_for_shaped_discrete_actions():
    space = Discrete(3, shape=(2,))  # two sub-actions per env
    actions = np.array([[0, 1], [2, 2], [1, 5]], np.int32)
    with pytest.raises(ActionError, match="out of range") as e:
        validate_actions(space, actions, 3)
    assert "action 5 " in str(e.value) and "env 2 " in str(e.value)


@pytest.mark.parametrize(("space", "actions"), [
    (BOX, [[0.0, 0.5], [0.5]]),
    (D, [[1], 2, [3, 4]]),
])
def test_ragged_input_is_an_action_error(space, actions):
    with pytest.raises(ActionError, match="array"):
        validate_actions(space, actions, 2)


def test_allow_out_of_range_lets_values_through_unchanged():
    out = validate_actions(D, np.array([0, 4, -1], np.int64), 3, allow_out_of_range=True)
    np.testing.assert_array_equal(out, [0, 4, -1])
    assert out.dtype == np.int32
    with pytest.raises(ActionError, match="integers"):  # the dtype is still checked
        validate_actions(D, np.array([0.0, 4.0, 1.0]), 3, allow_out_of_range=True)


# -- properties ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 50), num_envs=st.integers(1, 8), dtype=st.sampled_from(
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32]), data=st.data())
def test_valid_discrete_round_trips(n, num_envs, dtype, data):
    hi = min(n - 1, np.iinfo(dtype).max)
    actions = data.draw(hnp.arrays(dtype, num_envs, elements=st.integers(0, hi)))
    out = validate_actions(Discrete(n), actions, num_envs)
    assert out.shape == (num_envs,) and out.dtype == np.int32
    np.testing.assert_array_equal(out, actions)


@settings(max_examples=60, deadline=None)
@given(num_envs=st.integers(1, 8), dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_valid_continuous_round_trips(num_envs, dtype, data):
    elements = st.floats(-1, 1, width=32, allow_nan=False)
    actions = data.draw(hnp.arrays(dtype, (num_envs, 2), elements=elements))
    out = validate_actions(BOX, actions, num_envs)
    assert out.shape == (num_envs, 2) and out.dtype == np.float32
    np.testing.assert_array_equal(out, actions.astype(np.float32))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 20), actions=hnp.arrays(np.int64, 5, elements=st.integers(-50, 50)))
def test_discrete_accepts_exactly_the_in_range_arrays(n, actions):
    in_range = bool(((actions >= 0) & (actions < n)).all())
    try:
        validate_actions(Discrete(n), actions, 5)
    except ActionError:
        assert not in_range
    else:
        assert in_range
