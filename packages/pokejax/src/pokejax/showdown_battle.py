"""A whole exported Showdown battle (the driver's ``state``) <-> ``battle.Battle``: the loader
L2 and L3 start from, and the per-field diff they report."""

from __future__ import annotations

import jax
import numpy as np

from pokejax import prng as P
from pokejax.battle import Battle, split
from pokejax.duel import Field
from pokejax.showdown_state import fighter, fighter_diff, side_diff

WINNERS = {"": 0, "p1": 1, "p2": 2}


def _forced(side: dict) -> bool:
    req = side.get("request") or {}
    return bool(req.get("forceSwitch")) and any(req["forceSwitch"])


def _prng(seed: str) -> P.PrngState:
    a, b, c, d = (int(w) for w in seed.split(","))
    return P.PrngState(hi=np.uint32((a << 16) | b), lo=np.uint32((c << 16) | d))


def load(state: dict) -> Battle:
    """The exported battle as the engine state, numpy leaves (teams in Showdown's current
    order; the side-level fields on the active's record)."""
    teams = []
    for side in state["sides"]:
        if len(side["pokemon"]) != 6:
            raise ValueError(f"pokejax battles hold six Pokémon per side, got {len(side['pokemon'])}")
        # the side-level fields (last selections) belong to the active's record
        mons = [fighter(m, side["lastSelectedMoveSlot"], side) if i == 0 else fighter(m)
                for i, m in enumerate(side["pokemon"])]
        teams.append(jax.tree.map(lambda *xs: np.stack(xs), *mons))
    team = jax.tree.map(lambda a, b: np.stack([a, b]), *teams)
    actives, bench = split(team)
    return Battle(
        actives=actives, bench=bench, prng=_prng(state["seed"]),
        field=Field(last_damage=np.int32(state.get("lastDamage") or 0)),
        turn=np.int32(state["turn"]), forced=np.asarray([_forced(s) for s in state["sides"]]),
        ended=np.bool_(state["ended"]), winner=np.int32(WINNERS[state["winner"]]))


def diff(b: Battle, state: dict) -> list[str]:
    """Where the JAX battle and Showdown's exported one differ (empty when equal)."""
    b = jax.device_get(b)
    out = []
    seed = ",".join(str(int(w)) for w in np.asarray(P.to_seed(b.prng)))
    if seed != state["seed"]:
        out.append(f"prng seed: {seed} != {state['seed']}")
    top = {"turn": (int(b.turn), state["turn"]), "ended": (bool(b.ended), state["ended"]),
           "winner": (int(b.winner), WINNERS[state["winner"]]),
           "forced": ([bool(x) for x in b.forced], [_forced(s) for s in state["sides"]])}
    out += [f"{k}: {mine} != {theirs}" for k, (mine, theirs) in top.items() if mine != theirs]
    for s, side in enumerate(state["sides"]):
        for i, mon in enumerate(side["pokemon"]):
            f = jax.tree.map(lambda x, s=s, i=i: x[s, i], b.team)
            out += [f"p{s + 1} slot {i} ({mon['species']}) {d}" for d in fighter_diff(f, mon)]
            if i == 0:
                out += [f"p{s + 1} side {d}" for d in side_diff(f, side)]
            if mon["fainted"] != (int(f.hp) <= 0):
                out.append(f"p{s + 1} slot {i} fainted: {int(f.hp) <= 0} != {mon['fainted']}")
    return out
