"""pong-port: PufferLib 3.0.0 ``ocean/pong`` in JAX, bit-exact with the C reference."""

__version__ = "0.1.0"

from pong_port.config import PongConfig  # noqa: E402
from pong_port.env import Pong, PufferVecPong  # noqa: E402

__all__ = ["Pong", "PufferVecPong", "PongConfig", "__version__"]
