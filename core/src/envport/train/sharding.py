"""Data parallel PPO over devices with ``jax.sharding``: the envs (and so the rollout and the
batch) split over a one-axis mesh, the parameters and optimiser state replicated. The jitted
update is unchanged: XLA inserts the gradient all-reduce. Results equal one device's for the
same seed up to the order of float reductions (the loss means and gradient sums are reduced
per shard first)."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from envport.errors import EnvportError

AXIS = "envs"


class DeviceCountError(EnvportError, ValueError):
    """More devices asked for than exist, or envs that do not split over them."""


def data_mesh(devices: int, num_envs: int) -> Mesh:
    have = jax.devices()
    if not 1 <= devices <= len(have):
        raise DeviceCountError(
            f"--devices {devices}: this process sees {len(have)} {have[0].platform} device(s)"
            + (" (on CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N makes N)"
               if have[0].platform == "cpu" else ""))
    if num_envs % devices:
        raise DeviceCountError(f"num_envs {num_envs} does not split over {devices} devices")
    return Mesh(np.array(have[:devices]), (AXIS,))


def shard_runner(runner, mesh: Mesh):
    """Env-axis leaves (env state, observations, masks, episode stats) split over the mesh;
    everything else replicated."""
    split = NamedSharding(mesh, PartitionSpec(AXIS))
    whole = NamedSharding(mesh, PartitionSpec())
    put = lambda tree, s: jax.tree.map(lambda x: jax.device_put(x, s), tree)  # noqa: E731
    return runner._replace(
        params=put(runner.params, whole), opt_state=put(runner.opt_state, whole),
        env_state=put(runner.env_state, split), obs=put(runner.obs, split),
        mask=put(runner.mask, split), stats=put(runner.stats, split),
        key=put(runner.key, whole), update=put(runner.update, whole))
