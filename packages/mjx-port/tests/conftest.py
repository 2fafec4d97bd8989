import jax
import pytest


@pytest.fixture(scope="module")
def x64():
    """float64 for one test module, restored after it: the whole repository's tests share one
    process, and no other package runs with x64."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)
