"""Built-in policies in JAX: ``policy(key, battle, side) -> action`` (int32, jittable, vmappable).

* ``random_policy``: uniform over the side's legal actions (``legal.legal_mask``).
* ``greedy_policy``: a simple damage maximiser. It picks the legal move with the highest
  expected damage against the opponent's active Pokémon — base power × STAB (1.5) × type
  effectiveness (the product over the target's types, immunity 0) × accuracy, the attack /
  defense ratio of the move's category (Gen 1: physical uses Atk/Def, special Spc/Spc) from the
  current modified stats; fixed-damage moves (Seismic Toss, Night Shade: the level; Dragon
  Rage, Sonic Boom: their value) count their damage — breaking ties in slot order; status moves
  score 0, so a Pokémon with only status moves uses its first legal one. It switches only when
  it must (a forced switch), then uniformly at random among the legal switches.

A side with nothing to choose gets -1 (ignored by ``battle.step``). Both take the full battle
(the heuristic reads the opponent's active types and stats, which a Gen 1 player can infer from
the species and level of the random-battle set).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import legal
from pokejax.battle import Battle
from pokejax.duel import damage_taken_table, move_table

NO_ACTION = -1


def _pick_uniform(key, mask) -> jax.Array:
    logits = jnp.where(mask, 0.0, -jnp.inf)
    a = jax.random.categorical(key, logits)
    return jnp.where(jnp.any(mask), a, NO_ACTION).astype(jnp.int32)


def random_policy(key: jax.Array, b: Battle, side) -> jax.Array:
    """A uniformly random legal action for ``side`` (0 = p1, 1 = p2)."""
    return _pick_uniform(key, legal.legal_mask(b)[side])


@functools.cache
def type_multipliers() -> np.ndarray:
    """float32[attacking type, defending type + 1]: the damage multiplier; the extra last column
    (an absent second type, index -1) is 1."""
    taken = damage_taken_table()
    mult = np.select([taken == 1, taken == 2, taken == 3], [2.0, 0.5, 0.0], 1.0).astype(np.float32)
    return np.concatenate([mult, np.ones((mult.shape[0], 1), np.float32)], axis=1)


def type_multiplier(move_type, defender_types) -> jax.Array:
    """float32: the type-chart multiplier of an attack of ``move_type`` (int, any shape) on a
    Pokémon of ``defender_types`` (int[..., 2], -1 for an absent second type), broadcast.

    Shared by the greedy opponent's score (``expected_damage``) and the observation's matchup
    features (``observe``), so the two read one chart in one order (the first type's factor
    times the second's)."""
    chart = jnp.asarray(type_multipliers())
    row = jnp.maximum(move_type, 0)
    return chart[row, defender_types[..., 0]] * chart[row, defender_types[..., 1]]


def same_type_bonus(move_type, attacker_types) -> jax.Array:
    """bool[...]: whether each move of ``move_type`` (int[...]) shares a type with an attacker
    of ``attacker_types`` (int[2]), i.e. gets STAB; shared by ``expected_damage`` and
    ``observe`` for the same reason as ``type_multiplier``."""
    return jnp.any(attacker_types == move_type[..., None], axis=-1)


def expected_damage(b: Battle, side) -> jax.Array:
    """float32[4]: the heuristic's score of each of ``side``'s active moves against the foe."""
    t = jax.tree.map(jnp.asarray, move_table())
    me = jax.tree.map(lambda x: x[side], b.actives)
    foe = jax.tree.map(lambda x: x[1 - side], b.actives)
    moves = jnp.maximum(me.moves, 0)
    mtype = t.type[moves]
    eff = type_multiplier(mtype, foe.types)
    stab = jnp.where(same_type_bonus(mtype, me.types), 1.5, 1.0)
    physical = t.physical[moves]
    atk = jnp.where(physical, me.modified[0], me.modified[2]).astype(jnp.float32)
    dfn = jnp.where(physical, foe.modified[1], foe.modified[3]).astype(jnp.float32)
    acc = jnp.minimum(t.accuracy[moves], 100) / 100.0
    power = t.base_power[moves] * stab * eff * atk / jnp.maximum(dfn, 1.0) * acc
    fixed = t.fixed_damage[moves]
    fixed_dmg = jnp.where(fixed == -2, me.level, fixed).astype(jnp.float32) * acc * (eff > 0)
    score = jnp.where(fixed != -1, fixed_dmg, power)
    return jnp.where(me.moves >= 0, score, 0.0).astype(jnp.float32)


def greedy_policy(key: jax.Array, b: Battle, side) -> jax.Array:
    """Highest expected damage among the legal moves; switches only when forced."""
    mask = legal.legal_mask(b)[side]
    moves_ok = mask[:4]
    score = jnp.where(moves_ok, expected_damage(b, side), -jnp.inf)
    best = jnp.argmax(score).astype(jnp.int32)  # first of equal scores
    forced_switch = ~jnp.any(moves_ok)
    return jnp.where(forced_switch, _pick_uniform(key, mask), jnp.where(jnp.any(mask), best, NO_ACTION))


POLICIES = {"random": random_policy, "greedy": greedy_policy}
