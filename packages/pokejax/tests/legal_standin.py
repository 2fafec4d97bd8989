"""A stand-in JAX legal mask for the verification tests, used only while ``pokejax.legal``
(the env's own mask, written alongside ``env.py``) does not exist yet.

It follows Showdown's Gen 1 ``Pokemon.getMoveRequestData`` for the engine's current scope:
a recharging Pokémon (``mustrecharge``) may only "Recharge" (action 0) and is trapped; a
frozen or asleep one may only "Fight" (action 0) or switch; otherwise the moves with PP left
(Struggle, action 0, when none has), and switches to every non-fainted benched Pokémon; a
forced switch allows only switches, the other side waits; an ended battle has no actions.
"""

import jax.numpy as jnp

from pokejax.codec import STATUSES

FRZ, SLP = STATUSES.index("frz"), STATUSES.index("slp")


def legal_mask(b):
    """bool[2, 9] for one (unbatched) ``battle.Battle``."""
    status, recharge = b.team.status[:, 0], b.team.must_recharge[:, 0]
    has_pp = (b.team.pp[:, 0] > 0) & (b.team.moves[:, 0] >= 0)  # [2, 4]
    bench = b.team.hp[:, 1:] > 0  # [2, 5]
    only_first = recharge | (status == FRZ) | (status == SLP) | ~jnp.any(has_pp, axis=1)
    first = jnp.arange(4) == 0
    moves = jnp.where(only_first[:, None], first[None, :], has_pp)
    switches = bench & ~recharge[:, None]
    normal = jnp.concatenate([moves, switches], axis=1)
    forced = jnp.concatenate([jnp.zeros((2, 4), bool), bench], axis=1) & b.forced[:, None]
    mask = jnp.where(jnp.any(b.forced), forced, normal)
    return mask & ~b.ended
