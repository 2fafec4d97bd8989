"""tcgjax.engine: the JAX engine (work in progress, see docs/tcgjax.md "JAX engine").

Done: the card tables (``tables``), the RNG in uint32 jnp (``rng``), the state pytree in the
reference's array layout (``state``), ``legal_mask`` (``legal``) and the opening setup draws
(``setup``). Not yet: ``step``.
"""

from .legal import legal_mask
from .state import diff, from_reference, stack_states, to_numpy, to_reference

__all__ = ["diff", "from_reference", "legal_mask", "stack_states", "to_numpy", "to_reference"]
