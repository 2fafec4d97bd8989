"""§17 randomness: the one counter-based RNG (docs/tcgjax.md, "RNG")."""

from collections import Counter
from types import SimpleNamespace

import pytest

from tcgjax.reference.rng import Rng, fmix32, mulhi_lo, raw_u32


def _rng(seed=1):
    return Rng(SimpleNamespace(seed=seed, counter=0))


def test_fmix32_known_values():
    # fmix32(0) = 0 and the avalanche of 1, computed by hand from the constants.
    assert fmix32(0) == 0
    assert fmix32(1) == 0x514E28B7


def test_counter_increments_once_per_draw():
    r = _rng(7)
    r.coin()
    r.uniform(5)
    assert r.state.counter == 2
    assert raw_u32(7, 0) != raw_u32(7, 1) != raw_u32(8, 1)


def test_mulhi_lo_equals_64_bit_product():
    for u in (0, 1, 0xFFFFFFFF, 0x80000000, 0x12345678, 0xDEADBEEF):
        for n in (1, 2, 3, 7, 20, 65535):
            hi, lo = mulhi_lo(u, n)
            assert (hi << 32) | lo == u * n


def test_17_1_coin_is_fair():
    r = _rng(3)
    heads = sum(r.coin() for _ in range(20000))
    assert 9700 < heads < 10300


def test_17_3_uniform_is_uniform_and_in_range():
    r = _rng(4)
    c = Counter(r.uniform(6) for _ in range(30000))
    assert set(c) == set(range(6))
    assert all(4700 < v < 5300 for v in c.values())


def test_uniform_rejects_bad_n():
    with pytest.raises(ValueError, match="uniform"):
        _rng().uniform(0)


def test_17_3_shuffle_is_a_permutation_and_uniform():
    r = _rng(5)
    c = Counter()
    for _ in range(6000):
        xs = [0, 1, 2]
        r.shuffle(xs)
        c[tuple(xs)] += 1
    assert len(c) == 6 and all(850 < v < 1150 for v in c.values())
