"""tcgjax: Pokémon TCG Pocket from its written specification: a readable Python reference engine and a JAX engine equal to it bit for bit."""

__version__ = "0.1.0"
