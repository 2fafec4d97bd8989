"""emurust as a pure functional envport ``Env`` (JAX interface), for the core's L1 checks.

The state is the emulator's save-state bytes (PyBoy's v29 format) plus the held-button mask;
``step`` is a ``jax.pure_callback`` that loads the bytes into a fresh emurust, queues the
press/release events of the buttons whose bit changed, runs ``frameskip`` frames (rendering the
last, no sound sampling) and saves the bytes again. So the env is a function of its inputs (no
emulator object survives between calls), jittable and vmappable (``vmap_method="sequential"``);
it is slow next to ``emurust.vec.VecEnv`` and meant for checking, not training. Reward/done come
from the game's WRAM (``emurust.vec.GAMES``). No JAX import happens until an env is made.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from emurust.utils import BUTTONS
from emurust.vec import GAMES


def _emulator(rom: bytes):
    from emurust import PyBoy

    return PyBoy(io.BytesIO(rom), window="null", cgb=False, sound_emulated=False)


def make_env(rom_path, frameskip: int = 4, game: str = "game"):
    import jax
    import jax.numpy as jnp

    from envport.env import Env
    from envport.types import Box, Discrete, EnvSpec, TimeStep

    rom = Path(rom_path).read_bytes()
    addrs = GAMES[game]
    fresh = _emulator(rom)
    f = io.BytesIO()
    fresh.save_state(f)
    power_on = np.frombuffer(f.getvalue(), np.uint8).copy()
    first_screen = np.array(fresh.screen.ndarray)
    size = power_on.size

    def _step_np(mb, held, action):
        pb = _emulator(rom)
        pb.load_state(io.BytesIO(np.asarray(mb, np.uint8).tobytes()))
        before = pb.memory[0, addrs["score_addr"]]  # bank access: no memory-map side effects
        held, action = int(held), int(action) & 0xFF
        for i, name in enumerate(BUTTONS):
            if action >> i & 1 and not held >> i & 1:
                pb.button_press(name)
            elif not action >> i & 1 and held >> i & 1:
                pb.button_release(name)
        pb.tick(frameskip, True, False)
        out = io.BytesIO()
        pb.save_state(out)
        score = pb.memory[0, addrs["score_addr"]]
        done = pb.memory[0, addrs["done_addr"]] != 0
        return (np.frombuffer(out.getvalue(), np.uint8).copy(), np.uint8(action),
                np.array(pb.screen.ndarray), np.float32(score - before), np.bool_(done))

    shapes = (jax.ShapeDtypeStruct((size,), jnp.uint8), jax.ShapeDtypeStruct((), jnp.uint8),
              jax.ShapeDtypeStruct((144, 160, 4), jnp.uint8),
              jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.bool_))

    class EmurustJaxEnv(Env):
        @property
        def spec(self) -> EnvSpec:
            return EnvSpec(id=f"emurust/{game}", version="0.1.0",
                           observation_space=Box(0, 255, (144, 160, 4), np.uint8),
                           action_space=Discrete(256),
                           metadata={"frameskip": frameskip, "state": "PyBoy v29 save-state bytes"})

        def reset(self, key):
            del key  # power-on is deterministic
            state = {"mb": jnp.asarray(power_on), "held": jnp.uint8(0)}
            ts = TimeStep(jnp.asarray(first_screen), jnp.float32(0.0), jnp.bool_(False),
                          jnp.bool_(False))
            return state, ts

        def step(self, state, action):
            mb, held, obs, reward, done = jax.pure_callback(
                _step_np, shapes, state["mb"], state["held"], jnp.asarray(action),
                vmap_method="sequential")
            return {"mb": mb, "held": held}, TimeStep(obs, reward, done, jnp.bool_(False))

    return EmurustJaxEnv()
