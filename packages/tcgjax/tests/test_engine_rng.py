"""The JAX RNG equals the reference's draw for draw (docs/tcgjax.md "RNG", D1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tcgjax.engine import rng as J
from tcgjax.reference import rng as R


class _Ctr:
    def __init__(self, seed):
        self.seed, self.counter = seed, 0


SEEDS = [0, 1, 7, 123456789, 2**31, 2**32 - 1]


def test_raw_u32_matches_reference_including_counter_wrap():
    for seed in SEEDS:
        for c in [0, 1, 2, 99, 2**31, 2**32 - 1]:
            got = int(J.raw_u32(jnp.uint32(seed), jnp.uint32(c)))
            assert got == R.raw_u32(seed, c), (seed, c)


def test_mulhi_lo_is_the_exact_64_bit_split():
    rnd = np.random.default_rng(0)
    us = rnd.integers(0, 2**32, 2000, dtype=np.uint64)
    ns = rnd.integers(1, 2**16, 2000, dtype=np.uint64)
    hi, lo = jax.jit(J.mulhi_lo)(jnp.asarray(us, jnp.uint32), jnp.asarray(ns, jnp.uint32))
    prod = [int(u) * int(n) for u, n in zip(us, ns, strict=True)]
    assert np.asarray(hi).tolist() == [x >> 32 for x in prod]
    assert np.asarray(lo).tolist() == [x & 0xFFFFFFFF for x in prod]


@pytest.mark.parametrize("seed", SEEDS)
def test_coin_uniform_and_counter_follow_the_reference(seed):
    ref = _Ctr(seed)
    r = R.Rng(ref)
    uniform = jax.jit(J.uniform)
    ctr = jnp.uint32(0)
    for n in [1, 2, 3, 5, 7, 20, 1000, 65535, 40000, 3]:
        heads, ctr = J.coin(jnp.uint32(seed), ctr)
        assert bool(heads) == r.coin()
        v, ctr = uniform(jnp.uint32(seed), ctr, n, True)
        assert int(v) == r.uniform(n) and int(ctr) == ref.counter
    v, ctr2 = uniform(jnp.uint32(seed), ctr, 5, False)  # inactive: no draw
    assert int(ctr2) == int(ctr)


def test_uniform_rejects_like_the_reference():
    """n = 40000 rejects lo < 2^32 mod 40000 = 27296; find a seed/counter where the first draw is
    rejected and check both engines consume two draws."""
    n = 40000
    thr = (2**32 - n) % n
    for seed in range(200000):
        if (R.raw_u32(seed, 0) * n) & 0xFFFFFFFF < thr:
            break
    else:
        pytest.skip("no rejecting draw in range")
    ref = _Ctr(seed)
    want = R.Rng(ref).uniform(n)
    v, ctr = jax.jit(J.uniform)(jnp.uint32(seed), jnp.uint32(0), n, True)
    assert ref.counter >= 2
    assert (int(v), int(ctr)) == (want, ref.counter)


@pytest.mark.parametrize("length", [0, 1, 2, 5, 13, 15, 20])
def test_shuffle_of_a_prefix_matches_reference(length):
    shuffle = jax.jit(J.shuffle)
    for seed in [3, 11, 2**32 - 5]:
        ref = _Ctr(seed)
        ref.counter = 17
        xs = list(range(100, 100 + length))
        R.Rng(ref).shuffle(xs)
        arr = jnp.concatenate([jnp.arange(100, 100 + length), -jnp.ones(20 - length, int)])
        out, ctr = shuffle(jnp.uint32(seed), jnp.uint32(17), arr.astype(jnp.int32), length)
        assert np.asarray(out[:length]).tolist() == xs
        assert np.asarray(out[length:]).tolist() == [-1] * (20 - length)
        assert int(ctr) == ref.counter
