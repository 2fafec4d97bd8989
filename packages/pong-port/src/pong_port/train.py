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


# The side by side with PuffeRL (pong_port.side_by_side) trains on pong.ini's batch shape:
# 2,048 envs x 64 steps = 131,072 env steps per update in 4 minibatches of 32,768, as PuffeRL's
# 2 x 1,024 C envs x bptt 64 (the epochs and the optimiser stay ours).
PONG_INI_BATCH = {**PPO_SETTINGS, "num_envs": 2048}
# ... and at about PuffeRL's policy size (its MLP 128 + LSTM 128: 133,764 parameters):
# 253x253 = 134,094; a net this wide learns from fewer, larger Adam steps (TODO)
PONG_INI_BATCH_134K = {**PONG_INI_BATCH, "policy": "253,253"}
# ... and with PuffeRL's update too: pong.ini's 1 epoch, PufferLib's default optimiser (Muon)
# at pong.ini's learning rate, so that what differs is the network and the framework
PONG_INI_MATCHED = {**PONG_INI_BATCH_134K, "update_epochs": 1, "optimizer": "muon",
                    "learning_rate": 0.071}


def _target(name: str, config: dict, note: str) -> TrainTarget:
    return TrainTarget(name=name, make_env=lambda: Pong(PONG_INI), config=config, score=points,
                       score_name="score (points won - lost)", goal=20.0, goal_episodes=100,
                       note=note)


TARGETS = [
    _target("frameskip=8", PPO_SETTINGS,
            "PufferLib pong.ini's env (frameskip 8) against its scripted opponent"),
    _target("pong.ini-batch", PONG_INI_BATCH,
            "frameskip=8 on pong.ini's batch shape (2,048 envs x 64 steps), the side by side's"),
    _target("pong.ini-batch-134k", PONG_INI_BATCH_134K,
            "pong.ini-batch with a 253x253 MLP, about PuffeRL's LSTM policy's size"),
    _target("pong.ini-matched", PONG_INI_MATCHED,
            "pong.ini-batch-134k with PuffeRL's update: 1 epoch, Muon, pong.ini's learning rate"),
]
