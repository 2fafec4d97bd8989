"""The first end-to-end engine slice: a Gen 1 one-vs-one duel of standard damaging moves.

Scope (``STANDARD_MOVES``): moves whose whole effect is damage plus at most one secondary
(status, confusion, flinch, stat drop) — no self effects, multi-hit, drain, recoil, fixed
damage, charging, trapping or callbacks. Both sides have one Pokémon, so a faint ends the
battle. Everything Showdown draws in such a turn is drawn here in the same order
(``tests/test_turn_trace.py``): the queue's speed tie, ``eachEvent`` speed ties before and
after every action, then per move BeforeMove, accuracy, damage and secondary draws.

This is a proving ground for the composition of the verified pieces (``before_move``,
``accuracy``, ``damage``, ``secondary``, ``speedsort``); the full engine generalises it.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import data
from pokejax import prng as P
from pokejax.accuracy import ALWAYS_HITS, accuracy_check
from pokejax.before_move import Mover, before_move
from pokejax.boosts import BOOSTS, CHANGED, boost_by
from pokejax.codec import MOVES, STATUSES, TYPES
from pokejax.damage import DamageInputs
from pokejax.secondary import Secondary, Target, move_hit, secondary_of

BRN, PSN, FRZ, SLP, PAR = (STATUSES.index(s) for s in ("brn", "psn", "frz", "slp", "par"))
POISON = TYPES.index("Poison")
EXCLUDED = frozenset({
    "bide", "counter", "dreameater", "jumpkick", "highjumpkick", "psywave", "rage", "struggle",
    "superfang", "metronome", "mirrormove",
})
SELF_VOLATILES = ("reflect", "lightscreen", "focusenergy")
HEALS = {"recover": 1, "softboiled": 1, "rest": 2}  # onHit handlers of data/mods/gen1/moves.ts


STATUS_MOVE_EFFECTS = ("par", "slp", "psn")  # main-effect status moves in scope (not Toxic)


def _standard(move_id: str, m: dict) -> bool:
    if move_id in EXCLUDED:
        return False
    if move_id in HEALS:
        return True
    if m["category"] == "Status":
        if not set(m) <= _PLAIN_STATUS_KEYS | {"boosts", "volatileStatus"}:
            return False
        if "volatileStatus" in m:  # Confuse Ray, Supersonic, Reflect, Light Screen, Focus Energy
            return m["volatileStatus"] in ("confusion", *SELF_VOLATILES) and "boosts" not in m
        return "boosts" in m or m.get("status") in STATUS_MOVE_EFFECTS
    if not m.get("basePower"):
        return False
    if m.get("self") == {"volatileStatus": "mustrecharge"}:  # Hyper Beam
        return not any(k in m for k in ("multihit", "ohko", "selfdestruct", "volatileStatus"))
    if any(k in m for k in ("self", "multihit", "ohko", "selfdestruct", "volatileStatus")):
        return False
    return "charge" not in (m.get("flags") or {})


_PLAIN_STATUS_KEYS = {"name", "num", "type", "category", "basePower", "accuracy", "pp", "priority",
                      "target", "status", "flags", "ignoreImmunity", "critRatio"}
STANDARD_MOVES = tuple(sorted(k for k, v in data.load()["moves"].items() if _standard(k, v)))


class MoveTable(NamedTuple):
    type: jax.Array
    physical: jax.Array
    base_power: jax.Array
    accuracy: jax.Array  # percent, or ALWAYS_HITS
    priority: jax.Array
    crit_ratio: jax.Array
    secondary: Secondary
    burn_secondary: jax.Array  # thaws a frozen target (frz onAfterMoveSecondary)
    status_effect: jax.Array  # a status move's status (STATUSES index), 0 for others
    ignore_immunity: jax.Array
    boosts: jax.Array  # int32[7]: a status move's stage changes
    self_target: jax.Array
    confuses: jax.Array  # Confuse Ray / Supersonic
    self_volatile: jax.Array  # index into SELF_VOLATILES, -1 for none
    fixed_damage: jax.Array  # -1 none, -2 the user's level, else that many HP
    drains: jax.Array  # heals the user half the damage dealt
    recoil: jax.Array  # int32[2] (num, den); (0, 1) for none
    heal: jax.Array  # 1 Recover/Soft-Boiled, 2 Rest, 0 other
    recharge: jax.Array  # Hyper Beam: the user must recharge unless the target fainted


@cache
def move_table() -> MoveTable:
    moves = data.load()["moves"]
    rows = [moves[m] for m in MOVES]
    secs = [secondary_of(m) for m in MOVES]
    return MoveTable(
        type=np.array([TYPES.index(m["type"]) if m["type"] in TYPES else -1 for m in rows], np.int32),
        physical=np.array([m["category"] == "Physical" for m in rows]),
        base_power=np.array([m.get("basePower", 0) for m in rows], np.int32),
        accuracy=np.array([ALWAYS_HITS if m["accuracy"] is True else m["accuracy"] for m in rows], np.int32),
        priority=np.array([m.get("priority", 0) for m in rows], np.int32),
        crit_ratio=np.array([m.get("critRatio", 1) for m in rows], np.int32),
        secondary=Secondary(*(np.stack([np.asarray(getattr(s, f)) for s in secs]) for f in Secondary._fields)),
        burn_secondary=np.array([(m.get("secondary") or {}).get("status") == "brn" for m in rows]),
        status_effect=np.array([STATUSES.index(m["status"]) if m["category"] == "Status" and m.get("status")
                                else 0 for m in rows], np.int32),
        # useMoveInner: an unset ignoreImmunity becomes "is a status move"
        ignore_immunity=np.array([bool(m["category"] == "Status" if m.get("ignoreImmunity") is None
                                       else m["ignoreImmunity"]) for m in rows]),
        boosts=np.array([[(m.get("boosts") or {}).get(b, 0) if m["category"] == "Status" else 0
                          for b in BOOSTS] for m in rows], np.int32),
        self_target=np.array([m.get("target") == "self" for m in rows]),
        confuses=np.array([m["category"] == "Status" and m.get("volatileStatus") == "confusion"
                           for m in rows]),
        self_volatile=np.array([SELF_VOLATILES.index(m["volatileStatus"])
                                if m.get("volatileStatus") in SELF_VOLATILES else -1 for m in rows], np.int32),
        fixed_damage=np.array([-2 if m.get("damage") == "level" else int(m["damage"])
                               if isinstance(m.get("damage"), int) else -1 for m in rows], np.int32),
        drains=np.array([m.get("drain") == [1, 2] for m in rows]),
        recoil=np.array([m.get("recoil") or [0, 1] for m in rows], np.int32),
        heal=np.array([HEALS.get(mid, 0) for mid in MOVES], np.int32),
        recharge=np.array([m.get("self") == {"volatileStatus": "mustrecharge"} for m in rows]),
    )


@cache
def damage_taken_table() -> np.ndarray:
    """int32[attacking type, defending type]: Showdown's damageTaken code — 0 neutral,
    1 super effective, 2 resisted, 3 immune (e.g. Normal vs Ghost, Ground vs Flying)."""
    chart = data.load()["typechart"]
    out = np.zeros((len(TYPES), len(TYPES)), np.int32)
    for d, dname in enumerate(TYPES):
        taken = chart[dname.lower()]["damageTaken"]
        for a, aname in enumerate(TYPES):
            out[a, d] = taken.get(aname, 0)
    return out


class Fighter(NamedTuple):
    hp: jax.Array
    maxhp: jax.Array
    status: jax.Array
    boosts: jax.Array  # int32[7]
    modified: jax.Array  # int32[5]
    stored: jax.Array  # int32[5]
    level: jax.Array
    types: jax.Array  # int32[2], -1 absent
    base_spe: jax.Array
    confused: jax.Array
    confusion_time: jax.Array
    flinched: jax.Array
    must_recharge: jax.Array
    moves: jax.Array  # int32[4] move index (-1 empty)
    pp: jax.Array  # int32[4]
    sleep_time: jax.Array  # statusState.time while asleep
    volatiles: jax.Array  # bool[3]: reflect, lightscreen, focusenergy (SELF_VOLATILES)
    speed: jax.Array  # Showdown's pokemon.speed: refreshed at choice time and at the residual
    last_slot: jax.Array  # side.lastSelectedMoveSlot (-1 before any choice)
    rest_sleep: jax.Array  # asleep by its own Rest (statusState.source is itself): Sleep Clause ignores it



class Field(NamedTuple):
    """Battle-level state a move can read or write (Showdown's ``battle.lastDamage``: Counter)."""
    last_damage: jax.Array


def new_field() -> Field:
    return Field(last_damage=jnp.int32(0))


def switched_out(f: Fighter) -> Fighter:
    """The record of a Pokémon leaving the field (``Pokemon.clearVolatile``): stages and every
    volatile gone, modified stats back to the stored ones with the par/brn penalty applied
    again (``setSpecies``), ``pokemon.speed`` = stored Speed. Fields that outlive a switch
    (HP, status and its counter, PP, moves, stats, types) stay. Keep in step with ``Fighter``."""
    m = f.stored
    m = jnp.where(f.status == PAR, m.at[4].set(jnp.maximum(m[4] // 4, 1)), m)
    m = jnp.where(f.status == BRN, m.at[0].set(jnp.maximum(m[0] // 2, 1)), m)
    no = jnp.zeros_like
    return f._replace(
        boosts=no(f.boosts), modified=m, confused=no(f.confused), confusion_time=no(f.confusion_time),
        flinched=no(f.flinched), must_recharge=no(f.must_recharge), volatiles=no(f.volatiles),
        speed=f.stored[4])


def _tie_draw(state: P.PrngState, f1: Fighter, f2: Fighter, active) -> P.PrngState:
    """eachEvent: speedSort of the two actives by pokemon.speed — a draw on a tie."""
    drawn, _ = P.random_below(state, 2)
    return P.select(active & (f1.speed == f2.speed), drawn, state)


def _residual_self(f: Fighter, active) -> Fighter:
    """AfterMoveSelf: sleep ends once its counter ran out (priority 3); burn / poison take
    max(maxhp/16, 1) (priority 2)."""
    wakes = active & (f.status == SLP) & (f.sleep_time <= 0) & (f.hp > 0)
    hurt = active & ((f.status == BRN) | (f.status == PSN)) & (f.hp > 0)
    return f._replace(status=jnp.where(wakes, 0, f.status),
                      hp=jnp.where(hurt, f.hp - jnp.minimum(jnp.maximum(f.maxhp // 16, 1), f.hp), f.hp))


def _tables() -> MoveTable:
    return jax.tree.map(jnp.asarray, move_table())


def _status_move_hit(state, foe: Fighter, status, active, sleep_blocked=False):
    """A status move that hit: ``setStatus`` on a target without a status (Poison types are
    immune to poison), the SetStatus clause-handler shuffle draw, sleep's 1..7 counter draw,
    paralysis quartering Speed. A target that already has a status: the move fails, no draw."""
    # Gen 1 bug: a sleep move on a recharging target ignores its status and ends the recharge
    over_recharge = (status == SLP) & foe.must_recharge & (foe.status != SLP)
    tries = active & ((foe.status == 0) | over_recharge) & ~((status == PSN) & jnp.any(foe.types == POISON))
    s1, _ = P.random_below(state, 2)
    state = P.select(tries, s1, state)
    # Sleep Clause Mod (a SetStatus handler: after the shuffle draw): one foe put to sleep
    tries = tries & ~((status == SLP) & jnp.asarray(sleep_blocked))
    s1, r = P.random_below(state, 7)
    sleeps = tries & (status == SLP)
    state = P.select(sleeps, s1, state)
    par = tries & (status == PAR)
    spe = jnp.maximum(foe.modified[4] // 4, 1)
    return state, foe._replace(
        must_recharge=foe.must_recharge & ~(tries & over_recharge),
        status=jnp.where(tries, status, foe.status),
        sleep_time=jnp.where(sleeps, r.astype(jnp.int32) + 1, foe.sleep_time),
        rest_sleep=foe.rest_sleep & ~sleeps,
        modified=jnp.where(par, foe.modified.at[4].set(spe), foe.modified),
    )


def _apply_boosts(f: Fighter, deltas) -> tuple[Fighter, jax.Array]:
    boosts, modified, took = f.boosts, f.modified, jnp.bool_(False)
    for i in range(7):
        nb, nm, res = boost_by(boosts, modified, f.stored, i, deltas[i])
        use = deltas[i] != 0
        boosts, modified = jnp.where(use, nb, boosts), jnp.where(use, nm, modified)
        took = took | (use & (res == CHANGED))
    return f._replace(boosts=boosts, modified=modified), took


def _penalty_quirk(f: Fighter, cond) -> Fighter:
    """Gen 1: after a stat change, the opponent's par/brn penalty is applied again."""
    m = f.modified
    m = jnp.where(cond & (f.status == PAR), m.at[4].set(jnp.maximum(m[4] // 4, 1)), m)
    m = jnp.where(cond & (f.status == BRN), m.at[0].set(jnp.maximum(m[0] // 2, 1)), m)
    return f._replace(modified=m)


def _boost_move_hit(me: Fighter, foe: Fighter, deltas, self_target, active):
    """A stat move that hit: stages on the user (self moves) or the foe, then the quirk on
    the user's opponent when a stage took."""
    receiver = P.select(self_target, me, foe)
    changed, took = _apply_boosts(receiver, deltas)
    took = active & took & (receiver.hp > 0)
    me = P.select(active & self_target, changed, me)
    foe = P.select(active & ~self_target, changed, foe)
    return me, _penalty_quirk(foe, took)


def _confusion_move_hit(state, foe: Fighter, active):
    starts = active & ~foe.confused
    s1, r = P.random_below(state, 4)
    return P.select(starts, s1, state), foe._replace(
        confused=foe.confused | starts,
        confusion_time=jnp.where(starts, r.astype(jnp.int32) + 2, foe.confusion_time))


def _heal_move_hit(state, me: Fighter, kind, active):
    """Recover / Soft-Boiled heal half the max HP; Rest puts the user to sleep for exactly 2
    turns (after setStatus drew its clause shuffle and a 1..7 counter it then overwrites) and
    heals fully. Both fail at full HP and, by the cartridge's bug, at maxhp - 255 / - 511
    unless the HP is a multiple of 256."""
    glitch = ((me.hp == me.maxhp - 255) | (me.hp == me.maxhp - 511)) & (me.hp % 256 != 0)
    ok = active & (me.hp != me.maxhp) & ~glitch
    recover, rest = ok & (kind == 1), ok & (kind == 2)
    hp = jnp.where(recover, jnp.minimum(me.hp + me.maxhp // 2, me.maxhp), me.hp)
    s1, _ = P.random_below(state, 2)
    s1, _ = P.random_below(s1, 7)
    state = P.select(rest, s1, state)
    return state, me._replace(
        hp=jnp.where(rest, me.maxhp, hp), status=jnp.where(rest, SLP, me.status),
        rest_sleep=me.rest_sleep | rest,
        sleep_time=jnp.where(rest, 2, me.sleep_time))


def use_move(state, me: Fighter, foe: Fighter, slot, active, field: Field, foe_clauses=(False, False)):
    """One move action of ``me`` (its move slot ``slot``) against ``foe``; a no-op when not
    ``active``. ``foe_clauses``: (Sleep Clause Mod, Freeze Clause Mod) would block a new
    sleep / freeze on the foe's side (the battle knows the benched Pokémon; a duel has none).
    Returns (prng, me, foe, field)."""
    sleep_blocked, freeze_blocked = foe_clauses
    t = _tables()
    move = me.moves[slot]
    mover = Mover(status=me.status, sleep_time=me.sleep_time, confused=me.confused,
                  confusion_time=me.confusion_time, flinched=me.flinched,
                  must_recharge=me.must_recharge, partially_trapped=jnp.bool_(False),
                  level=me.level, attack=me.modified[0], defense=me.modified[1])
    s1, bm = before_move(state, mover)
    state = P.select(active, s1, state)
    self_hit = active & bm.self_hit
    me = me._replace(
        must_recharge=jnp.where(active, bm.mover.must_recharge, me.must_recharge),
        sleep_time=jnp.where(active, bm.mover.sleep_time, me.sleep_time),
        confused=jnp.where(active, bm.mover.confused, me.confused),
        confusion_time=jnp.where(active, bm.mover.confusion_time, me.confusion_time),
        hp=jnp.where(self_hit, me.hp - jnp.minimum(jnp.maximum(bm.self_hit_damage, 1), me.hp), me.hp),
    )
    moves = active & bm.can_move
    me = me._replace(pp=jnp.where(moves, me.pp.at[slot].add(-1), me.pp))

    mtype = t.type[move]
    taken = jnp.where(foe.types >= 0, jnp.asarray(damage_taken_table())[mtype, jnp.maximum(foe.types, 0)], 0)
    immune = ~t.ignore_immunity[move] & ~t.self_target[move] & jnp.any(taken == 3)
    tries = moves & ~immune
    sure = (t.status_effect[move] == SLP) & foe.must_recharge
    s1, hit = accuracy_check(state, jnp.where(sure, ALWAYS_HITS, t.accuracy[move]), me.boosts[5],
                             foe.boosts[6], False)
    state = P.select(tries, s1, state)
    hits = tries & hit

    physical = t.physical[move]
    a_i, d_i = jnp.where(physical, 0, 2), jnp.where(physical, 1, 3)
    eff = jnp.where(taken == 1, 1, jnp.where(taken == 2, -1, 0))
    x = DamageInputs(
        level=me.level, base_power=t.base_power[move], crit_ratio=t.crit_ratio[move],
        will_crit=jnp.bool_(False), attacker_base_spe=me.base_spe, focus_energy=me.volatiles[2],
        attack=me.modified[a_i], attack_raw=me.stored[a_i], defense=foe.modified[d_i],
        defense_raw=foe.stored[d_i], screen=jnp.where(physical, foe.volatiles[0], foe.volatiles[1]),
        selfdestruct_vs_def=jnp.bool_(False),
        stab=jnp.any(me.types == mtype), effectiveness=eff)
    target = Target(hp=foe.hp, status=foe.status, types=foe.types, boosts=foe.boosts,
                    modified=foe.modified, stored=foe.stored, confused=foe.confused,
                    confusion_time=foe.confusion_time, flinched=foe.flinched,
                    must_recharge=foe.must_recharge)
    sec = jax.tree.map(lambda a: a[move], t.secondary)
    status_move = t.status_effect[move] > 0
    state, foe = _status_move_hit(state, foe, t.status_effect[move], hits & status_move, sleep_blocked)
    boost_move = jnp.any(t.boosts[move] != 0)
    me, foe = _boost_move_hit(me, foe, t.boosts[move], t.self_target[move], hits & boost_move)
    state, foe = _confusion_move_hit(state, foe, hits & t.confuses[move])
    vol = t.self_volatile[move]
    sets_vol = hits & (vol >= 0)
    me = me._replace(volatiles=jnp.where(sets_vol, me.volatiles.at[jnp.maximum(vol, 0)].set(True), me.volatiles))
    state, me = _heal_move_hit(state, me, t.heal[move], hits & (t.heal[move] > 0))
    fixed = t.fixed_damage[move]
    fixed_hit = hits & (fixed != -1)
    fixed_dmg = jnp.minimum(jnp.where(fixed == -2, me.level, fixed), foe.hp)
    foe = foe._replace(hp=jnp.where(fixed_hit, foe.hp - fixed_dmg, foe.hp))
    hits = (hits & ~status_move & ~boost_move & ~t.confuses[move] & ~sets_vol & ~fixed_hit
            & (t.heal[move] == 0))
    s1, after, dealt = move_hit(state, x, mtype, sec, target, freeze_blocked)
    state = P.select(hits, s1, state)
    # drain heals the user; recoil hurts it: floor(damage * num / den), at least 1 (gen4's
    # applyRecoilDamage, which Gen 1 inherits through gen2 -> gen3 -> gen4)
    heal = jnp.minimum(jnp.maximum(dealt // 2, 1), me.maxhp - me.hp)
    me = me._replace(hp=jnp.where(hits & t.drains[move] & (dealt > 0), me.hp + heal, me.hp))
    num, den = t.recoil[move][0], t.recoil[move][1]
    recoil = jnp.minimum(jnp.maximum(dealt * num // den, 1), me.hp)
    me = me._replace(hp=jnp.where(hits & (num > 0) & (dealt > 0), me.hp - recoil, me.hp))
    thaw = hits & (after.hp > 0) & (after.status == FRZ) & t.burn_secondary[move]
    foe = P.select(hits, foe._replace(hp=after.hp, status=jnp.where(thaw, 0, after.status),
                                   boosts=after.boosts, modified=after.modified,
                                   confused=after.confused, confusion_time=after.confusion_time,
                                   flinched=after.flinched, must_recharge=after.must_recharge), foe)
    # Hyper Beam: recharge next turn, unless it knocked the target out (mustrecharge onAfterMove)
    me = me._replace(must_recharge=me.must_recharge | (hits & t.recharge[move] & (foe.hp > 0)))
    # AfterMoveSelf: after an aborted move always, after a used move if the target still stands
    me = _residual_self(me, active & (~moves | (foe.hp > 0)))
    return state, me, foe, field


def _locked(f: Fighter) -> jax.Array:
    return (f.status == FRZ) | (f.status == SLP)


class TurnResult(NamedTuple):
    ended: jax.Array
    winner: jax.Array  # 0 none, 1 p1, 2 p2


def turn(state: P.PrngState, f1: Fighter, f2: Fighter, slot1, slot2, field: Field | None = None):
    """One duel turn (moves only). Returns (prng, f1, f2, TurnResult, field)."""
    field = new_field() if field is None else field
    t = _tables()
    # Gen 1: a frozen or sleeping Pokémon can only "Fight"; its queued action is its last
    # selected move (keeping that move's priority), and the selection is not updated
    slot1 = jnp.where(_locked(f1), f1.last_slot, slot1)
    slot2 = jnp.where(_locked(f2), f2.last_slot, slot2)
    # a recharging Pokémon's action is "recharge" (priority 0); its selection is kept
    rech1, rech2 = f1.must_recharge & ~_locked(f1), f2.must_recharge & ~_locked(f2)
    f1 = f1._replace(last_slot=jnp.where(rech1, f1.last_slot, slot1))
    f2 = f2._replace(last_slot=jnp.where(rech2, f2.last_slot, slot2))
    # commit: pokemon.speed and action speed = current modified Speed
    f1, f2 = f1._replace(speed=f1.modified[4]), f2._replace(speed=f2.modified[4])
    pr1 = jnp.where((slot1 >= 0) & ~rech1, t.priority[f1.moves[jnp.maximum(slot1, 0)]], 0)
    pr2 = jnp.where((slot2 >= 0) & ~rech2, t.priority[f2.moves[jnp.maximum(slot2, 0)]], 0)
    slot1, slot2 = jnp.maximum(slot1, 0), jnp.maximum(slot2, 0)
    tie = (pr1 == pr2) & (f1.speed == f2.speed)
    s1, r = P.random_below(state, 2)
    state = P.select(tie, s1, state)
    p2_first = jnp.where(tie, r == 1, (pr2 > pr1) | ((pr2 == pr1) & (f2.speed > f1.speed)))

    live = jnp.bool_(True)
    state = _tie_draw(state, f1, f2, live)  # BeforeTurn
    state = _tie_draw(state, f1, f2, live)  # Update after the beforeTurn action

    def step(state, f1, f2, field, first_is_p1, live):
        a, b = P.select(first_is_p1, (f1, f2), (f2, f1))
        slot = jnp.where(first_is_p1, slot1, slot2)
        state, a, b, field = use_move(state, a, b, slot, live, field)
        f1, f2 = P.select(first_is_p1, (a, b), (b, a))
        live = live & (f1.hp > 0) & (f2.hp > 0)
        state = _tie_draw(state, f1, f2, live)  # Update after the action
        return state, f1, f2, field, live

    state, f1, f2, field, live = step(state, f1, f2, field, ~p2_first, live)
    state, f1, f2, field, live = step(state, f1, f2, field, p2_first, live)
    # residual (only if the battle goes on): flinch ends, speeds refresh, then the Update
    f1, f2 = (f._replace(flinched=f.flinched & ~live) for f in (f1, f2))
    f1 = f1._replace(speed=jnp.where(live, f1.modified[4], f1.speed))
    f2 = f2._replace(speed=jnp.where(live, f2.modified[4], f2.speed))
    state = _tie_draw(state, f1, f2, live)
    ended = (f1.hp <= 0) | (f2.hp <= 0)
    winner = jnp.where(f2.hp <= 0, 1, jnp.where(f1.hp <= 0, 2, 0))
    return state, f1, f2, TurnResult(ended, winner), field
