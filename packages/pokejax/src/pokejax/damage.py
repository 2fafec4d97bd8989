"""Gen 1 damage, translated from Showdown's ``data/mods/gen1/scripts.ts`` ``getDamage``.

This is the standard path (a move with a base power and no damage callback): critical hit
from base Speed (Focus Energy *lowers* it, as on the cartridge), Reflect/Light Screen doubling
defense, crits using unmodified stats and double level, the /4 rule for stats >= 256, STAB,
type effectiveness per defending type, and the 217..255 random roll. PRNG draws happen exactly
where Showdown makes them: the crit roll only when the move can crit (``critChance > 0`` and
not ``willCrit``), the damage roll only when damage > 1. Fixed-damage, OHKO and callback
moves, and immunity, are decided before this in the move pipeline.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from pokejax import prng as P

i32 = jnp.int32


class DamageInputs(NamedTuple):
    level: jax.Array
    base_power: jax.Array
    crit_ratio: jax.Array  # 1 normal, 2 high
    will_crit: jax.Array  # bool
    attacker_base_spe: jax.Array  # species base Speed
    focus_energy: jax.Array  # bool
    attack: jax.Array  # attacker's modified stat (atk or spa)
    attack_raw: jax.Array  # unmodified (baseStoredStats)
    defense: jax.Array  # defender's modified stat (def or spd)
    defense_raw: jax.Array
    screen: jax.Array  # bool: Reflect vs a physical move / Light Screen vs a special one
    selfdestruct_vs_def: jax.Array  # bool: Self-Destruct/Explosion hitting Defense
    stab: jax.Array  # bool
    effectiveness: jax.Array  # int32[2]: +1 / 0 / -1 per defending type (0 when absent)



def crit_chance(x: DamageInputs) -> jax.Array:
    cc = x.attacker_base_spe // 2
    cc = jnp.where(x.focus_energy, cc // 2, jnp.clip(cc * 2, 1, 255))
    cc = jnp.where(x.crit_ratio == 1, cc // 2, jnp.where(x.crit_ratio == 2, jnp.clip(cc * 4, 1, 255), cc))
    return cc


def damage(state: P.PrngState, x: DamageInputs) -> tuple[P.PrngState, jax.Array, jax.Array]:
    """Returns (PRNG state, damage, crit)."""
    cc = crit_chance(x)
    rolls_crit = ~x.will_crit & (cc > 0)
    after_crit, crit_roll = P.random_chance(state, cc, 256)
    state = P.select(rolls_crit, after_crit, state)
    crit = x.will_crit | (rolls_crit & crit_roll)

    base_power = jnp.maximum(x.base_power, 1)
    defense = jnp.where(x.screen, x.defense * 2, x.defense)
    attack = jnp.where(crit, x.attack_raw, x.attack)
    defense = jnp.where(crit, x.defense_raw, defense)
    level = jnp.where(crit, x.level * 2, x.level) % 256

    big = (attack >= 256) | (defense >= 256)
    attack = jnp.where(big, jnp.maximum((attack // 4) % 256, 1), attack)
    defense = jnp.where(big, (defense // 4) % 256, defense)
    defense = jnp.where(big & (defense == 0), 1, defense)
    defense = jnp.where(x.selfdestruct_vs_def, jnp.maximum(defense // 2, 1), defense)

    dmg = (level * 2) // 5 + 2
    dmg = dmg * base_power * attack // defense
    dmg = jnp.clip(dmg // 50, 0, 997) + 2
    dmg = jnp.where(x.stab, dmg + dmg // 2, dmg)
    for t in range(2):
        eff = x.effectiveness[..., t]
        dmg = jnp.where(eff > 0, dmg * 20 // 10, jnp.where(eff < 0, dmg * 5 // 10, dmg))

    after_roll, roll = P.random_below(state, 256 - 217)
    rolls = dmg > 1
    state = P.select(rolls, after_roll, state)
    dmg = jnp.where(rolls, dmg * (roll.astype(i32) + 217) // 255, dmg)
    return state, dmg.astype(i32), crit
