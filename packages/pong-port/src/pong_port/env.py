"""Pong as envport envs.

* :class:`Pong` — one env with its own glibc stream. It equals PufferLib's ``Pong(num_envs=1)``
  and is vmappable (each copy then has an independent stream).
* :class:`PufferVecPong` — ``num_envs`` envs sharing one glibc stream, drawn in env order:
  PufferLib's ``Pong(num_envs=N)`` bit for bit, for any N.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport import Box, Discrete, Env, EnvSpec, TimeStep
from pong_port import __version__
from pong_port.config import PongConfig
from pong_port.engine import PongEngine
from pong_port.stream import SharedStream, first_rand, srand_window
from pong_port.types import GlibcStream, PongState

MAX_SEED = 2**31 - 1  # the reference computes seeds in a C int


class PongEnvState(NamedTuple):
    game: PongState
    rng: GlibcStream


def pong_spec(config: PongConfig, num_envs: int = 1) -> EnvSpec:
    """One player per env (``num_agents`` counts players in one env, as for pokejax's two);
    PufferLib's ``num_agents`` of a vectorised Pong, the env count, is in the metadata."""
    action = Box(-1.0, 1.0, (1,)) if config.continuous else Discrete(3)
    return EnvSpec(
        id="pong", version=__version__, observation_space=Box(0.0, 1.0, (8,)),
        action_space=action, num_agents=1,
        metadata={"config": config.kwargs(), "num_envs": num_envs},
    )


def _timestep(game: PongState) -> TimeStep:
    return TimeStep(obs=game.obs, reward=game.reward, terminated=game.terminal,
                    truncated=jnp.zeros_like(game.terminal))


def check_seed(seed: int, num_envs: int = 1) -> int:
    seed = int(seed)
    if seed < 0 or seed * num_envs + num_envs - 1 > MAX_SEED:
        raise ValueError(
            f"seed must satisfy 0 <= seed and seed*num_envs + num_envs-1 <= {MAX_SEED} "
            f"(the reference seeds env i with the C int i + seed*num_envs); got seed={seed}, "
            f"num_envs={num_envs}"
        )
    return seed


class Pong(Env):
    def __init__(self, config: PongConfig | None = None, engine_cls: type[PongEngine] = PongEngine):
        self.config = config or PongConfig()
        self.engine = engine_cls(self.config)
        self.stream = SharedStream(1)
        self._spec = pong_spec(self.config)

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def reset(self, key: jax.Array) -> tuple[PongEnvState, TimeStep]:
        """A JAX PRNG key picks a glibc seed; :meth:`reset_from_seed` takes one directly."""
        seed = jax.random.bits(key, dtype=jnp.uint32)
        return self.reset_from_seed(seed)

    def reset_from_seed(self, seed) -> tuple[PongEnvState, TimeStep]:
        """``srand(seed)`` then ``c_reset``: PufferLib's ``Pong(num_envs=1).reset(seed)``."""
        seed = jnp.asarray(seed, jnp.uint32)
        game = self.engine.fresh(first_rand(seed))
        rng = self.stream.from_window(srand_window(seed, draws=1))
        return PongEnvState(game, rng), _timestep(game)

    def step(self, state: PongEnvState, action) -> tuple[PongEnvState, TimeStep]:
        game, needed = self.engine.step(state.game, action)
        rng, draw = self.stream.draw(state.rng, needed[None])
        game = self.engine.take_draw(game, needed, draw[0])
        return PongEnvState(game, rng), _timestep(game)


class PufferVecPong(Env):
    """``num_envs`` Pong envs on one glibc stream; ``reset(seed)`` takes PufferLib's int seed."""

    def __init__(self, num_envs: int, config: PongConfig | None = None,
                 engine_cls: type[PongEngine] = PongEngine):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self.config = config or PongConfig()
        self.engine = engine_cls(self.config)
        self.stream = SharedStream(self.num_envs)
        self._spec = pong_spec(self.config, self.num_envs)
        self._reset = jax.jit(self._reset_impl)

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _reset_impl(self, seed: jax.Array) -> tuple[PongEnvState, TimeStep]:
        n = self.num_envs
        # vec_reset: for each env i, srand(i + seed*n) then c_reset (one rand each)
        seeds = jnp.arange(n, dtype=jnp.uint32) + seed.astype(jnp.uint32) * jnp.uint32(n)
        draws = jax.vmap(first_rand)(seeds)
        game = jax.vmap(self.engine.fresh)(draws)
        rng = self.stream.from_window(srand_window(seeds[-1], draws=1))
        return PongEnvState(game, rng), _timestep(game)

    def reset(self, seed) -> tuple[PongEnvState, TimeStep]:
        if isinstance(seed, int | np.integer):
            seed = check_seed(seed, self.num_envs)
        return self._reset(jnp.asarray(seed, jnp.uint32))

    def step(self, state: PongEnvState, actions) -> tuple[PongEnvState, TimeStep]:
        game, needed = jax.vmap(self.engine.step)(state.game, actions)
        rng, draws = self.stream.draw(state.rng, needed)
        game = jax.vmap(self.engine.take_draw)(game, needed, draws)
        return PongEnvState(game, rng), _timestep(game)
