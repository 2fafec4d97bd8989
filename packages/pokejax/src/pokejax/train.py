"""What ``envport train pokejax`` trains on: one side of a gen1randombattle against a built-in
opponent (``env.SingleAgentEnv``), the legal mask applied to the policy's logits.

The score is the win (1 for a win, 0 for a loss or a tie); every run is evaluated against both
built-in opponents as it goes, so its win rate against each is in ``metrics.jsonl``.

``self-play`` trains on the two-player ``BattleEnv``: both sides of every battle play the
policy being trained (``envport.train.selfplay``), so its own win score is 0.5 by
construction; the evaluations against the built-in opponents say what it learnt.
"""

from __future__ import annotations

import jax.numpy as jnp

from envport.registry import TrainTarget
from pokejax.env import BattleEnv, SingleAgentEnv

PPO_SETTINGS = {
    "num_envs": 256, "num_steps": 64, "total_steps": 5_000_000, "update_epochs": 4,
    "num_minibatches": 4, "learning_rate": 1e-3, "gamma": 0.99, "gae_lambda": 0.95,
    # the observation has ~3,300 features: a 0.1M preset would be a 16-wide torso
    "ent_coef": 0.01, "policy": "64,64",
}


def won(ts) -> jnp.ndarray:
    """1 on the step that ends the battle with a win (the env's reward is +1 / -1 / 0 there)."""
    return (ts.reward > 0).astype(jnp.float32)


EVALUATE = {"vs random": lambda: SingleAgentEnv("random"),
            "vs greedy": lambda: SingleAgentEnv("greedy")}

TARGETS = [
    TrainTarget(name=f"vs-{opponent}", make_env=lambda o=opponent: SingleAgentEnv(o),
                config=PPO_SETTINGS, score=won, score_name="win rate", evaluate=EVALUATE,
                note=f"p1 against the built-in {opponent} opponent")
    for opponent in ("random", "greedy")  # random first: against greedy a new policy wins ~1%
] + [
    TrainTarget(name="self-play", make_env=lambda: BattleEnv(checked=False), self_play=True,
                config=PPO_SETTINGS, score=won, score_name="win rate (0.5 in self-play)",
                evaluate=EVALUATE, note="both sides of each battle play the learning policy"),
]
