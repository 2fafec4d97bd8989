"""Showdown's exported Pokémon (the driver's ``state``) <-> the engine's ``Fighter``.

``fighter`` loads one exported Pokémon into the JAX per-Pokémon record (L2 loads whole
battles with it, L3 starts from it); ``fighter_diff`` names the fields where a JAX record and
an exported Pokémon disagree (what L2 and L3 report). Both grow with ``duel.Fighter``.
"""

from __future__ import annotations

import numpy as np

from pokejax import codec, data
from pokejax.boosts import BOOSTS
from pokejax.duel import SELF_VOLATILES, Fighter

STATS = BOOSTS[:5]


def _species():
    return data.load()["species"]


def _move(mid: str) -> int:
    return codec.MOVES.index(mid) if mid and mid in codec.MOVES else -1


def _types(types: list[str]) -> list[int]:
    return [codec.TYPES.index(t) for t in types] + [-1] * (2 - len(types))


def _slots(slots: list[dict]) -> tuple[list[int], list[int]]:
    return ([codec.MOVES.index(m["id"]) for m in slots] + [-1] * (4 - len(slots)),
            [m["pp"] for m in slots] + [0] * (4 - len(slots)))


def fighter(mon: dict, last_slot=None, side: dict | None = None) -> Fighter:
    """``side``: the exported side, for the side-level fields (its ``lastSelectedMove``,
    ``lastEnemySelectedMove``, ``lastEnemyMove``); without it they start empty."""
    side = side or {}
    moves, pp = _slots(mon["moves"])
    base_moves, base_pp = _slots(mon.get("baseMoves", mon["moves"]))
    vols = mon["volatiles"]
    set_species = mon.get("setSpecies", mon["species"])
    base_stored = mon.get("baseStoredStats", mon["storedStats"])
    spe_set = (mon["ivs"]["spe"] + mon["evs"]["spe"] // 4) if "ivs" in mon else 0
    return Fighter(
        hp=np.int32(mon["hp"]), maxhp=np.int32(mon["maxhp"]),
        status=np.int32(codec.STATUSES.index(mon["status"])),
        boosts=np.asarray([mon["boosts"][k] for k in BOOSTS], np.int32),
        modified=np.asarray([mon["modifiedStats"][k] for k in STATS], np.int32),
        stored=np.asarray([mon["storedStats"][k] for k in STATS], np.int32),
        level=np.int32(mon["level"]), types=np.asarray(_types(mon["types"]), np.int32),
        base_spe=np.int32(_species()[set_species]["baseStats"]["spe"]),
        confused=np.bool_("confusion" in vols),
        confusion_time=np.int32(vols.get("confusion", {}).get("time", 0)),
        flinched=np.bool_("flinch" in vols),
        must_recharge=np.bool_("mustrecharge" in vols),
        moves=np.asarray(moves, np.int32), pp=np.asarray(pp, np.int32),
        volatiles=np.asarray([v in vols for v in SELF_VOLATILES]),
        sleep_time=np.int32(mon["statusState"].get("time") or 0 if mon["status"] == "slp" else 0),
        speed=np.int32(mon.get("speed", mon["modifiedStats"]["spe"])),
        last_slot=np.int32(-1 if last_slot is None else last_slot),
        rest_sleep=np.bool_(mon["status"] == "slp" and mon.get("statusSourceSelf", False)),
        species=np.int32(codec.SPECIES.index(mon["species"])),
        base_species=np.int32(codec.SPECIES.index(set_species)),
        base_types=np.asarray(_types(_species()[set_species]["types"]), np.int32),
        base_stored=np.asarray([base_stored[k] for k in STATS], np.int32),
        base_moves=np.asarray(base_moves, np.int32), base_pp=np.asarray(base_pp, np.int32),
        spe_set=np.int32(spe_set), transformed=np.bool_(mon.get("transformed", False)),
        sub_hp=np.int32(vols.get("substitute", {}).get("hp", 0)),
        twoturn=np.int32(_move(vols.get("twoturnmove", {}).get("move", ""))),
        last_move=np.int32(_move(mon.get("lastMove", ""))),
        sel_move=np.int32(_move(side.get("lastSelectedMove", ""))),
        enemy_sel=np.int32(_move(side.get("lastEnemySelectedMove", ""))),
        last_used=np.int32(_move(side.get("lastEnemyMove", ""))))


def _names(ids) -> list[str]:
    return [codec.MOVES[int(i)] if int(i) >= 0 else "" for i in ids]


def fighter_diff(f: Fighter, mon: dict) -> list[str]:
    """Names of the fields where the JAX record differs from Showdown's Pokémon."""
    bad = []
    if mon["hp"] == 0:  # a fainted Pokémon's status and volatiles are cleared
        return [] if int(f.hp) == 0 else [f"hp: {int(f.hp)} != 0"]
    vols = mon["volatiles"]
    checks = {
        "hp": (int(f.hp), mon["hp"]),
        "status": (codec.STATUSES[int(f.status)], mon["status"]),
        "boosts": ([int(v) for v in f.boosts], [mon["boosts"][k] for k in BOOSTS]),
        "modified": ([int(v) for v in f.modified], [mon["modifiedStats"][k] for k in STATS]),
        "stored": ([int(v) for v in f.stored], [mon["storedStats"][k] for k in STATS]),
        "moves": (_names(f.moves[:len(mon["moves"])]) + _names(f.moves[len(mon["moves"]):]),
                  [m["id"] for m in mon["moves"]] + [""] * (4 - len(mon["moves"]))),
        "pp": ([int(v) for v in f.pp[:len(mon["moves"])]], [m["pp"] for m in mon["moves"]]),
        "types": ([codec.TYPES[int(v)] for v in f.types if int(v) >= 0], mon["types"]),
        "species": (codec.SPECIES[int(f.species)], mon["species"]),
        "transformed": (bool(f.transformed), mon["transformed"]),
        "last_move": (_names([f.last_move])[0], mon["lastMove"]),
        "confused": (bool(f.confused), "confusion" in vols),
        "flinched": (bool(f.flinched), "flinch" in vols),
        "must_recharge": (bool(f.must_recharge), "mustrecharge" in vols),
        "volatiles": ([bool(v) for v in f.volatiles], [v in vols for v in SELF_VOLATILES]),
        "substitute": (int(f.sub_hp), vols.get("substitute", {}).get("hp", 0)),
        "twoturnmove": (_names([f.twoturn])[0], vols.get("twoturnmove", {}).get("move", "")),
    }
    if "baseMoves" in mon:
        checks["base_moves"] = (_names(f.base_moves[:len(mon["baseMoves"])]), [m["id"] for m in mon["baseMoves"]])
        checks["base_pp"] = ([int(v) for v in f.base_pp[:len(mon["baseMoves"])]], [m["pp"] for m in mon["baseMoves"]])
    if mon["status"] == "slp":
        checks["sleep_time"] = (int(f.sleep_time), mon["statusState"]["time"])
        checks["rest_sleep"] = (bool(f.rest_sleep), mon["statusSourceSelf"])
    if "confusion" in vols:
        checks["confusion_time"] = (int(f.confusion_time), vols["confusion"]["time"])
    for name, (mine, theirs) in checks.items():
        if mine != theirs:
            bad.append(f"{name}: {mine} != {theirs}")
    return bad


def side_diff(f: Fighter, side: dict) -> list[str]:
    """The side-level fields a duel's ``Fighter`` carries (Counter and locked actions read them)."""
    checks = {
        "last_slot": (int(f.last_slot), side["lastSelectedMoveSlot"]),
        "sel_move": (_names([f.sel_move])[0], side["lastSelectedMove"].replace("nomove", "")),
        "enemy_sel": (_names([f.enemy_sel])[0], side["lastEnemySelectedMove"].replace("nomove", "")),
        "last_used": (_names([f.last_used])[0], side["lastEnemyMove"]),
    }
    return [f"{name}: {mine} != {theirs}" for name, (mine, theirs) in checks.items() if mine != theirs]
