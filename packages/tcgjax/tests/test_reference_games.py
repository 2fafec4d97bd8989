"""Whole games over the 15 x 15 deck pairings with the invariants checked after every action."""

import pytest

from tcgjax.reference import deck_list, legal_actions, new_game
from tcgjax.reference.choosers import heuristic_chooser, play_game, random_chooser
from tcgjax.reference.invariants import check
from tcgjax.reference.state import TIE, TURN_LIMIT

DECKS = deck_list()


def _pairing_games(seed_base, chooser_a, chooser_b):
    results = []
    for a in range(15):
        for b in range(15):
            st = new_game(DECKS[a], DECKS[b], seed_base + 15 * a + b, log_enabled=False)
            play_game(st, chooser_a(a * 15 + b), chooser_b(b * 15 + a + 1), check=check)
            assert st.done and not legal_actions(st)
            assert st.turn <= TURN_LIMIT
            results.append(st.winner)
    return results


def test_random_games_all_pairings_finish_with_invariants():
    """§15: every game ends (win, loss or the §15.2 tie); invariants hold after every action."""
    results = _pairing_games(0, random_chooser, random_chooser)
    assert len(results) == 225 and set(results) <= {0, 1, TIE}


def test_heuristic_beats_random():
    results = _pairing_games(10_000, lambda s: heuristic_chooser(), random_chooser)
    assert results.count(0) > 0.8 * len(results)


def test_heuristic_mirror_all_pairings():
    results = _pairing_games(20_000, lambda s: heuristic_chooser(), lambda s: heuristic_chooser())
    assert results.count(TIE) < len(results) // 2


def test_same_seed_same_game():
    """§17.4: the game is a function of the seed and the choices."""
    logs = []
    for _ in range(2):
        st = new_game(DECKS[3], DECKS[7], 1234)
        play_game(st, random_chooser(1), random_chooser(2))
        logs.append(st.log)
    assert logs[0] == logs[1]


@pytest.mark.slow
def test_many_random_games_slow():
    for rep in range(8):
        _pairing_games(100_000 * (rep + 1), random_chooser, random_chooser)


def test_play_cli_prints_a_log(capsys):
    from tcgjax.reference.play import main

    assert main(["--deck-a", "8", "--deck-b", "koga_weezing", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "[t0] setup:" in out and "result:" in out
