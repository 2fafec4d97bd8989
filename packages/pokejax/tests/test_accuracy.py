"""L1: Gen 1 accuracy (stage table, 1/256 miss, self-target +1) against Showdown's tryMoveHit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import data, prng
from pokejax.accuracy import ALWAYS_HITS, accuracy_check, accuracy_threshold

MOVES = data.load()["moves"]
# moves whose first draw in tryMoveHit is the accuracy roll (no lock-in, no OHKO speed check)
CANDIDATES = sorted(m for m, v in MOVES.items()
                    if not v.get("ohko") and v.get("self", {}).get("volatileStatus") != "lockedmove"
                    and m not in ("struggle", "bide", "counter", "metronome", "mirrormove"))


@pytest.fixture(scope="module")
def cases(showdown, team_sets):
    rng = np.random.default_rng(1)
    pool = team_sets([[3, i, 3, i] for i in range(6)])
    out = []
    while len(out) < 600:
        a, d = rng.choice(len(pool), 2, replace=False)
        move = CANDIDATES[rng.integers(len(CANDIDATES))]
        boosts = {"p1": {"accuracy": int(rng.integers(-6, 7))} if rng.random() < 0.5 else {},
                  "p2": {"evasion": int(rng.integers(-6, 7))} if rng.random() < 0.5 else {}}
        info = MOVES[move]
        if info["accuracy"] is True:
            seed = rng.integers(0, 0x10000, 4).tolist()
        else:
            # land the roll on our threshold or just below it: a threshold off by one flips it
            t = int(accuracy_threshold(info["accuracy"], boosts["p1"].get("accuracy", 0),
                                       boosts["p2"].get("evasion", 0), info["target"] == "self"))
            draw = min(255, max(0, t - int(rng.integers(0, 2))))
            seed = prng.seed_with_first_draw(256, draw, rng)
        res = showdown.request("tryhit", attacker=pool[a], defender=pool[d], move=move, seed=seed,
                               boosts=boosts)
        if not res["immune"]:
            out.append((seed, move, boosts, res))
    return out


def test_hit_or_miss_matches_showdown(cases):
    seeds = jnp.asarray([c[0] for c in cases], jnp.uint32)
    acc = jnp.asarray([ALWAYS_HITS if r["accuracy"] is True else r["accuracy"] for *_, r in cases])
    acc_stage = jnp.asarray([b["p1"].get("accuracy", 0) for _, _, b, _ in cases])
    eva_stage = jnp.asarray([b["p2"].get("evasion", 0) for _, _, b, _ in cases])
    self_target = jnp.asarray([r["target"] == "self" for *_, r in cases])
    check = jax.jit(jax.vmap(lambda s, *a: accuracy_check(prng.from_seed(s), *a)[1]))
    hit = np.asarray(check(seeds, acc, acc_stage, eva_stage, self_target))
    missed = np.array([r["missed"] for *_, r in cases])
    bad = np.flatnonzero(hit == missed)
    assert bad.size == 0, [cases[i][1:] for i in bad[:3]]
    assert missed.sum() > 20 and (~missed).sum() > 20  # both outcomes exercised
