"""envport: fast environments, proven equivalent to their references."""

__version__ = "0.1.0"

from envport.env import Env  # noqa: E402
from envport.errors import (  # noqa: E402
    ActionError,
    EnvportError,
    ReferenceNotInstalledError,
    UnknownEnvError,
)
from envport.types import Box, Discrete, EnvSpec, TimeStep  # noqa: E402

__all__ = [
    "Env", "EnvSpec", "TimeStep", "Box", "Discrete",
    "EnvportError", "ActionError", "UnknownEnvError", "ReferenceNotInstalledError",
    "__version__",
]
