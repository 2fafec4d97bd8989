"""Showdown's Gen 5 PRNG (``sim/prng.ts``, ``Gen5RNG``), bit for bit, in Python and in JAX.

A 64-bit LCG ``x <- 0x5D588B656C078965 * x + 0x269EC3 (mod 2^64)``; each draw advances once
and outputs the upper 32 bits ``r``. ``random(n) = floor(r * n / 2^32)`` and
``random(m, n) = m + floor(r * (n - m) / 2^32)``. Showdown writes the seed as four 16-bit
words, most significant first (``"a,b,c,d"``).

JAX has no uint64 without x64 mode, so the state is two uint32 words ``(hi, lo)`` and the
64-bit product is assembled from 16-bit pieces.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

MULT = 0x5D588B656C078965
INC = 0x269EC3
MASK64 = (1 << 64) - 1


# -- Python model (ints), used by tests and host-side code -------------------------------------
def seed_to_int(seed) -> int:
    a, b, c, d = (int(x) & 0xFFFF for x in seed)
    return (a << 48) | (b << 32) | (c << 16) | d


def int_to_seed(x: int) -> list[int]:
    return [(x >> 48) & 0xFFFF, (x >> 32) & 0xFFFF, (x >> 16) & 0xFFFF, x & 0xFFFF]


class Gen5Prng:
    def __init__(self, seed):
        self.x = seed_to_int(seed)

    def next(self) -> int:
        self.x = (MULT * self.x + INC) & MASK64
        return self.x >> 32

    def random(self, a: int | None = None, b: int | None = None) -> float | int:
        r = self.next()
        if a is None:
            return r / 2**32
        if b is None:
            return (r * a) >> 32
        return ((r * (b - a)) >> 32) + a

    def shuffle(self, items: list, start: int = 0, end: int | None = None) -> None:
        """Fisher-Yates in place, as ``PRNG.shuffle`` (used e.g. for speed ties)."""
        end = len(items) if end is None else end
        while start < end - 1:
            j = self.random(start, end)
            items[start], items[j] = items[j], items[start]
            start += 1

    def seed(self) -> list[int]:
        return int_to_seed(self.x)


def seed_before(state: int) -> list[int]:
    """The seed whose next LCG step is ``state`` (the LCG is a bijection of 64-bit ints)."""
    return int_to_seed(((state - INC) * pow(MULT, -1, 1 << 64)) & MASK64)


def seed_with_draw_at(index: int, n: int, value: int, rng) -> list[int]:
    """A seed whose ``index``-th draw (0-based) of ``random(n)`` is ``value``: lets tests land
    a draw exactly on a threshold, where an off-by-one in a probability shows every time."""
    lo = -(-value * 2**32 // n)  # smallest r with floor(r * n / 2^32) == value
    hi = -(-(value + 1) * 2**32 // n) - 1
    x = (int(rng.integers(lo, hi + 1)) << 32) | int(rng.integers(0, 2**32))
    for _ in range(index + 1):
        x = seed_to_int(seed_before(x))
    return int_to_seed(x)


def seed_with_first_draw(n: int, value: int, rng) -> list[int]:
    return seed_with_draw_at(0, n, value, rng)


# -- JAX ----------------------------------------------------------------------------------------
class PrngState(NamedTuple):
    hi: jax.Array  # uint32
    lo: jax.Array  # uint32


def select(cond, a, b):
    """``a`` where ``cond`` else ``b``, over whole pytrees (PRNG states, Pokémon records): how
    every "draw only if ..." is written without Python control flow on traced values."""
    # a leaf that is the same value on both sides is passed through as it is, so a caller can
    # tell which leaves a step left alone (``battle._put`` writes back only the others)
    return jax.tree.map(lambda x, y: x if x is y else jnp.where(cond, x, y), a, b)


def from_seed(seed) -> PrngState:
    seed = jnp.asarray(seed, jnp.uint32)
    return PrngState(hi=(seed[..., 0] << 16) | seed[..., 1], lo=(seed[..., 2] << 16) | seed[..., 3])


def to_seed(state: PrngState) -> jax.Array:
    m = jnp.uint32(0xFFFF)
    return jnp.stack([state.hi >> 16, state.hi & m, state.lo >> 16, state.lo & m], axis=-1)


def mul32_wide(u: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Full 64-bit product of two uint32 as (hi, lo), from 16-bit halves."""
    m = jnp.uint32(0xFFFF)
    u0, u1, v0, v1 = u & m, u >> 16, v & m, v >> 16
    p00, p01, p10, p11 = u0 * v0, u0 * v1, u1 * v0, u1 * v1
    mid = (p00 >> 16) + (p01 & m) + (p10 & m)  # < 3 * 2^16: no overflow
    lo = (p00 & m) | (mid << 16)
    hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16)
    return hi, lo


_A_HI, _A_LO = jnp.uint32(MULT >> 32), jnp.uint32(MULT & 0xFFFFFFFF)


def pin(values):
    """``values`` (a pytree of integer / bool arrays) computed once, where they are.

    XLA:CPU fuses a cheap elementwise producer into each of its consumers and recomputes it
    there; the chain of a turn's PRNG draws feeds nearly every field of the battle, so without
    this it was recomputed per field (~2x the step time). A reduction is a kernel of its own
    that XLA:CPU does not fuse into its consumers, so each value goes through one: the
    max / sum / any over the value and a zero (XLA cannot fold it away). An
    ``optimization_barrier`` does not stop the duplication (none is left in the optimized
    module); dividing by a runtime 1 did, but an integer division per element cost ~10% of
    the step. The result is bit for bit ``values``."""
    def through_reduction(x):
        z = jnp.zeros_like(x)
        if x.dtype == jnp.bool_:
            return jnp.any(jnp.stack([x, z]), axis=0)
        if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
            return jnp.max(jnp.stack([x, z]), axis=0)
        return jnp.sum(jnp.stack([x, z]), axis=0, dtype=x.dtype)

    return jax.tree.map(through_reduction, values)


def pinned(state: PrngState, *values):
    """``(state, *values)`` through ``pin``: a PRNG state and the per-battle scalars computed
    with it, which most leaves of the battle's records depend on."""
    return pin((state, *values))


def advance(state: PrngState) -> PrngState:
    """One LCG step."""
    hi, lo = mul32_wide(state.lo, _A_LO)
    hi = hi + state.hi * _A_LO + state.lo * _A_HI  # cross terms only matter mod 2^32
    new_lo = lo + jnp.uint32(INC)
    carry = (new_lo < lo).astype(jnp.uint32)
    return PrngState(hi + carry, new_lo)


def next_u32(state: PrngState) -> tuple[PrngState, jax.Array]:
    # materialised: otherwise XLA:CPU fuses the whole chain of a turn's draws into every value
    # that depends on one of them and recomputes it per consumer (measured: ~2x the step time)
    state = pin(advance(state))
    return state, state.hi


def random_below(state: PrngState, n) -> tuple[PrngState, jax.Array]:
    """``prng.random(n)``: an integer in ``[0, n)`` (``n`` < 2^32)."""
    state, r = next_u32(state)
    hi, _ = mul32_wide(r, jnp.asarray(n, jnp.uint32))
    return state, hi


def random_chance(state: PrngState, numerator, denominator) -> tuple[PrngState, jax.Array]:
    """``prng.randomChance(num, den)``: ``random(den) < num``."""
    state, r = random_below(state, denominator)
    return state, r < jnp.asarray(numerator, jnp.uint32)
