"""L1: a standard damaging move's hit (damage + secondary status / confusion / flinch / stat
drop, the SetStatus shuffle draw, the par/brn quirk) against Showdown's moveHit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_damage import to_inputs

from pokejax import data, prng
from pokejax.boosts import BOOSTS
from pokejax.codec import STATUSES, TYPES
from pokejax.damage import DamageInputs
from pokejax.secondary import Target, move_hit, secondary_of

MOVES = data.load()["moves"]
# standard-path damaging moves with a secondary, no self effect, single hit
WITH_SECONDARY = sorted(m for m, v in MOVES.items()
                        if v.get("secondary") and v["category"] != "Status" and v.get("basePower")
                        and not v.get("self") and not v.get("multihit"))
STATS = BOOSTS[:5]


@pytest.fixture(scope="module")
def cases(showdown, team_sets):
    rng = np.random.default_rng(6)
    pool = team_sets([[i, 6, 6, 6] for i in range(6)])
    out = []
    for _ in range(500):
        a, d = rng.choice(len(pool), 2, replace=False)
        move = WITH_SECONDARY[rng.integers(len(WITH_SECONDARY))]
        target = {}
        if rng.random() < 0.3:
            target["status"] = str(rng.choice(["par", "brn", "slp", "psn"]))
        if rng.random() < 0.3:
            target["boosts"] = {k: int(rng.integers(-6, 7)) for k in BOOSTS}
        if rng.random() < 0.2:
            target["hp"] = int(rng.integers(1, 30))  # faints: no secondary
        seed = rng.integers(0, 0x10000, 4).tolist()
        if rng.random() < 0.5:  # land the secondary's roll (3rd draw: crit, damage, chance) on its edge
            sec = MOVES[move]["secondary"]
            edge = -(-sec["chance"] * 256 // 100) - (sec.get("volatileStatus") == "confusion")
            seed = prng.seed_with_draw_at(2, 256, edge - int(rng.integers(0, 2)), rng)
        res = showdown.request("movehit", attacker=pool[a], defender=pool[d], move=move,
                               seed=seed, target=target)
        if res["damage"] is not False:  # type immunity is decided before moveHit's damage
            out.append((seed, move, res))
    return out


def test_move_hit_matches_showdown(cases):
    run = jax.jit(lambda s, x, mt, sec, t: move_hit(prng.from_seed(s), x, mt, sec, t))
    kinds = set()
    for seed, move, res in cases:
        before = res["before"]
        t = Target(
            hp=jnp.int32(before["hp"]), status=jnp.int32(STATUSES.index(before["status"])),
            types=jnp.asarray([TYPES.index(x) for x in res["types"]] + [-1] * (2 - len(res["types"]))),
            boosts=jnp.asarray([before["boosts"][k] for k in BOOSTS]),
            modified=jnp.asarray([before["modified"][k] for k in STATS]),
            stored=jnp.asarray([res["stored"][k] for k in STATS]),
            confused=jnp.bool_(False), confusion_time=jnp.int32(0), flinched=jnp.bool_(False),
            must_recharge=jnp.bool_(False))
        # the damage inputs as test_damage builds them, from the target's state before the hit
        x = DamageInputs(*(jnp.asarray(v) for v in to_inputs({"p1": []}, {**res, "defender": {
            "modified": before["modified"], "base": res["defenderBase"], "types": res["types"],
            "volatiles": []}})))
        state, after, dmg = run(jnp.asarray(seed, jnp.uint32), x,
                                jnp.int32(TYPES.index(res["move"]["type"])), secondary_of(move), t)
        ctx = (move, before, res["draws"])
        assert ",".join(str(int(w)) for w in prng.to_seed(state)) == res["seed"], ctx
        assert int(after.hp) == res["hp"], ctx
        assert STATUSES[int(after.status)] == res["status"], ctx
        assert [int(v) for v in after.boosts] == [res["boosts"][k] for k in BOOSTS], ctx
        assert [int(v) for v in after.modified] == [res["modified"][k] for k in STATS], ctx
        assert bool(after.confused) == ("confusion" in res["volatiles"]), ctx
        if after.confused:
            assert int(after.confusion_time) == res["volatiles"]["confusion"]["time"], ctx
        assert bool(after.flinched) == ("flinch" in res["volatiles"]), ctx
        kinds.add(len(res["draws"]))
    assert {2, 3, 4} <= kinds  # no secondary roll, roll missed/effect w/o draw, effect with a draw

