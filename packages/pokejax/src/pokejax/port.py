"""pokejax's translation spec for the envport core (entry point ``envport.envs: pokejax``).

Work in progress: the reference is installable and checkable, the verification levels are
not declared yet, so ``envport verify pokejax`` honestly reports "not equivalent".
"""

from __future__ import annotations

import jax

from envport.registry import EnvPort
from pokejax import __version__, install

PORT = EnvPort(
    name="pokejax",
    reference=f"pokemon-showdown {install.SHOWDOWN_VERSION} (npm), gen1randombattle",
    candidate=f"pokejax {__version__} (jax {jax.__version__}, {jax.default_backend()})",
    install_reference=install.install,
    check_reference=install.check,
    notes={"status": "engine not written yet: only the PRNG and the reference driver exist"},
)
