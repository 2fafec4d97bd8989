"""to_arrays / from_arrays: the fixed-size layout round-trips every state of real games."""

import dataclasses

import numpy as np
import pytest

from tcgjax.reference import deck_list, legal_actions, new_game, step
from tcgjax.reference.arrays import FIELDS, from_arrays, to_arrays
from tcgjax.reference.choosers import random_chooser

DECKS = deck_list()


def _plain(st):
    d = dataclasses.asdict(st)
    d.pop("log")
    return d


def test_round_trip_every_state_and_same_future():
    n = 0
    for g in range(30):
        st = new_game(DECKS[g % 15], DECKS[(g * 7) % 15], 900 + g, log_enabled=False)
        ch = random_chooser(g)
        while not st.done:
            arrs = to_arrays(st)
            for k, (shape, dtype) in FIELDS.items():
                assert arrs[k].shape == shape and arrs[k].dtype == dtype, k
            back = from_arrays(arrs)
            assert _plain(back) == _plain(st)
            assert legal_actions(back) == legal_actions(st)
            a = ch(st, legal_actions(st))
            step(back, a)
            step(st, a)
            assert _plain(back) == _plain(st)  # the loaded state plays on identically
            n += 1
    assert n > 1000


def test_from_arrays_bad_input():
    st = new_game(DECKS[0], DECKS[1], 1)
    arrs = to_arrays(st)
    with pytest.raises(ValueError, match="missing"):
        from_arrays({k: v for k, v in arrs.items() if k != "hand"})
    bad = dict(arrs, hand=arrs["hand"].astype(np.int64))
    with pytest.raises(ValueError, match="dtype"):
        from_arrays(bad)
    bad = dict(arrs, hand=np.zeros((2, 11), np.int32))
    with pytest.raises(ValueError, match="shape"):
        from_arrays(bad)
    with pytest.raises(TypeError):
        from_arrays([1, 2])
