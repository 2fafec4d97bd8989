"""The vectorised env: N=1 equals one emurust.PyBoy driven the same way, bit for bit; results do
not depend on the thread count; observation kinds; rewards/done from WRAM; auto-reset."""

from __future__ import annotations

import io

import numpy as np
import pytest

from emurust import PyBoy
from emurust.utils import BUTTONS, PyBoyInvalidInputException
from emurust.vec import VecEnv, mask, state_after
from emurust.verify import save_state_bytes


def _single_step(pb, held: int, action: int, frameskip: int, render: bool = True) -> int:
    """What VecEnv documents: press/release the buttons whose bit changed, then
    ``tick(frameskip, render, sound=False)``."""
    for i, name in enumerate(BUTTONS):
        bit = 1 << i
        if action & bit and not held & bit:
            pb.button_press(name)
        elif not action & bit and held & bit:
            pb.button_release(name)
    pb.tick(frameskip, render, False)
    return action


@pytest.mark.parametrize("obs", ["rgba", "ram"])
def test_one_env_equals_a_single_instance(tiny_rom, obs):
    rng = np.random.default_rng(7)
    env = VecEnv(tiny_rom, 1, frameskip=3, obs=obs, score_addr=0xC001, done_addr=None)
    single = PyBoy(tiny_rom)
    env.reset()
    held = 0
    for t in range(120):
        a = int(rng.integers(0, 256)) if t % 5 == 0 else held
        before = single.memory[0xC001]
        held = _single_step(single, held, a, 3, render=obs == "rgba")
        o, r, term, trunc, _ = env.step(np.array([a], np.uint8))
        if obs == "rgba":
            np.testing.assert_array_equal(o[0], single.screen.ndarray)
        else:
            np.testing.assert_array_equal(o[0], single.memory[0xC000:0xE000])
        assert r[0] == single.memory[0xC001] - before, t  # score increase (may be negative)
        assert not term[0] and not trunc[0]
    assert env.save_state(0) == save_state_bytes(single)
    assert env.frame_count(0) == single.frame_count == 360


def test_thread_count_does_not_change_results(tiny_rom):
    rng = np.random.default_rng(3)
    actions = rng.integers(0, 256, (25, 6)).astype(np.uint8)
    outs = []
    for threads in (1, 3, 6):
        env = VecEnv(tiny_rom, 6, frameskip=2, obs="grey2", threads=threads, score_addr=0xC000)
        env.reset()
        for a in actions:
            env.step(a)
        outs.append((env.observations.copy(), env.rewards.copy(),
                     [env.save_state(i) for i in range(6)]))
    for o in outs[1:]:
        np.testing.assert_array_equal(o[0], outs[0][0])
        np.testing.assert_array_equal(o[1], outs[0][1])
        assert o[2] == outs[0][2]


def test_grey2_is_the_mean_luma_of_2x2_blocks(tiny_rom):
    a = VecEnv(tiny_rom, 1, frameskip=70, obs="rgba")
    g = VecEnv(tiny_rom, 1, frameskip=70, obs="grey2")
    for env in (a, g):
        env.reset()
        env.step(np.zeros(1, np.uint8))
    rgb = a.observations[0].astype(np.uint32)
    luma = (77 * rgb[..., 0] + 150 * rgb[..., 1] + 29 * rgb[..., 2]) >> 8
    want = luma.reshape(72, 2, 80, 2).sum(axis=(1, 3)) // 4
    assert g.observations.shape == (1, 72, 80)
    np.testing.assert_array_equal(g.observations[0], want)


def test_buffers_are_views_updated_in_place(tiny_rom):
    env = VecEnv(tiny_rom, 2, obs="ram", skip_frames=70)  # past the boot ROM: WRAM changes
    obs = env.observations
    env.reset()
    env.step(np.zeros(2, np.uint8))
    first = obs.copy()
    env.step(np.zeros(2, np.uint8))
    assert env.observations is obs and not np.array_equal(first, obs)


def test_done_flag_and_auto_reset(tiny_rom):
    # past the boot, the tiny ROM increments C000 all the time: "done" at once, and every step
    # restarts from the start state (frame_count counts frames since the emulator was made)
    state = state_after(tiny_rom, 70)
    env = VecEnv(tiny_rom, 2, frameskip=4, obs="ram", done_addr=0xC000, start_state=state)
    env.reset()
    obs0 = env.observations.copy()
    _, _, term, _, _ = env.step(np.zeros(2, np.uint8))
    assert term.all()
    assert env.frame_count(0) == 0  # reset after the terminal step
    np.testing.assert_array_equal(env.observations, obs0)  # the new episode's first observation
    no_reset = VecEnv(tiny_rom, 1, frameskip=4, obs="ram", done_addr=0xC000, auto_reset=False,
                      start_state=state)
    no_reset.reset()
    _, _, term, _, _ = no_reset.step(np.zeros(1, np.uint8))
    assert term[0] and no_reset.frame_count(0) == 4


def test_truncation_after_max_steps(tiny_rom):
    env = VecEnv(tiny_rom, 1, obs="ram", max_steps=3)
    env.reset()
    flags = [bool(env.step(np.zeros(1, np.uint8))[3][0]) for _ in range(4)]
    assert flags == [False, False, True, False]


def test_start_state_skips_the_boot(tiny_rom):
    state = state_after(tiny_rom, 70)
    env = VecEnv(tiny_rom, 1, obs="rgba", start_state=state)
    single = PyBoy(tiny_rom)
    single.load_state(io.BytesIO(state))
    env.reset()
    env.step(np.zeros(1, np.uint8))
    single.tick()
    np.testing.assert_array_equal(env.observations[0], single.screen.ndarray)


def test_game_rom_reward_and_done(built_roms):
    env = VecEnv(built_roms["game"], 1, frameskip=4, obs="ram", game="game", auto_reset=False)
    env.reset()
    total, done = 0.0, False
    for _ in range(3000):  # no input: the paddle never moves, the first miss ends the game
        _, r, term, _, _ = env.step(np.zeros(1, np.uint8))
        total += float(r[0])
        if term[0]:
            done = True
            break
    assert done
    assert env.observations[0][1] == 1  # DONE byte at 0xC001
    assert total == env.observations[0][0]  # rewards add up to the SCORE byte at 0xC000


def test_bad_arguments(tiny_rom):
    with pytest.raises(PyBoyInvalidInputException):
        VecEnv(tiny_rom, 1, obs="pixels")
    with pytest.raises(PyBoyInvalidInputException):
        VecEnv(tiny_rom, 0)
    with pytest.raises(PyBoyInvalidInputException):
        VecEnv(tiny_rom, 1, frameskip=0)
    env = VecEnv(tiny_rom, 2)
    with pytest.raises(PyBoyInvalidInputException):
        env.step(np.zeros(3, np.uint8))
    assert mask("A", "left") == 0b11000  # bit 4 = a, bit 3 = left (WindowEvent order)
    with pytest.raises(PyBoyInvalidInputException):
        mask("jump")


def test_gymnasium_adapter(tiny_rom):
    gymnasium = pytest.importorskip("gymnasium")
    from emurust.vec import EmurustEnv

    env = EmurustEnv(tiny_rom, obs="grey2", frameskip=2, score_addr=0xC001)
    obs, info = env.reset(seed=0)
    assert obs.shape == (72, 80) and env.observation_space.contains(obs)
    obs2, r, term, trunc, info = env.step(env.action_space.sample())
    assert isinstance(r, float) and isinstance(term, bool) and obs2.dtype == np.uint8
    from gymnasium.utils.env_checker import check_env

    check_env(EmurustEnv(tiny_rom, obs="grey2"), skip_render_check=True)
    del gymnasium
