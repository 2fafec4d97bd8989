"""Optional features and the extras that bring them (``pip install 'envport[<extra>]'``).

The core's own dependencies are what the env interface and the verifier need. A feature that
needs more imports it through :func:`require`, so a missing extra is one clear error that names
the ``pip install`` that fixes it instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from envport.errors import EnvportError

# extra -> (what it is for, the distributions it brings); pyproject.toml's optional-dependencies
# list the same names (a test keeps the two in step)
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "generate": ("envport generate (the Anthropic API)", ("anthropic",)),
    "plot": ("plots of reports (bench.png)", ("matplotlib",)),
    "train": ("envport train (PPO)", ("flax", "optax", "matplotlib")),
    "ray": ("envport verify --ray", ("ray",)),
    "gym": ("Gymnasium interop (GymnasiumBackend, gym_adapter)", ("gymnasium",)),
}


class MissingExtraError(EnvportError, ImportError):
    """A feature's optional dependency is not installed; the message names the extra."""


def install_hint(extra: str) -> str:
    if extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r}; envport's extras: {', '.join(EXTRAS)}")
    return f"pip install 'envport[{extra}]'"


def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    """``import module``, or a :class:`MissingExtraError` naming ``envport[extra]``.

    Only a missing ``module`` (or a missing package it imports) becomes that error; any other
    failure while importing it propagates unchanged."""
    hint = install_hint(extra)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        what = feature or EXTRAS[extra][0]
        raise MissingExtraError(
            f"{what} needs {exc.name!r}, which is not installed: {hint}") from exc
