"""Greedy vs random on both engines (the L4 suite's evaluators, ``pokejax.match``).

* the driver's greedy (driver.js ``greedyScores``) is the JAX heuristic: same float32 scores
  and the same choice at every decision of whole Showdown battles;
* ``match`` on both backends: one score in {0, 0.5, 1} per battle, deterministic per seed;
* L4 (``envport.verify.l4``) catches a planted difference (the candidate's greedy replaced by
  the random player) and finds the real pair close.
"""

import jax
import numpy as np
import pytest

from pokejax import backends, battle, choices, codec, match, opponents, reference, showdown_battle

FORMAT = reference.FORMAT
BATCH = 100  # the one JAX batch size of this module (one compile)
BATTLES = 40  # at least this many battles in the greedy comparison
_scores = jax.jit(opponents.expected_damage, static_argnums=1)
_greedy = jax.jit(opponents.greedy_policy, static_argnums=2)


@pytest.fixture(scope="module")
def sd(showdown):
    match.load_greedy(showdown)
    return showdown


def _random_action(rng, request):
    mask = choices.legal_mask(request)
    return int(rng.choice(np.flatnonzero(mask))) if mask.any() else -1


_FIXED = {codec.MOVES.index(m) for m in ("seismictoss", "nightshade", "superfang", "dragonrage", "sonicboom")}


def _count(quirks: dict, b, side: int, scores: np.ndarray) -> None:
    """What a compared decision exercised (printed: the coverage of the comparison)."""
    me, foe = (jax.tree.map(lambda x, s=s: np.asarray(x)[s, 0], b.team) for s in (side, 1 - side))
    quirks["negative"] += bool((scores < 0).any())  # Super Fang's -3 x accuracy
    quirks["fixed"] += bool(set(me.moves.tolist()) & _FIXED)
    quirks["ties"] += len(set(scores.tolist())) < int((me.moves >= 0).sum())
    quirks["transformed"] += bool(me.transformed or foe.transformed)
    quirks["one_type_foe"] += int(foe.types[1]) == -1
    quirks["boosted"] += bool(me.boosts.any() or foe.boosts.any())


def test_driver_greedy_is_the_jax_greedy(sd):
    """At every decision of whole battles (p1 plays the driver's greedy in even battles, both
    sides random in odd ones), for each side with a choice: the driver's scores equal
    ``expected_damage`` bit for bit and its choice is ``greedy_policy``'s; when no move is
    legal, JAX's switch is one of the driver's legal switches."""
    rng = np.random.default_rng(3)
    key = jax.random.PRNGKey(3)
    compared = forced = 0
    quirks = dict.fromkeys(("negative", "fixed", "ties", "transformed", "one_type_foe", "boosted"), 0)
    i = 0
    while compared < 300 or i < BATTLES:
        seeds = reference.derive_seeds(77, i)
        sets = [sd.request("team", format=FORMAT, seed=seeds[p])["packed"] for p in ("p1", "p2")]
        started = sd.request("start", format=FORMAT, seed=seeds["battle"], p1team=sets[0], p2team=sets[1])
        handle, state = started["battle"], started["state"]
        while not state["ended"] and state["turn"] < 200:
            b = showdown_battle.load(state)
            acts = []
            for s, p in enumerate(("p1", "p2")):
                d = sd.request("greedy", battle=handle, side=p)
                key, k = jax.random.split(key)
                mine = int(_greedy(k, b, s))
                where = f"battle {i} turn {state['turn']} {p}: driver {d}, jax {mine}"
                if d["action"] == -1:
                    assert mine == -1, where
                elif d["action"] is None:
                    assert mine in d["switches"], where
                    forced += 1
                else:
                    jax_scores = np.asarray(_scores(b, s))
                    js_scores = np.asarray(d["scores"], np.float32)
                    assert np.array_equal(js_scores, jax_scores), f"{where}: scores {js_scores} != {jax_scores}"
                    assert mine == d["action"], where
                    compared += 1
                    _count(quirks, b, s, js_scores)
                if i % 2 == 0 and s == 0 and d["action"] != -1:
                    acts.append(d["action"] if d["action"] is not None
                                else int(rng.choice(d["switches"])))
                else:
                    acts.append(_random_action(rng, state["sides"][s]["request"]))
            res = sd.request("choose", battle=handle, **backends.choose_args(acts))
            assert res["accepted"], res
            state = res["state"]
        sd.request("close", battle=handle)
        i += 1
    print(dict(battles=i, compared=compared, forced_switches=forced, **quirks))
    assert compared >= 300 and forced > 5
    assert quirks["negative"] and quirks["transformed"] and quirks["fixed"] and quirks["boosted"]


def test_match_on_both_backends(sd):
    n = BATCH
    ticks = []
    a = match.showdown_match(n, 5, ticks.append, chunk=40, sd=sd)
    b = match.showdown_match(n, 5, chunk=40, sd=sd)
    assert ticks == [40, 40, 20]
    for r in (a, b):
        assert r.scores.dtype == np.float64 and r.scores.shape == (n,) and r.turns.shape == (n,)
        assert set(np.unique(r.scores)) <= {0.0, 0.5, 1.0}
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.turns, b.turns)
    assert not np.array_equal(a.turns, match.showdown_match(n, 6, chunk=40, sd=sd).turns)

    ticks = []
    c = match.jax_match(n, 5, ticks.append, batch=BATCH)
    d = match.jax_match(n, 5, batch=BATCH)
    assert ticks == [n]
    for r in (c, d):
        assert r.scores.dtype == np.float64 and r.scores.shape == (n,) and r.turns.shape == (n,)
        assert set(np.unique(r.scores)) <= {0.0, 0.5, 1.0}
    assert np.array_equal(c.scores, d.scores) and np.array_equal(c.turns, d.turns)
    assert not np.array_equal(c.turns, match.jax_match(n, 6, batch=BATCH).turns)
    assert (c.turns >= 1).all() and (c.turns <= battle.TURN_LIMIT + 1).all()


def test_an_unfinished_battle_is_an_error_not_a_tie(sd):
    """With a decision bound too small for a battle to end, both sides refuse to score it."""
    with pytest.raises(match.UnfinishedBattle, match=r"showdown: 4 battle\(s\) did not end within"):
        match.showdown_match(4, 5, chunk=4, max_decisions=2, sd=sd)
    with pytest.raises(match.UnfinishedBattle, match=r"jax: 4 battle\(s\) did not end"):
        match.jax_match(4, 5, batch=4, max_decisions=2)


def _suite(sd, candidate_policy: str):
    from envport.registry import L4Suite

    return L4Suite(
        name=f"greedy vs random ({candidate_policy} on the candidate)",
        evaluate_reference=lambda n, seed, progress: match.showdown_match(n, seed, progress, sd=sd).scores,
        evaluate_candidate=lambda n, seed, progress: match.jax_match(
            n, seed, progress, batch=BATCH, policy=candidate_policy).scores,
        metric="greedy's result", episodes=300, margin=0.02)


def test_l4_catches_a_planted_difference(sd):
    l4 = pytest.importorskip("envport.verify.l4")
    planted = l4.run_l4(_suite(sd, "random"))
    print(planted.test)
    # random vs random scores about 0.5 against greedy's ~0.99: far outside the margin
    assert not planted.test.equivalent
    assert planted.test.difference < -0.3 and planted.test.ci[1] < -0.02

    real = l4.run_l4(_suite(sd, "greedy"))
    print(real.test)
    # 300 battles a side (se ~0.01 at greedy's ~0.99): too few to claim equivalence within
    # 0.02, enough to see that the real pair is nowhere near the planted gap
    assert abs(real.test.difference) < 0.05
