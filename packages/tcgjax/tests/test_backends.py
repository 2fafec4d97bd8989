"""The verifier's backends of both engines agree (chooser-index actions, docs/tcgjax.md)."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # compiles the batched step once more (minutes on 2 cores)


def _diff(a, b):
    return [k for k in a if not np.array_equal(a[k], b[k])]


def test_reference_and_jax_backends_agree_on_games_and_loaded_states():
    from tcgjax.backends import JaxEngineBackend, ReferenceBackend
    from tcgjax.port import _actions, _cases

    ref, jax_ = ReferenceBackend(8), JaxEngineBackend(8)
    ref.reset(3)
    jax_.reset(3)
    assert _diff(ref.state(), jax_.state()) == []
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = _actions(rng, 8)
        ref.step(a)
        jax_.step(a)
        assert _diff(ref.state(), jax_.state()) == []
    assert ref.state()["terminated"].any()
    states, acts = _cases(np.random.default_rng(1), 8)
    ref.load(states)
    jax_.load(states)
    ref.step(acts)
    jax_.step(acts)
    assert _diff(ref.state(), jax_.state()) == []
