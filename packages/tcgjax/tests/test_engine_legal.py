"""L2 for the legal mask: the JAX ``legal_mask`` equals the reference's on states sampled from
reference games (random chooser, many pairings), batched under jit + vmap."""

import random

import jax
import numpy as np
import pytest

from tcgjax.engine import from_reference, legal_mask, stack_states, to_reference
from tcgjax.engine.tables import TABLES
from tcgjax.reference import get_deck, legal_actions, new_game, step
from tcgjax.reference import legal_mask as ref_mask
from tcgjax.reference.arrays import FIELDS, to_arrays


@pytest.fixture(scope="module")
def batched_mask():
    return jax.jit(jax.vmap(legal_mask))


def _sample(pairings, seed0):
    rnd = random.Random(seed0)
    states, masks = [], []
    for g, (a, b) in enumerate(pairings):
        st = new_game(get_deck(a), get_deck(b), seed=seed0 + g, log_enabled=False)
        while not st.done:
            states.append(to_arrays(st))
            masks.append(ref_mask(st))
            step(st, rnd.choice(legal_actions(st)))
        states.append(to_arrays(st))  # the game-over state: no legal action
        masks.append(ref_mask(st))
    return states, np.array(masks)


def _check(batched_mask, states, masks):
    got = np.asarray(batched_mask(stack_states(states)))
    bad = np.nonzero((got != masks).any(axis=1))[0]
    assert len(bad) == 0, [
        (int(i), np.nonzero(got[i])[0].tolist(), np.nonzero(masks[i])[0].tolist()) for i in bad[:5]
    ]
    return got


def test_legal_mask_equals_reference_on_sampled_states(batched_mask):
    pairings = [(a, (a * 4 + 3) % 15) for a in range(15)] + [(a, a) for a in range(0, 15, 3)]
    states, masks = _sample(pairings, 1000)
    got = _check(batched_mask, states, masks)
    # the sample reaches every kind of action and the over state (a mask that is never set or
    # never cleared would not be tested)
    assert got.any(axis=0)[[0, 1, 11, 51, 59, 64]].all()
    assert (~got.any(axis=1)).sum() == len(pairings)


def test_state_round_trip_through_the_jax_layout():
    st = new_game(get_deck(2), get_deck(9), seed=5, log_enabled=False)
    rnd = random.Random(1)
    for _ in range(40):
        step(st, rnd.choice(legal_actions(st)))
    js = from_reference(st)
    assert set(js) == set(FIELDS)
    back = to_arrays(to_reference(js))
    for k, v in to_arrays(st).items():
        assert np.array_equal(back[k], v), k


def test_tables_cover_every_card():
    assert TABLES["category"].shape == (114,)
    assert TABLES["is_basic"].sum() > 0
    # every Pokémon has at least one attack and a positive HP
    pk = TABLES["category"] == 0
    assert (TABLES["n_attacks"][pk] >= 1).all() and (TABLES["hp"][pk] > 0).all()


@pytest.mark.slow
def test_legal_mask_equals_reference_all_pairings(batched_mask):
    pairings = [(a, b) for a in range(15) for b in range(15)]
    states, masks = _sample(pairings, 50000)
    _check(batched_mask, states, masks)
