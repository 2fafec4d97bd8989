"""Pins the draw structure of a Gen 1 turn with a speed tie (see docs/pokejax.md): the
engine must make these draws, including the ones with no game meaning."""

from pokejax import teams


def callers(draws):
    """(function that drew, its caller) per draw."""
    return [(d["sites"][0].split(" (")[0], d["sites"][1].split(" (")[0]) for d in draws]


def test_speed_tie_turn_draws(showdown):
    sets = showdown.request("team", format="gen1randombattle", seed=[1, 2, 3, 4])["sets"]
    a, b = dict(sets[0], moves=["tackle"]), dict(sets[0], moves=["tackle"])  # same mon: same Speed
    started = showdown.request("start", format="gen1randombattle", seed=[9, 9, 9, 9],
                               p1team=teams.pack_team([a]), p2team=teams.pack_team([b]), trace=True)
    res = showdown.request("choose", battle=started["battle"], p1="move 1", p2="move 1")
    got = callers(res["draws"])
    tie = ("Battle.speedSort", "Battle.eachEvent")
    move = [("Battle.randomChance", "BattleActions.tryMoveHit"),
            ("Battle.randomChance", "BattleActions.getDamage"),
            ("Battle.random", "BattleActions.getDamage")]
    expected = ([("Battle.speedSort", "BattleQueue.sort"), tie, tie] + move + [tie] + move + [tie]
                + [tie])  # the residual action's Update: Speeds still tie (Tackle has no effect)
    assert got == expected, got
