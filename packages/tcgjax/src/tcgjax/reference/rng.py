"""The one counter-based RNG of tcgjax (RULES §17.4 lets an engine pick its RNG and draw order).

Every random number is ``u = fmix32((fmix32(seed) + counter * 0x9E3779B9) mod 2^32)`` where
``fmix32`` is MurmurHash3's 32-bit finaliser, ``seed`` the game seed and ``counter`` the number of
draws made so far in this game; each draw increments ``counter`` by one. Everything is uint32
arithmetic (products taken mod 2^32), so the JAX engine reproduces it with uint32 arrays.

Mappings (each consumes exactly the draws stated):
* ``coin``: one draw, heads iff the top bit of ``u`` is 1 (``u >> 31 == 1``).
* ``uniform(n)`` for 1 <= n < 2^16: Lemire's multiply-shift with rejection. ``m = u * n`` as a
  64-bit product, split as ``hi = m >> 32`` and ``lo = m mod 2^32``; reject (draw again) while
  ``lo < (2^32 - n) mod n``; the result is ``hi``. This is exactly uniform (no modulo bias). In
  uint32 arithmetic ``lo = (u * n) mod 2^32`` and ``hi = (u_hi * n + ((u_lo * n) >> 16)) >> 16``
  with ``u_hi = u >> 16``, ``u_lo = u & 0xFFFF``. ``uniform(1)`` still consumes one draw.
* ``shuffle(xs)``: Fisher-Yates from the end: for ``i = len-1 down to 1``: ``j = uniform(i+1)``,
  swap ``xs[i]`` and ``xs[j]``.
"""

from __future__ import annotations

M32 = 0xFFFFFFFF
GOLDEN = 0x9E3779B9


def fmix32(h: int) -> int:
    """MurmurHash3 fmix32: a bijection on uint32 with full avalanche."""
    h &= M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def raw_u32(seed: int, counter: int) -> int:
    """The ``counter``-th random uint32 of game ``seed``."""
    return fmix32((fmix32(seed) + (counter * GOLDEN)) & M32)


def mulhi_lo(u: int, n: int) -> tuple[int, int]:
    """(hi, lo) words of the 64-bit product ``u * n``, computed the way uint32 JAX code must."""
    u_hi, u_lo = u >> 16, u & 0xFFFF
    lo = (u * n) & M32
    hi = (u_hi * n + ((u_lo * n) >> 16)) >> 16
    return hi, lo


class Rng:
    """Counter-based draws on a state object holding ``seed`` and ``counter`` (uint32)."""

    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state

    def u32(self) -> int:
        s = self.state
        u = raw_u32(s.seed, s.counter)
        s.counter = (s.counter + 1) & M32
        return u

    def coin(self) -> bool:
        return (self.u32() >> 31) == 1

    def uniform(self, n: int) -> int:
        if not 1 <= n < (1 << 16):
            raise ValueError(f"uniform(n) needs 1 <= n < 65536, got {n}")
        threshold = ((1 << 32) - n) % n
        while True:
            hi, lo = mulhi_lo(self.u32(), n)
            if lo >= threshold:
                return hi

    def shuffle(self, xs: list) -> None:
        for i in range(len(xs) - 1, 0, -1):
            j = self.uniform(i + 1)
            xs[i], xs[j] = xs[j], xs[i]
