import pytest

from pong_port import reference_build


@pytest.fixture(scope="session")
def reference_built():
    """Build the real C reference (download once into the cache, then offline)."""
    return reference_build.build(quiet=True)
