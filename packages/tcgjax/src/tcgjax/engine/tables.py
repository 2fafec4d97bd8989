"""cards.json as fixed-size numpy tables for the JAX engine, built once from the reference's card
pool (so both engines read the same data; nothing is parsed twice).

Effects become rows of integer parameters (``STEP_COLS``) addressed ``[card, source, slot]``:
``source`` 0/1 = attack 0/1, 2 = activated ability, 3 = trainer effect; ``slot`` 0 = the
top-level step, 1 / 2 = the heads / tails step of a ``coin_flip_then``. EFFECTS.md §9's size facts
hold for this pool (one top-level step per list, at most one step per branch, checked below), so
the reference's ``Exec`` addresses are only ``(0,-1,0)``, ``(0,0,0)`` and ``(0,1,0)``.

Pokémon filters (EFFECTS.md §7) become a row of ``FILTER_OK[f, card]`` (the static parts: type,
stage, names, is_ex, category) plus ``FILTER_DAMAGED[f]`` (-1 any, 0 undamaged, 1 damaged).
"""

from __future__ import annotations

import json

import numpy as np

from ..reference.cards import ENERGY_TYPES, N_ENERGY, POKEMON_TYPES, STAGES, card_pool
from ..reference.engine import DAMAGE_PHASE_OPS
from ..reference.state import EFFECT_KINDS, MAX_NAMES, STATUS_NAMES

CARDS = card_pool()
N_CARDS = len(CARDS)

CATEGORIES = ("pokemon", "item", "supporter", "tool")
CAT_POKEMON, CAT_ITEM, CAT_SUPPORTER, CAT_TOOL = range(4)

# step op codes (0 = no step)
OPS = (
    "",
    "coin_flip_then",
    "damage_per_heads",
    "extra_damage",
    "extra_damage_if",
    "damage_per_count",
    "extra_damage_per_count",
    "damage_other",
    "damage_random_opponent",
    "self_damage",
    "heal",
    "apply_condition",
    "discard_energy",
    "draw",
    "search_deck",
    "switch_opponent_active",
    "attach_from_zone",
    "move_energy",
    "return_active_to_hand",
    "shuffle_hand_draw",
    "reveal_hand",
    "look_at_deck_top",
    "discard_random_from_hand",
    "add_effect",
)
OP = {name: i for i, name in enumerate(OPS)}
DAMAGE_PHASE = np.array([name in DAMAGE_PHASE_OPS for name in OPS])

# conditions (EFFECTS.md §5), 0 = none
CONDS = (
    "",
    "self_damaged",
    "self_is_active",
    "self_extra_energy",
    "opponent_active_has_condition",
    "own_active_matches",
    "own_pokemon_exists",
    "own_bench_not_empty",
    "opponent_bench_not_empty",
)
COND = {name: i for i, name in enumerate(CONDS)}
# Special Conditions as cond params: poisoned, burned, then STATUS_NAMES indices 1..3
CONDITION_CODES = {"poisoned": 10, "burned": 11} | {n: i for i, n in enumerate(STATUS_NAMES)}

# step row columns
STEP_COLS = (
    "op",
    "amount",  # damage / heal / extra / per / self damage / effect amount
    "target",  # heal: self 0, each_own 1, choose_own 2; add_effect: defending 0, self 1,
    # own_side 2, opponent_side 3; attach_from_zone: self 0, own_active 1, choose_own 2,
    # distribute_own_bench 3; shuffle_hand_draw / discard_random: opponent 1
    "side",  # damage_other: opponent 0, own 1
    "zone",  # damage_other: bench 0, any 1
    "select",  # damage_other: all 0, choose_one 1
    "coins",  # coins to flip (int), -1 = until tails, 0 = a fixed amount in `amount`
    "energy",  # energy type, -1 = any
    "count",  # draw / search / discard counts, -1 = all
    "filter",  # filter id (-1 none)
    "cond",  # extra_damage_if condition code
    "cond_param",  # its Special Condition code / energy type
    "cond_count",  # its count (self_extra_energy)
    "kind",  # add_effect kind (EFFECT_KINDS index)
    "duration",  # add_effect: this_turn 0, opponent_next_turn 1
    "names",  # add_effect names: index into EFFECT_NAMES (-1 = every Pokémon)
    "times",  # damage_random_opponent
    "count_of",  # Count: benched_pokemon 0 (own, with filter), energy_attached 1 (opp active)
    "condition",  # apply_condition: CONDITION_CODES
)
SC = {name: i for i, name in enumerate(STEP_COLS)}
N_SOURCES, N_STEP_SLOTS = 4, 3
SRC_ABILITY, SRC_TRAINER = 2, 3

MODS = ("hp_bonus", "reduce_damage_taken", "counter_damage", "block_opponent_supporters")


class _Filters:
    def __init__(self):
        self.keys: dict[str, int] = {}
        self.rows: list[dict] = []

    def add(self, flt: dict | None) -> int:
        if flt is None:
            return -1
        key = json.dumps(flt, sort_keys=True)
        if key not in self.keys:
            self.keys[key] = len(self.rows)
            self.rows.append(flt)
        return self.keys[key]

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        ok = np.zeros((max(1, len(self.rows)), N_CARDS), bool)
        dmg = np.full((max(1, len(self.rows)),), -1, np.int32)
        for f, flt in enumerate(self.rows):
            for c in CARDS.cards:
                good = True
                if "category" in flt and c.category != flt["category"]:
                    good = False
                if "type" in flt and c.type != POKEMON_TYPES.index(flt["type"]):
                    good = False
                if "stage" in flt and c.stage != STAGES.index(flt["stage"]):
                    good = False
                if "names" in flt and c.name not in flt["names"]:
                    good = False
                if "is_ex" in flt and c.is_ex != flt["is_ex"]:
                    good = False
                ok[f, c.idx] = good
            if "damaged" in flt:
                dmg[f] = int(flt["damaged"])
        return ok, dmg


def _names_row(names) -> list[int]:
    ids = [CARDS.names.index(n) for n in names]
    return ids + [-1] * (MAX_NAMES - len(ids))


def _encode_step(s: dict, filters: _Filters, names: list) -> np.ndarray:
    row = np.zeros(len(STEP_COLS), np.int32)
    row[SC["filter"]] = row[SC["names"]] = -1
    row[SC["energy"]] = -1
    op = s["op"]
    if op not in OP:
        raise ValueError(f"unknown op {op!r}")
    row[SC["op"]] = OP[op]
    for k in ("amount", "per"):
        if isinstance(s.get(k), int):
            row[SC["amount"]] = s[k]
    if op == "damage_per_heads":
        row[SC["coins"]] = -1 if s["coins"] == "until_tails" else s["coins"]
    if op == "attach_from_zone":
        amt = s["amount"]
        if isinstance(amt, dict):
            row[SC["coins"]] = -1 if amt["coins"] == "until_tails" else amt["coins"]
        to = ("self", "own_active", "choose_own", "distribute_own_bench")
        row[SC["target"]] = to.index(s["to"])
    if op == "heal":
        row[SC["target"]] = ("self", "each_own", "choose_own").index(s["target"])
    if op == "add_effect":
        targets = ("defending", "self", "own_side", "opponent_side")
        row[SC["target"]] = targets.index(s["target"])
        row[SC["kind"]] = EFFECT_KINDS.index(s["kind"])
        row[SC["duration"]] = ("this_turn", "opponent_next_turn").index(s["duration"])
        if s.get("names"):
            nr = _names_row(s["names"])
            if nr not in names:
                names.append(nr)
            row[SC["names"]] = names.index(nr)
    if op in ("shuffle_hand_draw", "discard_random_from_hand", "reveal_hand"):
        row[SC["target"]] = int(s.get("player", "self") == "opponent")
    if op == "damage_other":
        row[SC["side"]] = ("opponent", "own").index(s["side"])
        row[SC["zone"]] = ("bench", "any").index(s["zone"])
        row[SC["select"]] = ("all", "choose_one").index(s["select"])
    if "energy" in s:
        row[SC["energy"]] = -1 if s["energy"] == "any" else ENERGY_TYPES.index(s["energy"])
    if "count" in s and not isinstance(s["count"], dict):
        row[SC["count"]] = -1 if s["count"] == "all" else s["count"]
    if "count" in s and isinstance(s["count"], dict):
        cnt = s["count"]
        if cnt["of"] == "benched_pokemon":
            if cnt["side"] != "own":
                raise ValueError(f"count side {cnt['side']!r} is not in the pool's tables")
            row[SC["count_of"]] = 0
            row[SC["filter"]] = filters.add(cnt.get("filter", {}))
        else:
            if cnt["target"] != "opponent_active":
                raise ValueError(f"count target {cnt['target']!r} is not in the pool's tables")
            row[SC["count_of"]] = 1
    if "filter" in s:
        row[SC["filter"]] = filters.add(s["filter"])
    if "times" in s:
        row[SC["times"]] = s["times"]
    if "condition" in s and isinstance(s["condition"], dict):
        c = s["condition"]
        row[SC["cond"]] = COND[c["cond"]]
        if "condition" in c:
            row[SC["cond_param"]] = CONDITION_CODES[c["condition"]]
        if "energy" in c:
            row[SC["cond_param"]] = ENERGY_TYPES.index(c["energy"])
            row[SC["cond_count"]] = c["count"]
    elif "condition" in s:
        row[SC["condition"]] = CONDITION_CODES[s["condition"]]
    return row


def _encode_steps(steps, filters, names, where) -> np.ndarray:
    out = np.zeros((N_STEP_SLOTS, len(STEP_COLS)), np.int32)
    out[:, SC["filter"]] = out[:, SC["names"]] = out[:, SC["energy"]] = -1
    steps = steps or ()
    if len(steps) > 1:
        raise ValueError(f"{where}: {len(steps)} top-level steps; the tables hold one")
    for s in steps:
        out[0] = _encode_step(s, filters, names)
        if s["op"] == "coin_flip_then":
            for b, key in ((1, "heads"), (2, "tails")):
                if len(s[key]) > 1:
                    raise ValueError(f"{where}: {key} branch of {len(s[key])} steps")
                for t in s[key]:
                    out[b] = _encode_step(t, filters, names)
    return out


def _requires(reqs, filters, where) -> np.ndarray:
    """Up to 2 requires conditions per card: [cond code, filter id]."""
    out = np.full((2, 2), -1, np.int32)
    out[:, 0] = 0
    if len(reqs) > 2:
        raise ValueError(f"{where}: {len(reqs)} requires conditions; the tables hold 2")
    for i, r in enumerate(reqs):
        out[i, 0] = COND[r["cond"]]
        out[i, 1] = filters.add(r.get("filter"))
    return out


def build() -> dict[str, np.ndarray]:
    filters = _Filters()
    names: list[list[int]] = []
    n = N_CARDS
    t = {
        "category": np.zeros(n, np.int32),
        "is_basic": np.zeros(n, bool),
        "stage": np.full(n, -1, np.int32),
        "hp": np.zeros(n, np.int32),
        "type": np.full(n, -1, np.int32),
        "weakness": np.full(n, -1, np.int32),
        "retreat_cost": np.zeros(n, np.int32),
        "is_ex": np.zeros(n, bool),
        "name_id": np.zeros(n, np.int32),
        "evolves_from": np.full(n, -1, np.int32),
        "n_attacks": np.zeros(n, np.int32),
        "atk_cost": np.zeros((n, 2, N_ENERGY), np.int32),
        "atk_colorless": np.zeros((n, 2), np.int32),
        "atk_damage": np.zeros((n, 2), np.int32),
        "ability": np.zeros(n, np.int32),  # 0 none, 1 activated, 2 passive
        "requires": np.zeros((n, 2, 2), np.int32),
        "mods": np.zeros((n, len(MODS)), np.int32),  # passive ability or tool
        "steps": np.zeros((n, N_SOURCES, N_STEP_SLOTS, len(STEP_COLS)), np.int32),
    }
    t["steps"][..., SC["filter"]] = t["steps"][..., SC["names"]] = -1
    t["steps"][..., SC["energy"]] = -1
    t["requires"][..., 1] = -1
    name_ids = {nm: i for i, nm in enumerate(CARDS.names)}
    for c in CARDS.cards:
        i = c.idx
        t["category"][i] = CATEGORIES.index(c.category)
        t["is_basic"][i] = c.is_basic
        t["name_id"][i] = c.name_id
        if c.category == "pokemon":
            t["stage"][i] = c.stage
            t["hp"][i], t["type"][i], t["weakness"][i] = c.hp, c.type, c.weakness
            t["retreat_cost"][i], t["is_ex"][i] = c.retreat_cost, c.is_ex
            if c.evolves_from is not None:
                t["evolves_from"][i] = name_ids[c.evolves_from]
            t["n_attacks"][i] = len(c.attacks)
            for k, a in enumerate(c.attacks):
                t["atk_cost"][i, k] = a.cost
                t["atk_colorless"][i, k], t["atk_damage"][i, k] = a.colorless, a.damage
                t["steps"][i, k] = _encode_steps(a.effect, filters, names, f"{c.id} attack {k}")
            ab = c.ability
            if ab is not None and ab["timing"] == "activated":
                t["ability"][i] = 1
                t["requires"][i] = _requires(ab["requires"], filters, c.id)
                t["steps"][i, SRC_ABILITY] = _encode_steps(ab["steps"], filters, names, c.id)
            elif ab is not None:
                t["ability"][i] = 2
                for m in ab["modifiers"]:
                    t["mods"][i, MODS.index(m["op"])] += m.get("amount", 1)
        elif c.category == "tool":
            for m in c.effect["modifiers"]:
                t["mods"][i, MODS.index(m["op"])] += m.get("amount", 1)
        else:
            t["requires"][i] = _requires(c.effect["requires"], filters, c.id)
            t["steps"][i, SRC_TRAINER] = _encode_steps(c.effect["steps"], filters, names, c.id)
    t["filter_ok"], t["filter_damaged"] = filters.tables()
    t["effect_names"] = np.array(names or [[-1] * MAX_NAMES], np.int32).reshape(-1, MAX_NAMES)
    return t


TABLES: dict[str, np.ndarray] = build()
