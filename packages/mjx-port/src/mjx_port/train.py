"""What ``envport train mjx`` trains on: Gymnasium's HalfCheetah-v5 (the default target) and
Hopper-v5 on the port in float32 (``mjx_port.env.make(env_id, "float32")``), with Gymnasium's
default arguments and registered TimeLimit (1,000 steps), the return being the env's reward.

The trainer (``envport.train``) normalises neither observations nor rewards, so the settings
are the ones PPO is usually run with on MuJoCo without normalisation (Stable-Baselines3's
defaults, which are the PPO paper's MuJoCo settings): 2,048 env steps per update, 10 epochs of
minibatches of 64, Adam 3e-4 annealed, gamma 0.99, lambda 0.95, no entropy bonus, separate
64x64 tanh actor and critic, a state-independent log std. The value loss is not clipped: the
returns are not scaled, and clipping value changes to +-0.2 on returns in the hundreds would
hold the critic back. ``./dev train-mjx`` without arguments trains each target once
(:func:`train_commands`); the curves are each run's ``curve.png``.

Batch shape: MJX on CPU steps ~600-1,100 env-steps/s at a batch of 64 on the 2-vCPU VM
(docs/training.md); the update (320 minibatch steps of a 64x64 net) is a few per cent of an
update's time, the rest is the env. 128 envs were no faster per env-step there, so 64 envs x
32 steps. On a GPU the batch would be much larger (thousands of envs, as Brax trains MJX),
with fewer steps per env per update; ``--num-envs`` / ``--set num_steps=...`` give that.
"""

from __future__ import annotations

import jax

from envport.registry import TrainTarget
from envport.wrappers import Wrapper

ENV_IDS = ("HalfCheetah-v5", "Hopper-v5")  # HalfCheetah first: the default target

PPO_SETTINGS = {
    "num_envs": 64, "num_steps": 32, "total_steps": 1_000_000, "update_epochs": 10,
    "num_minibatches": 32, "learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 0.95,
    "ent_coef": 0.0, "clip_vloss": False, "max_grad_norm": 0.5, "policy": "64,64",
}  # fmt: skip


class FlatState(Wrapper):
    """The env with its state as a tuple of arrays (the leaves of ``MjxState``, whose tree
    structure the wrapper keeps): the trainer's checkpoint (flax serialization) stores tuples
    and dicts of arrays, not ``MjxState`` or ``mjx.Data`` (``can not serialize 'MjxState'``).
    Flattening and rebuilding move no value, so a resumed run steps the same states."""

    def __init__(self, env):
        super().__init__(env)
        self._treedef = None

    def _tree(self):
        if self._treedef is None:  # a step before any reset (a resumed run resets first)
            self._treedef = jax.tree.structure(
                jax.eval_shape(self.env.reset, jax.random.PRNGKey(0))[0]
            )
        return self._treedef

    def reset(self, key):
        state, ts = self.env.reset(key)
        leaves, self._treedef = jax.tree.flatten(state)
        return tuple(leaves), ts

    def step(self, state, action):
        state, ts = self.env.step(jax.tree.unflatten(self._tree(), state), action)
        return tuple(jax.tree.leaves(state)), ts


def make_env(env_id: str) -> FlatState:
    from mjx_port.env import make

    return FlatState(make(env_id, "float32"))


TARGETS = [
    TrainTarget(
        name=env_id,
        make_env=lambda e=env_id: make_env(e),
        config=PPO_SETTINGS,
        score_name="return",
        note=f"Gymnasium's {env_id} (default arguments, TimeLimit 1,000) on MJX in float32",
        x64=False,  # float32 physics, also inside `envport verify mjx` (x64 on for L1-L3)
    )
    for env_id in ENV_IDS
]


def train_commands() -> list[list[str]]:
    """What ``./dev train-mjx`` runs without arguments (``port.session_commands``): each
    target once (seed 0) at its full budget; the learning curves are the runs' ``curve.png``
    and ``metrics.jsonl`` (docs/training.md)."""
    return [["envport", "train", "mjx", "--target", t.name, "--seeds", "0"] for t in TARGETS]
