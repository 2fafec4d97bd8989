"""§5 setup in JAX: ``new_game(deck_cards, energy_types, seed)`` equal to the reference's
``new_game`` field for field (the draw order of docs/tcgjax.md: first-player coin, player 0's
opening shuffles, player 1's, player 0's Energy Zone ``next``, player 1's)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..reference.arrays import to_arrays
from ..reference.cards import get_deck
from ..reference.engine import new_game as ref_new_game
from ..reference.state import OPENING_HAND, OPENING_SHUFFLE_TRIES
from . import rng
from .tables import TABLES

IS_BASIC = jnp.asarray(TABLES["is_basic"])

# Every field new_game does not draw or copy from the decks is a constant; take them from a
# reference state so the two cannot drift apart (empty board rows, empty Exec, flags ...).
_BLANK = {
    k: jnp.asarray(v) for k, v in to_arrays(ref_new_game(get_deck(0), get_deck(0), 0)).items()
}


def opening_deck(seed, counter, deck):
    """§5.2: full shuffles until a Basic is in the top 5, at most 128; then the fallback swap
    (a uniformly random Basic of the bottom 15 with a uniformly random top-5 card)."""

    def cond(c):
        _, _, tries, found = c
        return ~found & (tries < OPENING_SHUFFLE_TRIES)

    def body(c):
        d, ctr, tries, _ = c
        d, ctr = rng.shuffle(seed, ctr, d, d.shape[0])
        return d, ctr, tries + 1, jnp.any(IS_BASIC[d[:OPENING_HAND]])

    deck, counter, _, found = jax.lax.while_loop(
        cond, body, (deck, counter, jnp.int32(0), jnp.asarray(False))
    )
    low = IS_BASIC[deck] & (jnp.arange(deck.shape[0]) >= OPENING_HAND)
    k, counter = rng.uniform(seed, counter, jnp.sum(low), ~found)
    # position of the k-th Basic of the bottom 15
    b = jnp.argmax(low & (jnp.cumsum(low) == k + 1))
    t, counter = rng.uniform(seed, counter, OPENING_HAND, ~found)
    db, dt = deck[b], deck[t]
    swapped = deck.at[b].set(dt).at[t].set(db)
    return jnp.where(found, deck, swapped), counter


def new_game(deck_cards, energy_types, seed):
    """The setup state. ``deck_cards`` (2, 20) int32 (each list ascending, D2), ``energy_types``
    (2, 3) int32 padded with -1, ``seed`` uint32. jit- and vmap-able."""
    seed = jnp.asarray(seed, jnp.uint32)
    deck_cards = jnp.asarray(deck_cards, jnp.int32)
    energy_types = jnp.asarray(energy_types, jnp.int32)
    heads, ctr = rng.coin(seed, jnp.uint32(0))
    first = jnp.where(heads, 0, 1).astype(jnp.int32)
    decks = []
    for p in range(2):
        d, ctr = opening_deck(seed, ctr, deck_cards[p])
        decks.append(d)
    nexts = []
    for p in range(2):
        n = jnp.sum(energy_types[p] >= 0)
        v, ctr = rng.uniform(seed, ctr, n)
        nexts.append(energy_types[p][v])
    decks = jnp.stack(decks)
    s = dict(_BLANK)
    pad = -jnp.ones((2, OPENING_HAND), jnp.int32)
    s.update(
        seed=seed,
        counter=ctr,
        first_player=first,
        decider=first,
        deck_cards=deck_cards,
        energy_types=energy_types,
        deck=jnp.concatenate([decks[:, OPENING_HAND:], pad], axis=1),
        deck_n=jnp.full((2,), decks.shape[1] - OPENING_HAND, jnp.int32),
        hand=jnp.concatenate([decks[:, :OPENING_HAND], pad], axis=1),
        hand_n=jnp.full((2,), OPENING_HAND, jnp.int32),
        zone_next=jnp.stack(nexts).astype(jnp.int32),
    )
    return s


def deck_arrays(deck_a, deck_b) -> tuple[np.ndarray, np.ndarray]:
    """(deck_cards, energy_types) arrays of two reference ``Deck``s, for ``new_game``."""
    cards = np.array([deck_a.cards, deck_b.cards], np.int32)
    types = np.full((2, 3), -1, np.int32)
    for p, d in enumerate((deck_a, deck_b)):
        types[p, : len(d.energy_types)] = d.energy_types
    return cards, types
