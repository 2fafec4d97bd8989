"""Every state of real random battles fits the fixed layout, and the layout is faithful."""

import copy

import numpy as np
import pytest

from pokejax import codec, reference


@pytest.fixture(scope="module")
def battles(showdown):
    return [reference.play_random_battle(showdown, reference.derive_seeds(21, i), chooser_seed=i)
            for i in range(12)]


def test_all_states_encode(battles):
    n = 0
    for rec in battles:
        for state in rec.states:
            arrays = codec.encode(state)
            n += 1
            assert arrays.hp.shape == (2, 6) and arrays.volatile_fields.shape[:3] == (2, 6, len(codec.VOLATILES))
            assert (arrays.hp <= arrays.maxhp).all() and (arrays.hp >= 0).all()
            assert arrays.active.sum(axis=1).max() <= 1
            assert ",".join(str(int(x)) for x in arrays.seed) == state["seed"]
    assert n > 200


def test_encoding_is_faithful(battles):
    """Spot-check values against the JSON (decoding by table lookup)."""
    state = battles[0].states[-1]
    arrays = codec.encode(state)
    for s, side in enumerate(state["sides"]):
        for i, mon in enumerate(side["pokemon"]):
            assert codec.SPECIES[arrays.species[s, i]] == mon["species"]
            assert codec.STATUSES[arrays.status[s, i]] == mon["status"]
            assert [codec.MOVES[m] for m in arrays.moves[s, i] if m >= 0] == [m["id"] for m in mon["moves"]]
            assert list(arrays.pp[s, i][: len(mon["moves"])]) == [m["pp"] for m in mon["moves"]]
    assert arrays.winner == {"": 0, "p1": 1, "p2": 2}[state["winner"]]


def test_different_turns_differ(battles):
    rec = battles[0]
    a, b = codec.canonical(codec.encode(rec.states[0])), codec.canonical(codec.encode(rec.states[1]))
    assert any(not np.array_equal(a[k], b[k]) for k in a)


def test_unknown_volatile_is_an_error(battles):
    state = copy.deepcopy(battles[0].states[0])
    state["sides"][0]["pokemon"][0]["volatiles"] = {"dynamax": {}}
    with pytest.raises(codec.UnknownStateError, match="dynamax"):
        codec.encode(state)


@pytest.mark.slow
def test_many_battles_fit_the_layout(showdown):
    n = 0
    for i in range(200):
        rec = reference.play_random_battle(showdown, reference.derive_seeds(99, i), chooser_seed=i)
        for state in rec.states:
            codec.encode(state)
            n += 1
    assert n > 5000
