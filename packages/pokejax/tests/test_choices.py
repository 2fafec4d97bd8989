"""The legal mask equals what Showdown accepts, over whole random battles."""

import numpy as np

from pokejax import choices, reference

ALL = [choices.choice_string(a) for a in range(choices.NUM_ACTIONS)]


def test_choice_strings():
    assert ALL == ["move 1", "move 2", "move 3", "move 4",
                   "switch 2", "switch 3", "switch 4", "switch 5", "switch 6"]


def test_mask_equals_showdown_acceptance(showdown):
    """At every decision of 6 random battles, action a is in our mask iff Showdown accepts it."""
    checked = 0
    for index in range(6):
        seeds = reference.derive_seeds(11, index)
        p1 = showdown.request("team", format=reference.FORMAT, seed=seeds["p1"])["packed"]
        p2 = showdown.request("team", format=reference.FORMAT, seed=seeds["p2"])["packed"]
        started = showdown.request("start", format=reference.FORMAT, seed=seeds["battle"],
                                   p1team=p1, p2team=p2)
        battle, state = started["battle"], started["state"]
        rng = np.random.default_rng(index)
        while not state["ended"] and state["turn"] < 300:
            accepted = showdown.request("accepts", battle=battle, choices=ALL)
            picks = []
            for side, key in zip(state["sides"], ("p1", "p2"), strict=True):
                mask = choices.legal_mask(side["request"])
                np.testing.assert_array_equal(mask, np.array(accepted[key]),
                                              err_msg=f"turn {state['turn']} {key}: {side['request']}")
                checked += 1
                picks.append(reference.choose_random(rng, side["request"]))
            res = showdown.request("choose", battle=battle,
                                   **{k: None if a is None else choices.choice_string(a)
                                      for k, a in zip(("p1", "p2"), picks, strict=True)})
            assert res["accepted"], res["error"]
            state = res["state"]
        showdown.request("close", battle=battle)
    assert checked > 100


def test_random_battles_finish(showdown):
    records = [reference.play_random_battle(showdown, reference.derive_seeds(3, i), chooser_seed=i)
               for i in range(5)]
    for rec in records:
        assert rec.winner in ("p1", "p2", "")
        assert len(rec.states) == len(rec.actions) + 1
    assert sum(bool(r.winner) for r in records) >= 4


def test_same_seeds_same_battle(showdown):
    a = reference.play_random_battle(showdown, reference.derive_seeds(5, 0), chooser_seed=1)
    b = reference.play_random_battle(showdown, reference.derive_seeds(5, 0), chooser_seed=1)
    assert a.actions == b.actions and a.states[-1] == b.states[-1]
