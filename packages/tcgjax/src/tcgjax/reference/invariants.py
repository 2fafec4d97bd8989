"""Invariants every reachable state satisfies; ``check`` raises ``InvariantError``."""

from __future__ import annotations

from collections import Counter

from .cards import card_pool
from .engine import legal_actions, max_hp
from .state import (
    CH_NONE,
    EX_TRAINER,
    HAND_LIMIT,
    PH_MAIN,
    PH_OVER,
    PH_SETUP,
    POINTS_TO_WIN,
    GameState,
)

CARDS = card_pool()


class InvariantError(AssertionError):
    pass


def cards_of(st: GameState, p: int) -> list[int]:
    """Every card player ``p`` owns, wherever it is (deck, hand, discard, board, resolving)."""
    pl = st.players[p]
    out = list(pl.deck) + list(pl.hand) + list(pl.discard)
    for pk in pl.board:
        if pk is not None:
            out += pk.stack
            if pk.tool >= 0:
                out.append(pk.tool)
    if st.exec is not None and st.exec.kind == EX_TRAINER and st.exec.player == p:
        out.append(st.exec.card)
    return out


def check(st: GameState) -> None:
    def fail(msg):
        raise InvariantError(f"turn {st.turn}: {msg}")

    for p in (0, 1):
        pl = st.players[p]
        if Counter(cards_of(st, p)) != Counter(pl.deck_cards):
            fail(f"P{p}'s 20 cards not conserved: {sorted(cards_of(st, p))}")
        if len(pl.hand) > HAND_LIMIT:
            fail(f"P{p} hand has {len(pl.hand)} cards")
        if st.phase != PH_OVER and pl.points >= POINTS_TO_WIN:
            fail(f"P{p} has {pl.points} points but the game runs")
        if not 0 <= pl.points <= POINTS_TO_WIN - 1 + 2 * 4:
            fail(f"P{p} points {pl.points}")
        if pl.zone_next not in pl.energy_types and st.turn > 0:
            fail(f"P{p} zone next {pl.zone_next}")
        if pl.zone_current != -1 and pl.zone_current not in pl.energy_types:
            fail(f"P{p} zone current {pl.zone_current}")
        if st.phase not in (PH_SETUP,) and st.turn > 0 and st.phase != PH_OVER:
            if pl.board[0] is None and st.choice == CH_NONE:
                fail(f"P{p} has no Active Pokémon in the main phase")
        for s, pk in enumerate(pl.board):
            if pk is None:
                continue
            c = CARDS[pk.top]
            if c.category != "pokemon" or not CARDS[pk.stack[0]].is_basic:
                fail(f"P{p} slot {s} stack {pk.stack}")
            if pk.damage < 0 or pk.damage % 10:
                fail(f"P{p} slot {s} damage {pk.damage}")
            if st.phase == PH_MAIN and st.exec is None and pk.damage >= max_hp(pk):
                fail(f"P{p} slot {s} at {pk.damage} damage >= {max_hp(pk)} HP not Knocked Out")
            if min(pk.energy) < 0:
                fail(f"P{p} slot {s} energy {pk.energy}")
            if s > 0 and (pk.status or pk.poisoned or pk.burned):
                fail(f"P{p} benched Pokémon with a Special Condition")
    if st.phase != PH_OVER and not legal_actions(st):
        fail("no legal action while the game runs")
