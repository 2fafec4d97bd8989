"""RULES §3 deck construction and the spec folder itself (validate.py)."""

import json
import subprocess
import sys
from importlib import resources

import pytest

from tcgjax.reference import DeckError, card_pool, deck_list, make_deck

SPEC = resources.files("tcgjax").joinpath("spec")
LEGAL = deck_list()[0]


def _legal_cards():
    return json.loads(SPEC.joinpath("decks.json").read_text())["decks"][0]["cards"]


def test_validate_py_passes_on_the_spec_folder():
    """README: validate.py exits 0 on the spec folder shipped with the package."""
    out = subprocess.run(
        [sys.executable, str(SPEC.joinpath("validate.py")), str(SPEC)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK: all checks passed" in out.stdout


def test_card_pool_counts():
    cats = [c.category for c in card_pool().cards]
    assert (cats.count("pokemon"), cats.count("item"), cats.count("supporter")) == (95, 6, 11)
    assert cats.count("tool") == 2


def test_every_deck_of_decks_json_is_accepted():
    """§3.5: the 15 decks are legal."""
    decks = deck_list()
    assert len(decks) == 15
    assert all(len(d.cards) == 20 for d in decks)


def test_3_1_nineteen_cards_refused():
    cards = dict(_legal_cards())
    k = next(k for k, v in cards.items() if v == 2)
    cards[k] = 1
    with pytest.raises(DeckError, match=r"§3\.1.*19"):
        make_deck(cards, ["psychic"])


def test_3_1_twenty_one_cards_refused():
    cards = dict(_legal_cards())
    k = next(k for k, v in cards.items() if v == 1)
    cards[k] = 2
    with pytest.raises(DeckError, match=r"§3\.1.*21"):
        make_deck(cards, ["psychic"])


def test_3_2_three_copies_of_a_name_refused():
    cards = dict(_legal_cards())
    two = [k for k, v in cards.items() if v == 2]
    cards[two[0]] = 3
    cards[two[1]] = 1
    with pytest.raises(DeckError, match=r"§3\.2.*3"):
        make_deck(cards, ["psychic"])


def test_3_3_no_basic_refused():
    cards = {"A1-002": 2, "P-A-005": 2, "P-A-007": 2, "P-A-001": 2, "P-A-002": 2, "A1-225": 2}
    cards |= {"A1-223": 2, "A1-219": 2, "P-A-003": 2, "P-A-004": 2}
    with pytest.raises(DeckError, match=r"§3\.3"):
        make_deck(cards, ["grass"])


def test_unknown_card_id_refused():
    cards = dict(_legal_cards())
    cards["ZZ-999"] = cards.pop(next(iter(cards)))
    with pytest.raises(DeckError, match="unknown card id 'ZZ-999'"):
        make_deck(cards, ["psychic"])


@pytest.mark.parametrize(
    "types,pattern",
    [
        (["dragon"], "dragon"),
        (["colorless"], "colorless"),
        (["plasma"], "plasma"),
        ([], "1 to 3"),
        (["fire", "water", "grass", "metal"], "1 to 3"),
        (["fire", "fire"], "distinct"),
    ],
)
def test_3_4_energy_types_refused(types, pattern):
    with pytest.raises(DeckError, match=r"§3\.4.*" + pattern):
        make_deck(_legal_cards(), types)


def test_bad_count_refused():
    cards = dict(_legal_cards())
    cards[next(iter(cards))] = "2"
    with pytest.raises(DeckError, match="positive integer"):
        make_deck(cards, ["psychic"])
