"""Showdown battle state (the driver's ``state`` export) <-> fixed-size arrays.

This is the bridge for L2 (load a Showdown state into the JAX state) and for per-turn diffs
in L3. Layout: per side (2) and team slot (6, in Showdown's *current* order: active first,
switching swaps slots) the Pokémon's fields; per side the volatiles of its active Pokémon as a
presence flag plus named integer fields; battle-level counters and the PRNG seed.

Volatile bookkeeping strings (``name``, ``sourceSlot``, ``sourceEffect``) identify where an
effect came from, not what it does, and are not part of the canonical state.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pokejax import data

STATUSES = ("", "par", "slp", "frz", "psn", "brn", "tox", "fnt")
STATS = ("atk", "def", "spa", "spd", "spe")
BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
# every volatile a Gen 1 battle can set (moves' volatileStatus and the gen1 mod's addVolatile)
VOLATILES = (
    "bide", "confusion", "defensecurl", "disable", "fakepartiallytrapped", "flinch",
    "focusenergy", "invulnerability", "leechseed", "lightscreen", "lockedmove", "minimize",
    "mist", "mustrecharge", "partiallytrapped", "partialtrappinglock", "rage", "reflect",
    "residualdmg", "substitute", "transform", "twoturnmove",
)
# integer-valued effect-state fields worth comparing (string fields naming a move are encoded
# as move indices)
VOLATILE_FIELDS = ("duration", "time", "counter", "hp", "damage", "totalDamage", "move",
                   "lastDamage", "locked", "turns", "accuracy", "startTime", "stage")
BOOKKEEPING = frozenset({"name", "sourceSlot", "sourceEffect", "source", "linkedStatus"})
STATUS_FIELDS = ("time", "startTime", "stage")
MISSING = -1


def _index(names) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


SPECIES = tuple(sorted(data.load()["species"]))
MOVES = tuple(sorted(data.load()["moves"]))
TYPES = tuple(sorted(v["name"] for v in data.load()["typechart"].values()))
_SPECIES, _MOVES, _TYPES = _index(SPECIES), _index(MOVES), _index(TYPES)
_STATUS, _VOL, _VFIELD = _index(STATUSES), _index(VOLATILES), _index(VOLATILE_FIELDS)


class UnknownStateError(ValueError):
    """The export holds something the fixed layout has no place for (a new volatile, say)."""


class BattleArrays(NamedTuple):
    species: np.ndarray  # int32[2, 6]
    level: np.ndarray
    hp: np.ndarray
    maxhp: np.ndarray
    status: np.ndarray  # index into STATUSES
    status_state: np.ndarray  # int32[2, 6, len(STATUS_FIELDS)], MISSING where unset
    stored_stats: np.ndarray  # int32[2, 6, 5]
    modified_stats: np.ndarray  # int32[2, 6, 5]
    boosts: np.ndarray  # int32[2, 6, 7]
    moves: np.ndarray  # int32[2, 6, 4] move index or MISSING
    pp: np.ndarray
    maxpp: np.ndarray
    disabled: np.ndarray  # bool[2, 6, 4]
    types: np.ndarray  # int32[2, 6, 2] type index or MISSING
    fainted: np.ndarray  # bool[2, 6]
    active: np.ndarray
    transformed: np.ndarray
    last_move: np.ndarray  # int32[2, 6] move index or MISSING
    volatile: np.ndarray  # bool[2, 6, V]
    volatile_fields: np.ndarray  # int32[2, 6, V, F], MISSING where unset
    last_selected_slot: np.ndarray  # int32[2]
    side_conditions: np.ndarray  # int32[2] (Gen 1 has none; kept to catch surprises)
    turn: np.ndarray  # int32[]
    ended: np.ndarray  # bool[]
    winner: np.ndarray  # int32[]: 0 none, 1 p1, 2 p2
    last_damage: np.ndarray  # int32[]
    seed: np.ndarray  # uint32[4] (Showdown's four 16-bit words)


def _field_value(name: str, value) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value in _MOVES:
        return _MOVES[value]
    raise UnknownStateError(f"effect field {name!r} has a value the layout cannot hold: {value!r}")


def encode(state: dict) -> BattleArrays:
    z = lambda *shape, fill=0, dtype=np.int32: np.full(shape, fill, dtype)  # noqa: E731
    out = dict(
        species=z(2, 6), level=z(2, 6), hp=z(2, 6), maxhp=z(2, 6), status=z(2, 6),
        status_state=z(2, 6, len(STATUS_FIELDS), fill=MISSING), stored_stats=z(2, 6, 5),
        modified_stats=z(2, 6, 5), boosts=z(2, 6, 7), moves=z(2, 6, 4, fill=MISSING),
        pp=z(2, 6, 4), maxpp=z(2, 6, 4), disabled=z(2, 6, 4, dtype=bool),
        types=z(2, 6, 2, fill=MISSING), fainted=z(2, 6, dtype=bool), active=z(2, 6, dtype=bool),
        transformed=z(2, 6, dtype=bool), last_move=z(2, 6, fill=MISSING),
        volatile=z(2, 6, len(VOLATILES), dtype=bool),
        volatile_fields=z(2, 6, len(VOLATILES), len(VOLATILE_FIELDS), fill=MISSING),
        last_selected_slot=z(2, fill=MISSING), side_conditions=z(2),
    )
    for s, side in enumerate(state["sides"]):
        if side.get("lastSelectedMoveSlot") is not None:
            out["last_selected_slot"][s] = side["lastSelectedMoveSlot"]
        out["side_conditions"][s] = len(side.get("sideConditions") or {})
        for i, mon in enumerate(side["pokemon"]):
            out["species"][s, i] = _SPECIES[mon["species"]]
            for key in ("level", "hp", "maxhp"):
                out[key][s, i] = mon[key]
            out["status"][s, i] = _STATUS[mon["status"]]
            for f, name in enumerate(STATUS_FIELDS):
                if mon["statusState"].get(name) is not None:
                    out["status_state"][s, i, f] = mon["statusState"][name]
            out["stored_stats"][s, i] = [mon["storedStats"][k] for k in STATS]
            if mon.get("modifiedStats"):
                out["modified_stats"][s, i] = [mon["modifiedStats"][k] for k in STATS]
            out["boosts"][s, i] = [mon["boosts"][k] for k in BOOSTS]
            for m, slot in enumerate(mon["moves"]):
                out["moves"][s, i, m] = _MOVES[slot["id"]]
                out["pp"][s, i, m], out["maxpp"][s, i, m] = slot["pp"], slot["maxpp"]
                out["disabled"][s, i, m] = slot["disabled"]
            for t, name in enumerate(mon["types"]):
                out["types"][s, i, t] = _TYPES[name]
            out["fainted"][s, i], out["active"][s, i] = mon["fainted"], mon["isActive"]
            out["transformed"][s, i] = mon.get("transformed", False)
            if mon.get("lastMove"):
                out["last_move"][s, i] = _MOVES[mon["lastMove"]]
            for vname, vstate in mon["volatiles"].items():
                if vname not in _VOL:
                    raise UnknownStateError(f"volatile {vname!r} is not in the layout")
                v = _VOL[vname]
                out["volatile"][s, i, v] = True
                for fname, value in vstate.items():
                    if fname in BOOKKEEPING or value is None:
                        continue
                    if fname not in _VFIELD:
                        raise UnknownStateError(f"volatile {vname!r} field {fname!r} is not in the layout")
                    out["volatile_fields"][s, i, v, _VFIELD[fname]] = _field_value(fname, value)
    winner = {"": 0, "p1": 1, "p2": 2}.get(state.get("winner", ""), None)
    if winner is None:  # Showdown reports the winner by player name; the driver names them p1/p2
        raise UnknownStateError(f"unexpected winner {state['winner']!r}")
    return BattleArrays(
        **out, turn=np.int32(state["turn"]), ended=np.bool_(state["ended"]),
        winner=np.int32(winner), last_damage=np.int32(state.get("lastDamage") or 0),
        seed=np.array([int(x) for x in state["seed"].split(",")], np.uint32),
    )


def canonical(arrays: BattleArrays) -> dict[str, np.ndarray]:
    """The dict that L2/L3 diff field by field."""
    return {k: np.asarray(v) for k, v in arrays._asdict().items()}
