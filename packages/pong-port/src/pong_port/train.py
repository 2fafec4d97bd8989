"""What ``envport train pong`` trains on: the discrete Pong of PufferLib's ``pong.ini``
(frameskip 8) against the built-in opponent paddle.

The score is the game's: points won minus points lost (an episode is a game to 21), the
reward's +0.1 per returned ball left out, so +20 means a game won 21-1. The PPO settings
follow pong.ini where our MLP PPO has the same knob (frameskip, gamma, GAE lambda, clip
coefficient, horizon 64); the batch is smaller (1,024 envs rather than 4 x 1,024) to suit a
2-core CPU, and the optimiser is Adam rather than PufferLib's Muon.
"""

from __future__ import annotations

import jax.numpy as jnp

from envport.registry import TrainTarget
from pong_port.config import PongConfig
from pong_port.env import Pong

PONG_INI = PongConfig(frameskip=8)

PPO_SETTINGS = {
    "num_envs": 1024, "num_steps": 64, "total_steps": 12_000_000, "update_epochs": 4,
    "num_minibatches": 4, "learning_rate": 5e-3, "gamma": 0.96, "gae_lambda": 0.885,
    "clip_coef": 0.22, "ent_coef": 0.002, "vf_coef": 1.0, "max_grad_norm": 1.5,
    "policy": "64,64",
}


def points(ts) -> jnp.ndarray:
    """A step's change of the game score: +1 / -1 for a point, 0 otherwise (hit bonus out)."""
    return jnp.where(jnp.abs(ts.reward) >= 1.0, ts.reward, 0.0)


TARGETS = [
    TrainTarget(
        name="frameskip=8", make_env=lambda: Pong(PONG_INI), config=PPO_SETTINGS, score=points,
        score_name="score (points won - lost)", goal=20.0, goal_episodes=100,
        note="PufferLib pong.ini's env (frameskip 8) against its scripted opponent"),
]
