"""Gen 1 accuracy check, from Showdown's ``data/mods/gen1/scripts.ts`` ``tryMoveHit``.

Accuracy is rescaled to 0..255, modified by the user's accuracy and the target's evasion
stages through Gen 1's stat-stage table, clamped to 1..255, and hit if ``random(256) <
accuracy`` — hence the famous 1/256 miss of "100%" moves. Moves that target the user get +1
(no 1/256 miss; no Gen 1 random-battle move reaches that branch: self-targeting moves there
always hit). Always-hit moves (Swift) draw nothing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pokejax import prng as P

# percent multipliers for stages -6..+6
STAGE_TABLE = jnp.asarray([25, 28, 33, 40, 50, 66, 100, 150, 200, 250, 300, 350, 400], jnp.int32)
ALWAYS_HITS = -1


def accuracy_threshold(move_accuracy, accuracy_stage, evasion_stage, targets_self,
                       locked_accuracy=-1) -> jax.Array:
    """The 0..256 threshold compared with ``random(256)``.

    ``locked_accuracy`` >= 0 replaces the move's accuracy (the Rage / Thrash bug keeps the
    accuracy computed on the first turn). Float products in Showdown (``acc * (table/100)``)
    equal these integer floors because every table value's double is >= its exact value.
    """
    acc = jnp.asarray(move_accuracy, jnp.int32) * 255 // 100
    acc = jnp.where(jnp.asarray(locked_accuracy) >= 0, locked_accuracy, acc)
    acc = acc * STAGE_TABLE[jnp.asarray(accuracy_stage) + 6] // 100
    acc = acc * STAGE_TABLE[-jnp.asarray(evasion_stage) + 6] // 100
    acc = jnp.clip(acc, 1, 255)
    return acc + jnp.asarray(targets_self).astype(jnp.int32)


def accuracy_check(state: P.PrngState, move_accuracy, accuracy_stage, evasion_stage,
                   targets_self, locked_accuracy=-1) -> tuple[P.PrngState, jax.Array]:
    """(PRNG state, hit). ``move_accuracy`` is a percentage or ``ALWAYS_HITS``."""
    always = jnp.asarray(move_accuracy) == ALWAYS_HITS
    threshold = accuracy_threshold(move_accuracy, accuracy_stage, evasion_stage, targets_self,
                                   locked_accuracy)
    drawn, hit = P.random_chance(state, threshold, 256)
    state = P.PrngState(jnp.where(always, state.hi, drawn.hi), jnp.where(always, state.lo, drawn.lo))
    return state, always | hit
