"""Will a PPO configuration fit? An estimate made before anything is allocated.

Counted: parameters with their gradients, Adam's two moments and the update (6 copies of
float32), the rollout buffer and its shuffled copy, and the activations of one minibatch's
forward and backward pass (both torsos). Not counted: the env's own state (env-specific, and
small next to a large policy). Compared with what the device says it can hold (GPU) or the
host's available memory (CPU); refused above 90 % of it.
"""

from __future__ import annotations

import jax

from envport.errors import EnvportError

F32 = 4


class PolicyTooLargeError(EnvportError, MemoryError):
    """The configuration would not fit in the device's memory."""


def estimate_bytes(config, obs_dim: int, action_dim: int, widths) -> int:
    from envport.train.networks import count_params

    params = count_params(obs_dim, action_dim, widths)
    hidden = 2 * sum(widths)  # actor + critic torsos
    per_step = obs_dim + 2 * action_dim + 6  # obs, mask, action/logp/value/reward/done/adv
    rollout = config.batch_size * per_step * F32 * 2
    rollout_forward = config.num_envs * hidden * F32 * 2
    minibatch = config.minibatch_size * (hidden * 3 + obs_dim + action_dim) * F32
    return 6 * params * F32 + rollout + rollout_forward + minibatch


def available_bytes(device=None) -> int | None:
    device = device or jax.devices()[0]
    stats = getattr(device, "memory_stats", lambda: None)()
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(estimate: int, policy: str, params: int, available: int | None = None) -> None:
    available = available_bytes() if available is None else available
    if available is not None and estimate > 0.9 * available:
        raise PolicyTooLargeError(
            f"policy {policy} ({params:,} parameters) needs about {estimate / 2**30:.1f} GiB "
            f"for PPO at this batch size; the device has {available / 2**30:.1f} GiB available. "
            "Use a smaller --policy, fewer --num-envs or more --minibatches")
