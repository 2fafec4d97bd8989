"""Showdown's exported Pokémon (the driver's ``state``) <-> the engine's ``Fighter``.

``fighter`` loads one exported Pokémon into the JAX per-Pokémon record (L2 loads whole
battles with it, L3 starts from it); ``fighter_diff`` names the fields where a JAX record and
an exported Pokémon disagree (what L2 and L3 report). Both grow with ``duel.Fighter``.
"""

from __future__ import annotations

import jax.numpy as jnp

from pokejax import codec, data
from pokejax.boosts import BOOSTS
from pokejax.duel import SELF_VOLATILES, Fighter

STATS = BOOSTS[:5]


def _species():
    return data.load()["species"]


def fighter(mon: dict, last_slot=None) -> Fighter:
    types = [codec.TYPES.index(t) for t in mon["types"]] + [-1] * (2 - len(mon["types"]))
    moves = [codec.MOVES.index(m["id"]) for m in mon["moves"]]
    moves += [-1] * (4 - len(moves))
    pp = [m["pp"] for m in mon["moves"]] + [0] * (4 - len(mon["moves"]))
    vols = mon["volatiles"]
    return Fighter(
        hp=jnp.int32(mon["hp"]), maxhp=jnp.int32(mon["maxhp"]),
        status=jnp.int32(codec.STATUSES.index(mon["status"])),
        boosts=jnp.asarray([mon["boosts"][k] for k in BOOSTS], jnp.int32),
        modified=jnp.asarray([mon["modifiedStats"][k] for k in STATS], jnp.int32),
        stored=jnp.asarray([mon["storedStats"][k] for k in STATS], jnp.int32),
        level=jnp.int32(mon["level"]), types=jnp.asarray(types, jnp.int32),
        base_spe=jnp.int32(_species()[mon["species"]]["baseStats"]["spe"]),
        confused=jnp.bool_("confusion" in vols),
        confusion_time=jnp.int32(vols.get("confusion", {}).get("time", 0)),
        flinched=jnp.bool_("flinch" in vols),
        must_recharge=jnp.bool_("mustrecharge" in vols),
        moves=jnp.asarray(moves, jnp.int32), pp=jnp.asarray(pp, jnp.int32),
        volatiles=jnp.asarray([v in vols for v in SELF_VOLATILES]),
        sleep_time=jnp.int32(mon["statusState"].get("time") or 0 if mon["status"] == "slp" else 0),
        speed=jnp.int32(mon.get("speed", mon["modifiedStats"]["spe"])),
        last_slot=jnp.int32(-1 if last_slot is None else last_slot),
        rest_sleep=jnp.bool_(mon["status"] == "slp" and mon.get("statusSourceSelf", False)))


def fighter_diff(f: Fighter, mon: dict) -> list[str]:
    """Names of the fields where the JAX record differs from Showdown's Pokémon."""
    bad = []
    if mon["hp"] == 0:  # a fainted Pokémon's status and volatiles are cleared
        return [] if int(f.hp) == 0 else [f"hp: {int(f.hp)} != 0"]
    checks = {
        "hp": (int(f.hp), mon["hp"]),
        "status": (codec.STATUSES[int(f.status)], mon["status"]),
        "boosts": ([int(v) for v in f.boosts], [mon["boosts"][k] for k in BOOSTS]),
        "modified": ([int(v) for v in f.modified], [mon["modifiedStats"][k] for k in STATS]),
        "pp": ([int(v) for v in f.pp[:len(mon["moves"])]], [m["pp"] for m in mon["moves"]]),
        "confused": (bool(f.confused), "confusion" in mon["volatiles"]),
        "flinched": (bool(f.flinched), "flinch" in mon["volatiles"]),
        "must_recharge": (bool(f.must_recharge), "mustrecharge" in mon["volatiles"]),
        "volatiles": ([bool(v) for v in f.volatiles],
                      [v in mon["volatiles"] for v in SELF_VOLATILES]),
    }
    if mon["status"] == "slp":
        checks["sleep_time"] = (int(f.sleep_time), mon["statusState"]["time"])
        checks["rest_sleep"] = (bool(f.rest_sleep), mon["statusSourceSelf"])
    if "confusion" in mon["volatiles"]:
        checks["confusion_time"] = (int(f.confusion_time), mon["volatiles"]["confusion"]["time"])
    for name, (mine, theirs) in checks.items():
        if mine != theirs:
            bad.append(f"{name}: {mine} != {theirs}")
    return bad
