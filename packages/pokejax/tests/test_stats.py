"""Gen 1 stat formula against the stats Showdown computes for real random-battle sets."""

import numpy as np

from pokejax import data
from pokejax.stats import STAT_ORDER, compute_stats


def test_stats_equal_showdown(showdown):
    species = data.load()["species"]
    base, ivs, evs, level, expected = [], [], [], [], []
    for i in range(20):
        p1 = showdown.request("team", format="gen1randombattle", seed=[i, 3, 5, 7])
        p2 = showdown.request("team", format="gen1randombattle", seed=[7, 5, 3, i])
        started = showdown.request("start", format="gen1randombattle", seed=[1, 1, 1, i],
                                   p1team=p1["packed"], p2team=p2["packed"])
        for sets, side in zip((p1["sets"], p2["sets"]), started["state"]["sides"], strict=True):
            by_species = {m["species"]: m for m in side["pokemon"]}
            for s in sets:
                mon = by_species[data_id(s["species"])]
                base.append([species[mon["species"]]["baseStats"][k] for k in STAT_ORDER])
                ivs.append([s["ivs"][k] for k in STAT_ORDER])
                evs.append([s["evs"][k] for k in STAT_ORDER])
                level.append(s["level"])
                expected.append([mon["maxhp"]] + [mon["storedStats"][k] for k in STAT_ORDER[1:]])
    got = np.asarray(compute_stats(np.array(base), np.array(ivs), np.array(evs), np.array(level)))
    np.testing.assert_array_equal(got, np.array(expected))
    assert len(expected) == 240 and len({tuple(i) for i in ivs}) > 1  # DVs vary across sets


def data_id(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())
