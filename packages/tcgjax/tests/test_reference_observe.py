"""§18 information: what ``observe`` shows and hides."""

import copy

import numpy as np
import pytest
from tcgjax_scenarios import cid, scenario

from tcgjax.reference import deck_list, legal_actions, new_game, step
from tcgjax.reference.observe import observe

DECKS = deck_list()


def _same(a, b):
    assert a.keys() == b.keys()
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_18_2_opponent_hand_deck_order_and_seed_are_hidden():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], hand=["Potion"], opp_hand=["Sabrina"])
    other = copy.deepcopy(st)
    other.players[1].hand = [cid("Giovanni")]
    other.players[0].deck = list(reversed(other.players[0].deck))
    other.players[1].deck = list(reversed(other.players[1].deck))
    other.seed, other.counter = st.seed + 1, st.counter + 5
    assert _same(observe(st, 0), observe(other, 0))
    assert not _same(observe(st, 1), observe(other, 1))  # P1 sees its own hand


def test_18_1_public_information_is_shown():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], hand=["Potion"], opp_hand=["Sabrina"])
    o = observe(st, 0)
    assert o["own_hand"][0] == cid("Potion") and o["hand_n"].tolist() == [1, 1]
    assert o["pk_stack"][1, 0, 0] == cid("Pikachu ex")  # the opponent's board
    assert o["current_is_me"] and o["decider_is_me"]
    o1 = observe(st, 1)
    assert o1["own_hand"][0] == cid("Sabrina") and o1["pk_stack"][0, 0, 0] == cid("Pikachu ex")


def test_5_4_setup_placement_hidden_until_both_placed():
    st = new_game(DECKS[0], DECKS[1], 5)
    p = st.decider
    before = observe(st, 1 - p)
    step(st, legal_actions(st)[0])
    assert _same(before, observe(st, 1 - p))
    assert observe(st, p)["pk_present"][0, 0]


def test_observe_bad_player():
    st = new_game(DECKS[0], DECKS[1], 5)
    with pytest.raises(ValueError, match="player"):
        observe(st, 2)
