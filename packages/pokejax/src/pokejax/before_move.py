"""Gen 1 ``BeforeMove``: can the Pokémon act this turn?

The handlers of ``data/mods/gen1/conditions.ts`` in their priority order (distinct priorities,
so no speed-tie draws): frz (12) → slp (10) → partiallytrapped (9) → flinch (8) →
mustrecharge (7) → confusion (3) → par (2). The first handler that says "can't" ends the
event, so later handlers do not run and do not draw.

Sleep always costs the turn, also the turn it ends (``time`` reaches 0; the status is cured in
``AfterMoveSelf``). Confusion counts down first and, while it lasts, hits the user with
probability 1/2 (``!randomChance(128, 256)``) for typeless 40-power damage from its own
modified Attack and Defense. Full paralysis is ``randomChance(63, 256)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from pokejax import prng as P
from pokejax.codec import STATUSES

FRZ, SLP, PAR = (STATUSES.index(s) for s in ("frz", "slp", "par"))


class Mover(NamedTuple):
    status: jax.Array  # index into codec.STATUSES
    sleep_time: jax.Array
    confused: jax.Array  # bool
    confusion_time: jax.Array
    flinched: jax.Array  # bool
    must_recharge: jax.Array  # bool
    partially_trapped: jax.Array  # bool
    level: jax.Array
    attack: jax.Array  # modified stats
    defense: jax.Array


class BeforeMoveResult(NamedTuple):
    can_move: jax.Array
    mover: Mover
    self_hit: jax.Array  # bool: confusion damage taken
    self_hit_damage: jax.Array  # before the HP / Substitute rules of directDamage


def confusion_damage(level, attack, defense) -> jax.Array:
    return ((2 * level // 5 + 2) * attack * 40 // defense) // 50 + 2



def before_move(state: P.PrngState, m: Mover) -> tuple[P.PrngState, BeforeMoveResult]:
    blocked = m.status == FRZ
    asleep = ~blocked & (m.status == SLP)
    sleep_time = jnp.where(asleep, m.sleep_time - 1, m.sleep_time)
    blocked = blocked | asleep | m.partially_trapped | m.flinched
    recharging = ~blocked & m.must_recharge
    must_recharge = m.must_recharge & ~recharging
    blocked = blocked | recharging

    # confusion: count down; on reaching 0 it ends silently, otherwise a coin for a self-hit
    counting = ~blocked & m.confused
    conf_time = jnp.where(counting, m.confusion_time - 1, m.confusion_time)
    conf_ends = counting & (conf_time == 0)
    confused = m.confused & ~conf_ends
    rolls = counting & ~conf_ends
    drawn, keeps_control = P.random_chance(state, 128, 256)
    state = P.select(rolls, drawn, state)
    self_hit = rolls & ~keeps_control
    blocked = blocked | self_hit

    rolls_par = ~blocked & (m.status == PAR)
    drawn, fully_paralyzed = P.random_chance(state, 63, 256)
    state = P.select(rolls_par, drawn, state)
    blocked = blocked | (rolls_par & fully_paralyzed)

    mover = m._replace(sleep_time=sleep_time, confused=confused, confusion_time=conf_time,
                       must_recharge=must_recharge)
    damage = jnp.where(self_hit, confusion_damage(m.level, m.attack, m.defense), 0)
    return state, BeforeMoveResult(~blocked, mover, self_hit, damage)
