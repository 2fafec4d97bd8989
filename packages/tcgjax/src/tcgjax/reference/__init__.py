"""tcgjax.reference: the readable pure-Python TCG Pocket engine (RULES.md, EFFECTS.md)."""

from . import actions
from .cards import Card, Deck, DeckError, card_pool, deck_list, get_deck, make_deck
from .engine import IllegalActionError, WrongPlayerError, legal_actions, legal_mask, new_game, step
from .state import GameState

__all__ = [
    "Card",
    "Deck",
    "DeckError",
    "GameState",
    "IllegalActionError",
    "WrongPlayerError",
    "actions",
    "card_pool",
    "deck_list",
    "get_deck",
    "legal_actions",
    "legal_mask",
    "make_deck",
    "new_game",
    "step",
]
