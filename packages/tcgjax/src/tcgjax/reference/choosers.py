"""Built-in choosers: ``random_chooser`` (seeded, uniform over legal actions) and
``heuristic_chooser`` (fixed priorities, documented in docs/tcgjax.md).

A chooser is ``f(state, legal) -> action``. Choosers never touch the game's RNG counter.
"""

from __future__ import annotations

import random

from . import actions as A
from .cards import card_pool
from .engine import step_at, target_candidates, top
from .state import CH_TARGET, PH_CHOICE, PH_SETUP, GameState

CARDS = card_pool()


def random_chooser(seed: int):
    """Uniform over the legal actions, from its own ``random.Random(seed)``."""
    r = random.Random(seed)

    def choose(st: GameState, legal: list[int]) -> int:
        return legal[r.randrange(len(legal))]

    return choose


def heuristic_chooser(seed: int = 0):
    """Simple greedy rules:

    * setup: place every Basic (the highest-HP one Active);
    * choices: hit the opponent's Pokémon with the least remaining HP; damage to the own Bench
      on the one with the most remaining HP; otherwise (promote, heal, receive energy) the own
      Pokémon with the most damage, then most energy; retreat-discard the first legal type;
    * main phase, first legal in this order: evolve; play a Basic; attach the zone energy to the
      Active (else the first target); play an Item or Supporter; use an ability; attack with the
      highest-damage usable attack; else end the turn. Never retreats. Ties: lowest action index.
    """
    del seed  # deterministic

    def choose(st: GameState, legal: list[int]) -> int:
        p = st.decider
        me = st.players[p]
        if st.phase == PH_SETUP:
            plays = [a for a in legal if a != A.END]
            if not plays:
                return A.END
            if me.board[0] is None:
                return max(plays, key=lambda a: (CARDS[me.hand[a - A.PLAY]].hp, -a))
            return plays[0]
        if st.phase == PH_CHOICE:
            slots = [a - A.CHOOSE for a in legal if A.CHOOSE <= a < A.ENERGY]
            if not slots:
                return legal[0]
            side = st.decider  # promotions: the decider's own board
            if st.choice == CH_TARGET:
                side, _ = target_candidates(st, st.exec, step_at(st.exec, st.exec.addr))
            board = st.players[side].board
            hurting = (
                st.choice == CH_TARGET and step_at(st.exec, st.exec.addr)["op"] == "damage_other"
            )
            if side != p:  # hitting the opponent: least remaining HP
                s = min(slots, key=lambda s: (top(board[s]).hp - board[s].damage, s))
            elif hurting:  # damage to own Bench (Zapdos): the most remaining HP
                s = max(slots, key=lambda s: (top(board[s]).hp - board[s].damage, -s))
            else:
                s = max(slots, key=lambda s: (board[s].damage, sum(board[s].energy), -s))
            return A.CHOOSE + s
        lo = A.HAND_ON
        evol = [a for a in legal if lo <= a < A.ATTACH and CARDS[me.hand[(a - lo) // 4]].stage > 0]
        if evol:
            return evol[0]
        basics = [a for a in legal if A.PLAY <= a < A.HAND_ON and CARDS[me.hand[a - 1]].is_basic]
        if basics:
            return basics[0]
        if A.ATTACH in legal:
            return A.ATTACH
        attach = [a for a in legal if A.ATTACH <= a < A.ABILITY]
        if attach:
            return attach[0]
        trainers = [a for a in legal if A.PLAY <= a < A.HAND_ON]
        if trainers:
            return trainers[0]
        tools = [a for a in legal if A.HAND_ON <= a < A.ATTACH]
        if tools:
            return tools[0]
        abil = [a for a in legal if A.ABILITY <= a < A.ATTACK]
        if abil:
            return abil[0]
        atks = [a for a in legal if A.ATTACK <= a < A.RETREAT]
        if atks:
            act = me.active
            return max(atks, key=lambda a: (top(act).attacks[a - A.ATTACK].damage, a))
        return A.END

    return choose


def play_game(st: GameState, chooser_a, chooser_b, check=None, max_steps: int = 5000):
    """Run a game to the end; ``check(state)`` after every action if given. Returns the state."""
    from .engine import legal_actions, step

    choosers = (chooser_a, chooser_b)
    n = 0
    while not st.done:
        legal = legal_actions(st)
        a = choosers[st.decider](st, legal)
        step(st, a, st.decider)
        n += 1
        if check is not None:
            check(st)
        if n > max_steps:
            raise RuntimeError(f"game did not finish in {max_steps} actions")
    return st
