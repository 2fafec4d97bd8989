"""glibc ``rand()`` (TYPE_3 additive feedback generator), in numpy and in JAX.

PufferLib 3.0.0 seeds the *process-global* glibc generator with ``srand`` and every env draws
from that one stream. To reproduce it bit for bit we model the generator as glibc does:

* ``srand(s)`` fills ``r[0..30]`` with a Park–Miller LCG (Schrage's method in int32),
  then ``r[31..33] = r[0..2]``;
* afterwards ``r[i] = r[i-3] + r[i-31] (mod 2^32)``; the first 310 values are discarded and
  ``rand()`` returns ``r[i] >> 1``.

Because the recurrence is linear mod 2^32, any ``r[i]`` is a fixed integer combination of a
31-word window. :func:`jump_rows` precomputes those combinations, which lets JAX produce many
draws at once (a gather and a dot product) instead of a sequential loop.
"""

from __future__ import annotations

import functools

import numpy as np

DEG = 31  # length of the state window
SEP = 3  # feedback tap
DISCARD = 310  # values thrown away by srand
FIRST = DEG + DISCARD + SEP  # index in r[] of the value behind the first rand() (= 344)


def seed_words(seed: int) -> np.ndarray:
    """``r[0..30]`` after ``srand(seed)``, as uint32 (seed is taken as C ``unsigned int``)."""
    seed = int(seed) & 0xFFFFFFFF
    if seed == 0:
        seed = 1
    words = np.zeros(DEG, np.uint32)
    word = seed - (1 << 32) if seed >= 1 << 31 else seed  # int32_t word = seed
    words[0] = seed
    for i in range(1, DEG):
        hi = int(word / 127773)  # C division truncates toward zero
        lo = word - hi * 127773
        word = 16807 * lo - 2836 * hi
        if word < 0:
            word += 2147483647
        words[i] = word & 0xFFFFFFFF
    return words


@functools.lru_cache(maxsize=8)
def jump_rows(start: int, count: int) -> np.ndarray:
    """Rows ``C[j]`` (uint32, shape ``(count, 31)``) with ``r[start+j] = C[j] . w (mod 2^32)``.

    ``w`` is the window ``r[0..30]`` of the sequence (any 31 consecutive values, since the
    recurrence is shift invariant as long as ``start >= 0`` counts from the window start).
    For the window right after ``srand`` (which copies ``r[31..33] = r[0..2]`` instead of
    applying the recurrence) use :func:`seeded_rows`.
    """
    return _rows(start, count, seeded=False)


@functools.lru_cache(maxsize=8)
def seeded_rows(start: int, count: int) -> np.ndarray:
    """Like :func:`jump_rows` but relative to the words written by ``srand``."""
    return _rows(start, count, seeded=True)


def _rows(start: int, count: int, *, seeded: bool) -> np.ndarray:
    end = start + count
    coef = np.zeros((max(end, DEG), DEG), np.uint32)
    coef[:DEG] = np.eye(DEG, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(DEG, end):
            if seeded and i < DEG + SEP:
                coef[i] = coef[i - DEG]
            else:
                coef[i] = coef[i - SEP] + coef[i - DEG]
    return coef[start:end].copy()


class GlibcRand:
    """A pure-numpy glibc generator, for tests and host-side seeding."""

    def __init__(self, seed: int = 1):
        self.srand(seed)

    def srand(self, seed: int) -> None:
        r = list(int(x) for x in seed_words(seed))
        r += r[:SEP]
        for i in range(DEG + SEP, FIRST):
            r.append((r[i - SEP] + r[i - DEG]) & 0xFFFFFFFF)
        self._window = r[-DEG:]

    def window(self) -> np.ndarray:
        """The last 31 raw words: the whole generator state."""
        return np.array(self._window, np.uint32)

    def rand(self) -> int:
        w = self._window
        val = (w[-SEP] + w[-DEG]) & 0xFFFFFFFF
        self._window = w[1:] + [val]
        return val >> 1


def window_after(seed: int, draws: int) -> np.ndarray:
    """The 31-word state after ``srand(seed)`` and ``draws`` calls to ``rand()``."""
    rows = seeded_rows(FIRST + draws - DEG, DEG)
    with np.errstate(over="ignore"):
        return (rows * seed_words(seed)[None, :]).sum(axis=1, dtype=np.uint32)
