"""Vectorised emurust: N Game Boys stepped in parallel on Rust threads, GIL released.

``VecEnv`` owns preallocated buffers (PufferLib's layout: ``observations``, ``rewards``,
``terminals``, ``truncations``) that are numpy views over Rust memory, rewritten in place by each
``step``. An action is one held-button bitmask per env (bit i = ``emurust.utils.BUTTONS[i]``:
up, down, right, left, a, b, select, start); a step turns mask changes into the same
press/release events ``PyBoy.button_press``/``button_release`` queue and runs ``frameskip``
frames, rendering only the last and never sampling sound (as ``PyBoy.tick(frameskip, render,
sound=False)``; ``render`` is off for RAM observations). Reward = increase of the game's
score byte(s) in WRAM, terminal = its done byte non-zero (``GAMES`` has them for the repository's
``game.gb``; other ROMs pass ``score_addr``/``done_addr``). A done env restarts from power-on, or
from ``start_state`` (e.g. taken after the boot ROM with ``skip_frames``).

``EmurustEnv`` is a ``gymnasium.Env`` over a one-env ``VecEnv``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from emurust._emurust import VecEmulator
from emurust.utils import BUTTONS, PyBoyInvalidInputException

# WRAM addresses of the repository's test games (emurust/roms/game.s)
GAMES = {
    "game": {"score_addr": 0xC000, "score_bytes": 1, "done_addr": 0xC001},
}
OBS_SHAPES = {"rgba": (144, 160, 4), "grey2": (72, 80), "ram": (0x2000,)}


def _rom_bytes(rom) -> bytes:
    if isinstance(rom, (bytes, bytearray)):
        return bytes(rom)
    return Path(rom).read_bytes()


def state_after(rom, frames: int) -> bytes:
    """The save state of a single emurust after ``frames`` frames from power-on, no input
    (e.g. to start every episode past the boot ROM)."""
    from emurust import PyBoy

    pb = PyBoy(io.BytesIO(_rom_bytes(rom)), window="null", cgb=False, sound_emulated=False)
    pb.tick(frames, False)
    f = io.BytesIO()
    pb.save_state(f)
    return f.getvalue()


class VecEnv:
    """N emulators of one ROM; see the module docstring."""

    def __init__(self, rom, num_envs: int, *, frameskip: int = 1, obs: str = "rgba",
                 game: str | None = None, score_addr: int | None = None, score_bytes: int = 1,
                 done_addr: int | None = None, max_steps: int = 0,
                 start_state: bytes | None = None, skip_frames: int = 0, auto_reset: bool = True,
                 threads: int = 0):
        if obs not in OBS_SHAPES:
            raise PyBoyInvalidInputException(f"obs must be one of {sorted(OBS_SHAPES)}, not {obs!r}")
        if game is not None:
            if game not in GAMES:
                raise PyBoyInvalidInputException(f"unknown game {game!r}; known: {sorted(GAMES)}")
            g = GAMES[game]
            score_addr = g["score_addr"] if score_addr is None else score_addr
            score_bytes = g["score_bytes"]
            done_addr = g["done_addr"] if done_addr is None else done_addr
        rom = _rom_bytes(rom)
        if skip_frames and start_state is None:
            start_state = state_after(rom, skip_frames)
        self.num_envs, self.frameskip, self.obs_kind = num_envs, frameskip, obs
        self._emu = VecEmulator(rom, num_envs, frameskip, obs, score_addr, score_bytes, done_addr,
                                max_steps, start_state, auto_reset, threads)
        # views over the Rust buffers (no copies); rewritten in place by every step
        self.observations = self._emu.observations.reshape((num_envs, *OBS_SHAPES[obs]))
        self.rewards = self._emu.rewards
        self.terminals = self._emu.terminals
        self.truncations = self._emu.truncations
        self.single_observation_shape = OBS_SHAPES[obs]

    def reset(self, seed: int | None = None):
        """Every env from power-on (or the start state). The emulator is deterministic: the seed
        is accepted for API compatibility and unused."""
        self._emu.reset()
        return self.observations, [{} for _ in range(self.num_envs)]

    def step(self, actions):
        actions = np.ascontiguousarray(actions, dtype=np.uint8).reshape(-1)
        if actions.shape != (self.num_envs,):
            raise PyBoyInvalidInputException(
                f"expected {self.num_envs} actions (one bitmask per env), got {actions.size}")
        self._emu.step(actions)
        return self.observations, self.rewards, self.terminals, self.truncations, [
            {} for _ in range(self.num_envs)]

    def save_state(self, i: int) -> bytes:
        return self._emu.save_state(i)

    def frame_count(self, i: int) -> int:
        return self._emu.frame_count(i)

    def close(self) -> None:
        pass


def mask(*buttons: str) -> int:
    """The action bitmask holding ``buttons`` (names as in PyBoy, case-insensitive)."""
    out = 0
    for b in buttons:
        b = b.lower()
        if b not in BUTTONS:
            raise PyBoyInvalidInputException("Unrecognized input:", b)
        out |= 1 << BUTTONS.index(b)
    return out


def _gym_env_class():
    import gymnasium

    class EmurustEnv(gymnasium.Env):
        """One emulator as a Gymnasium env: ``Discrete(256)`` held-button bitmasks, observations
        as ``VecEnv`` makes them (copied: Gymnasium callers keep what they are given)."""

        metadata = {"render_modes": ["rgb_array"]}

        def __init__(self, rom, *, render_mode=None, **kwargs):
            kwargs.setdefault("auto_reset", False)
            self._vec = VecEnv(rom, 1, **kwargs)
            shape = self._vec.single_observation_shape
            self.observation_space = gymnasium.spaces.Box(0, 255, shape, np.uint8)
            self.action_space = gymnasium.spaces.Discrete(256)
            self.render_mode = render_mode

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            obs, _ = self._vec.reset(seed)
            return obs[0].copy(), {}

        def step(self, action):
            obs, rew, term, trunc, _ = self._vec.step(np.array([action], np.uint8))
            return obs[0].copy(), float(rew[0]), bool(term[0]), bool(trunc[0]), {}

        def render(self):
            if self._vec.obs_kind == "rgba":
                return self._vec.observations[0, :, :, :3].copy()
            return None

    return EmurustEnv


def __getattr__(name):
    # gymnasium is optional: the class is built on first use
    if name == "EmurustEnv":
        cls = _gym_env_class()
        globals()["EmurustEnv"] = cls
        return cls
    raise AttributeError(name)
