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

:func:`evaluate_backend` plays a trained policy on such a backend, one episode per env, as
:func:`envport.train.evaluate.evaluate` does on a JAX env (the reference side of L4).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.backend import Backend
from envport.episodes import first_episode_scores
from envport.errors import EnvportError
from envport.train.networks import as_features
from envport.train.ppo import PPO, PPOConfig, ScoreFn, Transition
from envport.types import TimeStep


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


def observe(backend: Backend, ppo: PPO, obs) -> np.ndarray:
    """The backend's observations as the policy takes them, after checking their shape and
    that they are finite (a NaN must not reach the loss)."""
    obs = np.asarray(obs)
    n = backend.num_envs
    want = (n, *ppo.obs_shape)
    if obs.shape != want:
        raise BackendOutputError(f"{backend.name} returned observations of shape {obs.shape}, "
                                 f"expected {want}")
    if not np.all(np.isfinite(obs)):
        bad = np.flatnonzero(~np.all(np.isfinite(obs.reshape(n, -1)), axis=1))
        raise BackendOutputError(f"{backend.name} returned NaN or inf observations "
                                 f"(envs {bad[:10].tolist()}): PPO cannot learn from them")
    return np.asarray(as_features(jnp.asarray(obs), ppo.obs_shape))


def legal_mask(backend: Backend, ppo: PPO) -> np.ndarray:
    """bool[num_envs, actions]: the backend's ``legal_mask()`` where it has one."""
    n, k = backend.num_envs, ppo.action_dim
    get = getattr(backend, "legal_mask", None)
    if get is None or ppo.continuous:
        return np.ones((n, k), bool)
    return np.asarray(get(), bool).reshape(n, k)


def _time_step(r, backend: Backend) -> TimeStep:
    """A step's result as a :class:`TimeStep` (what a target's ``score`` reads), with a
    finite float32 reward."""
    n = backend.num_envs
    reward = np.asarray(r.reward, np.float32).reshape(n)
    if not np.all(np.isfinite(reward)):
        raise BackendOutputError(f"{backend.name} returned a NaN or inf reward")
    return TimeStep(r.obs, reward, np.asarray(r.terminated, bool).reshape(n),
                    np.asarray(r.truncated, bool).reshape(n))


def _score(score: ScoreFn | None, ts: TimeStep) -> np.ndarray:
    return ts.reward if score is None else np.asarray(score(ts), np.float32).reshape(-1)


class HostPPO:
    """``HostPPO(backend, config, score)``: ``init(seed)`` then ``update(state) -> (state,
    metrics)`` with the metrics of :meth:`PPO.update` (``summarize`` reads both). ``score(ts)``
    as a target's (default: the reward), applied to numpy time steps."""

    def __init__(self, backend: Backend, config: PPOConfig, score: ScoreFn | None = None):
        if backend.num_envs != config.num_envs:
            raise BackendOutputError(f"the backend has {backend.num_envs} envs, the config "
                                     f"{config.num_envs}")
        self.backend, self.config = backend, config
        self.ppo = PPO(None, config, spec=backend.spec)
        self.score = score
        self._policy = jax.jit(self.ppo.policy_step)
        self._learn = jax.jit(self.ppo.learn)

    def _observe(self, obs) -> np.ndarray:
        return observe(self.backend, self.ppo, obs)

    def _mask(self) -> np.ndarray:
        return legal_mask(self.backend, self.ppo)

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
            ts = _time_step(self.backend.step(np.asarray(env_action)), self.backend)
            reward, done = ts.reward, ts.terminated | ts.truncated
            steps.append((obs, mask, action, logp, value, reward, done))
            ret += reward
            score += _score(self.score, ts)
            length += 1
            done_n += done.sum()
            ret_sum, score_sum, len_sum = (ret_sum + ret[done].sum(), score_sum + score[done].sum(),
                                           len_sum + length[done].sum())
            ret[done], score[done], length[done] = 0.0, 0.0, 0
            obs, mask = self._observe(ts.obs), self._mask()
        traj = Transition(*(jnp.asarray(np.stack(x)) for x in zip(*steps, strict=True)))
        params, opt_state, key, metrics = self._learn(s.params, s.opt_state, key, traj, obs, mask)
        metrics = dict(metrics, episodes=done_n, return_sum=ret_sum, score_sum=score_sum,
                       length_sum=len_sum)
        return HostState(params, opt_state, key, obs, mask, ret, score, length, s.update + 1), metrics


def evaluate_backend(ppo: PPO, params, backend: Backend, seed: int, *, greedy: bool = False,
                     score: ScoreFn | None = None, max_steps: int = 100_000,
                     progress=None) -> np.ndarray:
    """float64[backend.num_envs]: each env's first-episode score (``score(ts)`` summed; default
    the reward), the policy jitted and the backend stepped on the host from ``reset(seed)``
    (:func:`envport.episodes.first_episode_scores`). ``progress(k)`` gets the number of
    episodes that ended at each step. Raises
    :class:`~envport.errors.UnfinishedEpisodesError` after ``max_steps``."""
    policy = jax.jit(ppo.act)
    keys = [jax.random.PRNGKey(seed)]

    def act(obs):
        keys[0], k_act = jax.random.split(keys[0])
        return np.asarray(policy(params, observe(backend, ppo, obs), legal_mask(backend, ppo),
                                 None if greedy else k_act))

    def points(r):
        return _score(score, _time_step(r, backend))

    return first_episode_scores(backend, seed, act, points, max_steps=max_steps,
                                progress=progress, what="evaluation episodes")
