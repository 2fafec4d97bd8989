"""L1: Gen 1 stat stages (modified stats, 999 cap, the 999/1 quirk) against Showdown."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax.boosts import BOOSTS, CHANGED, NO_EFFECT, UNCHANGED, boost_all, boost_by

STATS = BOOSTS[:5]


@pytest.fixture(scope="module")
def cases(showdown, team_sets):
    rng = np.random.default_rng(2)
    pool = team_sets([[i, 9, 9, 9] for i in range(4)])
    out = []
    for _ in range(400):
        mon = pool[rng.integers(len(pool))]
        boosts = {k: int(rng.integers(-6, 7)) for k in BOOSTS}
        modified = {k: int(rng.choice([1, 999, rng.integers(1, 1000)])) for k in STATS}
        stat = BOOSTS[rng.integers(len(BOOSTS))]
        delta = int(rng.choice([-2, -1, 1, 2]))
        res = showdown.request("boost", pokemon=mon, boosts=boosts, modified=modified, stat=stat,
                               delta=delta)
        out.append((boosts, modified, stat, delta, res))
    return out


def test_boosts_match_showdown(cases):
    seen = set()
    for boosts, modified, stat, delta, res in cases:
        b = jnp.asarray([boosts[k] for k in BOOSTS])
        m = jnp.asarray([modified[k] for k in STATS])
        stored = jnp.asarray([res["stored"][k] for k in STATS])
        nb, nm, result = jax.jit(boost_by, static_argnums=3)(b, m, stored, BOOSTS.index(stat), delta)
        assert [int(x) for x in nb] == [res["boosts"][k] for k in BOOSTS], (stat, delta, boosts, res)
        assert [int(x) for x in nm] == [res["modified"][k] for k in STATS], (stat, delta, modified, res)
        # Battle.boost reports success only for a real change (null otherwise)
        assert (int(result) == CHANGED) == (res["success"] is True), (stat, delta, res)
        seen.add(int(result))
    assert seen == {CHANGED, UNCHANGED, NO_EFFECT}


def test_boost_all_is_boost_by_for_each_stat_in_turn():
    """``boost_all`` (one vector operation, what moves and secondaries use) against the
    Showdown-checked ``boost_by`` applied stat after stat, on random stages, deltas and
    modified stats with the ±6 and 999/1 edges over-represented."""
    rng = np.random.default_rng(5)

    def in_turn(b, m, stored, deltas):
        took = jnp.bool_(False)
        for i in range(7):
            nb, nm, res = boost_by(b, m, stored, i, deltas[i])
            use = deltas[i] != 0
            b, m = jnp.where(use, nb, b), jnp.where(use, nm, m)
            took = took | (use & (res == CHANGED))
        return b, m, took

    n = 4000
    b = rng.choice([-6, -5, 0, 3, 5, 6], size=(n, 7)) + (rng.random((n, 7)) < 0.3) * rng.integers(-1, 2, (n, 7))
    b = np.clip(b, -6, 6).astype(np.int32)
    m = np.where(rng.random((n, 5)) < 0.3, rng.choice([1, 999], (n, 5)), rng.integers(1, 1000, (n, 5)))
    stored = rng.integers(1, 800, (n, 5))
    deltas = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=(n, 7))
    args = [jnp.asarray(x, jnp.int32) for x in (b, m, stored, deltas)]
    want = jax.jit(jax.vmap(in_turn))(*args)
    got = jax.jit(jax.vmap(boost_all))(*args)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert 0 < int(np.sum(np.asarray(got[2]))) < n  # both outcomes reached
