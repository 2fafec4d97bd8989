"""Backends of both engines for envport's verifier (``envport.backend.Backend``).

Actions are *chooser indices* (``Discrete(2**16)``): index ``k`` plays the ``k mod n``-th legal
action (ascending) of the decider, so uniformly random indices are a seeded random chooser that
is always legal, the same on both sides. Game ``i`` of ``reset(seed)`` plays the deck pairing
``pairing(seed, i)`` with game seed ``game_seed(seed, i)``. A finished game stays as it is.
The canonical state is the reference's array layout plus ``terminated`` / ``truncated``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envport.backend import Backend, StepResult
from envport.types import Box, Discrete, EnvSpec
from tcgjax import __version__
from tcgjax.engine.legal import legal_mask
from tcgjax.engine.setup import deck_arrays, new_game
from tcgjax.engine.state import stack_states
from tcgjax.engine.step import kth_true
from tcgjax.env import advance
from tcgjax.reference import deck_list, legal_actions
from tcgjax.reference import new_game as ref_new_game
from tcgjax.reference import step as ref_step
from tcgjax.reference.arrays import FIELDS, from_arrays, to_arrays
from tcgjax.reference.state import PH_OVER

CHOOSER = 1 << 16
SPEC = EnvSpec(
    id="tcgjax-chooser",
    version=__version__,
    observation_space=Box(0.0, 1.0, (1,)),
    action_space=Discrete(CHOOSER),
    num_agents=2,
    metadata={"actions": "k -> the (k mod n)-th legal action of the decider"},
)


def pairing(seed: int, i: int) -> tuple[int, int]:
    g = (seed * 7 + i) % 225
    return g // 15, g % 15


def game_seed(seed: int, i: int) -> int:
    return (seed * 1_000_003 + i * 7919 + 1) % 2**32


def _flags(states: dict) -> dict:
    out = dict(states)
    out["terminated"] = np.asarray(states["phase"]) == PH_OVER
    out["truncated"] = np.zeros_like(out["terminated"])
    return out


class ReferenceBackend(Backend):
    name = "tcgjax.reference"
    spec = SPEC
    supports_load = True

    def __init__(self, num_envs: int = 1):
        self.num_envs = int(num_envs)
        self.games = []

    def reset(self, seed: int) -> np.ndarray:
        decks = deck_list()
        self.games = []
        for i in range(self.num_envs):
            a, b = pairing(seed, i)
            self.games.append(
                ref_new_game(decks[a], decks[b], game_seed(seed, i), log_enabled=False)
            )
        return np.zeros((self.num_envs, 1), np.float32)

    def step(self, actions) -> StepResult:
        actions = np.asarray(actions)
        for st, k in zip(self.games, actions, strict=True):
            if not st.done:
                legal = legal_actions(st)
                ref_step(st, legal[int(k) % len(legal)])
        s = self.state()
        zeros = np.zeros(self.num_envs, np.float32)
        return StepResult(
            np.zeros((self.num_envs, 1), np.float32), zeros, s["terminated"], s["truncated"]
        )

    def state(self) -> dict:
        arrs = [to_arrays(st) for st in self.games]
        return _flags({k: np.stack([a[k] for a in arrs]) for k in FIELDS})

    def load(self, state) -> None:
        n = len(np.asarray(state["phase"]))
        self.num_envs = n
        self.games = [from_arrays({k: np.asarray(state[k])[i] for k in FIELDS}) for i in range(n)]
        for st in self.games:
            st.log = None


def _chooser_step(s, k):
    m = legal_mask(s)
    n = jnp.maximum(jnp.sum(m), 1)
    a = kth_true(m, (k % n).astype(jnp.int32))
    return advance(s, a)


_STEP = jax.jit(jax.vmap(_chooser_step))
_NEW = jax.jit(jax.vmap(new_game))


class JaxEngineBackend(Backend):
    name = "tcgjax.engine"
    spec = SPEC
    supports_load = True

    def __init__(self, num_envs: int = 1):
        self.num_envs = int(num_envs)
        self.s = None

    def reset(self, seed: int) -> np.ndarray:
        decks = deck_list()
        cs, ts = [], []
        for i in range(self.num_envs):
            a, b = pairing(seed, i)
            c, t = deck_arrays(decks[a], decks[b])
            cs.append(c)
            ts.append(t)
        seeds = np.array([game_seed(seed, i) for i in range(self.num_envs)], np.uint32)
        self.s = _NEW(np.stack(cs), np.stack(ts), seeds)
        return np.zeros((self.num_envs, 1), np.float32)

    def step(self, actions) -> StepResult:
        self.s = _STEP(
            self.s, jnp.asarray(np.asarray(actions).astype(np.int64) % CHOOSER, jnp.int32)
        )
        s = self.state()
        zeros = np.zeros(self.num_envs, np.float32)
        return StepResult(
            np.zeros((self.num_envs, 1), np.float32), zeros, s["terminated"], s["truncated"]
        )

    def state(self) -> dict:
        return _flags({k: np.asarray(v) for k, v in self.s.items()})

    def load(self, state) -> None:
        self.s = stack_states(
            [
                {k: np.asarray(state[k])[i] for k in FIELDS}
                for i in range(len(np.asarray(state["phase"])))
            ]
        )
        self.num_envs = len(np.asarray(state["phase"]))
