"""``start.new_battle`` against the battle Showdown has after ``start``: every field of both
teams (not only what ``showdown_battle.diff`` compares), the PRNG seed included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import data, legality, reference, showdown_battle, start, teams

FORMAT = reference.FORMAT
_new = jax.jit(start.new_battle)


def tree_mismatches(a, b) -> list[str]:
    """Paths of the leaves where ``a`` and ``b`` differ (value, shape or dtype)."""
    out = []
    flat_b = jax.tree.leaves(b)
    for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], flat_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype or not np.array_equal(x, y):
            out.append(f"{jax.tree_util.keystr(path)}: {x.tolist()} != {y.tolist()}")
    return out


def _check(showdown, sets1, sets2, seed, trace=False, new=_new):
    started = showdown.request("start", format=FORMAT, seed=seed, p1team=teams.pack_team(sets1),
                               p2team=teams.pack_team(sets2), trace=trace)
    showdown.request("close", battle=started["battle"])
    state = started["state"]
    b = new(teams.encode_sets(sets1), teams.encode_sets(sets2), jnp.asarray(seed, jnp.uint32))
    assert showdown_battle.diff(b, state) == []
    assert tree_mismatches(b, showdown_battle.load(state)) == []
    return started


def test_new_battle_equals_showdown_start(showdown):
    ties = 0
    for i in range(40):
        seeds = reference.derive_seeds(7, i)
        s1, s2 = (showdown.request("team", format=FORMAT, seed=seeds[p])["sets"] for p in ("p1", "p2"))
        if i % 4 == 0:  # the same team on both sides: the leads' Speeds tie
            s2 = s1
        started = _check(showdown, s1, s2, seeds["battle"], trace=True)
        tie = started["state"]["sides"][0]["pokemon"][0]["speed"] == \
            started["state"]["sides"][1]["pokemon"][0]["speed"]
        assert len(started["draws"]) == (start.START_TIE_DRAWS if tie else 0), started["draws"]
        ties += tie
    assert 10 <= ties < 40


@pytest.fixture(scope="module")
def sampled():
    """12 teams from the JAX sampler (one compile for the module)."""
    return jax.jit(jax.vmap(teams.sample_team))(jax.random.split(jax.random.PRNGKey(3), 12))


def _team(batch, i):
    return jax.tree.map(lambda x: x[i], batch)


def test_sampled_teams_start_like_showdown(showdown, sampled):
    """Teams from the JAX sampler, played in Showdown: a JAX reset needs no Showdown."""
    for i in range(0, 12, 2):
        _check(showdown, teams.decode_team(_team(sampled, i)), teams.decode_team(_team(sampled, i + 1)),
               [i, 1, 2, 3])


def test_vmapped_new_battle_matches_single(sampled):
    seeds = jnp.asarray(np.random.default_rng(0).integers(0, 0x10000, (6, 4)), jnp.uint32)
    t1, t2 = (jax.tree.map(lambda x, j=j: x[j::2], sampled) for j in (0, 1))
    batch = jax.jit(jax.vmap(start.new_battle))(t1, t2, seeds)
    assert batch.team.hp.shape == (6, 2, 6)
    for i in range(6):
        one = _new(_team(t1, i), _team(t2, i), seeds[i])
        assert tree_mismatches(_team(batch, i), one) == []


def test_max_pp_rule():
    pp = dict(zip(teams.move_ids(), start.max_pp_table().tolist(), strict=True))
    assert pp["bodyslam"] == 24 and pp["submission"] == 40 and pp["tackle"] == 56
    assert pp["thundershock"] == 48 and pp["growl"] == 61  # 30 -> 48, 40 -> 61 (Gens 1-2)


@pytest.mark.parametrize("broken", ["three_tie_draws", "pp_uncapped"])
def test_check_catches_a_wrong_start(showdown, monkeypatch, broken):
    """The same comparison fails for a start that misses a tie draw or the 61-PP cap."""
    if broken == "three_tie_draws":
        monkeypatch.setattr(start, "START_TIE_DRAWS", 3)
    else:
        table = np.array([p + 3 if p == 61 else p for p in start.max_pp_table()], np.int32)
        monkeypatch.setattr(start, "max_pp_table", lambda: table)
    seeds = reference.derive_seeds(7, 0)
    s1 = showdown.request("team", format=FORMAT, seed=seeds["p1"])["sets"]
    moves, legal = data.load()["moves"], data.load()["validation"]["legalMoves"]
    i, forty = next((i, m) for i, s in enumerate(s1) for m in sorted(legal[teams.to_id(s["species"])])
                    if moves[m]["pp"] == 40 and m in legality.engine_moves() and m not in s["moves"])
    s1[i] = {**s1[i], "moves": [*s1[i]["moves"][:3], forty]}  # a 40-PP move it can learn
    with pytest.raises(AssertionError):
        _check(showdown, s1, s1, seeds["battle"], new=jax.jit(lambda *a: start.new_battle(*a)))  # fresh trace
