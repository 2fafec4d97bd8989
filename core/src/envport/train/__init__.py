"""``envport train``: PPO on any envport env (optional extra ``envport[train]``).

:class:`PPO` is the jitted algorithm, :func:`train` a run on disk (checkpoints, metrics,
curve), :func:`evaluate` plays a policy for whole episodes. Imports flax and optax: without
the extra, importing this package says which ``pip install`` fixes it.
"""

from envport.extras import require

for _module in ("flax", "optax", "matplotlib"):
    require(_module, "train", "envport train")

from envport.train.evaluate import evaluate  # noqa: E402
from envport.train.networks import PRESETS, count_params, widths_for  # noqa: E402
from envport.train.ppo import PPO, PPOConfig, Runner  # noqa: E402
from envport.train.run import TrainRun, check_resume, list_runs, train  # noqa: E402

__all__ = ["PPO", "PPOConfig", "Runner", "TrainRun", "train", "evaluate", "list_runs",
           "check_resume", "PRESETS", "count_params", "widths_for"]
