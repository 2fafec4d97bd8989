"""The generic smoke test every installed env package passes (jumanji/pgx style): each L1
target an env registers must pass ``envport.testing.check_env`` (a JAX env) or
``envport.testing.check_backend`` (any other candidate)."""

import jax
import pytest

from envport import registry
from envport.registry import L1BackendTarget
from envport.testing import check_backend, check_env


def _targets():
    out = []
    for name in sorted(registry.available()):
        port = registry.get(name)
        out += [pytest.param(t, id=f"{name}: {t.name}", marks=[pytest.mark.slow] if t.slow else [])
                for t in port.l1]
    return out


TARGETS = _targets()


def test_some_env_is_registered():
    assert "pong" in registry.available()
    assert TARGETS


@pytest.fixture
def restores_x64():
    """A float64 target switches jax_enable_x64 on for its process (as ``envport verify``
    runs one env per process); here the next env's targets run as they would alone."""
    before = jax.config.jax_enable_x64
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.mark.parametrize("target", TARGETS)
def test_registered_env_passes_generic_checks(target, restores_x64):
    if isinstance(target, L1BackendTarget):
        check_backend(target.make_backend, target.sample_actions, steps=target.steps)
    else:
        check_env(target.make_env(), target.sample_action, tolerance=target.tolerance,
                  paired_steps=target.paired_steps)


def test_every_port_describes_its_reference():
    for name in registry.available():
        port = registry.get(name)
        assert port.name == name and port.reference and port.candidate
        assert callable(port.install_reference) and callable(port.check_reference)
