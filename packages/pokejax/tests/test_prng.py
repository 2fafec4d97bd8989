"""Showdown's Gen 5 PRNG: the Python model and the JAX version against the live Showdown."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pokejax import prng

seeds = st.lists(st.integers(0, 0xFFFF), min_size=4, max_size=4)
bounds = st.lists(st.integers(1, 2**31), min_size=1, max_size=40)


@settings(max_examples=30, deadline=None)
@given(seeds, bounds)
def test_model_matches_showdown(showdown, seed, ns):
    calls = [[n, None] for n in ns] + [[None, None], [3, 9]]
    live = showdown.request("prng", seed=seed, calls=calls)
    model = prng.Gen5Prng(seed)
    mine = [model.random(n) for n in ns] + [model.random(), model.random(3, 9)]
    assert mine == live["values"]
    assert ",".join(map(str, model.seed())) == live["seed"]


@settings(max_examples=20, deadline=None)
@given(seeds, st.integers(2, 12))
def test_shuffle_matches_showdown(showdown, seed, n):
    live = showdown.request("shuffle", seed=seed, n=n)
    model = prng.Gen5Prng(seed)
    items = list(range(n))
    model.shuffle(items)
    assert items == live["items"]
    assert ",".join(map(str, model.seed())) == live["seed"]


@jax.jit
def _draws(seed, ns):
    def body(state, n):
        return prng.random_below(state, n)

    state, out = jax.lax.scan(body, prng.from_seed(seed), ns)
    return out, prng.to_seed(state)


@settings(max_examples=30, deadline=None)
@given(seeds, bounds)
def test_jax_matches_model(seed, ns):
    out, final = _draws(jnp.asarray(seed, jnp.uint32), jnp.asarray(ns, jnp.uint32))
    model = prng.Gen5Prng(seed)
    assert [int(v) for v in out] == [model.random(n) for n in ns]
    assert [int(v) for v in final] == model.seed()


def test_jax_prng_vmaps():
    seeds = jnp.asarray(np.random.default_rng(0).integers(0, 0x10000, (64, 4)), jnp.uint32)
    batched = jax.vmap(lambda s: prng.random_below(prng.from_seed(s), 1000)[1])(seeds)
    for s, v in zip(np.asarray(seeds), np.asarray(batched), strict=True):
        assert prng.Gen5Prng(s).random(1000) == int(v)


@settings(deadline=None)
@given(seeds)
def test_seed_round_trip(seed):
    assert prng.int_to_seed(prng.seed_to_int(seed)) == seed
    assert [int(x) for x in prng.to_seed(prng.from_seed(jnp.asarray(seed, jnp.uint32)))] == seed


@settings(deadline=None)
@given(st.integers(1, 300), st.data())
def test_seed_with_first_draw(n, draw):
    value = draw.draw(st.integers(0, n - 1))
    seed = prng.seed_with_first_draw(n, value, np.random.default_rng(value))
    assert prng.Gen5Prng(seed).random(n) == value


@settings(deadline=None)
@given(st.integers(0, 5), st.integers(1, 300), st.data())
def test_seed_with_draw_at(index, n, draw):
    value = draw.draw(st.integers(0, n - 1))
    seed = prng.seed_with_draw_at(index, n, value, np.random.default_rng(value))
    model = prng.Gen5Prng(seed)
    for _ in range(index):
        model.next()
    assert model.random(n) == value


def test_pin_returns_its_values_bit_for_bit_through_a_reduction_xla_keeps():
    """``pin`` must not change a value (every dtype the engine pins, extremes included) and must
    leave a reduction in the optimized module: that kernel is what stops XLA:CPU from fusing
    a turn's draw chain into every consumer (if XLA ever folds it away, the step slows ~2x)."""
    values = (
        jnp.asarray([0, 1, 0xFFFFFFFF, 0x80000000], jnp.uint32),
        jnp.asarray([-(2**31), -1, 0, 2**31 - 1], jnp.int32),
        jnp.asarray([-32768, -1, 0, 32767], jnp.int16),
        jnp.asarray([True, False, True, False]),
    )
    out = jax.jit(prng.pin)(values)
    for v, o in zip(values, out, strict=True):
        assert o.dtype == v.dtype
        np.testing.assert_array_equal(np.asarray(o), np.asarray(v))
    text = jax.jit(lambda x: prng.pin(x * jnp.uint32(3) + jnp.uint32(1))).lower(values[0]).compile().as_text()
    assert " reduce(" in text, text  # an HLO reduce instruction (absent without pin)
