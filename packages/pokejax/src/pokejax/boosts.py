"""Gen 1 stat stages, from Showdown's ``data/mods/gen1/scripts.ts`` ``Pokemon.boostBy``.

Gen 1 keeps a *modified* stat next to each stage: a successful stage change recomputes it from
the stored stat (``floor(stored * multiplier)``, at least 1, capped at 999 when raising). The
cartridge quirks are kept: raising a stat already at 999 (or lowering one at 1) moves the stage
and then undoes one step, and counts as "no change" (so no recomputation). Accuracy and evasion
have stages only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
UP_NUM = jnp.asarray([2, 3, 4, 5, 6, 7, 8], jnp.int32)  # x/2: 1, 1.5, ..., 4 (exact doubles)
DOWN_PCT = jnp.asarray([100, 66, 50, 40, 33, 28, 25], jnp.int32)  # Showdown's x/100 doubles are >= exact
CHANGED, UNCHANGED, NO_EFFECT = 1, 0, -1  # Showdown: true / 0 / false


def stage_stat(stored: jax.Array, stage: jax.Array) -> jax.Array:
    """``modifyStat`` after a reset to the stored stat: floor(stored · multiplier), >= 1."""
    up = stored * UP_NUM[jnp.clip(stage, 0, 6)] // 2
    down = stored * DOWN_PCT[jnp.clip(-stage, 0, 6)] // 100
    return jnp.maximum(jnp.where(stage >= 0, up, down), 1)


def boost_by(boosts: jax.Array, modified: jax.Array, stored: jax.Array, stat: int, delta):
    """One stat's stage change. ``boosts`` int32[7], ``modified``/``stored`` int32[5] (atk..spe).

    Returns (boosts, modified, result) with result CHANGED / UNCHANGED (the 999/1 quirk) /
    NO_EFFECT (already at +6/-6, nothing happens).
    """
    delta = jnp.asarray(delta, jnp.int32)
    cur = boosts[stat]
    blocked = ((delta > 0) & (cur >= 6)) | ((delta < 0) & (cur <= -6))
    moved = jnp.clip(cur + delta, -6, 6)
    if stat >= 5:  # accuracy / evasion: stage only
        new_boosts = jnp.where(blocked, boosts, boosts.at[stat].set(moved))
        return new_boosts, modified, jnp.where(blocked, NO_EFFECT, CHANGED)
    at_cap = ((delta > 0) & (modified[stat] == 999)) | ((delta < 0) & (modified[stat] == 1))
    stage = jnp.where(at_cap, moved - jnp.sign(delta), moved)
    new_mod = stage_stat(stored[stat], stage)
    new_mod = jnp.where((delta > 0) & (new_mod > 999), 999, new_mod)
    changed = ~blocked & ~at_cap
    new_boosts = jnp.where(blocked, boosts, boosts.at[stat].set(stage))
    new_modified = jnp.where(changed, modified.at[stat].set(new_mod), modified)
    result = jnp.where(blocked, NO_EFFECT, jnp.where(at_cap, UNCHANGED, CHANGED))
    return new_boosts, new_modified, result


def boost_all(boosts: jax.Array, modified: jax.Array, stored: jax.Array, deltas: jax.Array):
    """Every stat's stage change of one move at once: ``boost_by`` for each stat whose delta is
    non-zero, in turn. Each call reads and writes only its own stat, so the turns are
    independent and run as one vector operation (seven chained ``boost_by`` calls made seven
    copies of both arrays). Returns (boosts, modified, whether any stat CHANGED)."""
    deltas = jnp.asarray(deltas, jnp.int32)
    blocked = ((deltas > 0) & (boosts >= 6)) | ((deltas < 0) & (boosts <= -6))
    moved = jnp.clip(boosts + deltas, -6, 6)
    d5, m5 = deltas[:5], moved[:5]
    at_cap = ((d5 > 0) & (modified == 999)) | ((d5 < 0) & (modified == 1))
    stage5 = jnp.where(at_cap, m5 - jnp.sign(d5), m5)
    new_mod = stage_stat(stored, stage5)
    new_mod = jnp.where((d5 > 0) & (new_mod > 999), 999, new_mod)
    use = deltas != 0
    stage = jnp.concatenate([stage5, moved[5:]])
    new_boosts = jnp.where(use & ~blocked, stage, boosts)
    changed5 = use[:5] & ~blocked[:5] & ~at_cap
    new_modified = jnp.where(changed5, new_mod, modified)
    took = jnp.any(changed5) | jnp.any(use[5:] & ~blocked[5:])
    return new_boosts, new_modified, took
