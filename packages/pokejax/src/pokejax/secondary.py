"""A standard damaging move's hit in Gen 1: damage, then its secondary effect
(``data/mods/gen1/scripts.ts`` ``moveHit``, without accuracy, Substitute or move callbacks).

Order of draws, as Showdown makes them: crit and damage roll (``damage.damage``); then, if the
target survived, the secondary's chance ``randomChance(ceil(chance·256/100) [-1 for
confusion], 256)`` — skipped without a draw when a par/brn/frz secondary meets a target of the
move's type; then the effect: a status goes through ``setStatus`` (Poison types are immune
before any draw; otherwise the SetStatus event shuffles its two tied format handlers, Sleep
and Freeze Clause, which is one ``random(0, 2)`` draw), confusion draws its duration
``random(2, 6)``, stat drops go through ``boosts.boost_all`` and, when they take, re-apply the
par/brn penalty of the target (Gen 1's stat-modification quirk).
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import data
from pokejax import prng as P
from pokejax.boosts import BOOSTS, boost_all
from pokejax.codec import STATUSES, TYPES
from pokejax.damage import DamageInputs, damage

NONE, STATUS, VOLATILE, BOOST = range(4)
CONFUSION, FLINCH = range(2)
PAR, BRN, FRZ, PSN = (STATUSES.index(s) for s in ("par", "brn", "frz", "psn"))
POISON = TYPES.index("Poison")


class Secondary(NamedTuple):
    kind: jax.Array
    chance: jax.Array
    status: jax.Array  # STATUSES index
    volatile: jax.Array  # CONFUSION / FLINCH
    boosts: jax.Array  # int32[7] stage deltas


class Target(NamedTuple):
    hp: jax.Array
    status: jax.Array
    types: jax.Array  # int32[2], -1 when absent
    boosts: jax.Array  # int32[7]
    modified: jax.Array  # int32[5]
    stored: jax.Array  # int32[5]
    confused: jax.Array
    confusion_time: jax.Array
    flinched: jax.Array
    must_recharge: jax.Array


@cache
def secondary_of(move_id: str) -> Secondary:
    """The move's (single, in Gen 1) secondary effect as arrays."""
    sec = data.load()["moves"][move_id].get("secondary") or {}
    boosts = np.zeros(7, np.int32)
    for stat, delta in (sec.get("boosts") or {}).items():
        boosts[BOOSTS.index(stat)] = delta
    kind = (STATUS if "status" in sec else VOLATILE if "volatileStatus" in sec
            else BOOST if "boosts" in sec else NONE)
    return Secondary(
        kind=np.int32(kind), chance=np.int32(sec.get("chance", 0)),
        status=np.int32(STATUSES.index(sec["status"]) if "status" in sec else 0),
        volatile=np.int32({"confusion": CONFUSION, "flinch": FLINCH}.get(sec.get("volatileStatus"), 0)),
        boosts=boosts,
    )



def _draw_if(state, cond, n):
    drawn, value = P.random_below(state, n)
    return P.select(cond, drawn, state), value


def modify_stat(value, num, den):
    """Gen 1 ``modifyStat``: floor(stat · modifier), at least 1."""
    return jnp.maximum(value * num // den, 1)


def move_hit(state: P.PrngState, x: DamageInputs, move_type, sec: Secondary, t: Target,
             side_has_frozen=False) -> tuple[P.PrngState, Target, jax.Array]:
    """(PRNG state, target after, damage dealt)."""
    state, dmg, _ = damage(state, x)
    return apply_hit(state, dmg, move_type, sec, t, side_has_frozen)


def apply_hit(state: P.PrngState, dmg, move_type, sec: Secondary, t: Target,
              side_has_frozen=False) -> tuple[P.PrngState, Target, jax.Array]:
    """``move_hit`` once the hit's damage is known (a multi-hit move's later hits repeat the
    first hit's damage without drawing): HP loss, then the secondary if the target stands.
    (PRNG state, target after, damage dealt)."""
    dmg = jnp.minimum(dmg, t.hp)
    t = t._replace(hp=t.hp - dmg)

    type_blocks = ((sec.status == PAR) | (sec.status == BRN) | (sec.status == FRZ)) & \
        jnp.any(t.types == move_type)
    rolls = (sec.kind != NONE) & (t.hp > 0) & ~((sec.kind == STATUS) & type_blocks)
    threshold = -(-sec.chance * 256 // 100) - ((sec.kind == VOLATILE) & (sec.volatile == CONFUSION))
    drawn, hit = P.random_chance(state, threshold, 256)
    state = P.select(rolls, drawn, state)
    applies = rolls & hit

    # status: only on a target without one; Poison types cannot be poisoned
    tries = applies & (sec.kind == STATUS) & (t.status == 0)
    immune = (sec.status == PSN) & jnp.any(t.types == POISON)
    reaches_event = tries & ~immune
    state, _ = _draw_if(state, reaches_event, 2)  # SetStatus: the two clause handlers tie
    clause = (sec.status == FRZ) & jnp.asarray(side_has_frozen)
    sets = reaches_event & ~clause
    status = jnp.where(sets, sec.status, t.status)
    modified = t.modified
    modified = jnp.where(sets & (sec.status == BRN), modified.at[0].set(modify_stat(modified[0], 1, 2)), modified)
    modified = jnp.where(sets & (sec.status == PAR), modified.at[4].set(modify_stat(modified[4], 1, 4)), modified)
    t = t._replace(status=status, modified=modified)

    # volatiles: confusion draws its duration when it starts; flinch clears recharge
    confuse = applies & (sec.kind == VOLATILE) & (sec.volatile == CONFUSION) & ~t.confused
    state, r = _draw_if(state, confuse, 4)
    flinch = applies & (sec.kind == VOLATILE) & (sec.volatile == FLINCH) & ~t.flinched
    t = t._replace(
        confused=t.confused | confuse,
        confusion_time=jnp.where(confuse, r.astype(jnp.int32) + 2, t.confusion_time),
        flinched=t.flinched | flinch,
        must_recharge=t.must_recharge & ~flinch,
    )

    # stat drops (each stat in turn), then the par/brn re-application quirk if any took
    boost = applies & (sec.kind == BOOST)
    nb, nm, took = boost_all(t.boosts, t.modified, t.stored, sec.boosts)
    boosts, modified = jnp.where(boost, nb, t.boosts), jnp.where(boost, nm, t.modified)
    took = boost & took
    modified = jnp.where(took & (t.status == PAR), modified.at[4].set(modify_stat(modified[4], 1, 4)), modified)
    modified = jnp.where(took & (t.status == BRN), modified.at[0].set(modify_stat(modified[0], 1, 2)), modified)
    return state, t._replace(boosts=boosts, modified=modified), dmg
