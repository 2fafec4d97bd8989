"""The JAX port as an envport backend (the candidate that verification compares)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envport.backend import CanonicalState, JaxBackend
from pong_port import __version__
from pong_port.config import PongConfig
from pong_port.env import Pong, PongEnvState, PufferVecPong, check_seed
from pong_port.glibc_rand import window_after
from pong_port.types import PongLog, PongState

GAME_FIELDS = ("paddle_yl", "paddle_yr", "ball_x", "ball_y", "ball_vx", "ball_vy", "score_l",
               "score_r", "paddle_dir", "tick", "n_bounces", "win")


def canonical_state(state: PongEnvState) -> CanonicalState:
    g = state.game
    out = {name: getattr(g, name) for name in GAME_FIELDS}
    out.update(obs=g.obs, reward=g.reward, terminated=g.terminal)
    out.update({"log_" + k: v for k, v in g.log._asdict().items()})
    return out


def game_from_canonical(state: CanonicalState) -> PongState:
    g = {name: jnp.asarray(state[name]) for name in GAME_FIELDS}
    log = PongLog(**{k: jnp.asarray(state["log_" + k], jnp.float32) for k in PongLog._fields})
    return PongState(**g, obs=jnp.asarray(state["obs"], jnp.float32),
                     reward=jnp.asarray(state["reward"], jnp.float32),
                     terminal=jnp.asarray(state["terminated"], bool), log=log)


class PongCandidate(JaxBackend):
    """``num_envs`` > 1 uses :class:`PufferVecPong` (one shared glibc stream);
    ``num_envs`` == 1 uses the single-env :class:`Pong` with a batch axis of one."""

    def __init__(self, num_envs: int = 1, config: PongConfig | None = None,
                 allow_out_of_range: bool = False, engine_cls=None):
        config = config or PongConfig()
        kw = {} if engine_cls is None else {"engine_cls": engine_cls}
        self.num_envs_ = int(num_envs)
        if self.num_envs_ == 1:
            env = Pong(config, **kw)
            reset = jax.jit(lambda seed: _batched(env.reset_from_seed(seed)))
            step = lambda s, a: _batched(env.step(_unbatched(s), a[0]))  # noqa: E731
            stream = env.stream
        else:
            env = PufferVecPong(num_envs, config, **kw)
            reset, step, stream = env.reset, env.step, env.stream
        self.jax_env = env

        def reset_fn(seed: int):
            return reset(check_seed(seed, self.num_envs_))

        def load_fn(state: CanonicalState) -> PongEnvState:
            seed, draws = (int(x) for x in np.asarray(state.get("rng", (1, 0))).reshape(-1)[:2])
            return PongEnvState(game_from_canonical(state), stream.from_window(jnp.asarray(window_after(seed, draws))))

        super().__init__(env.spec, num_envs, reset_fn, step, canonical_state, load_fn,
                         name=f"pong-port {__version__} (jax {jax.__version__}, {jax.default_backend()})",
                         allow_out_of_range=allow_out_of_range)


def _batched(out):
    return jax.tree.map(lambda x: x[None], out)


def _unbatched(state):
    return jax.tree.map(lambda x: x[0], state)
