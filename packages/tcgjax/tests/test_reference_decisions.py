"""The decisions D1-D11 of docs/tcgjax.md (where the spec is silent), one test each where the
draw-order and rule tests do not already cover them."""

from tcgjax_scenarios import cid, reseal, scenario
from test_reference_draw_order import Draws

from tcgjax.reference import actions as A
from tcgjax.reference import card_pool, deck_list, legal_actions, new_game, step
from tcgjax.reference.engine import op_add_effect, op_discard_energy
from tcgjax.reference.invariants import check
from tcgjax.reference.state import EX_ATTACK, PH_OVER, PH_SETUP, Exec

DECKS = deck_list()
CARDS = card_pool()


def do(st, a):
    reseal(st)
    step(st, a, st.decider)
    check(st)


def test_d4_setup_ends_by_itself_when_the_bench_is_full():
    st = new_game(DECKS[0], DECKS[1], 3)
    p = st.decider
    pl = st.players[p]
    cards = pl.hand + pl.deck  # rearranged (same multiset): 4 Basics in the opening hand
    basics = [i for i, c in enumerate(cards) if CARDS[c].is_basic][:4]
    assert len(basics) == 4
    rest = [c for i, c in enumerate(cards) if i not in basics]
    pl.hand, pl.deck = [cards[i] for i in basics] + rest[:1], rest[1:]
    for _ in range(4):
        assert st.decider == p
        do(st, [a for a in legal_actions(st) if a != A.END][0])
    assert pl.setup_done and all(pl.board) and st.decider == 1 - p and st.phase == PH_SETUP


def test_d6_knock_out_discard_order_basic_up_then_tool():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2}}],
        opp=[{"names": ["Ralts", "Kirlia"], "tool": "Giant Cape", "damage": 60}, "Ralts"],
    )
    do(st, A.ATTACK)
    assert st.players[1].discard == [cid("Ralts"), cid("Kirlia"), cid("Giant Cape")]


def test_d7_discard_any_with_a_count_lowest_type_first():
    st = scenario(me=[{"names": ["Mewtwo ex"], "energy": {"fire": 1, "psychic": 2}}], opp=["Ralts"])
    ex = Exec(EX_ATTACK, 0, st.players[0].active.top, holder_uid=st.players[0].active.uid)
    op_discard_energy(st, ex, {"op": "discard_energy", "energy": "any", "count": 2}, None, None)
    assert st.players[0].active.energy[1] == 0 and st.players[0].active.energy[4] == 1


def test_d8_red_card_hand_under_the_deck_then_shuffle():
    st = scenario(me=["Mewtwo ex"], opp=["Ralts"], hand=["Red Card"], opp_hand=["Potion", "Blue"])
    opp = st.players[1]
    expected = list(opp.deck) + list(opp.hand)
    d = Draws(st.seed)
    d.c = st.counter
    d.shuffle(expected)
    do(st, A.play(0))
    assert opp.hand == expected[:3] and opp.deck == expected[3:]


def test_d9_effect_on_a_defending_pokemon_that_left_the_active_spot_is_not_attached():
    st = scenario(me=["Mewtwo ex"], opp=["Ralts", "Ralts"])
    defending = st.players[1].board[0]
    ex = Exec(EX_ATTACK, 0, st.players[0].active.top, defending_uid=defending.uid)
    st.players[1].board[0], st.players[1].board[1] = st.players[1].board[1], defending
    step_ = {
        "op": "add_effect",
        "target": "defending",
        "kind": "cannot_attack",
        "duration": "opponent_next_turn",
    }
    op_add_effect(st, ex, step_, None, None)
    assert defending.effects == []
    st.players[1].board[0], st.players[1].board[1] = defending, st.players[1].board[0]
    op_add_effect(st, ex, step_, None, None)
    assert len(defending.effects) == 1


def test_d10_points_can_pass_three_when_the_game_ends():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2}}],
        opp=[{"names": ["Pikachu ex"], "damage": 100}, "Ralts"],
    )
    st.players[0].points = 2
    do(st, A.ATTACK)
    assert st.phase == PH_OVER and st.winner == 0 and st.players[0].points == 4
