"""The same PPO with the env stepped on the host: for numpy-boundary backends (a reference
such as PufferLib's C Pong, emurust's ``VecEnv``) that no ``jit`` can trace.

Per rollout step the policy runs jitted on the device (:meth:`PPO.policy_step`), the actions
come back to the host, the backend steps all its envs, and the observations go back; the
learning part (GAE and the epochs, :meth:`PPO.learn`) is the jitted function the on-device
update uses. The backend must reset an env itself when its episode ends (as PufferLib's and
vectorised Gymnasium envs do); a ``legal_mask()`` method, where the backend has one, gives
the mask. Truncated episodes are cut without bootstrapping (a backend does not return the
final observation). A checkpoint cannot hold a backend's process state, so host runs do not
resume.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.backend import Backend
from envport.errors import EnvportError
from envport.train.networks import as_features
from envport.train.ppo import PPO, PPOConfig, Transition


class BackendOutputError(EnvportError, ValueError):
    """The backend returned something PPO cannot learn from (NaN or inf, a wrong shape)."""


class HostState(NamedTuple):
    params: object
    opt_state: object
    key: jax.Array
    obs: np.ndarray
    mask: np.ndarray
    ret: np.ndarray  # running episode totals per env
    score: np.ndarray
    length: np.ndarray
    update: int


class HostPPO:
    """``HostPPO(backend, config)``: ``init(seed)`` then ``update(state) -> (state, metrics)``
    with the metrics of :meth:`PPO.update` (``summarize`` reads both)."""

    def __init__(self, backend: Backend, config: PPOConfig,
                 score: Callable[[np.ndarray], np.ndarray] | None = None):
        if backend.num_envs != config.num_envs:
            raise BackendOutputError(f"the backend has {backend.num_envs} envs, the config "
                                     f"{config.num_envs}")
        self.backend, self.config = backend, config
        self.ppo = PPO(None, config, spec=backend.spec)
        self.score = score or (lambda reward: reward)
        self._policy = jax.jit(self.ppo.policy_step)
        self._learn = jax.jit(self.ppo.learn)

    def _observe(self, obs) -> np.ndarray:
        obs = np.asarray(obs)
        n = self.config.num_envs
        want = (n, *self.ppo.obs_shape)
        if obs.shape != want:
            raise BackendOutputError(f"{self.backend.name} returned observations of shape "
                                     f"{obs.shape}, expected {want}")
        if not np.all(np.isfinite(obs)):  # before it reaches the loss
            bad = np.flatnonzero(~np.all(np.isfinite(obs.reshape(n, -1)), axis=1))
            raise BackendOutputError(f"{self.backend.name} returned NaN or inf observations "
                                     f"(envs {bad[:10].tolist()}): PPO cannot learn from them")
        return np.asarray(as_features(jnp.asarray(obs), self.ppo.obs_shape))

    def _mask(self) -> np.ndarray:
        n, k = self.config.num_envs, self.ppo.action_dim
        get = getattr(self.backend, "legal_mask", None)
        if get is None or self.ppo.continuous:
            return np.ones((n, k), bool)
        return np.asarray(get(), bool).reshape(n, k)

    def init(self, seed: int | None = None) -> HostState:
        seed = self.config.seed if seed is None else seed
        key, k_params = jax.random.split(jax.random.PRNGKey(seed))
        params = self.ppo.init_params(k_params)
        obs = self._observe(self.backend.reset(seed))
        n = self.config.num_envs
        return HostState(params, self.ppo.tx.init(params), key, obs, self._mask(),
                         np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.int32), 0)

    def update(self, s: HostState) -> tuple[HostState, dict]:
        c = self.config
        steps: list[tuple] = []
        obs, mask, key = s.obs, s.mask, s.key
        ret, score, length = s.ret.copy(), s.score.copy(), s.length.copy()
        done_n = ret_sum = score_sum = len_sum = 0.0
        for _ in range(c.num_steps):
            key, k_act = jax.random.split(key)
            env_action, action, logp, value = jax.device_get(
                self._policy(s.params, obs, mask, k_act))
            r = self.backend.step(np.asarray(env_action))
            reward = np.asarray(r.reward, np.float32).reshape(c.num_envs)
            if not np.all(np.isfinite(reward)):
                raise BackendOutputError(f"{self.backend.name} returned a NaN or inf reward")
            done = (np.asarray(r.terminated, bool) | np.asarray(r.truncated, bool)).reshape(-1)
            steps.append((obs, mask, action, logp, value, reward, done))
            ret += reward
            score += np.asarray(self.score(reward), np.float32)
            length += 1
            done_n += done.sum()
            ret_sum, score_sum, len_sum = (ret_sum + ret[done].sum(), score_sum + score[done].sum(),
                                           len_sum + length[done].sum())
            ret[done], score[done], length[done] = 0.0, 0.0, 0
            obs, mask = self._observe(r.obs), self._mask()
        traj = Transition(*(jnp.asarray(np.stack(x)) for x in zip(*steps, strict=True)))
        params, opt_state, key, metrics = self._learn(s.params, s.opt_state, key, traj, obs, mask)
        metrics = dict(metrics, episodes=done_n, return_sum=ret_sum, score_sum=score_sum,
                       length_sum=len_sum)
        return HostState(params, opt_state, key, obs, mask, ret, score, length, s.update + 1), metrics
