"""L1: Gen 1 BeforeMove (frz, slp, partial trapping, flinch, recharge, confusion, par)
against Showdown's runEvent('BeforeMove'), draws included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import prng
from pokejax.before_move import Mover, before_move
from pokejax.codec import STATUSES


@pytest.fixture(scope="module")
def cases(showdown, team_sets):
    rng = np.random.default_rng(4)
    pool = team_sets([[i, 4, 4, 4] for i in range(3)])
    out = []
    for _ in range(300):
        a, d = rng.choice(len(pool), 2, replace=False)
        status = str(rng.choice(["", "", "par", "par", "slp", "frz"]))
        vols = {}
        if rng.random() < 0.4:
            vols["confusion"] = {"time": int(rng.integers(1, 5))}
        for name in ("flinch", "mustrecharge", "partiallytrapped"):
            if rng.random() < 0.1:
                vols[name] = {}
        modified = {"atk": int(rng.integers(5, 999)), "def": int(rng.integers(5, 999))}
        seed = rng.integers(0, 0x10000, 4).tolist()
        if rng.random() < 0.5:  # land the first draw on a threshold edge
            edge = 63 if "confusion" not in vols else 128
            seed = prng.seed_with_first_draw(256, edge - int(rng.integers(0, 2)), rng)
        sleep_time = int(rng.integers(1, 4)) if status == "slp" else 0
        res = showdown.request("beforemove", attacker=pool[a], defender=pool[d], move="tackle",
                               seed=seed, status=status, statusTime=sleep_time or None,
                               volatiles=vols, modified=modified)
        out.append((seed, status, sleep_time, vols, modified, pool[a]["level"], res))
    return out


def test_before_move_matches_showdown(cases):
    run = jax.jit(lambda s, m: before_move(prng.from_seed(s), m))
    outcomes = set()
    for seed, status, sleep_time, vols, modified, level, res in cases:
        mover = Mover(
            status=jnp.int32(STATUSES.index(status)), sleep_time=jnp.int32(sleep_time),
            confused=jnp.bool_("confusion" in vols),
            confusion_time=jnp.int32(vols.get("confusion", {}).get("time", 0)),
            flinched=jnp.bool_("flinch" in vols), must_recharge=jnp.bool_("mustrecharge" in vols),
            partially_trapped=jnp.bool_("partiallytrapped" in vols), level=jnp.int32(level),
            attack=jnp.int32(modified["atk"]), defense=jnp.int32(modified["def"]))
        state, out = run(jnp.asarray(seed, jnp.uint32), mover)
        ctx = (status, vols, res)
        assert bool(out.can_move) == res["canMove"], ctx
        assert ",".join(str(int(x)) for x in prng.to_seed(state)) == res["seed"], ctx
        # directDamage takes at least 1 and at most the HP left
        expected = min(max(int(out.self_hit_damage), 1), res["hpBefore"]) if out.self_hit else 0
        assert expected == res["hpLost"], ctx
        assert bool(out.mover.confused) == ("confusion" in res["volatiles"]), ctx
        if "confusion" in res["volatiles"]:
            assert int(out.mover.confusion_time) == res["volatiles"]["confusion"]["time"], ctx
        assert bool(out.mover.must_recharge) == ("mustrecharge" in res["volatiles"]), ctx
        if status == "slp":
            assert int(out.mover.sleep_time) == res["statusTime"], ctx
        outcomes.add((res["canMove"], res["hpLost"] > 0))
    assert outcomes == {(True, False), (False, False), (False, True)}
