"""The PufferLib adapter: PufferLib 3.0's native-env protocol (spaces, buffers written in place,
reset/step/async returns, a vectoriser's ``buf``), equality with a plain ``VecEnv`` bit for bit,
a random rollout of ``game.gb`` with episode stats, and clear errors. PufferLib itself is not
needed, except by one slow test that runs its vectorisers (in the PuffeRL venv that
pong_port.pufferl builds when this interpreter has no pufferlib)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import emurust
from emurust.puffer import EmurustPufferEnv, make_puffer_env
from emurust.utils import PyBoyInvalidInputException
from emurust.vec import VecEnv, mask

gymnasium = pytest.importorskip("gymnasium")


def _buf(n: int, obs_shape, atn_dtype=np.int32) -> dict[str, np.ndarray]:
    """What PufferLib's set_buffers allocates (and a vectoriser slices per env)."""
    return {"observations": np.zeros((n, *obs_shape), np.uint8),
            "rewards": np.zeros(n, np.float32), "terminals": np.zeros(n, bool),
            "truncations": np.zeros(n, bool), "masks": np.zeros(n, bool),
            "actions": np.zeros(n, atn_dtype)}


def _assert_same_step(got, want):
    for g, w in zip(got[:4], want[:4], strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_protocol_attributes_and_buffers(tiny_rom):
    env = EmurustPufferEnv(tiny_rom, 4, obs="ram", frameskip=2, score_addr=0xC001)
    spaces = gymnasium.spaces
    assert env.num_agents == 4 and env.agent_per_batch == 4
    assert env.single_observation_space == spaces.Box(0, 255, (0x2000,), np.uint8)
    assert env.single_action_space == spaces.Discrete(256)
    assert env.observation_space == spaces.Box(0, 255, (4, 0x2000), np.uint8)
    assert env.action_space == spaces.MultiDiscrete([256] * 4)
    np.testing.assert_array_equal(env.agent_ids, np.arange(4))
    assert env.emulated is False and env.done is False and env.driver_env is env
    for name, shape, dtype in [("observations", (4, 0x2000), np.uint8),
                               ("rewards", (4,), np.float32), ("terminals", (4,), np.bool_),
                               ("truncations", (4,), np.bool_), ("masks", (4,), np.bool_),
                               ("actions", (4,), np.int32)]:
        a = getattr(env, name)
        assert a.shape == shape and a.dtype == dtype, name
    assert env.masks.all()
    bufs = [env.observations, env.rewards, env.terminals, env.truncations]

    obs, infos = env.reset(seed=3)
    assert obs is env.observations and infos == []
    assert env.observation_space.contains(obs)
    before = obs.copy()
    env.action_space.seed(0)
    for _ in range(40):  # past the boot ROM: the tiny ROM's loop counts in WRAM
        out = env.step(env.action_space.sample())
        assert len(out) == 5 and isinstance(out[4], list)
        # step rewrites the same arrays
        assert all(o is b for o, b in zip(out[:4], bufs, strict=True))
    assert not np.array_equal(before, env.observations)
    acts = np.array([1, 2, 3, 255])
    env.step(acts)
    np.testing.assert_array_equal(env.actions, acts)  # the action buffer holds the last actions
    assert env.render() is None
    env.close()


def test_async_interface_matches_step(tiny_rom):
    a = EmurustPufferEnv(tiny_rom, 2, obs="ram", score_addr=0xC000, max_steps=4)
    b = EmurustPufferEnv(tiny_rom, 2, obs="ram", score_addr=0xC000, max_steps=4)
    a.async_reset(0)
    o, r, d, t, infos, ids, masks = a.recv()
    assert o is a.observations and infos == [] and masks is a.masks
    np.testing.assert_array_equal(ids, [0, 1])
    b.reset(0)
    for k in range(6):
        acts = np.array([k, 255 - k])
        a.send(acts)
        got = a.recv()
        want = b.step(acts)
        _assert_same_step(got, want)
        assert got[4] == want[4]
    assert got[4] == []


@pytest.mark.parametrize("obs", ["grey2", "ram", "rgba"])
def test_equals_vecenv_bit_for_bit(built_roms, obs):
    kw = dict(frameskip=4, obs=obs, game="game")
    env = make_puffer_env(built_roms["game"], 3, **kw)
    ref = VecEnv(built_roms["game"], 3, **kw)
    rng = np.random.default_rng(11)
    env.reset()
    ref.reset()
    steps = 60 if obs == "rgba" else 150
    for _ in range(steps):
        acts = rng.integers(0, 256, 3)
        _assert_same_step(env.step(acts), ref.step(acts.astype(np.uint8)))
    assert [env.vec.save_state(i) for i in range(3)] == [ref.save_state(i) for i in range(3)]
    if obs == "rgba":
        np.testing.assert_array_equal(env.render(), ref.observations[0, :, :, :3])


def test_buf_from_a_vectoriser_is_written_in_place(built_roms):
    # as pufferlib.vector.Serial does: one set of arrays for 6 agents, a slice for each of two
    # envs of 3; the result equals one VecEnv of 6 (each emulator is independent)
    kw = dict(frameskip=4, obs="grey2", game="game")
    big = _buf(6, (72, 80))
    envs = [EmurustPufferEnv(built_roms["game"], 3, seed=i, **kw,
                             buf={k: v[3 * i:3 * i + 3] for k, v in big.items()})
            for i in range(2)]
    ref = VecEnv(built_roms["game"], 6, **kw)
    assert big["masks"].all()
    for e in envs:
        assert np.shares_memory(e.observations, big["observations"])
        assert e.observations is not e.vec.observations
        o, _ = e.reset(seed=0)
        assert np.shares_memory(o, big["observations"])
    ref.reset()
    np.testing.assert_array_equal(big["observations"], ref.observations)
    rng = np.random.default_rng(5)
    for _ in range(150):
        big["actions"][:] = rng.integers(0, 256, 6)
        for i, e in enumerate(envs):
            e.step(big["actions"][3 * i:3 * i + 3])  # the worker passes its action slice
        ref.step(big["actions"].astype(np.uint8))
        for key in ("observations", "rewards", "terminals", "truncations"):
            np.testing.assert_array_equal(big[key], getattr(ref, key), key)


def test_action_set(built_roms):
    moves = [0, mask("left"), mask("right")]
    env = EmurustPufferEnv(built_roms["game"], 2, action_set=moves, frameskip=4, obs="ram",
                           game="game")
    ref = VecEnv(built_roms["game"], 2, frameskip=4, obs="ram", game="game")
    assert env.single_action_space == gymnasium.spaces.Discrete(3)
    assert env.action_set == tuple(moves)
    env.reset()
    ref.reset()
    rng = np.random.default_rng(2)
    for _ in range(100):
        idx = rng.integers(0, 3, 2).astype(np.int32)
        _assert_same_step(env.step(idx), ref.step(np.array(moves, np.uint8)[idx]))
    with pytest.raises(PyBoyInvalidInputException, match=r"0\.\.2"):
        env.step(np.array([0, 3]))


def test_random_rollout_of_game(built_roms):
    # random buttons on game.gb: blocks are missed, episodes end and restart by themselves; the
    # stats in infos add up to the rewards seen, and a new episode starts from power-on
    env = make_puffer_env(built_roms["game"], 8, frameskip=4, obs="ram", game="game")
    obs0, _ = env.reset(seed=0)
    obs0 = obs0.copy()
    env.action_space.seed(1)
    ret, length, ended = np.zeros(8), np.zeros(8, int), []
    infos_seen = []
    for _ in range(300):
        obs, rew, term, trunc, infos = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        assert (rew >= 0).all() and not trunc.any()
        ret += rew
        length += 1
        for i in np.flatnonzero(term):
            ended.append((ret[i], length[i]))
            np.testing.assert_array_equal(obs[i], obs0[i])  # auto-reset to power-on
            ret[i], length[i] = 0, 0
        infos_seen += infos
        assert bool(infos) == bool(term.any())
    assert len(ended) >= 8
    assert sum(i["episodes"] for i in infos_seen) == len(ended)
    mean_ret = sum(i["episode_return"] * i["episodes"] for i in infos_seen) / len(ended)
    mean_len = sum(i["episode_length"] * i["episodes"] for i in infos_seen) / len(ended)
    assert mean_ret == pytest.approx(np.mean([r for r, _ in ended]))
    assert mean_len == pytest.approx(np.mean([n for _, n in ended]))


def test_truncation_ends_an_episode(tiny_rom):
    env = EmurustPufferEnv(tiny_rom, 2, obs="ram", max_steps=5, score_addr=0xC001)
    env.reset()
    for t in range(1, 11):
        _, _, term, trunc, infos = env.step(np.zeros(2, np.int32))
        assert trunc.all() == (t % 5 == 0) and not term.any()
        if t % 5 == 0:
            assert infos[0]["episode_length"] == 5 and infos[0]["episodes"] == 2
        else:
            assert infos == []


def test_errors(tiny_rom):
    env = EmurustPufferEnv(tiny_rom, 2, obs="ram")
    env.reset()
    with pytest.raises(PyBoyInvalidInputException, match="expected 2 actions"):
        env.step(np.zeros(3, np.int32))
    with pytest.raises(PyBoyInvalidInputException, match="dtype float"):
        env.step(np.zeros(2, np.float32))
    with pytest.raises(PyBoyInvalidInputException, match="dtype bool"):
        env.step(np.zeros(2, bool))
    for bad in ([0, 256], [-1, 0]):
        with pytest.raises(PyBoyInvalidInputException, match=r"0\.\.255"):
            env.step(np.array(bad))
    env.step(np.array([[1], [2]], np.int64))  # (N, 1) is accepted, as by VecEnv
    for bad in ([], [256], [[1, 2]], [1.5], [-1]):
        with pytest.raises(PyBoyInvalidInputException, match="action_set"):
            EmurustPufferEnv(tiny_rom, 1, action_set=bad)
    with pytest.raises(PyBoyInvalidInputException, match="auto_reset"):
        EmurustPufferEnv(tiny_rom, 1, auto_reset=False)
    with pytest.raises(PyBoyInvalidInputException):
        EmurustPufferEnv(tiny_rom, 0)  # VecEnv's own checks still apply

    good = _buf(2, (0x2000,))
    for key, value, match in [
        ("masks", None, "lacks 'masks'"),
        ("observations", np.zeros((2, 72, 80), np.uint8), "shape"),
        ("rewards", np.zeros(2, np.float64), "float32"),
        ("terminals", np.zeros(2, np.uint8), "bool"),
        ("actions", np.zeros(2, np.int8), "integer dtype"),
        ("actions", np.zeros(2, np.float32), "integer dtype"),
        ("rewards", [0.0, 0.0], "numpy array"),
    ]:
        buf = dict(good)
        if value is None:
            del buf[key]
        else:
            buf[key] = value
        with pytest.raises(PyBoyInvalidInputException, match=match):
            EmurustPufferEnv(tiny_rom, 2, obs="ram", buf=buf)
    ro = _buf(2, (0x2000,))
    ro["rewards"].flags.writeable = False
    with pytest.raises(PyBoyInvalidInputException, match="writeable"):
        EmurustPufferEnv(tiny_rom, 2, obs="ram", buf=ro)
    # a Discrete(3) action set fits int8 actions
    EmurustPufferEnv(tiny_rom, 2, obs="ram", action_set=[0, 1, 2],
                     buf=_buf(2, (0x2000,), np.int8))


def test_is_a_pufferlib_env_when_pufferlib_is_imported(tiny_rom, monkeypatch):
    monkeypatch.delitem(sys.modules, "pufferlib", raising=False)
    assert type(EmurustPufferEnv(tiny_rom, 1)) is EmurustPufferEnv
    fake = types.ModuleType("pufferlib")

    class PufferEnv:
        @property
        def done(self):
            raise AssertionError("the adapter's own methods come first")

    fake.PufferEnv = PufferEnv
    monkeypatch.setitem(sys.modules, "pufferlib", fake)
    env = make_puffer_env(tiny_rom, 2, obs="ram")
    assert isinstance(env, PufferEnv) and isinstance(env, EmurustPufferEnv)
    assert type(env).__name__ == "EmurustPufferEnv" and env.done is False
    assert type(make_puffer_env(tiny_rom, 1)) is type(env)  # one class per base, cached
    env.reset()
    env.step(np.zeros(2, np.int32))


def test_exported_from_the_package():
    assert emurust.EmurustPufferEnv is EmurustPufferEnv
    assert emurust.make_puffer_env is make_puffer_env


# Real PufferLib's vectorisers (native and Serial) against a plain VecEnv, as a script for an
# interpreter that has pufferlib: this one if it does, else the PuffeRL venv that
# pong_port.pufferl builds (pufferlib 3.0.0 with torch and numpy<2, kept out of the test venv).
# argv: the game ROM; prints the steps compared.
VECTORISER_CHECK = r"""
import sys

import numpy as np
import pufferlib
import pufferlib.vector as pv

from emurust.puffer import make_puffer_env
from emurust.vec import VecEnv

rom, steps = sys.argv[1], 50
kw = dict(frameskip=4, obs="grey2", game="game")
native = pv.make(make_puffer_env, env_args=[rom, 3], env_kwargs=kw, backend=pufferlib.PufferEnv)
serial = pv.make(make_puffer_env, env_args=[rom, 3], env_kwargs=kw, backend=pv.Serial,
                 num_envs=2)
assert isinstance(native, pufferlib.PufferEnv), type(native).__mro__
assert serial.num_agents == 6, serial.num_agents
ref = VecEnv(rom, 6, **kw)
native.reset(seed=0)
serial.reset(seed=0)
ref.reset()
rng = np.random.default_rng(9)
for t in range(steps):
    acts = rng.integers(0, 256, 6)
    want = ref.step(acts.astype(np.uint8))
    got = serial.step(acts)
    for g, w in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(g, w, err_msg=f"Serial, step {t}")
    got = native.step(acts[:3])
    for g, w in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(g, w[:3], err_msg=f"native, step {t}")
serial.close()
native.close()
print("compared", steps, "steps")
"""


def _python_with_pufferlib() -> str:
    if importlib.util.find_spec("pufferlib") is not None:
        return sys.executable
    try:
        from pong_port import pufferl
    except ImportError:
        pytest.fail("this test needs pufferlib: install pufferlib 3.0 here, or run it in the "
                    "envport workspace, where pong_port.pufferl builds a venv with it")
    return str(pufferl.build())  # a no-op when built; else minutes (torch is downloaded)


@pytest.mark.slow
def test_real_pufferlib_vectorisers(built_roms, tmp_path):
    python = _python_with_pufferlib()
    # the emurust this process imports, its folder alone on the other interpreter's path (so
    # that interpreter keeps its own numpy); cwd tmp_path: `import pufferlib` leaves a
    # resources symlink in the working directory
    path = tmp_path / "path"
    path.mkdir()
    (path / "emurust").symlink_to(Path(emurust.__file__).parent, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(path)}
    proc = subprocess.run([python, "-c", VECTORISER_CHECK, str(built_roms["game"])],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{python}:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
    assert proc.stdout.split()[-3:] == ["compared", "50", "steps"]
