import pytest

from pokejax import install
from pokejax.showdown import Showdown


@pytest.fixture(scope="session")
def showdown():
    """One live Showdown process for the whole session, always closed."""
    install.install(quiet=True)
    with Showdown() as sd:
        yield sd


@pytest.fixture(scope="session")
def team_sets(showdown):
    """Random-battle sets from Showdown's own generator, six per team seed, in seed order."""

    def sets(seeds: list[list[int]]) -> list[dict]:
        return [s for seed in seeds
                for s in showdown.request("team", format="gen1randombattle", seed=seed)["sets"]]

    return sets
