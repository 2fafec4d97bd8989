"""L1: Gen 1 stat stages (modified stats, 999 cap, the 999/1 quirk) against Showdown."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax.boosts import BOOSTS, CHANGED, NO_EFFECT, UNCHANGED, boost_by

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
