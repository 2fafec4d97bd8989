"""The move engine, proven on Gen 1 one-vs-one duels.

Scope: ``SUPPORTED_MOVES`` — the ``STANDARD_MOVES`` (damage with at most one secondary,
drain, recoil, fixed damage, Hyper Beam, status / stat / confusion moves, Reflect, Light
Screen, Focus Energy, Recover, Soft-Boiled, Rest) plus the other moves Gen 1 random battles
use (``SPECIAL_MOVES``: Counter, Substitute, Self-Destruct, Explosion, Mimic, Double Kick,
Twineedle, Pin Missile, Sky Attack, Mirror Move, Super Fang, Transform, High Jump Kick) and
Struggle. Both sides have one Pokémon, so a faint ends the battle. Everything Showdown draws
in such a turn is drawn here in the same order (``tests/test_turn_trace.py``): the queue's
speed tie, ``eachEvent`` speed ties before and after every action, then per move BeforeMove,
accuracy, multi-hit count, damage, secondary and effect draws. ``battle.lastDamage`` (what
Counter returns) lives in ``Field``.

Compile time: ``use_move`` is traced once per ``turn`` (the two actions run in a
``fori_loop``) and the damage formula once per ``use_move`` (a multi-hit move's later hits
repeat the first hit's damage; Substitute and direct hits share it).
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
from pokejax.boosts import BOOSTS, boost_all
from pokejax.codec import MOVES, SPECIES, STATUSES, TYPES
from pokejax.damage import DamageInputs, damage
from pokejax.secondary import CONFUSION, VOLATILE, Secondary, Target, apply_hit, secondary_of

BRN, PSN, FRZ, SLP, PAR = (STATUSES.index(s) for s in ("brn", "psn", "frz", "slp", "par"))
POISON = TYPES.index("Poison")
EXCLUDED = frozenset({
    "bide", "counter", "dreameater", "jumpkick", "highjumpkick", "psywave", "rage", "struggle",
    "superfang", "metronome", "mirrormove",
})
SELF_VOLATILES = ("reflect", "lightscreen", "focusenergy")
HEALS = {"recover": 1, "softboiled": 1, "rest": 2}  # onHit handlers of data/mods/gen1/moves.ts


STATUS_MOVE_EFFECTS = ("par", "slp", "psn")  # main-effect status moves in scope (not Toxic)
# moves beyond the standard ones, each with its own handling in ``use_move``
SPECIAL_MOVES = (
    "counter", "doublekick", "explosion", "highjumpkick", "mimic", "mirrormove", "pinmissile",
    "selfdestruct", "skyattack", "struggle", "substitute", "superfang", "transform", "twineedle",
)
# data/mods/gen1/scripts.ts: moves that leave battle.lastDamage alone when used
SKIP_LASTDAMAGE = frozenset({
    "confuseray", "conversion", "counter", "focusenergy", "glare", "haze", "leechseed", "lightscreen",
    "mimic", "mist", "poisongas", "poisonpowder", "recover", "reflect", "rest", "softboiled",
    "splash", "stunspore", "substitute", "supersonic", "teleport", "thunderwave", "toxic", "transform",
})
TWO_TURN_MOVES = ("dig", "fly", "razorwind", "skullbash", "skyattack", "solarbeam")
CRASH_MOVES = ("highjumpkick", "jumpkick")  # onMoveFail: 1 HP of crash damage
STRUGGLE, SKYATTACK, COUNTER, MIMIC, MIRRORMOVE, SUBSTITUTE, TRANSFORM = (
    MOVES.index(m) for m in ("struggle", "skyattack", "counter", "mimic", "mirrormove", "substitute",
                             "transform"))
MULTIHIT_SAMPLE = (2, 2, 2, 3, 3, 3, 4, 5)  # sample() for a [2, 5] multi-hit move


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
# every move the duel engine plays as Showdown does (Struggle: when no move has PP left)
SUPPORTED_MOVES = tuple(sorted(set(STANDARD_MOVES) | set(SPECIAL_MOVES)))


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
    fixed_damage: jax.Array  # -1 none, -2 the user's level, -3 Super Fang, else that many HP
    drains: jax.Array  # heals the user half the damage dealt
    recoil: jax.Array  # int32[2] (num, den); (0, 1) for none
    heal: jax.Array  # 1 Recover/Soft-Boiled, 2 Rest, 0 other
    recharge: jax.Array  # Hyper Beam: the user must recharge unless the target fainted
    status_cat: jax.Array  # category "Status"
    pp: jax.Array  # the move's base PP (Transform copies min(5, pp))
    skip_last_damage: jax.Array  # SKIP_LASTDAMAGE
    multihit: jax.Array  # hits: 1 for single-hit moves, 2 for Double Kick / Twineedle, -1 drawn 2..5
    selfdestruct: jax.Array
    crash: jax.Array  # Jump Kick / High Jump Kick: 1 HP crash damage when the move fails
    two_turn: jax.Array  # charges a turn first (twoturnmove volatile)
    counterable: jax.Array  # Normal or Fighting with base power > 0 (Gen 1 Counter)
    sub_blocks: jax.Array  # a status move Gen 1's Substitute stops (poison, foe stat drops, confusion)


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
        # -1 none, -2 the user's level, -3 half the target's HP (Super Fang), else that many HP
        fixed_damage=np.array([-2 if m.get("damage") == "level" else int(m["damage"])
                               if isinstance(m.get("damage"), int) else -3 if mid == "superfang" else -1
                               for mid, m in zip(MOVES, rows, strict=True)], np.int32),
        drains=np.array([m.get("drain") == [1, 2] for m in rows]),
        recoil=np.array([m.get("recoil") or [0, 1] for m in rows], np.int32),
        heal=np.array([HEALS.get(mid, 0) for mid in MOVES], np.int32),
        recharge=np.array([m.get("self") == {"volatileStatus": "mustrecharge"} for m in rows]),
        status_cat=np.array([m["category"] == "Status" for m in rows]),
        pp=np.array([m["pp"] for m in rows], np.int32),
        skip_last_damage=np.array([mid in SKIP_LASTDAMAGE for mid in MOVES]),
        multihit=np.array([-1 if isinstance(m.get("multihit"), list) else m.get("multihit", 1) for m in rows],
                          np.int32),
        selfdestruct=np.array([bool(m.get("selfdestruct")) for m in rows]),
        crash=np.array([mid in CRASH_MOVES for mid in MOVES]),
        two_turn=np.array([mid in TWO_TURN_MOVES for mid in MOVES]),
        counterable=np.array([m["type"] in ("Normal", "Fighting") and m.get("basePower", 0) > 0 for m in rows]),
        sub_blocks=np.array([m["category"] == "Status" and (
            m.get("status") in ("psn", "tox") or (bool(m.get("boosts")) and m.get("target") != "self")
            or m.get("volatileStatus") == "confusion") for m in rows]),
    )


@cache
def species_base_spe() -> np.ndarray:
    """int32[species]: base Speed (Transform's ``setSpecies`` recomputes ``pokemon.speed``)."""
    sp = data.load()["species"]
    return np.array([sp[s]["baseStats"]["spe"] for s in SPECIES], np.int32)


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
    # Transform / Mimic change these while active; the base_* copies are what a switch restores
    # (``clearVolatile``: moveSlots = baseMoveSlots, setSpecies(baseSpecies))
    species: jax.Array  # current species (SPECIES index): Transform takes the target's
    base_species: jax.Array
    base_types: jax.Array  # int32[2]
    stored: jax.Array  # int32[5] storedStats (Transform copies the target's)
    base_stored: jax.Array  # int32[5] baseStoredStats: crits use these, a switch restores them
    base_moves: jax.Array  # int32[4] baseMoveSlots
    base_pp: jax.Array  # int32[4]
    spe_set: jax.Array  # the set's Speed IV + EV/4 (Transform recomputes pokemon.speed with it)
    transformed: jax.Array
    sub_hp: jax.Array  # Substitute's HP (0: none)
    twoturn: jax.Array  # twoturnmove volatile: the charged move (-1 none)
    last_move: jax.Array  # pokemon.lastMove (-1 none): what Mirror Move copies
    # side-level (Showdown keeps them on the side; a switch keeps them)
    sel_move: jax.Array  # side.lastSelectedMove (-1 'nomove'): a locked action's move
    enemy_sel: jax.Array  # side.lastEnemySelectedMove: Counter fails against 'counter'
    last_used: jax.Array  # side.lastEnemyMove (-1 none): the side's last move through useMove



class Field(NamedTuple):
    """Battle-level state a move can read or write (Showdown's ``battle.lastDamage``: Counter)."""
    last_damage: jax.Array


def new_field() -> Field:
    return Field(last_damage=jnp.int32(0))


def switched_out(f: Fighter) -> Fighter:
    """The record of a Pokémon leaving the field (``Pokemon.clearVolatile``): stages and every
    volatile gone, modified stats back to the stored ones with the par/brn penalty applied
    again (``setSpecies``), ``pokemon.speed`` = stored Speed; Transform and Mimic undone
    (species, types, stats, moves and PP back to the base ones); ``lastMove`` forgotten.
    Fields that outlive a switch (HP, status and its counter, PP, stats, the side-level
    fields) stay. Keep in step with ``Fighter``."""
    m = f.base_stored
    m = jnp.where(f.status == PAR, m.at[4].set(jnp.maximum(m[4] // 4, 1)), m)
    m = jnp.where(f.status == BRN, m.at[0].set(jnp.maximum(m[0] // 2, 1)), m)
    no = jnp.zeros_like
    return f._replace(
        boosts=no(f.boosts), modified=m, confused=no(f.confused), confusion_time=no(f.confusion_time),
        flinched=no(f.flinched), must_recharge=no(f.must_recharge), volatiles=no(f.volatiles),
        speed=f.base_stored[4], species=f.base_species, types=f.base_types, stored=f.base_stored,
        moves=f.base_moves, pp=f.base_pp, transformed=no(f.transformed), sub_hp=no(f.sub_hp),
        twoturn=jnp.full_like(f.twoturn, -1), last_move=jnp.full_like(f.last_move, -1))


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
    boosts, modified, took = boost_all(f.boosts, f.modified, f.stored, deltas)
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
    # only the stages and the modified stats change (selecting whole records would make
    # every leaf look written, see ``use_move``)
    to_me, to_foe = active & self_target, active & ~self_target
    me = me._replace(boosts=jnp.where(to_me, changed.boosts, me.boosts),
                     modified=jnp.where(to_me, changed.modified, me.modified))
    foe = foe._replace(boosts=jnp.where(to_foe, changed.boosts, foe.boosts),
                       modified=jnp.where(to_foe, changed.modified, foe.modified))
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


def no_pp(f: Fighter) -> jax.Array:
    """No move with PP left: Showdown's request then offers only Struggle."""
    return jnp.all((f.moves < 0) | (f.pp <= 0))


def _direct_damage(me: Fighter, foe: Fighter, dmg, go):
    """Gen 1 ``directDamage`` of confusion and crash damage to ``me``: a Pokémon behind a
    Substitute takes none, and the damage goes to the foe's Substitute if it has one."""
    behind = me.sub_hp > 0
    foe_sub = go & behind & (foe.sub_hp > 0)
    me = me._replace(hp=jnp.where(go & ~behind, me.hp - jnp.minimum(dmg, me.hp), me.hp))
    foe = foe._replace(sub_hp=jnp.where(foe_sub, jnp.maximum(foe.sub_hp - dmg, 0), foe.sub_hp))
    return me, foe


def _deduct_pp(me: Fighter, slot, amount, go) -> Fighter:
    """Gen 1 ``deductPP`` on a slot (6-bit PP: 0 - 1 wraps to 63). Unless transformed, the
    base slot follows (the same object, or Mimic's virtual slot synced back)."""
    pp = (me.pp[slot] - amount) & 63
    return me._replace(pp=jnp.where(go, me.pp.at[slot].set(pp), me.pp),
                       base_pp=jnp.where(go & ~me.transformed, me.base_pp.at[slot].set(pp), me.base_pp))


def _transform(me: Fighter, foe: Fighter, go) -> Fighter:
    """``transformInto``: species, types, stored and modified stats, stages and the moves
    (5 PP each, at most the move's PP) of the target. ``setSpecies`` sets ``pokemon.speed``
    from the target species' base Speed with the user's own set and level."""
    t = _tables()
    base = jnp.asarray(species_base_spe())[foe.species]
    speed = (2 * base + me.spe_set) * me.level // 100 + 5
    pp = jnp.where(foe.moves >= 0, jnp.minimum(5, t.pp[jnp.maximum(foe.moves, 0)]), 0)
    return P.select(go, me._replace(
        species=foe.species, types=foe.types, stored=foe.stored, modified=foe.modified,
        boosts=foe.boosts, moves=foe.moves, pp=pp, transformed=jnp.bool_(True), speed=speed), me)


def use_move(state, me: Fighter, foe: Fighter, slot, active, field: Field, foe_clauses=(False, False)):
    """One move action of ``me`` (its move slot ``slot``) against ``foe``; a no-op when not
    ``active``. ``foe_clauses``: (Sleep Clause Mod, Freeze Clause Mod) would block a new
    sleep / freeze on the foe's side (the battle knows the benched Pokémon; a duel has none).
    A Pokémon with no PP left struggles; one charging a two-turn move uses it (its side's
    ``lastSelectedMoveSlot`` pays the PP). Returns (prng, me, foe, field).

    Gen 1 ``runMove`` → ``useMove`` → ``useMoveInner`` → ``tryMoveHit`` → ``moveHit``, with
    Mirror Move's ``useMove`` of the foe's last move folded in (one traced move body)."""
    sleep_blocked, freeze_blocked = foe_clauses
    # optimization barriers around the move body keep XLA from fusing it with the caller's
    # code: without them the whole-battle step compiled ~10x slower (31 s -> 345 s)
    given = me, foe
    state, me, foe, field, slot, active = jax.lax.optimization_barrier((state, me, foe, field, slot, active))
    entered = me, foe
    t = _tables()
    charging = me.twoturn >= 0
    struggling = ~charging & no_pp(me)
    # the action's move is the side's lastSelectedMove (``commit``): for a Pokémon locked
    # by freeze or sleep that is whatever the side selected last — possibly its previous
    # active's move — and it is used if the Pokémon thaws before its action; the PP is paid
    # at the side's lastSelectedMoveSlot (``slot``)
    chosen = jnp.where(me.sel_move >= 0, me.sel_move, me.moves[slot])
    move = jnp.where(charging, me.twoturn, jnp.where(struggling, STRUGGLE, chosen))
    move = jnp.maximum(move, 0)
    last_damage = field.last_damage

    # -- runMove: BeforeMove ------------------------------------------------------------------
    mover = Mover(status=me.status, sleep_time=me.sleep_time, confused=me.confused,
                  confusion_time=me.confusion_time, flinched=me.flinched,
                  must_recharge=me.must_recharge, partially_trapped=jnp.bool_(False),
                  level=me.level, attack=me.modified[0], defense=me.modified[1])
    s1, bm = before_move(state, mover)
    state = P.select(active, s1, state)
    self_hit = active & bm.self_hit
    full_para = active & ~bm.can_move & (me.status == PAR) & ~me.flinched & ~me.must_recharge & ~bm.self_hit
    me = me._replace(
        must_recharge=jnp.where(active, bm.mover.must_recharge, me.must_recharge),
        sleep_time=jnp.where(active, bm.mover.sleep_time, me.sleep_time),
        confused=jnp.where(active, bm.mover.confused, me.confused),
        confusion_time=jnp.where(active, bm.mover.confusion_time, me.confusion_time),
        # frz / slp forget the last move; full paralysis and a confusion self-hit end a charge
        last_move=jnp.where(active & _locked(me), -1, me.last_move),
        twoturn=jnp.where(self_hit | full_para, -1, me.twoturn),
    )
    # the confusion self-hit is directDamage: counted as lastDamage, Substitute rules
    self_dmg = jnp.maximum(bm.self_hit_damage, 1)
    last_damage = jnp.where(self_hit, self_dmg, last_damage)
    me, foe = _direct_damage(me, foe, self_dmg, self_hit)
    moves = active & bm.can_move
    state, last_damage, moves = P.pinned(state, last_damage, moves)
    # PP: not for Struggle; a two-turn move pays on its second turn
    me = _deduct_pp(me, jnp.where(charging, me.last_slot, slot), 1,
                    moves & ~struggling & (charging | ~t.two_turn[move]))

    # -- Mirror Move: useMove(mirrormove), whose onHit calls useMove(foe's last move) --------
    mirror = moves & (move == MIRRORMOVE)
    mirror_ok = mirror & (foe.last_move >= 0) & (foe.last_move != MIRRORMOVE)
    last_damage = jnp.where(mirror, 0, last_damage)
    me = me._replace(last_move=jnp.where(mirror, MIRRORMOVE, me.last_move),
                     sel_move=jnp.where(mirror_ok, foe.last_move, me.sel_move),
                     enemy_sel=jnp.where(mirror_ok, foe.last_move, me.enemy_sel))
    move = jnp.where(mirror_ok, jnp.maximum(foe.last_move, 0), move)
    # a called two-turn move refunds the PP on its charge turn; a transformed user's base
    # slot gains one (the Transform + Mirror Move PP glitch)
    me = _deduct_pp(me, me.last_slot, -1, mirror_ok & t.two_turn[move])
    quirk = mirror_ok & me.transformed & (me.last_slot >= 0) & (me.base_moves[jnp.maximum(me.last_slot, 0)] >= 0)
    ls = jnp.maximum(me.last_slot, 0)
    me = me._replace(base_pp=jnp.where(quirk, me.base_pp.at[ls].set((me.base_pp[ls] + 1) % 64), me.base_pp))

    # -- useMove / useMoveInner -------------------------------------------------------------------
    charge = moves & t.two_turn[move] & ~charging
    me = me._replace(last_used=jnp.where(moves, move, me.last_used),
                     last_move=jnp.where(moves & ~charge, move, me.last_move),
                     # TryMove: the charge turn starts twoturnmove and ends the move there
                     twoturn=jnp.where(charge, move, jnp.where(moves & t.two_turn[move], -1, me.twoturn)))
    go = moves & ~charge
    last_damage = jnp.where(go & ~t.skip_last_damage[move], 0, last_damage)

    # -- tryMoveHit: immunity, accuracy, multi-hit count ---------------------------------------
    self_target = t.self_target[move]
    mtype = t.type[move]
    taken = jnp.where(foe.types >= 0, jnp.asarray(damage_taken_table())[mtype, jnp.maximum(foe.types, 0)], 0)
    immune = go & ~t.ignore_immunity[move] & ~self_target & jnp.any(taken == 3)
    tries = go & ~immune
    sure = (t.status_effect[move] == SLP) & foe.must_recharge
    s1, hit = accuracy_check(state, jnp.where(sure, ALWAYS_HITS, t.accuracy[move]), me.boosts[5],
                             foe.boosts[6], False)
    state = P.select(tries, s1, state)
    hits = tries & hit
    missed = tries & ~hit
    last_damage = jnp.where(missed, 0, last_damage)
    s1, r = P.random_below(state, 8)
    state = P.select(hits & (t.multihit[move] < 0), s1, state)
    n_hits = jnp.where(t.multihit[move] < 0, jnp.asarray(MULTIHIT_SAMPLE, jnp.int32)[r.astype(jnp.int32)],
                       t.multihit[move])
    state, move, go, hits, missed, immune, n_hits, last_damage = P.pinned(
        state, move, go, hits, missed, immune, n_hits, last_damage)

    # -- moveHit of a status move (the foe's Substitute stops some) ---------------------------
    status_cat = t.status_cat[move]
    foe_sub = (foe.sub_hp > 0) & ~self_target
    shits = hits & status_cat & ~(foe_sub & t.sub_blocks[move])
    status_move = t.status_effect[move] > 0
    state, foe = _status_move_hit(state, foe, t.status_effect[move], shits & status_move, sleep_blocked)
    boost_move = jnp.any(t.boosts[move] != 0)
    me, foe = _boost_move_hit(me, foe, t.boosts[move], self_target, shits & boost_move)
    state, foe = _confusion_move_hit(state, foe, shits & t.confuses[move])
    vol = t.self_volatile[move]
    sets_vol = shits & (vol >= 0)
    me = me._replace(volatiles=jnp.where(sets_vol, me.volatiles.at[jnp.maximum(vol, 0)].set(True), me.volatiles))
    state, me = _heal_move_hit(state, me, t.heal[move], shits & (t.heal[move] > 0))
    # Substitute: fails with one up or below 1/4 HP; HP maxhp/4 + 1, costs maxhp/4 (none at <= 3)
    subs = shits & (move == SUBSTITUTE) & (me.sub_hp == 0) & (me.hp * 4 >= me.maxhp)
    cost = jnp.where(me.maxhp > 3, jnp.maximum(me.maxhp // 4, 1), 0)
    me = me._replace(sub_hp=jnp.where(subs, me.maxhp // 4 + 1, me.sub_hp),
                     hp=jnp.where(subs, jnp.maximum(me.hp - cost, 0), me.hp))
    # Mimic: a random move of the target replaces the user's selected slot (PP kept)
    mimic = shits & (move == MIMIC)
    s1, r = P.random_below(state, jnp.maximum(jnp.sum(foe.moves >= 0), 1))
    state = P.select(mimic, s1, state)
    me = me._replace(moves=jnp.where(mimic, me.moves.at[ls].set(foe.moves[r.astype(jnp.int32)]), me.moves))
    me = _transform(me, foe, shits & (move == TRANSFORM))

    # -- moveHit of a damaging move: the first hit's damage, once -----------------------------
    dhits = hits & ~status_cat
    physical = t.physical[move]
    a_i, d_i = jnp.where(physical, 0, 2), jnp.where(physical, 1, 3)
    eff = jnp.where(taken == 1, 1, jnp.where(taken == 2, -1, 0))
    x = DamageInputs(
        level=me.level, base_power=t.base_power[move], crit_ratio=t.crit_ratio[move],
        will_crit=jnp.bool_(False), attacker_base_spe=me.base_spe, focus_energy=me.volatiles[2],
        attack=me.modified[a_i], attack_raw=me.base_stored[a_i], defense=foe.modified[d_i],
        defense_raw=foe.base_stored[d_i], screen=jnp.where(physical, foe.volatiles[0], foe.volatiles[1]),
        selfdestruct_vs_def=t.selfdestruct[move] & physical,
        stab=jnp.any(me.types == mtype), effectiveness=eff)
    fixed = t.fixed_damage[move]
    counter = move == COUNTER
    # Gen 1 Counter: the foe's last selected move is not Counter, its last used move is
    # Normal/Fighting with base power, and the last damage is not 0
    counter_ok = (foe.enemy_sel != COUNTER) & (foe.last_used >= 0) & t.counterable[jnp.maximum(foe.last_used, 0)] \
        & (last_damage > 0)
    uses_fixed = (fixed != -1) | counter
    fixed_dmg = jnp.where(fixed == -2, me.level, jnp.where(fixed == -3, jnp.maximum(foe.hp // 2, 1),
                                                            jnp.where(counter, 2 * last_damage, fixed)))
    s1, std_dmg, _ = damage(state, x)
    state = P.select(dhits & ~uses_fixed, s1, state)
    dmg = jnp.where(uses_fixed, fixed_dmg, std_dmg)
    state, dmg = P.pinned(state, dmg)
    dealing = dhits & ~(counter & ~counter_ok)
    sec = jax.tree.map(lambda a: a[move], t.secondary)
    num, den = t.recoil[move][0], t.recoil[move][1]

    # the foe's Substitute takes every hit (the uncapped first damage each) until it breaks;
    # drain, recoil and a confusion secondary only happen if it holds
    to_sub = dealing & foe_sub
    sub_left = foe.sub_hp - jnp.minimum(n_hits * dmg, foe.sub_hp)
    broke = to_sub & (sub_left <= 0)
    holds = to_sub & ~broke
    foe = foe._replace(sub_hp=jnp.where(to_sub, sub_left, foe.sub_hp))
    last_damage = jnp.where(to_sub, dmg, last_damage)
    me = me._replace(hp=jnp.where(holds & (num > 0) & (dmg > 0),
                                  me.hp - jnp.minimum(jnp.maximum(dmg * num // den, 1), me.hp), me.hp))
    sub_drain = holds & t.drains[move]
    drain_amt = jnp.maximum(dmg // 2, 1)
    last_damage = jnp.where(sub_drain, drain_amt, last_damage)
    me = me._replace(hp=jnp.where(sub_drain & (me.hp > 0), jnp.minimum(me.hp + drain_amt, me.maxhp), me.hp))
    conf_sec = holds & (sec.kind == VOLATILE) & (sec.volatile == CONFUSION)
    s1, conf_hit = P.random_chance(state, -(-sec.chance * 256 // 100) - 1, 256)
    state = P.select(conf_sec, s1, state)
    state, foe = _confusion_move_hit(state, foe, conf_sec & conf_hit)

    # no Substitute: hits 1..n-1 take the same damage, the last one rolls the secondary (if
    # the target still stands); the loop stops at a faint
    direct = dealing & ~foe_sub
    hp_pre = jnp.maximum(foe.hp - (n_hits - 1) * dmg, 0)
    target = Target(hp=hp_pre, status=foe.status, types=foe.types, boosts=foe.boosts,
                    modified=foe.modified, stored=foe.stored, confused=foe.confused,
                    confusion_time=foe.confusion_time, flinched=foe.flinched,
                    must_recharge=foe.must_recharge)
    s1, after, dealt = apply_hit(state, dmg, mtype, sec, target, freeze_blocked)
    state = P.select(direct, s1, state)
    state, dealt = P.pinned(state, dealt)
    # lastDamage: the last hit's damage (a faint before the last hit: what that hit took)
    k = (foe.hp + jnp.maximum(dmg, 1) - 1) // jnp.maximum(dmg, 1)
    last_hit = jnp.where(hp_pre == 0, foe.hp - (k - 1) * dmg, dealt)
    last_damage = jnp.where(direct, last_hit, last_damage)
    # drain heals the user (and is the last damage); recoil hurts it: floor(damage * num /
    # den), at least 1 (gen4's applyRecoilDamage, which Gen 1 inherits)
    heal = jnp.minimum(jnp.maximum(dealt // 2, 1), me.maxhp - me.hp)
    drains = direct & t.drains[move] & (dealt > 0)
    last_damage = jnp.where(drains, jnp.maximum(dealt // 2, 1), last_damage)
    me = me._replace(hp=jnp.where(drains, me.hp + heal, me.hp))
    recoil = jnp.minimum(jnp.maximum(dealt * num // den, 1), me.hp)
    me = me._replace(hp=jnp.where(direct & (num > 0) & (dealt > 0), me.hp - recoil, me.hp))
    foe = P.select(direct, foe._replace(hp=after.hp, status=after.status, boosts=after.boosts,
                                        modified=after.modified, confused=after.confused,
                                        confusion_time=after.confusion_time, flinched=after.flinched,
                                        must_recharge=after.must_recharge), foe)
    # frz onAfterMoveSecondary: a move with a burn secondary thaws the target (even through
    # a Substitute)
    thaw = dealing & (foe.hp > 0) & (foe.status == FRZ) & t.burn_secondary[move]
    foe = foe._replace(status=jnp.where(thaw, 0, foe.status))
    # Hyper Beam: the self effect needs the hit to land (or the Substitute to hold); no
    # recharge once the target fainted (mustrecharge onAfterMove)
    me = me._replace(must_recharge=me.must_recharge | ((direct | holds) & t.recharge[move] & (foe.hp > 0)))
    # Self-Destruct / Explosion: the user faints (hit, miss or immune) unless it broke a Substitute
    me = me._replace(hp=jnp.where(go & t.selfdestruct[move] & ~broke, 0, me.hp))
    # High Jump Kick: missed or immune -> 1 HP of crash damage (directDamage: lastDamage 1)
    crash = t.crash[move] & (immune | missed)
    crash = crash & (me.hp > 0)
    last_damage = jnp.where(crash, 1, last_damage)
    me, foe = _direct_damage(me, foe, 1, crash)
    # AfterMoveSelf: after an aborted move always, after a used move if its target still stands
    target_up = jnp.where(self_target, me.hp > 0, foe.hp > 0)
    me = _residual_self(me, active & (~moves | target_up))
    field = field._replace(last_damage=jnp.where(active, last_damage, field.last_damage))
    # a leaf the move never writes (the level, the base stats, ...) leaves as the caller's own
    # value, so the caller knows it need not write it back (``battle._put``)
    written = [[getattr(f, k) is not getattr(e, k) for k in Fighter._fields]
               for f, e in zip((me, foe), entered, strict=True)]
    # the stages and modified stats come out of long select chains (boosts, secondaries,
    # par/brn, Transform); computed once here, or the caller's write-back of both records
    # recomputes each chain per stat and side (measured: ~4% of the step)
    me, foe = (f._replace(**P.pin({k: getattr(f, k) for k in ("boosts", "modified")}))
               for f in (me, foe))
    state, field, *leaves = jax.lax.optimization_barrier(
        (state, field, *(getattr(f, k) for f, w in zip((me, foe), written, strict=True)
                         for k, wk in zip(Fighter._fields, w, strict=True) if wk)))
    leaves = iter(leaves)
    me, foe = (g._replace(**{k: next(leaves) for k, wk in zip(Fighter._fields, w, strict=True) if wk})
               for g, w in zip(given, written, strict=True))
    return state, me, foe, field


def _locked(f: Fighter) -> jax.Array:
    return (f.status == FRZ) | (f.status == SLP)


def commit(f: Fighter, slot) -> tuple[Fighter, jax.Array, jax.Array]:
    """Gen 1 ``Side.commitChoices`` of a move choice and the action's priority. A frozen or
    sleeping Pokémon can only "Fight", a recharging or charging one is locked: their action
    is the side's ``lastSelectedMove`` (keeping its priority) and the selection stays; with no
    PP left the action is Struggle; otherwise the chosen slot becomes the selection. Also
    refreshes ``pokemon.speed``. Returns (fighter, slot for ``use_move``, priority)."""
    t = _tables()
    locked = _locked(f) | f.must_recharge | (f.twoturn >= 0)
    struggle = ~locked & no_pp(f)
    picks = ~locked & ~struggle
    last_slot = jnp.where(picks, slot, f.last_slot)
    sel = jnp.where(picks, f.moves[jnp.clip(slot, 0, 3)], jnp.where(struggle, STRUGGLE, f.sel_move))
    enemy_sel = jnp.where(struggle, STRUGGLE, jnp.where(last_slot >= 0, f.moves[jnp.clip(last_slot, 0, 3)], -1))
    priority = jnp.where(sel >= 0, t.priority[jnp.maximum(sel, 0)], 0)
    f = f._replace(last_slot=last_slot, sel_move=sel, enemy_sel=enemy_sel, speed=f.modified[4])
    return f, jnp.clip(last_slot, 0, 3), priority


class TurnResult(NamedTuple):
    ended: jax.Array
    winner: jax.Array  # 0 none or a tie, 1 p1, 2 p2


def turn(state: P.PrngState, f1: Fighter, f2: Fighter, slot1, slot2, field: Field | None = None):
    """One duel turn (moves only). Returns (prng, f1, f2, TurnResult, field)."""
    field = new_field() if field is None else field
    f1, slot1, pr1 = commit(f1, slot1)
    f2, slot2, pr2 = commit(f2, slot2)
    tie = (pr1 == pr2) & (f1.speed == f2.speed)
    s1, r = P.random_below(state, 2)
    state = P.select(tie, s1, state)
    p2_first = jnp.where(tie, r == 1, (pr2 > pr1) | ((pr2 == pr1) & (f2.speed > f1.speed)))

    live = jnp.bool_(True)
    state = _tie_draw(state, f1, f2, live)  # BeforeTurn
    state = _tie_draw(state, f1, f2, live)  # Update after the beforeTurn action

    def step(i, carry):
        # one loop body, so the move pipeline is traced (and compiled) once
        state, f1, f2, field, live = carry
        first_is_p1 = (i == 0) != p2_first
        a, b = P.select(first_is_p1, (f1, f2), (f2, f1))
        slot = jnp.where(first_is_p1, slot1, slot2)
        state, a, b, field = use_move(state, a, b, slot, live, field)
        f1, f2 = P.select(first_is_p1, (a, b), (b, a))
        live = live & (f1.hp > 0) & (f2.hp > 0)
        state = _tie_draw(state, f1, f2, live)  # Update after the action
        return state, f1, f2, field, live

    state, f1, f2, field, live = jax.lax.fori_loop(0, 2, step, (state, f1, f2, field, live))
    # residual (only if the battle goes on): flinch ends, speeds refresh, then the Update
    f1, f2 = (f._replace(flinched=f.flinched & ~live) for f in (f1, f2))
    f1 = f1._replace(speed=jnp.where(live, f1.modified[4], f1.speed))
    f2 = f2._replace(speed=jnp.where(live, f2.modified[4], f2.speed))
    state = _tie_draw(state, f1, f2, live)
    ended = (f1.hp <= 0) | (f2.hp <= 0)
    # both fainted (Self-Destruct / Explosion): a tie
    winner = jnp.where((f2.hp <= 0) & (f1.hp > 0), 1, jnp.where((f1.hp <= 0) & (f2.hp > 0), 2, 0))
    return state, f1, f2, TurnResult(ended, winner), field
