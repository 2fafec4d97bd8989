"""Fixtures shared by the reference's rule and effect tests; each test module's compiled
programs are dropped when it ends."""

import gc

import jax
import pytest

from tcgjax.reference.rng import Rng


@pytest.fixture
def coins(monkeypatch):
    """Force the next coin results: append True (heads) / False (tails). Once the list is empty
    coins are the RNG's again; the fixture checks every forced result was used."""
    seq = []
    real = Rng.coin

    def coin(self):
        if not seq:
            return real(self)
        self.u32()  # a forced flip still consumes its draw
        return seq.pop(0)

    monkeypatch.setattr(Rng, "coin", coin)
    yield seq
    assert seq == [], "forced coin results left unused"


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """One compiled engine program holds ~9,000 memory mappings and hundreds of MB on
    XLA:CPU (``tcgjax.bench.release_programs``); the modules that compile several (the env's
    batch and vmap steps, training, the bench) would otherwise add up in the suite's one
    process towards ``vm.max_map_count`` and the 8 GB a process may use."""
    yield
    jax.clear_caches()
    gc.collect()
