import pytest

from pokejax import install
from pokejax.showdown import Showdown


@pytest.fixture(scope="session")
def showdown():
    """One live Showdown process for the whole session, always closed."""
    install.install(quiet=True)
    with Showdown() as sd:
        yield sd
