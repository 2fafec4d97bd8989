"""The reference's counter-based RNG (``tcgjax.reference.rng``, docs/tcgjax.md "RNG") in uint32
jnp arithmetic. Every function takes and returns the draw ``counter`` explicitly, so a state's
``counter`` field threads through jitted code exactly as the reference increments it.

Products wrap mod 2^32 in uint32, which is what the reference's ``& M32`` spells out; the 64-bit
Lemire product is split into 16-bit halves (``mulhi_lo``) so nothing needs x64 mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

U32 = jnp.uint32
GOLDEN = 0x9E3779B9


def fmix32(h):
    h = jnp.asarray(h, U32)
    h = h ^ (h >> 16)
    h = h * U32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * U32(0xC2B2AE35)
    return h ^ (h >> 16)


def raw_u32(seed, counter):
    """The ``counter``-th uint32 of game ``seed`` (reference ``rng.raw_u32``)."""
    return fmix32(fmix32(seed) + jnp.asarray(counter, U32) * U32(GOLDEN))


def mulhi_lo(u, n):
    """(hi, lo) words of the 64-bit product ``u * n`` for n < 2^16, in uint32 only."""
    u = jnp.asarray(u, U32)
    n = jnp.asarray(n, U32)
    lo = u * n
    hi = ((u >> 16) * n + (((u & U32(0xFFFF)) * n) >> 16)) >> 16
    return hi, lo


def coin(seed, counter):
    """(heads, counter + 1)."""
    u = raw_u32(seed, counter)
    return (u >> 31) == U32(1), counter + U32(1)


def uniform(seed, counter, n, active=True):
    """(value in [0, n), new counter): Lemire's multiply-shift with rejection, one draw per try.

    ``active`` False draws nothing and returns (0, counter), so data-dependent numbers of draws
    (a shuffle of a shorter list, a pick that may not happen) stay branch-free. ``n`` must be
    >= 1 where active (callers guarantee it; a 0 is treated as 1 so the loop still ends).
    """
    n = jnp.maximum(jnp.asarray(n, U32), U32(1))
    threshold = (U32(0) - n) % n  # (2^32 - n) mod n
    counter = jnp.asarray(counter, U32)

    def cond(c):
        return c[2]

    def body(c):
        _, ctr, _ = c
        hi, lo = mulhi_lo(raw_u32(seed, ctr), n)
        return hi, ctr + U32(1), lo < threshold

    hi, counter, _ = jax.lax.while_loop(cond, body, (U32(0), counter, jnp.asarray(active, bool)))
    return hi.astype(jnp.int32), counter


def shuffle(seed, counter, xs, length):
    """Fisher-Yates from the end over ``xs[:length]`` (reference ``Rng.shuffle``); the padding
    beyond ``length`` is untouched and draws nothing."""
    size = xs.shape[0]

    def body(k, c):
        xs, ctr = c
        i = size - 1 - k  # i = size-1 ... 1; only i <= length-1 draws
        active = i <= length - 1
        j, ctr = uniform(seed, ctr, i + 1, active)
        j = jnp.where(active, j, i)
        xi, xj = xs[i], xs[j]
        xs = xs.at[i].set(xj).at[j].set(xi)
        return xs, ctr

    return jax.lax.fori_loop(0, size - 1, body, (xs, jnp.asarray(counter, U32)))
