"""envport: fast environments, proven equivalent to their references.

The public API: the env interface (:class:`Env`, :class:`EnvSpec`, :class:`TimeStep`,
spaces), the numpy boundary (:class:`Backend`), the verifier as a library call
(:func:`compare`, :class:`Tolerance`) and the generic checks (:func:`check_env` for JAX envs,
:func:`check_backend` for any backend).
"""

__version__ = "0.1.0"

from envport.backend import Backend, GymnasiumBackend, JaxBackend  # noqa: E402
from envport.env import Env  # noqa: E402
from envport.errors import (  # noqa: E402
    ActionError,
    EnvportError,
    ReferenceNotInstalledError,
    UnknownEnvError,
)
from envport.testing import check_backend, check_env  # noqa: E402
from envport.types import Box, Discrete, EnvSpec, TimeStep  # noqa: E402
from envport.verify.compare import compare  # noqa: E402
from envport.verify.diff import Tolerance  # noqa: E402
from envport.verify.engine import Comparison  # noqa: E402

__all__ = [
    "Env", "EnvSpec", "TimeStep", "Box", "Discrete",
    "Backend", "JaxBackend", "GymnasiumBackend",
    "compare", "Comparison", "Tolerance", "check_env", "check_backend",
    "EnvportError", "ActionError", "UnknownEnvError", "ReferenceNotInstalledError",
    "__version__",
]
