"""PufferLib adapter: one ``VecEnv`` as a native PufferLib env (PufferLib 3.0's ``PufferEnv``).

``EmurustPufferEnv(rom, num_envs, ...)`` is one PufferEnv whose ``num_agents`` are the
``num_envs`` emulators of a ``VecEnv`` (keyword arguments go to ``VecEnv``). PufferLib is not
needed: the adapter implements the protocol itself (attributes, buffers, ``reset``/``step``/
``close``, ``async_reset``/``send``/``recv``, ``emulated``/``done``/``driver_env``/
``agent_per_batch``). When ``pufferlib`` has been imported before an env is made, the env is
also an instance of ``pufferlib.PufferEnv``, which ``pufferlib.vector`` checks for.

The protocol, as PufferLib 3.0.0 defines it:

* ``single_observation_space`` (a ``Box``; here ``uint8`` of ``VecEnv``'s observation shape),
  ``single_action_space`` (here ``Discrete(256)``, the held-button bitmask as ``EmurustEnv``,
  or ``Discrete(len(action_set))`` indexing a list of bitmasks), ``num_agents``, and the joint
  ``observation_space`` / ``action_space`` (``MultiDiscrete([n] * num_agents)``).
* Buffers with one row per agent: ``observations``, ``rewards`` (float32), ``terminals``,
  ``truncations``, ``masks`` (bool) and ``actions`` (int32 for a discrete space). A vectoriser
  (``pufferlib.vector.Serial``/``Multiprocessing``) passes ``buf``, a dict of those six arrays
  (slices of its own, possibly shared-memory, arrays), and ``seed``; the env must then read and
  write those arrays. Without ``buf`` the buffers are ``VecEnv``'s own (zero copy); with ``buf``
  each step copies ``VecEnv``'s results into the caller's arrays.
* ``reset(seed)`` -> ``(observations, infos)``; ``step(actions)`` -> ``(observations, rewards,
  terminals, truncations, infos)``, the returned arrays being the buffers themselves,
  rewritten in place; ``infos`` is a list of dicts. The env resets finished emulators itself
  (``VecEnv``'s ``auto_reset``, which is therefore always on): the observation after a terminal
  or truncated step is the new episode's first. On a step where episodes ended, ``infos`` holds
  one dict with their mean ``episode_return`` and ``episode_length`` and their count
  ``episodes``; otherwise it is empty.

The emulator is deterministic: seeds are accepted and unused.
"""

from __future__ import annotations

import sys

import numpy as np

from emurust.utils import PyBoyInvalidInputException
from emurust.vec import VecEnv

BUFFER_KEYS = ("observations", "rewards", "terminals", "truncations", "masks", "actions")


def _spaces():
    try:
        import gymnasium
    except ImportError as e:  # gymnasium is an optional dependency; PufferLib needs it anyway
        raise ImportError("emurust's PufferLib adapter needs gymnasium: "
                          "pip install 'emurust[gymnasium]'") from e
    return gymnasium.spaces


def _puffer_base():
    """``pufferlib.PufferEnv`` if pufferlib is already imported (importing it here would run its
    import-time side effects for users who do not use it), else None."""
    mod = sys.modules.get("pufferlib")
    base = getattr(mod, "PufferEnv", None)
    return base if isinstance(base, type) else None


_WITH_BASE: dict[tuple[type, type], type] = {}


class EmurustPufferEnv:
    """``num_envs`` Game Boys of one ROM as one native PufferLib env; see the module docstring.

    ``action_set``: optional sequence of held-button bitmasks (``emurust.vec.mask``); action i
    then holds ``action_set[i]``. Default: ``Discrete(256)``, the bitmask itself.
    ``buf``, ``seed``: as PufferLib's vectorisers pass them. Other keyword arguments go to
    ``VecEnv`` (``frameskip``, ``obs``, ``game``, ``score_addr``, ``max_steps``, ...).
    """

    def __new__(cls, *args, **kwargs):
        base = _puffer_base()
        if base is not None and not issubclass(cls, base):
            key = (cls, base)
            if key not in _WITH_BASE:  # our methods first in the MRO; PufferEnv for isinstance
                _WITH_BASE[key] = type(cls.__name__, (cls, base), {
                    "__module__": cls.__module__, "__qualname__": cls.__qualname__})
            cls = _WITH_BASE[key]
        return object.__new__(cls)

    def __init__(self, rom, num_envs: int = 1, *, action_set=None, buf=None, seed=None,
                 **vec_kwargs):
        if vec_kwargs.get("auto_reset", True) is not True:
            raise PyBoyInvalidInputException(
                "a PufferLib env resets finished episodes itself: auto_reset must stay True")
        vec_kwargs["auto_reset"] = True
        spaces = _spaces()
        if action_set is None:
            self.action_set = None
            self._lookup = None
            n = 256
        else:
            masks = np.asarray(action_set)
            if (masks.ndim != 1 or masks.size == 0 or masks.dtype.kind not in "iu"
                    or masks.min() < 0 or masks.max() > 255):
                raise PyBoyInvalidInputException(
                    "action_set must be a non-empty sequence of button bitmasks (integers "
                    f"0..255), got {action_set!r}")
            self.action_set = tuple(int(m) for m in masks)
            self._lookup = masks.astype(np.uint8)
            n = masks.size
        self.vec = VecEnv(rom, num_envs, **vec_kwargs)
        self.num_agents = num_envs
        shape = self.vec.single_observation_shape
        self.single_observation_space = spaces.Box(0, 255, shape, np.uint8)
        self.single_action_space = spaces.Discrete(n)
        self.observation_space = spaces.Box(0, 255, (num_envs, *shape), np.uint8)
        self.action_space = spaces.MultiDiscrete([n] * num_envs)
        self.agent_ids = np.arange(num_envs)
        self.render_mode = None
        self.infos: list[dict] = []
        self._episode_return = np.zeros(num_envs, np.float64)
        self._episode_length = np.zeros(num_envs, np.int64)
        if buf is None:
            self._copy = False
            self.observations = self.vec.observations
            self.rewards = self.vec.rewards
            self.terminals = self.vec.terminals
            self.truncations = self.vec.truncations
            self.masks = np.ones(num_envs, bool)
            self.actions = np.zeros(num_envs, np.int32)
        else:
            self._copy = True
            self._take_buffers(buf, (num_envs, *shape), n)

    def _take_buffers(self, buf, obs_shape, n_actions: int) -> None:
        n = self.num_agents
        want = {"observations": (obs_shape, np.uint8), "rewards": ((n,), np.float32),
                "terminals": ((n,), np.bool_), "truncations": ((n,), np.bool_),
                "masks": ((n,), np.bool_), "actions": ((n,), None)}
        for key in BUFFER_KEYS:
            if key not in buf:
                raise PyBoyInvalidInputException(
                    f"buf lacks {key!r}; PufferLib passes {list(BUFFER_KEYS)}")
            a = buf[key]
            shape, dtype = want[key]
            if not isinstance(a, np.ndarray) or a.shape != shape or not a.flags.writeable:
                raise PyBoyInvalidInputException(
                    f"buf[{key!r}] must be a writeable numpy array of shape {shape}, got "
                    f"{getattr(a, 'shape', type(a).__name__)}")
            if dtype is None:  # actions: any integer type that holds every action
                ok = a.dtype.kind in "iu" and np.iinfo(a.dtype).max >= n_actions - 1
                need = f"an integer dtype holding 0..{n_actions - 1}"
            else:
                ok, need = a.dtype == dtype, f"dtype {np.dtype(dtype)}"
            if not ok:
                raise PyBoyInvalidInputException(f"buf[{key!r}] must have {need}, got {a.dtype}")
            setattr(self, key, a)
        self.masks[:] = True  # every emulator is always live

    def _sync(self) -> None:
        if self._copy:
            np.copyto(self.observations, self.vec.observations)
            np.copyto(self.rewards, self.vec.rewards)
            np.copyto(self.terminals, self.vec.terminals)
            np.copyto(self.truncations, self.vec.truncations)

    def _button_masks(self, actions) -> np.ndarray:
        a = np.asarray(actions)
        n = self.single_action_space.n
        if a.dtype.kind not in "iu":
            raise PyBoyInvalidInputException(
                f"actions must be integers (indices into Discrete({n})), got dtype {a.dtype}")
        a = a.reshape(-1)
        if a.size != self.num_agents:
            raise PyBoyInvalidInputException(
                f"expected {self.num_agents} actions (one per env), got {a.size}")
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= n:
            raise PyBoyInvalidInputException(
                f"actions must lie in 0..{n - 1} (Discrete({n})), got {lo if lo < 0 else hi}")
        self.actions[:] = a  # the protocol's action buffer holds the last actions
        if self._lookup is not None:
            return self._lookup[a]
        return a.astype(np.uint8)

    def reset(self, seed=None):
        self.vec.reset(seed)
        self._sync()
        self._episode_return[:] = 0
        self._episode_length[:] = 0
        return self.observations, []

    def step(self, actions):
        self.vec.step(self._button_masks(actions))
        self._sync()
        infos = []
        self._episode_return += self.rewards
        self._episode_length += 1
        done = self.terminals | self.truncations
        if done.any():
            infos.append({"episode_return": float(self._episode_return[done].mean()),
                          "episode_length": float(self._episode_length[done].mean()),
                          "episodes": int(done.sum())})
            self._episode_return[done] = 0
            self._episode_length[done] = 0
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    # PufferLib's asynchronous interface, as PufferEnv provides it (here synchronous)
    def async_reset(self, seed=None) -> None:
        _, self.infos = self.reset(seed)

    def send(self, actions) -> None:
        _, _, _, _, self.infos = self.step(actions)

    def recv(self):
        return (self.observations, self.rewards, self.terminals, self.truncations, self.infos,
                self.agent_ids, self.masks)

    @property
    def agent_per_batch(self) -> int:
        return self.num_agents

    @property
    def emulated(self) -> bool:
        return False  # native: no Gymnasium/PettingZoo emulation layer

    @property
    def done(self) -> bool:
        return False  # finished emulators are reset inside step

    @property
    def driver_env(self):
        return self

    def render(self):
        """Env 0's RGB screen for ``obs="rgba"`` (as ``EmurustEnv.render``), else None."""
        if self.vec.obs_kind == "rgba":
            return self.vec.observations[0, :, :, :3].copy()
        return None

    def close(self) -> None:
        self.vec.close()


def make_puffer_env(rom, num_envs: int = 1, *, buf=None, seed=None, **kwargs) -> EmurustPufferEnv:
    """An ``EmurustPufferEnv``; a plain function, so it can be an env creator for
    ``pufferlib.vector.make`` (which calls it with ``buf=`` and ``seed=``), e.g.
    ``pufferlib.vector.make(make_puffer_env, env_args=["game.gb", 16],
    env_kwargs={"game": "game", "obs": "grey2"}, backend=pufferlib.vector.Serial, num_envs=2)``."""
    return EmurustPufferEnv(rom, num_envs, buf=buf, seed=seed, **kwargs)
