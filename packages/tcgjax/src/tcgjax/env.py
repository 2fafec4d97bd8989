"""The envport envs of tcgjax (JAX engine, docs/tcgjax.md "Envs").

* ``TcgEnv``: two players, turn-based. The state is the engine's array dict (the reference's
  layout) plus nothing else; ``reset(key)`` draws a deck pairing (15 x 15) and a game seed from the
  key. ``step(state, action)`` applies the decider's action (0..75, docs "Action enumeration");
  ``TimeStep.obs`` is (2, OBS_SIZE), each player's §18 view, ``reward`` (2,) is +1 / -1 at a win,
  0 otherwise (and at a tie), ``player`` the decider, ``legal_mask`` the decider's mask.
* ``SingleAgentEnv``: player ``agent`` against a built-in opponent that plays its decisions in
  between (``"random"``: uniform over the legal actions, from the key in the state;
  ``"heuristic"``: the reference's ``heuristic_chooser``, decision for decision,
  ``engine.heuristic``). Another name raises ``UnknownOpponentError``.

Bad input raises (outside jit): an action that is not an int32-compatible scalar integer
(``ActionError``), an illegal action or one after the game ended (``IllegalActionError``), an
action for a player who is not the decider (``WrongPlayerError``, when ``player=`` is given), a
state or key of the wrong kind (``InputError``). Under jit an illegal action is replaced by the
decider's first legal action (nothing is silently clamped outside jit).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.env import Env
from envport.errors import ActionError, EnvportError
from envport.types import Box, Discrete, EnvSpec, TimeStep
from tcgjax import __version__
from tcgjax.engine.heuristic import heuristic_action
from tcgjax.engine.legal import legal_mask
from tcgjax.engine.observe import OBS_SIZE, observe
from tcgjax.engine.setup import deck_arrays, new_game
from tcgjax.engine.step import step as engine_step
from tcgjax.reference import actions as A
from tcgjax.reference import deck_list
from tcgjax.reference.arrays import FIELDS
from tcgjax.reference.engine import IllegalActionError, WrongPlayerError
from tcgjax.reference.state import PH_OVER, TIE

_DECKS = deck_list()
_CARDS = np.stack([deck_arrays(d, d)[0][0] for d in _DECKS])  # (15, 20)
_TYPES = np.stack([deck_arrays(d, d)[1][0] for d in _DECKS])  # (15, 3)


_jit_mask = jax.jit(legal_mask)  # the host-side check: compiled once, not run op by op


class InputError(EnvportError, TypeError):
    """A state or key that is not what ``reset``/``step`` take."""


OPPONENTS = ("random", "heuristic")


class UnknownOpponentError(EnvportError, ValueError):
    """A ``SingleAgentEnv`` opponent that is not one of ``OPPONENTS``."""


def _traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def _as_action(action) -> jax.Array:
    if isinstance(action, jax.core.Tracer):
        a = action
    else:
        try:
            a = np.asarray(action)
        except (TypeError, ValueError) as e:
            raise ActionError(
                f"action must be an integer, got {type(action).__name__} ({e})"
            ) from None
        if a.dtype.kind in "OUSV":
            raise ActionError(f"action must be an integer, got {action!r}")
    if a.shape != ():
        raise ActionError(f"action must be a scalar (the decider's action), got shape {a.shape}")
    if a.dtype == bool or not jnp.issubdtype(a.dtype, jnp.integer):
        raise ActionError(f"action must be an integer (int32), got dtype {a.dtype}")
    if isinstance(a, np.ndarray) and not (
        np.iinfo(np.int32).min <= int(a) <= np.iinfo(np.int32).max
    ):
        raise ActionError(f"action {int(a)} does not fit int32: actions are 0..{A.N_ACTIONS - 1}")
    return jnp.asarray(a).astype(jnp.int32)


def _check_key(key) -> None:
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        if key.shape != ():
            raise InputError(f"reset takes one key, got a batch of shape {key.shape} (vmap reset)")
        return
    if dtype is None or np.dtype(dtype) != np.uint32 or tuple(key.shape) not in ((2,), (4,)):
        got = type(key).__name__ if dtype is None else f"{np.dtype(dtype)}{list(key.shape)}"
        raise InputError(f"reset takes a JAX PRNG key (jax.random.PRNGKey(seed)), got {got}")


def _check_state(state, env: str) -> None:
    if not isinstance(state, dict) or set(state) != set(FIELDS):
        got = type(state).__name__
        if isinstance(state, TimeStep):
            got += " (the TimeStep, not the state?)"
        raise InputError(f"{env}.step takes the state that reset/step returned, got {got}")


def check_action(state, action: int, player: int | None = None) -> None:
    """Raise for an action the decider may not take now (concrete states only)."""
    if int(state["phase"]) == PH_OVER:
        raise IllegalActionError("the game is over; no action is legal")
    decider = int(state["decider"])
    if player is not None and int(player) != decider:
        raise WrongPlayerError(f"it is P{decider}'s decision, not P{int(player)}'s")
    if not 0 <= action < A.N_ACTIONS:
        raise IllegalActionError(f"action {action} out of range 0..{A.N_ACTIONS - 1}")
    mask = np.asarray(_jit_mask(state))
    if not mask[action]:
        raise IllegalActionError(
            f"action {action} ({A.describe(action)}) is not legal for P{decider} now;"
            f" legal: {np.flatnonzero(mask).tolist()}"
        )


def sanitize(state, action):
    """(action, was illegal): an illegal action becomes the first legal one (jit path)."""
    mask = legal_mask(state)
    a = jnp.clip(action, 0, A.N_ACTIONS - 1)
    ok = mask[a] & (a == action)
    return jnp.where(ok, action, jnp.argmax(mask)).astype(jnp.int32), ~ok


def advance(state, action):
    """One engine step, a no-op once the game is over."""
    over = state["phase"] == PH_OVER
    new = engine_step(state, action)
    return jax.tree.map(lambda n, o: jnp.where(over, o, n), new, state)


def rewards(state):
    w = state["winner"]
    done = (state["phase"] == PH_OVER) & (w != TIE) & (w >= 0)
    r = jnp.where(jnp.arange(2) == w, 1.0, -1.0)
    return jnp.where(done, r, 0.0).astype(jnp.float32)


def new_state(key):
    """A random pairing of decks.json's 15 decks and a random game seed."""
    k1, k2, k3 = jax.random.split(key, 3)
    a = jax.random.randint(k1, (), 0, len(_DECKS))
    b = jax.random.randint(k2, (), 0, len(_DECKS))
    seed = jax.random.bits(k3, (), jnp.uint32)
    cards = jnp.stack([jnp.asarray(_CARDS)[a], jnp.asarray(_CARDS)[b]])
    types = jnp.stack([jnp.asarray(_TYPES)[a], jnp.asarray(_TYPES)[b]])
    return new_game(cards, types, seed)


class TcgEnv(Env):
    """Two players, turn-based (see the module docstring)."""

    def __init__(self, checked: bool = True):
        self.checked = checked
        # one compiled step; the checks above it run on the host (concrete states only)
        self._jit_step = jax.jit(self._step)
        self._jit_reset = jax.jit(self._reset)
        self._spec = EnvSpec(
            id="tcgjax-pocket",
            version=__version__,
            observation_space=Box(-1.0, 1000.0, (2, OBS_SIZE)),
            action_space=Discrete(A.N_ACTIONS),
            num_agents=2,
            metadata={"turn_based": True, "decks": [d.id for d in _DECKS]},
        )

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _timestep(self, s) -> TimeStep:
        obs = jnp.stack([observe(s, 0), observe(s, 1)])
        return TimeStep(
            obs=obs,
            reward=rewards(s),
            terminated=s["phase"] == PH_OVER,
            truncated=jnp.bool_(False),
            legal_mask=legal_mask(s),
            player=s["decider"],
        )

    def reset(self, key):
        _check_key(key)
        return self._jit_reset(key)

    def _reset(self, key):
        s = new_state(key)
        return s, self._timestep(s)

    def step(self, state, action, player=None):
        _check_state(state, "TcgEnv")
        a = _as_action(action)
        if self.checked and not _traced(state, a):
            check_action(state, int(a), player)
        return self._jit_step(state, a)

    def _step(self, state, a):
        a, _ = sanitize(state, a)
        s = advance(state, a)
        return s, self._timestep(s)

    def observation(self, state):
        return self._timestep(state).obs


class SingleState(NamedTuple):
    game: dict
    key: jax.Array  # the opponent's randomness


class SingleAgentEnv(Env):
    """Player ``agent`` against a built-in opponent (``"random"`` or ``"heuristic"``)."""

    def __init__(self, opponent: str = "random", agent: int = 0, checked: bool = True):
        if not isinstance(opponent, str) or opponent not in OPPONENTS:
            raise UnknownOpponentError(
                f"unknown opponent {opponent!r}: the built-in opponents are "
                f"{', '.join(map(repr, OPPONENTS))}"
            )
        if agent not in (0, 1):
            raise ValueError(f"agent must be 0 or 1, got {agent!r}")
        self.opponent, self.agent, self.checked = opponent, agent, checked
        self._jit_step = jax.jit(self._step)
        self._jit_reset = jax.jit(self._reset)
        self._spec = EnvSpec(
            id=f"tcgjax-pocket-vs-{opponent}",
            version=__version__,
            observation_space=Box(-1.0, 1000.0, (OBS_SIZE,)),
            action_space=Discrete(A.N_ACTIONS),
            metadata={"opponent": opponent, "agent": agent},
        )

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _opponent_action(self, s, key):
        """The opponent's action in ``s`` (its decision); ``key`` for a random one."""
        if self.opponent == "heuristic":
            return heuristic_action(s)
        m = legal_mask(s)
        return jax.random.categorical(key, jnp.where(m, 0.0, -jnp.inf)).astype(jnp.int32)

    def _opponent_moves(self, s, key, action=None):
        """The agent's ``action`` (when given), then the opponent's decisions until the agent's
        next one or the end: one loop, so the engine's step is traced once (compile time); a
        key is split off for each opponent decision only."""
        first = jnp.asarray(action is not None)
        action = jnp.int32(0) if action is None else action

        def cond(c):
            s, _, first = c
            return (s["phase"] != PH_OVER) & (first | (s["decider"] != self.agent))

        def body(c):
            s, key, first = c
            rest, k = jax.random.split(key)
            a = jnp.where(first, action, self._opponent_action(s, k))
            return engine_step(s, a), jnp.where(first, key, rest), jnp.bool_(False)

        s, key, _ = jax.lax.while_loop(cond, body, (s, key, first))
        return s, key

    def _timestep(self, s) -> TimeStep:
        return TimeStep(
            obs=observe(s, self.agent),
            reward=rewards(s)[self.agent],
            terminated=s["phase"] == PH_OVER,
            truncated=jnp.bool_(False),
            legal_mask=legal_mask(s),
        )

    def reset(self, key):
        _check_key(key)
        return self._jit_reset(key)

    def _reset(self, key):
        k1, k2 = jax.random.split(key)
        s, k2 = self._opponent_moves(new_state(k1), k2)
        return SingleState(s, k2), self._timestep(s)

    def step(self, state, action):
        if not isinstance(state, SingleState):
            raise InputError(f"SingleAgentEnv.step takes a SingleState, got {type(state).__name__}")
        a = _as_action(action)
        if self.checked and not _traced(state, a):
            check_action(state.game, int(a), self.agent)
        return self._jit_step(state, a)

    def _step(self, state, a):
        a, _ = sanitize(state.game, a)
        s, key = self._opponent_moves(state.game, state.key, a)
        return SingleState(s, key), self._timestep(s)

    def observation(self, state):
        return observe(state.game, self.agent)
