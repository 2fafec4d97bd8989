"""pokejax: Pokémon Showdown Gen 1 random battles in JAX, verified turn for turn against Showdown."""

__version__ = "0.1.0"
