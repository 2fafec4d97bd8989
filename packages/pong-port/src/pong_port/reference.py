"""The real PufferLib 3.0.0 Pong, compiled from its sdist, driven in-process.

``PufferPong`` reproduces what ``pufferlib/ocean/pong/pong.py`` adds around the C binding
(buffer allocation, ``np.clip`` of continuous actions, the float32 action buffer); everything
else is the reference's own C code. The full C ``struct Pong`` of every env is mapped with
ctypes, which lets the backend read the hidden state (``state()``) and write it (``load()``)
for L2 single-transition checks.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
from functools import cache

import numpy as np

from envport import ReferenceNotInstalledError
from envport.backend import CanonicalState, PufferBackend
from pong_port import reference_build
from pong_port.config import PongConfig
from pong_port.env import check_seed, pong_spec

F, U, INT = ctypes.c_float, ctypes.c_uint, ctypes.c_int


class CLog(ctypes.Structure):
    _fields_ = [(n, F) for n in ("perf", "score", "episode_return", "episode_length", "n")]


class CPong(ctypes.Structure):
    """``struct Pong`` from pong.h, field for field (ctypes applies the C ABI's layout)."""

    _fields_ = [
        ("client", ctypes.c_void_p), ("log", CLog),
        ("observations", ctypes.POINTER(F)), ("actions", ctypes.POINTER(F)),
        ("rewards", ctypes.POINTER(F)), ("terminals", ctypes.POINTER(ctypes.c_ubyte)),
        ("paddle_yl", F), ("paddle_yr", F), ("ball_x", F), ("ball_y", F),
        ("ball_vx", F), ("ball_vy", F), ("score_l", U), ("score_r", U),
        ("width", F), ("height", F), ("paddle_width", F), ("paddle_height", F),
        ("ball_width", F), ("ball_height", F), ("paddle_speed", F),
        ("ball_initial_speed_x", F), ("ball_initial_speed_y", F), ("ball_max_speed_y", F),
        ("ball_speed_y_increment", F), ("max_score", U), ("min_paddle_y", F),
        ("max_paddle_y", F), ("paddle_dir", F), ("tick", INT), ("n_bounces", INT), ("win", INT),
        ("frameskip", INT), ("continuous", INT),
    ]


class CVecEnv(ctypes.Structure):
    _fields_ = [("envs", ctypes.POINTER(ctypes.POINTER(CPong))), ("num_envs", INT)]


# canonical state fields kept in the struct (log fields are prefixed "log_")
STATE_FIELDS = ("paddle_yl", "paddle_yr", "ball_x", "ball_y", "ball_vx", "ball_vy", "score_l",
                "score_r", "paddle_dir", "tick", "n_bounces", "win")
LOG_FIELDS = tuple(name for name, _ in CLog._fields_)


@cache
def load_binding():
    """Import the compiled extension, or say how to build it."""
    path = reference_build.extension_path()
    if not path.exists():
        raise ReferenceNotInstalledError(
            f"the PufferLib {reference_build.PUFFERLIB_VERSION} Pong reference is not built "
            f"(looked for {path}). Build it with:\n    {reference_build.INSTALL_HINT}"
        )
    loader = importlib.machinery.ExtensionFileLoader("binding", str(path))
    spec = importlib.util.spec_from_file_location("binding", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class PufferPong:
    """PufferLib's ``Pong`` class (pong.py), minus gymnasium/pufferlib imports."""

    def __init__(self, num_envs: int = 1, config: PongConfig | None = None, seed: int = 0):
        self.binding = load_binding()
        self.config = config or PongConfig()
        self.num_agents = int(num_envs)
        self.continuous = bool(self.config.continuous)
        n = self.num_agents
        # pufferlib.PufferEnv's buffers: obs float32 (n, 8), rewards float32, terminals/truncations bool
        self.observations = np.zeros((n, 8), np.float32)
        self.rewards = np.zeros(n, np.float32)
        self.terminals = np.zeros(n, np.bool_)
        self.truncations = np.zeros(n, np.bool_)
        self.actions = np.zeros((n, 1) if self.continuous else n, np.float32)
        if self.continuous:
            self.actions = self.actions.flatten()
        kwargs = self.config.kwargs()
        kwargs["continuous"] = int(kwargs["continuous"])
        self.c_envs = self.binding.vec_init(
            self.observations, self.actions, self.rewards, self.terminals, self.truncations,
            n, int(seed), **kwargs,
        )
        vec = CVecEnv.from_address(self.c_envs)
        self.structs = [vec.envs[i].contents for i in range(n)]

    def reset(self, seed: int = 0):
        self.binding.vec_reset(self.c_envs, int(seed))
        return self.observations, []

    def step(self, actions):
        if self.continuous:
            self.actions[:] = np.clip(np.asarray(actions).flatten(), -1.0, 1.0)
        else:
            self.actions[:] = actions
        self.binding.vec_step(self.c_envs)
        return self.observations, self.rewards, self.terminals, self.truncations, []

    def close(self) -> None:
        if self.c_envs is not None:
            self.binding.vec_close(self.c_envs)
            self.c_envs, self.structs = None, []


def read_state(env: PufferPong) -> CanonicalState:
    out = {name: np.array([getattr(s, name) for s in env.structs]) for name in STATE_FIELDS}
    for name in LOG_FIELDS:
        out["log_" + name] = np.array([getattr(s.log, name) for s in env.structs], np.float32)
    return _typed(out)


def _typed(state: CanonicalState) -> CanonicalState:
    """Fix dtypes to those of the C struct (ctypes returns Python floats and ints)."""
    ints = {"score_l": np.uint32, "score_r": np.uint32, "tick": np.int32, "n_bounces": np.int32,
            "win": np.int32}
    return {k: np.asarray(v, ints.get(k, np.float32)) for k, v in state.items()}


def write_state(env: PufferPong, state: CanonicalState) -> None:
    """Overwrite every env's struct (and the obs/reward/terminal buffers) with ``state``."""
    for i, s in enumerate(env.structs):
        for name in STATE_FIELDS:
            setattr(s, name, state[name][i].item())
        for name in LOG_FIELDS:
            setattr(s.log, name, state["log_" + name][i].item())
    if "rng" in state:  # (seed, draws): the only way to position the libc global stream
        seed, draws = (int(x) for x in np.asarray(state["rng"]).reshape(-1)[:2])
        libc = ctypes.CDLL(None)
        libc.srand(ctypes.c_uint(seed))
        for _ in range(draws):
            libc.rand()
    env.observations[:] = state["obs"]
    env.rewards[:] = state["reward"]
    env.terminals[:] = state["terminated"]
    env.truncations[:] = state.get("truncated", False)  # Pong never truncates


class PongReference(PufferBackend):
    """The C reference as a backend. ``reset(seed)`` builds fresh C envs (``vec_init``) so that
    counters the C never resets (``win``, the log) start at zero, as in the port."""

    def __init__(self, num_envs: int = 1, config: PongConfig | None = None,
                 allow_out_of_range: bool = False):
        self.config = config or PongConfig()
        self._num_envs = int(num_envs)
        super().__init__(PufferPong(self._num_envs, self.config), pong_spec(self.config, num_envs),
                         state_fn=read_state, load_fn=write_state,
                         name=f"pufferlib {reference_build.PUFFERLIB_VERSION} ocean/pong (C)",
                         allow_out_of_range=allow_out_of_range)

    def reset(self, seed: int) -> np.ndarray:
        check_seed(seed, self._num_envs)
        self.env.close()
        self.env = PufferPong(self._num_envs, self.config, seed=seed)
        return super().reset(seed)
