"""The ctypes view of the C `struct Pong` must match the compiled reference exactly."""

import numpy as np
import pytest

from envport import ReferenceNotInstalledError
from pong_port import reference, reference_build
from pong_port.config import FLOAT_FIELDS, PongConfig

ODD = PongConfig(width=333, height=444.5, paddle_width=11, paddle_height=55, ball_width=9,
                 ball_height=7, paddle_speed=5.5, ball_initial_speed_x=7, ball_initial_speed_y=2,
                 ball_speed_y_increment=1.5, ball_max_speed_y=9, max_score=5, frameskip=3,
                 continuous=True)


def test_struct_layout_reads_constructor_values(reference_built):
    env = reference.PufferPong(3, ODD)
    try:
        for s in env.structs:
            for name in FLOAT_FIELDS:
                assert getattr(s, name) == pytest.approx(float(ODD.f32(name)), abs=0)
            assert (s.max_score, s.frameskip, s.continuous) == (5, 3, 1)
            assert s.min_paddle_y == float(ODD.min_paddle_y)
            assert s.max_paddle_y == float(ODD.max_paddle_y)
        # the struct's buffer pointers point into our numpy buffers, env by env
        base = env.observations.ctypes.data
        assert [ctypes_addr(s.observations) for s in env.structs] == [base + 32 * i for i in range(3)]
    finally:
        env.close()


def ctypes_addr(ptr):
    import ctypes

    return ctypes.cast(ptr, ctypes.c_void_p).value


def test_write_then_read_round_trips(reference_built):
    from pong_port.cases import sample_states

    env = reference.PufferPong(4, PongConfig())
    try:
        state = sample_states(np.random.default_rng(0), 4, PongConfig())
        reference.write_state(env, state)
        back = reference.read_state(env)
        for k, v in back.items():
            np.testing.assert_array_equal(v, state[k], err_msg=k)
    finally:
        env.close()


def test_missing_reference_names_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path))
    reference.load_binding.cache_clear()
    try:
        with pytest.raises(ReferenceNotInstalledError, match="envport install-reference pong"):
            reference.load_binding()
    finally:
        reference.load_binding.cache_clear()
    assert "python -m pong_port.reference_build" in reference_build.INSTALL_HINT
