"""Policy networks for PPO: an actor and a critic MLP, sized by named presets.

``--policy 2M`` means "about two million parameters in total" (actor + critic, both heads):
:func:`widths_for` picks the depth from the size and solves for the width that hits the
count, rounded to a multiple of 8; :func:`count_params` gives the exact count, which the
trainer prints. A custom torso is given as widths, e.g. ``--policy 64,64``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from envport.errors import EnvportError

#: preset name -> target parameter count
PRESETS = {"0.1M": 100_000, "2M": 2_000_000, "20M": 20_000_000, "200M": 200_000_000}


class PolicyPresetError(EnvportError, ValueError):
    """An unknown preset or a malformed custom torso."""


def _depth(target: int) -> int:
    # small nets stay at two layers (the PPO default); large ones go deeper rather than only
    # wider, so that 200M is not two 10,000-wide layers
    return 2 if target <= 2_000_000 else 4


def _count(obs_dim: int, act_dim: int, widths: Sequence[int], continuous: bool) -> int:
    def mlp(n_in: int, n_out: int) -> int:
        total, prev = 0, n_in
        for w in (*widths, n_out):
            total += prev * w + w
            prev = w
        return total

    return mlp(obs_dim, act_dim) + mlp(obs_dim, 1) + (act_dim if continuous else 0)


def widths_for(policy: str, obs_dim: int, act_dim: int, continuous: bool = False) -> tuple[int, ...]:
    """The torso widths of ``policy``: a preset name (``"2M"``) or widths (``"256,256"``)."""
    if policy in PRESETS:
        target, depth = PRESETS[policy], _depth(PRESETS[policy])
        # both torsos: 2 * (obs*w + (depth-1)*w^2) + w*(act+1) + O(w) = target
        a = 2 * (depth - 1)
        b = 2 * obs_dim + act_dim + 1 + 2 * depth
        w = (-b + math.sqrt(b * b + 4 * a * target)) / (2 * a)
        w = max(8, int(round(w / 8)) * 8)
        return (w,) * depth
    if re.fullmatch(r"\d+(,\d+)*", policy or ""):
        widths = tuple(int(x) for x in policy.split(","))
        if all(w > 0 for w in widths):
            return widths
    raise PolicyPresetError(
        f"unknown policy {policy!r}: a preset ({', '.join(PRESETS)}) or hidden widths such as "
        "'64,64'")


def count_params(obs_dim: int, act_dim: int, widths: Sequence[int], continuous: bool = False) -> int:
    """Exact parameter count of :class:`ActorCritic` (equal to the initialised tree's size)."""
    return _count(obs_dim, act_dim, widths, continuous)


def _dense(n: int, scale: float) -> nn.Dense:
    # orthogonal init with the usual PPO gains (sqrt 2 in the torso, 0.01 for the policy head,
    # 1 for the value head): the initial policy is near uniform and the value near zero
    return nn.Dense(n, kernel_init=nn.initializers.orthogonal(scale),
                    bias_init=nn.initializers.constant(0.0))


class ActorCritic(nn.Module):
    """``obs -> (logits or mean, log_std or None, value)``; tanh torsos, no parameter sharing."""

    widths: tuple[int, ...]
    action_dim: int
    continuous: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array):
        a = c = obs
        for w in self.widths:
            a = nn.tanh(_dense(w, np.sqrt(2))(a))
        for w in self.widths:
            c = nn.tanh(_dense(w, np.sqrt(2))(c))
        head = _dense(self.action_dim, 0.01)(a)
        value = _dense(1, 1.0)(c)[..., 0]
        log_std = (self.param("log_std", nn.initializers.zeros, (self.action_dim,))
                   if self.continuous else None)
        return head, log_std, value


def tree_size(params) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))


def flat_obs_dim(shape: Sequence[int]) -> int:
    return int(np.prod(shape)) if len(shape) else 1


def as_features(obs: jax.Array, obs_shape: Sequence[int]) -> jax.Array:
    """Observations ``[..., *obs_shape]`` as float32 ``[..., prod(obs_shape)]``."""
    lead = obs.shape[: obs.ndim - len(obs_shape)]
    return jnp.asarray(obs, jnp.float32).reshape(lead + (flat_obs_dim(obs_shape),))
