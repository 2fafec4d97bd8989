"""What ``envport train tcgjax`` trains on: player 0 of a TCG Pocket game (a random deck pairing
of decks.json's 15 x 15, a random game seed) against a built-in opponent
(``env.SingleAgentEnv``: ``"random"`` or ``"heuristic"``), the legal mask applied to the
policy's logits.

The score is the win (1 for a win, 0 for a loss or a tie); every run is evaluated against both
opponents as it goes (``--eval-every``), so its win rate against each is in ``metrics.jsonl``
and ``curve.png``. ``./dev train-tcgjax`` without arguments trains each target once with
evaluations every few updates (:func:`train_commands`).
"""

from __future__ import annotations

import jax.numpy as jnp

from envport.registry import TrainTarget
from tcgjax.env import OPPONENTS, SingleAgentEnv

# 16 games: the batch these settings (and L4's margins, tcgjax.transfer) were measured with,
# when the env was vmapped per game and scaled badly. Since the env steps the batch at once
# (SingleAgentEnv.step_batch) PPO runs ~1,100 agent steps/s here and ~2,800 at 256 games on
# the 2-vCPU VM (docs/training.md): a larger --num-envs is worth it with more total steps.
PPO_SETTINGS = {
    "num_envs": 16, "num_steps": 64, "total_steps": 200_000, "update_epochs": 4,
    "num_minibatches": 4, "learning_rate": 1e-3, "gamma": 0.99, "gae_lambda": 0.95,
    "ent_coef": 0.01, "policy": "64,64",
}  # fmt: skip
EVAL_EVERY = 40  # updates between evaluations in ./dev train-tcgjax
EVAL_EPISODES = 200


def won(ts) -> jnp.ndarray:
    """1 on the step that ends the game with a win (the env's reward is +1 / -1 / 0 there)."""
    return (ts.reward > 0).astype(jnp.float32)


def make_env(opponent: str) -> SingleAgentEnv:
    # unchecked: the policy samples legal actions only; the host-side check would cost a sync
    return SingleAgentEnv(opponent, checked=False)


EVALUATE = {f"vs {o}": (lambda o=o: make_env(o)) for o in OPPONENTS}

TARGETS = [
    TrainTarget(
        name=f"vs-{opponent}",
        make_env=lambda o=opponent: make_env(o),
        config=PPO_SETTINGS,
        score=won,
        score_name="win rate",
        evaluate=EVALUATE,
        note=f"player 0 against the built-in {opponent} opponent (tcgjax.env.SingleAgentEnv)",
    )
    for opponent in OPPONENTS  # random first: the default target
]


def train_commands() -> list[list[str]]:
    """What ``./dev train-tcgjax`` runs without arguments (``port.session_commands``): each
    target once (seed 0), evaluated against both opponents every ``EVAL_EVERY`` updates (the
    learning curves of docs/training.md)."""
    every = ["--eval-every", str(EVAL_EVERY), "--eval-episodes", str(EVAL_EPISODES)]
    return [
        ["envport", "train", "tcgjax", "--target", t.name, "--seeds", "0", *every] for t in TARGETS
    ]
