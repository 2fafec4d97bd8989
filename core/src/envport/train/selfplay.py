"""Self-play: a two-player env's games as rows of single-agent experience for PPO.

``G`` games give ``2G`` rows: row ``2g + p`` is player ``p`` of game ``g``, observing its own
view and choosing from its own legal mask. Both players act from the policy being trained, so
each update learns from both sides of every game. The env must be simultaneous-move, as
pokejax's ``BattleEnv``: observations ``[2, ...]``, actions ``[2]`` (``Discrete(n,
shape=(2,))``), rewards ``[2]``, one ``terminated``/``truncated`` per game and a legal mask
``[2, n]``.

A player with nothing to choose on a step (its mask all False, e.g. while the other side
makes a forced switch) still fills its row: the masked logits are all equal there, so the
sampled action is uniform, the env ignores it, and the row adds nothing to the policy
gradient (its log-probability does not depend on the parameters) while its value target
still trains the critic. No change to the PPO loss is needed.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from envport.env import Env
from envport.errors import EnvportError
from envport.types import Discrete, EnvSpec, TimeStep
from envport.wrappers import BatchedAutoResetWrapper

PLAYERS = 2


class SelfPlayError(EnvportError, ValueError):
    """The env or config cannot be trained by self-play."""


def player_spec(spec: EnvSpec) -> EnvSpec:
    """One player's view of a two-player simultaneous-move spec."""
    obs, act = spec.observation_space, spec.action_space
    if spec.num_agents != PLAYERS:
        raise SelfPlayError(f"self-play needs a two-player env; {spec.id} has "
                            f"{spec.num_agents} player(s)")
    if not isinstance(act, Discrete) or tuple(act.shape) != (PLAYERS,):
        raise SelfPlayError(f"self-play needs one discrete action per player (Discrete(n, "
                            f"shape=(2,))); {spec.id} has {act!r}")
    if tuple(obs.shape[:1]) != (PLAYERS,):
        raise SelfPlayError(f"self-play needs observations [2, ...] (one per player); "
                            f"{spec.id} has shape {tuple(obs.shape)}")
    return EnvSpec(id=f"{spec.id}/self-play", version=spec.version,
                   observation_space=dataclasses.replace(obs, shape=tuple(obs.shape[1:])),
                   action_space=dataclasses.replace(act, shape=()), num_agents=1,
                   metadata=spec.metadata)


class SelfPlayBatch:
    """``num_rows // 2`` auto-resetting games as ``num_rows`` rows; the batched-env interface
    PPO's rollout uses (``reset(keys)``, ``step_with_final(state, actions)``)."""

    def __init__(self, env: Env, num_rows: int):
        self.spec = player_spec(env.spec)
        if num_rows % PLAYERS:
            raise SelfPlayError(f"self-play needs an even number of envs (two rows per game), "
                                f"got {num_rows}")
        self.games = num_rows // PLAYERS
        self.batched = BatchedAutoResetWrapper(env)

    def _rows(self, ts: TimeStep) -> TimeStep:
        def per_player(x):  # [G, 2, ...] -> [2G, ...]
            return x.reshape((self.games * PLAYERS,) + x.shape[2:])

        def per_game(x):  # [G] -> [2G], both players share the game's end
            return jnp.repeat(x, PLAYERS)

        mask = None if ts.legal_mask is None else per_player(ts.legal_mask)
        return TimeStep(per_player(ts.obs), per_player(jnp.asarray(ts.reward, jnp.float32)),
                        per_game(ts.terminated), per_game(ts.truncated), mask)

    def reset(self, keys: jax.Array):
        state, ts = self.batched.reset(keys[:: PLAYERS])
        return state, self._rows(ts)

    def step_with_final(self, state, actions: jax.Array):
        state, ts, final_obs = self.batched.step_with_final(
            state, actions.reshape(self.games, PLAYERS))
        rows = self._rows(ts)
        return state, rows, final_obs.reshape((self.games * PLAYERS,) + final_obs.shape[2:])
