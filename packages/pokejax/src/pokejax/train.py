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
    """1 on the step that ends the battle with a win: the env's reward there is +1 / -1 / 0,
    moved by less than 1/2 by its HP shaping (``SingleAgentEnv``'s ``hp_weight``)."""
    return (ts.terminated & (ts.reward > 0.5)).astype(jnp.float32)


EVALUATE = {"vs random": lambda: SingleAgentEnv("random"),
            "vs greedy": lambda: SingleAgentEnv("greedy")}

#: the reward's HP shaping per target (``SingleAgentEnv``'s ``hp_weight``): against greedy a new
#: policy wins ~1%, so the win alone is a near-constant -1 and nothing is learnt from it
HP_WEIGHT = {"random": 0.0, "greedy": 1 / 6}
#: env steps per target: against greedy about an hour on a 2-vCPU CPU (docs/training.md)
TOTAL_STEPS = {"random": 5_000_000, "greedy": 17_000_000}

TARGETS = [
    TrainTarget(name=f"vs-{opponent}",
                make_env=lambda o=opponent: SingleAgentEnv(o, hp_weight=HP_WEIGHT[o]),
                config={**PPO_SETTINGS, "total_steps": TOTAL_STEPS[opponent]}, score=won,
                score_name="win rate", evaluate=EVALUATE,
                note=f"p1 against the built-in {opponent} opponent"
                     + (f", reward shaped by the HP balance (hp_weight {HP_WEIGHT[opponent]:.3g})"
                        if HP_WEIGHT[opponent] else ""))
    for opponent in ("random", "greedy")
] + [
    TrainTarget(name="self-play", make_env=lambda: BattleEnv(checked=False), self_play=True,
                config=PPO_SETTINGS, score=won, score_name="win rate (0.5 in self-play)",
                evaluate=EVALUATE, note="both sides of each battle play the learning policy"),
]
