"""Gen 1 stats from base stats, DVs (Showdown stores them as IVs = 2·DV) and stat experience
(EVs), as Showdown's ``Battle.statModify`` computes them (Gen 1 has no natures)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

STAT_ORDER = ("hp", "atk", "def", "spa", "spd", "spe")


def compute_stats(base: jax.Array, ivs: jax.Array, evs: jax.Array, level: jax.Array) -> jax.Array:
    """int32[..., 6] in STAT_ORDER: HP first, then atk/def/spa/spd/spe.

    ``tr(tr(2·base + iv + tr(ev/4)) · level / 100 + 5)``, and for HP ``+ 100`` inside and
    ``+ 10`` outside; all terms are non-negative so truncation is floor division.
    """
    base, ivs, evs = (jnp.asarray(x, jnp.int32) for x in (base, ivs, evs))
    level = jnp.asarray(level, jnp.int32)[..., None]
    core = 2 * base + ivs + evs // 4
    hp_bonus = jnp.zeros_like(core).at[..., 0].set(100)
    flat = jnp.full_like(core, 5).at[..., 0].set(10)
    return (core + hp_bonus) * level // 100 + flat
