"""tcgjax's translation spec for the envport core (entry point ``envport.envs: tcgjax``)."""

from __future__ import annotations

import random

import jax
import numpy as np

from envport.registry import EnvPort, L1Target, L2Suite, L3Suite
from envport.wrappers import AutoResetWrapper
from tcgjax import __version__
from tcgjax.backends import CHOOSER, JaxEngineBackend, ReferenceBackend
from tcgjax.env import SingleAgentEnv
from tcgjax.plan import PLAN
from tcgjax.reference import deck_list, legal_actions, new_game, step
from tcgjax.reference.actions import N_ACTIONS
from tcgjax.reference.arrays import FIELDS, to_arrays

L2_NOTE = (
    "States are sampled from reference games (random chooser, pairings cycling through all "
    "15 x 15), loaded into both engines with the reference's own array layout, and one chooser "
    "action applied: every field must be equal."
)


def _cases(rng: np.random.Generator, batch: int):
    decks = deck_list()
    r = random.Random(int(rng.integers(2**31)))
    states = []
    while len(states) < batch:
        a, b = r.randrange(15), r.randrange(15)
        st = new_game(decks[a], decks[b], r.randrange(2**32), log_enabled=False)
        while not st.done and len(states) < batch:
            if r.random() < 0.3:
                states.append(to_arrays(st))
            step(st, r.choice(legal_actions(st)))
    stacked = {k: np.stack([s[k] for s in states]) for k in FIELDS}
    return stacked, rng.integers(0, CHOOSER, batch).astype(np.int32)


def _actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, CHOOSER, n).astype(np.int32)


PORT = EnvPort(
    name="tcgjax",
    reference=f"tcgjax.reference {__version__} (pure Python, from the written specification)",
    candidate=f"tcgjax.engine {__version__} (jax {jax.__version__}, {jax.default_backend()})",
    install_reference=lambda: None,
    check_reference=lambda: None,
    tolerance=0.0,
    l1=[
        # auto-reset: a finished game has no legal action, and the checks step on for 300
        # steps (games end after ~20 decisions of the agent)
        L1Target(
            "SingleAgentEnv vs random, auto-reset (unchecked: illegal actions become the first "
            "legal one)",
            lambda: AutoResetWrapper(SingleAgentEnv(checked=False)),
            lambda rng: np.int32(rng.integers(0, N_ACTIONS)),
            slow=True,  # jit == no-jit runs the engine op by op: minutes on CPU
        )
    ],
    l2=[
        L2Suite(
            name="reference states, one chooser action",
            make_reference=ReferenceBackend,
            make_candidate=JaxEngineBackend,
            make_cases=_cases,
            cases=10_000,
            batch=500,
            note=L2_NOTE,
        )
    ],
    l3=[
        L3Suite(
            name="full games, 32 at a time, seeded random chooser",
            make_reference=lambda: ReferenceBackend(32),
            make_candidate=lambda: JaxEngineBackend(32),
            sample_actions=_actions,
            episodes=10_000,
            first_episode_only=True,
        )
    ],
    plan=PLAN,
)
