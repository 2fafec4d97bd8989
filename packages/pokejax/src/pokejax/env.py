"""Gen 1 random battles as envport envs.

* ``BattleEnv`` — the two-player env. ``reset(key)`` samples two teams with the JAX sampler
  (``teams.sample_team``) and a battle seed, and builds Showdown's start state
  (``start.new_battle``): no Showdown involved. ``step(state, actions int32[2])`` is one
  decision point of Showdown's request loop (``battle.step``): both sides choose at once;
  during a forced switch only the forced side(s) choose and the other side's action is
  ignored. ``TimeStep``: ``obs`` float32[2, OBS_SIZE] (player 0 = p1, 1 = p2; see
  ``observe``), ``legal_mask`` bool[2, 9] (a row of False: that side waits), ``reward``
  float32[2] (+1 winner, -1 loser, 0 otherwise and on a tie), ``terminated`` when the battle
  is over. Truncation is left to ``envport.wrappers.EpisodeLimitWrapper``.
* ``SingleAgentEnv`` — one side (``agent_side``) against a built-in opponent from
  ``opponents`` (``"random"`` or ``"greedy"``). Decision points where the agent has nothing to
  choose (the opponent's forced switch) are played inside the same ``step``, so every step
  offers the agent at least one legal action until the battle ends. ``obs`` float32[OBS_SIZE],
  ``legal_mask`` bool[9], scalar reward and flags. ``hp_weight`` (default 0: the win alone)
  adds a dense, potential-based part for training: ``hp_weight`` times the step's change of
  (the agent's summed HP fractions minus the opponent's), poke-env's usual shaping. With
  ``hp_weight <= 1/6`` one decision moves it by at most 1/3 (two Pokémon fainting at most),
  so the reward of the step that ends the battle stays above 1/2 for a win, below 1/2 for a tie
  and below 0 for a loss (``train.won`` relies on it).

Actions: 0-3 move slot, 4-8 "switch 2".."switch 6" (``choices``). Wrong shape or dtype raises
``envport.ActionError`` (also under ``jit``: shapes and dtypes are static). An *illegal* action
(e.g. a move with no PP, a switch to a fainted Pokémon):

* ``checked=True`` (the default for the two-player env) and concrete (not traced) inputs:
  ``legal.IllegalActionError`` naming the side, the action and the legal ones;
* under ``jit`` (or ``checked=False``): the side's first legal action is played instead and
  ``state.illegal`` records which sides were corrected at the last step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport import Box, Discrete, Env, EnvSpec, TimeStep
from envport.errors import ActionError, EnvportError
from pokejax import __version__, battle, legal, observe, opponents, start, teams
from pokejax.battle import Battle
from pokejax.choices import NUM_ACTIONS


class BattleState(NamedTuple):
    battle: Battle
    revealed: observe.Revealed
    illegal: jax.Array  # bool[2]: the side's action at the last step was illegal and replaced


class SingleState(NamedTuple):
    inner: BattleState
    key: jax.Array  # the opponent's randomness


def _is_traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


class InputError(EnvportError, TypeError):
    """A state or key that is not what ``reset``/``step`` take."""


INT32 = np.iinfo(np.int32)


def _as_actions(action, shape: tuple[int, ...]) -> jax.Array:
    """``action`` as int32, checked *before* any cast: an integer array (not bool, float,
    string) of ``shape`` whose values fit int32, so no value can wrap onto another action.
    Under ``jit`` only what is static (shape, dtype) can be checked."""
    if isinstance(action, jax.core.Tracer):
        a = action
    else:
        try:
            a = np.asarray(action)
        except (TypeError, ValueError) as e:
            raise ActionError(f"actions must be an array of integers, got {type(action).__name__}"
                              f" ({e})") from None
        if a.dtype.kind in "OUSV":  # objects, strings: no integer actions in there
            raise ActionError(f"actions must be an array of integers, got {action!r}")
    if a.shape != shape:
        raise ActionError(f"actions must have shape {shape}, got {a.shape}")
    if a.dtype == bool or not jnp.issubdtype(a.dtype, jnp.integer):
        raise ActionError(f"actions must be integers (int32), got dtype {a.dtype}")
    if isinstance(a, np.ndarray):
        out = (a < INT32.min) | (a > INT32.max)
        if out.any():
            i = int(np.flatnonzero(out.ravel())[0])
            raise ActionError(f"action {a.ravel()[i]} (dtype {a.dtype}) does not fit int32: "
                              f"actions are 0..{NUM_ACTIONS - 1}")
    return jnp.asarray(a).astype(jnp.int32)


def _check_key(key) -> None:
    """``reset`` takes a JAX PRNG key: ``jax.random.PRNGKey(seed)`` (uint32[2], or [4] with
    the rbg implementation) or ``jax.random.key(seed)``."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        if key.shape != ():
            raise InputError(f"reset takes one key, got a batch of keys of shape {key.shape} "
                             "(vmap reset for a batch)")
        return
    if dtype is None or np.dtype(dtype) != np.uint32 or tuple(key.shape) not in ((2,), (4,)):
        got = type(key).__name__ if dtype is None else f"{np.dtype(dtype)}{list(key.shape)}"
        raise InputError(f"reset takes a JAX PRNG key (jax.random.PRNGKey(seed), uint32[2], or "
                         f"jax.random.key(seed)), got {got}")


def _check_state(state, kind: type, env: str) -> None:
    if not isinstance(state, kind):
        raise InputError(f"{env}.step takes the state that reset/step returned (a "
                         f"{kind.__name__}), got {type(state).__name__}"
                         + (" (the TimeStep, not the state?)" if isinstance(state, TimeStep)
                            else ""))


def _sanitize(b: Battle, actions: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Illegal actions -> the side's first legal action; (actions, bool[2] corrected)."""
    mask = legal.legal_mask(b)
    a = jnp.clip(actions, 0, NUM_ACTIONS - 1)
    ok = jnp.take_along_axis(mask, a[:, None], axis=1)[:, 0] & (actions == a)
    has = jnp.any(mask, axis=1)
    first = jnp.argmax(mask, axis=1).astype(jnp.int32)
    bad = has & ~ok
    return jnp.where(has, jnp.where(ok, actions, first), -1).astype(jnp.int32), bad


def _rewards(b: Battle) -> jax.Array:
    won = jnp.stack([b.winner == 1, b.winner == 2])
    lost = jnp.stack([b.winner == 2, b.winner == 1])
    return jnp.where(b.ended, won.astype(jnp.float32) - lost.astype(jnp.float32), 0.0)


MAX_HP_WEIGHT = 1 / 6


def _hp_balance(b: Battle, side: int) -> jax.Array:
    """``side``'s summed HP fractions minus its opponent's (in [-6, 6])."""
    frac = jnp.maximum(b.team.hp, 0) / jnp.maximum(b.team.maxhp, 1)
    return (jnp.sum(frac[side]) - jnp.sum(frac[1 - side])).astype(jnp.float32)


def _advance(s: BattleState, actions: jax.Array) -> BattleState:
    actions, bad = _sanitize(s.battle, actions)
    after = battle.step(s.battle, actions)
    return BattleState(after, observe.update(s.revealed, s.battle, after), bad)


def new_state(key: jax.Array) -> BattleState:
    """Two sampled teams and a random battle seed, started as Showdown starts them."""
    k1, k2, k3 = jax.random.split(key, 3)
    t1, t2 = teams.sample_team(k1), teams.sample_team(k2)
    seed = jax.random.randint(k3, (4,), 0, 0x10000, dtype=jnp.int32).astype(jnp.uint32)
    return BattleState(start.new_battle(t1, t2, seed), observe.initial(t1, t2), jnp.zeros(2, bool))


class BattleEnv(Env):
    """Two players, simultaneous choices (see the module docstring)."""

    def __init__(self, checked: bool = True):
        self.checked = checked
        self._spec = EnvSpec(
            id="pokejax-gen1randombattle", version=__version__,
            observation_space=Box(-1.0, 1.0, (2, observe.OBS_SIZE)),
            action_space=Discrete(NUM_ACTIONS, shape=(2,)), num_agents=2,
            metadata={"format": "gen1randombattle", "obs_layout": observe.LAYOUT})

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _timestep(self, s: BattleState) -> TimeStep:
        obs = jnp.stack([observe.observe(s.battle, s.revealed, p).features for p in (0, 1)])
        return TimeStep(obs=obs, reward=_rewards(s.battle), terminated=s.battle.ended,
                        truncated=jnp.bool_(False), legal_mask=legal.legal_mask(s.battle))

    def reset(self, key: jax.Array) -> tuple[BattleState, TimeStep]:
        _check_key(key)
        s = new_state(key)
        return s, self._timestep(s)

    def step(self, state: BattleState, action) -> tuple[BattleState, TimeStep]:
        _check_state(state, BattleState, "BattleEnv")
        actions = _as_actions(action, (2,))
        if self.checked and not _is_traced(state, actions):
            legal.check_actions(state.battle, np.asarray(actions))
        s = _advance(state, actions)
        return s, self._timestep(s)

    def observation(self, state: BattleState) -> jax.Array:
        return self._timestep(state).obs


class SingleAgentEnv(Env):
    """``agent_side`` (0 = p1, 1 = p2) against ``opponent`` (``"random"``, ``"greedy"`` or a
    ``policy(key, battle, side) -> action``)."""

    def __init__(self, opponent="random", agent_side: int = 0, checked: bool = False,
                 hp_weight: float = 0.0):
        if agent_side not in (0, 1):
            raise ValueError(f"agent_side must be 0 (p1) or 1 (p2), got {agent_side!r}")
        if not 0.0 <= hp_weight <= MAX_HP_WEIGHT:
            raise ValueError(f"hp_weight must be in [0, 1/6], got {hp_weight!r}: above 1/6 a "
                             "step's HP change could outweigh the win")
        if isinstance(opponent, str):
            if opponent not in opponents.POLICIES:
                raise ValueError(f"unknown opponent {opponent!r}: one of {sorted(opponents.POLICIES)} "
                                 "or a policy(key, battle, side) -> action")
            name, opponent = opponent, opponents.POLICIES[opponent]
        else:
            name = getattr(opponent, "__name__", "custom")
        self.opponent, self.agent_side, self.checked = opponent, agent_side, checked
        self.hp_weight = float(hp_weight)
        self._spec = EnvSpec(
            id="pokejax-gen1randombattle-vs-" + name, version=__version__,
            observation_space=Box(-1.0, 1.0, (observe.OBS_SIZE,)),
            action_space=Discrete(NUM_ACTIONS), num_agents=1,
            metadata={"format": "gen1randombattle", "opponent": name, "agent_side": agent_side,
                      "hp_weight": self.hp_weight, "obs_layout": observe.LAYOUT})

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _timestep(self, s: BattleState) -> TimeStep:
        me = self.agent_side
        return TimeStep(obs=observe.observe(s.battle, s.revealed, me).features,
                        reward=_rewards(s.battle)[me], terminated=s.battle.ended,
                        truncated=jnp.bool_(False), legal_mask=legal.legal_mask(s.battle)[me])

    def reset(self, key: jax.Array) -> tuple[SingleState, TimeStep]:
        _check_key(key)
        k_battle, k_opp = jax.random.split(key)
        s = new_state(k_battle)  # turn 1 is a normal turn: the agent has a choice
        return SingleState(s, k_opp), self._timestep(s)

    def _skip_waiting(self, s: BattleState, key, action, first: bool):
        """Play the agent's ``action`` (when ``first``), then every decision point where the agent
        waits, with the opponent's choices; one traced ``battle.step``."""
        me, opp = self.agent_side, 1 - self.agent_side

        def waiting(s):
            return ~s.battle.ended & ~jnp.any(legal.legal_mask(s.battle)[me])

        def body(carry):
            s, key, go_first, corrected = carry
            key, sub = jax.random.split(key)
            a_opp = self.opponent(sub, s.battle, opp)
            acts = [jnp.where(go_first, action, -1), a_opp]
            acts = jnp.stack(acts if me == 0 else acts[::-1]).astype(jnp.int32)
            s = _advance(s, acts)
            return s, key, jnp.bool_(False), corrected | (go_first & s.illegal[me])

        def cond(carry):
            s, _, go_first, _ = carry
            return go_first | waiting(s)

        init = (s, key, jnp.bool_(first), jnp.bool_(False))
        s, key, _, corrected = jax.lax.while_loop(cond, body, init)
        return s._replace(illegal=s.illegal.at[me].set(corrected)), key

    def step(self, state: SingleState, action) -> tuple[SingleState, TimeStep]:
        _check_state(state, SingleState, "SingleAgentEnv")
        a = _as_actions(action, ())
        s = state.inner
        if self.checked and not _is_traced(state, a):
            acts = np.zeros(2, np.int32)
            acts[self.agent_side] = int(a)
            mask = np.asarray(legal.legal_mask(s.battle))
            other = 1 - self.agent_side
            acts[other] = int(np.argmax(mask[other]))  # the opponent's turn is not being judged
            legal.check_actions(s.battle, acts)
        live = ~s.battle.ended
        s2, key = self._skip_waiting(s, state.key, a, first=True)
        s2 = jax.tree.map(lambda x, y: jnp.where(live, x, y), s2, s)  # an ended battle stays
        ts = self._timestep(s2)
        if self.hp_weight:
            me = self.agent_side
            gain = _hp_balance(s2.battle, me) - _hp_balance(s.battle, me)
            ts = ts._replace(reward=ts.reward + np.float32(self.hp_weight) * gain)
        return SingleState(s2, jnp.where(live, key, state.key)), ts

    def observation(self, state: SingleState) -> jax.Array:
        return self._timestep(state.inner).obs
