"""Showdown random battles driven from Python: the reference side of L3 and of the benchmark.

Seeds: a battle is fixed by its battle seed and two team seeds (Showdown's four uint16 words);
choices come from a separate numpy chooser, uniformly among the legal actions of each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pokejax import choices
from pokejax.showdown import Showdown

FORMAT = "gen1randombattle"


def derive_seeds(seed: int, index: int = 0) -> dict[str, list[int]]:
    """Battle and team seeds for battle ``index`` of run ``seed`` (documented, reproducible)."""
    words = np.random.default_rng([seed, index]).integers(0, 0x10000, size=12).tolist()
    return {"battle": words[0:4], "p1": words[4:8], "p2": words[8:12]}


@dataclass
class BattleRecord:
    seeds: dict[str, list[int]]
    states: list[dict] = field(default_factory=list)  # after start, then after every turn
    actions: list[tuple[int | None, int | None]] = field(default_factory=list)
    winner: str = ""
    turns: int = 0


def sides_requests(state: dict) -> tuple[dict | None, dict | None]:
    return state["sides"][0]["request"], state["sides"][1]["request"]


def choose_random(rng: np.random.Generator, request: dict | None) -> int | None:
    mask = choices.legal_mask(request)
    if not mask.any():
        return None
    return int(rng.choice(np.flatnonzero(mask)))


def play_random_battle(sd: Showdown, seeds: dict[str, list[int]], chooser_seed: int,
                       max_turns: int = 1000) -> BattleRecord:
    rec = BattleRecord(seeds)
    p1 = sd.request("team", format=FORMAT, seed=seeds["p1"])["packed"]
    p2 = sd.request("team", format=FORMAT, seed=seeds["p2"])["packed"]
    started = sd.request("start", format=FORMAT, seed=seeds["battle"], p1team=p1, p2team=p2)
    battle, state = started["battle"], started["state"]
    rec.states.append(state)
    rng = np.random.default_rng(chooser_seed)
    try:
        while not state["ended"] and state["turn"] <= max_turns:
            r1, r2 = sides_requests(state)
            a1, a2 = choose_random(rng, r1), choose_random(rng, r2)
            res = sd.request("choose", battle=battle,
                             p1=None if a1 is None else choices.choice_string(a1),
                             p2=None if a2 is None else choices.choice_string(a2))
            if not res["accepted"]:
                raise RuntimeError(f"Showdown rejected a legal-mask action: {res['error']}")
            state = res["state"]
            rec.actions.append((a1, a2))
            rec.states.append(state)
    finally:
        sd.request("close", battle=battle)
    rec.winner, rec.turns = state["winner"], state["turn"]
    return rec
