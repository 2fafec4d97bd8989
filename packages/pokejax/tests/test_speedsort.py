"""Showdown's speedSort (selection sort + PRNG shuffle of ties): model and JAX vs Showdown."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pokejax import prng
from pokejax.speedsort import KEY_FIELDS, keys_of, sort_keys, speed_sort, speed_sort_model

# few distinct values, so ties (and shuffles) are frequent
item = st.fixed_dictionaries({
    "order": st.sampled_from([0, 0, 103, 200]), "priority": st.integers(-1, 1),
    "speed": st.sampled_from([50, 100, 100, 150]), "subOrder": st.integers(0, 1),
    "effectOrder": st.integers(0, 1),
})
seeds = st.lists(st.integers(0, 0xFFFF), min_size=4, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(item, min_size=1, max_size=7), seeds)
def test_model_matches_showdown(showdown, items, seed):
    for i, it in enumerate(items):
        it["id"] = i
    live = showdown.request("speedsort", seed=seed, items=items)
    rng = prng.Gen5Prng(seed)
    assert speed_sort_model(rng, keys_of(items)) == live["ids"]
    assert ",".join(map(str, rng.seed())) == live["seed"]


@jax.jit
def _jax_sort(seed, keys, length):
    state, perm = speed_sort(prng.from_seed(seed), keys, length)
    return perm, prng.to_seed(state)


@settings(max_examples=60, deadline=None)
@given(st.lists(item, min_size=1, max_size=7), seeds)
def test_jax_matches_model(items, seed):
    n = len(items)
    padded = items + [{f: 0 for f in KEY_FIELDS}] * (7 - n)  # fixed N = 7, only `n` sorted
    keys = jnp.stack([sort_keys(*(it[f] for f in KEY_FIELDS)) for it in padded])
    perm, final = _jax_sort(jnp.asarray(seed, jnp.uint32), keys, n)
    rng = prng.Gen5Prng(seed)
    assert [int(p) for p in perm[:n]] == speed_sort_model(rng, keys_of(items))
    assert [int(p) for p in perm[n:]] == list(range(n, 7))
    assert [int(x) for x in final] == rng.seed()


def test_ties_draw_numbers():
    """Two tied items draw once; no ties draw nothing."""
    tied = keys_of([{"speed": 100}, {"speed": 100}])
    rng = prng.Gen5Prng([1, 2, 3, 4])
    speed_sort_model(rng, tied)
    assert rng.seed() != [1, 2, 3, 4]
    rng = prng.Gen5Prng([1, 2, 3, 4])
    speed_sort_model(rng, keys_of([{"speed": 100}, {"speed": 99}]))
    assert rng.seed() == [1, 2, 3, 4]
    assert np.asarray(sort_keys(0, 0, 0, 0, 0))[0] > 200
