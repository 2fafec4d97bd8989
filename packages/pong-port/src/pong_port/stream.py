"""The glibc ``rand()`` stream in JAX, shared by any number of envs in env order.

PufferLib calls ``rand()`` from ``c_step`` of env 0, 1, 2, ... in turn, all on one global
generator. In a step, env ``i`` that needs a value gets the ``k``-th next output, where
``k`` is the number of envs before it that also need one. We keep a buffer of upcoming raw
words (computed in one shot with :func:`glibc_rand.jump_rows`) so that a step costs a cumsum
and a gather; the buffer is refilled, rarely, under ``lax.cond``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pong_port import glibc_rand
from pong_port.glibc_rand import DEG, FIRST
from pong_port.types import GlibcStream


def _dot_u32(rows: jax.Array, words: jax.Array) -> jax.Array:
    """``rows @ words`` modulo 2^32 (uint32 arithmetic wraps)."""
    return jnp.sum(rows * words[..., None, :], axis=-1, dtype=jnp.uint32)


def seed_words(seed: jax.Array) -> jax.Array:
    """``r[0..30]`` after ``srand(seed)``: Park-Miller by Schrage's method in int32, as glibc."""
    seed = jnp.asarray(seed).astype(jnp.uint32)
    seed = jnp.where(seed == 0, jnp.uint32(1), seed)
    word0 = jax.lax.bitcast_convert_type(seed, jnp.int32)

    def next_word(word, _):
        hi = jax.lax.div(word, jnp.int32(127773))  # truncates toward zero, like C
        lo = word - hi * 127773
        word = 16807 * lo - 2836 * hi
        word = jnp.where(word < 0, word + 2147483647, word)
        return word, word

    _, rest = jax.lax.scan(next_word, word0, None, length=DEG - 1)
    words = jnp.concatenate([word0[None], rest])
    return jax.lax.bitcast_convert_type(words, jnp.uint32)


def srand_window(seed: jax.Array, draws: int = 0) -> jax.Array:
    """The 31-word state after ``srand(seed)`` and ``draws`` outputs (draws is static)."""
    rows = jnp.asarray(glibc_rand.seeded_rows(FIRST + draws - DEG, DEG))
    return _dot_u32(rows, seed_words(seed))


def first_rand(seed: jax.Array) -> jax.Array:
    """The first ``rand()`` after ``srand(seed)``."""
    rows = jnp.asarray(glibc_rand.seeded_rows(FIRST, 1))
    return _dot_u32(rows, seed_words(seed))[0] >> 1


class SharedStream:
    """Operations on a :class:`GlibcStream` serving ``num_envs`` envs."""

    def __init__(self, num_envs: int):
        self.num_envs = int(num_envs)
        self.capacity = 4 * self.num_envs
        self._rows = np.asarray(glibc_rand.jump_rows(DEG, self.capacity))

    def from_window(self, window: jax.Array) -> GlibcStream:
        ahead = _dot_u32(jnp.asarray(self._rows), window)
        return GlibcStream(jnp.concatenate([window, ahead]), jnp.int32(0))

    def draw(self, stream: GlibcStream, needed: jax.Array) -> tuple[GlibcStream, jax.Array]:
        """Outputs for the envs flagged in ``needed`` (bool[num_envs]), in env order."""
        needed = needed.astype(jnp.int32)
        # an exclusive prefix sum; associative_scan is ~3x faster than jnp.cumsum on XLA:CPU
        # (which lowers to a reduce-window) at 8192 envs
        rank = jax.lax.associative_scan(jnp.add, needed) - needed
        raw = stream.words[DEG + stream.used + rank]
        used = stream.used + jnp.sum(needed)

        def refill(_):
            return self.from_window(jax.lax.dynamic_slice(stream.words, (used,), (DEG,)))

        def keep(_):
            return GlibcStream(stream.words, used)

        stream = jax.lax.cond(used + self.num_envs > self.capacity, refill, keep, None)
        return stream, raw >> 1
