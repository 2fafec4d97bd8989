"""pokejax: Pokémon Showdown Gen 1 random battles in JAX (work in progress)."""

__version__ = "0.0.1"
