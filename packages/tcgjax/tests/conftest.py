"""Fixtures shared by the reference's rule and effect tests."""

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
