"""The documented draw order (docs/tcgjax.md "RNG and draw order"), re-derived from ``raw_u32``
alone, so the docs, the reference and (next) the JAX engine agree on every draw."""

import hashlib

import numpy as np

from tcgjax.reference import card_pool, deck_list, legal_actions, new_game, step
from tcgjax.reference.arrays import to_arrays
from tcgjax.reference.choosers import random_chooser
from tcgjax.reference.rng import raw_u32

CARDS = card_pool()
DECKS = deck_list()


class Draws:
    """Documented mappings, written independently of ``rng.Rng``."""

    def __init__(self, seed):
        self.seed, self.c = seed, 0

    def u(self):
        x = raw_u32(self.seed, self.c)
        self.c += 1
        return x

    def uniform(self, n):
        while True:
            m = self.u() * n
            if (m & 0xFFFFFFFF) >= (2**32 - n) % n:
                return m >> 32

    def shuffle(self, xs):
        for i in range(len(xs) - 1, 0, -1):
            j = self.uniform(i + 1)
            xs[i], xs[j] = xs[j], xs[i]


def test_setup_draw_order_matches_the_docs():
    for seed in range(60):
        a, b = DECKS[seed % 15], DECKS[(seed * 4 + 1) % 15]
        d = Draws(seed)
        first = 0 if d.u() >> 31 else 1
        hands = []
        for deck in (a, b):
            cards = list(deck.cards)  # ascending card index (D2)
            while True:
                d.shuffle(cards)
                if any(CARDS[c].is_basic for c in cards[:5]):
                    break
            hands.append(cards)
        nxt = [deck.energy_types[d.uniform(len(deck.energy_types))] for deck in (a, b)]
        st = new_game(a, b, seed)
        assert st.first_player == first
        for p in (0, 1):
            assert st.players[p].hand == hands[p][:5] and st.players[p].deck == hands[p][5:]
            assert st.players[p].zone_next == nxt[p]
        assert st.counter == d.c


def test_turn_two_energy_draw():
    st = new_game(DECKS[8], DECKS[0], 4)  # deck 8 declares two types
    c = st.counter
    while st.phase == 0:
        step(st, legal_actions(st)[0])
    assert st.counter == c  # setup placement and turn 1 draw nothing
    step(st, 0)  # end turn 1 -> turn 2 starts: one uniform for the second player's next
    d = Draws(st.seed)
    d.c = c
    q = 1 - st.first_player
    types = st.players[q].energy_types
    assert st.players[q].zone_next == types[d.uniform(len(types))]
    assert st.counter == d.c


def _trace_digest(n_games=6):
    h = hashlib.sha256()
    for g in range(n_games):
        st = new_game(DECKS[g], DECKS[14 - g], 4242 + g, log_enabled=False)
        ch = random_chooser(g)
        while not st.done:
            step(st, ch(st, legal_actions(st)))
            for k, v in sorted(to_arrays(st).items()):
                h.update(k.encode())
                h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def test_golden_trace():
    """Pins the reference's behaviour: the JAX engine will be compared against it, so any
    change here must be an intended rule change (update the digest and say why in the docs)."""
    assert _trace_digest() == EXPECTED_DIGEST


EXPECTED_DIGEST = "0b0f966894673604d859a75c1684d62d9d1e04f883cf922840d4e0ef6104d905"
