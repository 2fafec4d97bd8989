"""L2 and L3 of the JAX engine against the reference (docs/tcgjax.md "JAX engine").

One ``jit(vmap(step))`` per module (fixed batch), shared by every test here but the one of
``step_batch``."""

import numpy as np
import pytest

from tcgjax.engine import verify
from tcgjax.engine.setup import deck_arrays
from tcgjax.engine.setup import new_game as jax_new_game
from tcgjax.engine.state import diff
from tcgjax.reference import get_deck, new_game
from tcgjax.reference.arrays import to_arrays


@pytest.fixture(scope="module")
def fns():
    return verify.compiled()


def test_l2_one_action_from_sampled_states(fns):
    rep = verify.l2(45, seed=1, fns=fns)
    assert rep["mismatches"] == []
    assert rep["states"] > 3000
    # every kind of action is in the sample (else a wrong branch could go unseen)
    kinds = {"END", "PLAY", "HAND_ON", "ATTACH", "ABILITY", "ATTACK", "RETREAT", "CHOOSE"}
    assert kinds <= set(rep["actions"]), rep["actions"]


def test_l3_whole_games_in_lockstep(fns):
    rep = verify.l3(64, seed=2, fns=fns)
    assert rep["mismatches"] == []
    assert rep["actions"] > 4000


def test_l3_with_the_batch_level_step():
    """``step_batch`` (each phase run for the whole batch when some game is at it, used by the
    benchmark) in lockstep with the reference, as ``vmap(step)`` is above."""
    rep = verify.l3(64, seed=3, fns=verify.compiled(batched=True))
    assert rep["mismatches"] == []
    assert rep["actions"] > 4000


def test_jax_new_game_then_jax_steps_only():
    """The setup state made by JAX equals the reference's (so L3 could start from JAX too)."""
    c, t = deck_arrays(get_deck(4), get_deck(11))
    js = jax_new_game(c, t, np.uint32(99))
    assert (
        diff(
            {k: np.asarray(v) for k, v in js.items()},
            to_arrays(new_game(get_deck(4), get_deck(11), 99)),
        )
        == []
    )


@pytest.mark.slow
def test_l2_l3_all_pairings(fns):
    rep = verify.l2(450, seed=10, fns=fns)
    assert rep["mismatches"] == [] and rep["states"] >= 10000
    rep = verify.l3(450, seed=11, fns=fns)
    assert rep["mismatches"] == []
