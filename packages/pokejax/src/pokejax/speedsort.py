"""Showdown's ``Battle.speedSort``: order by (order, -priority, -speed, subOrder, effectOrder)
with a selection sort that shuffles each group of ties with the PRNG.

Showdown calls it for the action queue and for the handlers of every event, so these draws
happen even when the tie has no visible effect; the port must make them too, in the same
places. The selection sort's swaps decide which tied item sits where before the shuffle, so
they are reproduced step by step, not replaced by a stable sort.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import prng as P

NO_ORDER = 2**31 - 1  # Showdown's `order || 4294967296`: absent orders sort last
KEY_FIELDS = ("order", "priority", "speed", "subOrder", "effectOrder")


def sort_keys(order, priority, speed, sub_order, effect_order):
    """int32[..., 5]; smaller key sorts first. ``order`` 0 means absent."""
    order = jnp.where(jnp.asarray(order) == 0, NO_ORDER, order)
    return jnp.stack([jnp.asarray(x, jnp.int32) for x in
                      (order, -jnp.asarray(priority), -jnp.asarray(speed), sub_order, effect_order)],
                     axis=-1)


def _lex_less(a: jax.Array, b: jax.Array) -> jax.Array:
    """a < b lexicographically over the last axis."""
    less = jnp.zeros(a.shape[:-1], bool)
    decided = jnp.zeros(a.shape[:-1], bool)
    for f in range(a.shape[-1]):
        less = jnp.where(decided, less, a[..., f] < b[..., f])
        decided = decided | (a[..., f] != b[..., f])
    return less


def _swap(perm: jax.Array, a, b, do) -> jax.Array:
    pa, pb = perm[a], perm[b]
    return jnp.where(do, perm.at[a].set(pb).at[b].set(pa), perm)


def speed_sort(state: P.PrngState, keys: jax.Array, length=None) -> tuple[P.PrngState, jax.Array]:
    """(PRNG state after, permutation int32[N]: the item index at each position).

    Only the first ``length`` items (default all) take part, like a Showdown list of that
    length; the rest keep their places. ``N`` is static and small (actions, handlers).
    """
    n = keys.shape[0]
    length = jnp.asarray(n if length is None else length, jnp.int32)
    pos = jnp.arange(n, dtype=jnp.int32)

    def one_round(_, carry):
        perm, state, srt = carry
        active = srt + 1 < length
        k = keys[perm]
        best = srt
        group = pos == srt
        for i in range(n):  # Showdown's scan for nextIndexes, i = srt+1 .. length-1
            considered = (i > srt) & (i < length)
            better = considered & _lex_less(k[i], k[best])
            tie = considered & ~better & ~_lex_less(k[best], k[i])
            group = jnp.where(better, pos == i, group | (tie & (pos == i)))
            best = jnp.where(better, i, best)
        size = jnp.sum(group.astype(jnp.int32))
        members = jnp.sort(jnp.where(group, pos, n))
        for j in range(n):  # move the group into place with Showdown's swaps
            idx = jnp.minimum(members[j], n - 1)
            dest = jnp.minimum(srt + j, n - 1)
            perm = _swap(perm, dest, idx, active & (j < size) & (members[j] != srt + j))
        end = srt + size
        for j in range(n - 1):  # PRNG.shuffle(list, srt, end): Fisher-Yates
            s = srt + j
            do = active & (size > 1) & (s < end - 1)
            after, r = P.random_below(state, jnp.maximum(end - s, 1))
            state = P.PrngState(jnp.where(do, after.hi, state.hi), jnp.where(do, after.lo, state.lo))
            perm = _swap(perm, jnp.minimum(s, n - 1), jnp.minimum(s + r.astype(jnp.int32), n - 1), do)
        return perm, state, jnp.where(active, end, srt)

    perm, state, _ = jax.lax.fori_loop(0, max(n - 1, 0), one_round, (pos, state, jnp.int32(0)))
    return state, perm


def speed_sort_model(rng: P.Gen5Prng, keys: list[tuple]) -> list[int]:
    """Plain-Python mirror of Showdown's speedSort (the reference for the JAX version)."""
    items = list(range(len(keys)))
    srt = 0
    while srt + 1 < len(items):
        nxt = [srt]
        for i in range(srt + 1, len(items)):
            a, b = keys[items[nxt[0]]], keys[items[i]]
            if a < b:
                continue
            if b < a:
                nxt = [i]
            else:
                nxt.append(i)
        for i, index in enumerate(nxt):
            if index != srt + i:
                items[srt + i], items[index] = items[index], items[srt + i]
        if len(nxt) > 1:
            rng.shuffle(items, srt, srt + len(nxt))
        srt += len(nxt)
    return items


def keys_of(items: list[dict]) -> list[tuple]:
    return [tuple(np.asarray(sort_keys(*(it.get(f, 0) for f in KEY_FIELDS))).tolist()) for it in items]
