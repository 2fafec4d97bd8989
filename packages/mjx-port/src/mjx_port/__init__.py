"""mjx-port: Gymnasium's MuJoCo v5 suite as JAX envs on MJX, verified against MuJoCo C."""

__version__ = "0.1.0"
