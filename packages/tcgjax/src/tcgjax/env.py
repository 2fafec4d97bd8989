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

import contextlib
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
from tcgjax.engine.step import select_rows
from tcgjax.engine.step import step as engine_step
from tcgjax.engine.step import step_batch as engine_step_batch
from tcgjax.reference import actions as A
from tcgjax.reference import deck_list
from tcgjax.reference.arrays import FIELDS
from tcgjax.reference.engine import IllegalActionError, WrongPlayerError
from tcgjax.reference.state import PH_OVER, TIE

_DECKS = deck_list()
_CARDS = np.stack([deck_arrays(d, d)[0][0] for d in _DECKS])  # (15, 20)
_TYPES = np.stack([deck_arrays(d, d)[1][0] for d in _DECKS])  # (15, 3)


_jit_mask = jax.jit(legal_mask)  # the host-side check: compiled once, not run op by op
_jit_masks = jax.jit(jax.vmap(legal_mask))


class InputError(EnvportError, TypeError):
    """A state or key that is not what ``reset``/``step`` take."""


OPPONENTS = ("random", "heuristic")


class UnknownOpponentError(EnvportError, ValueError):
    """A ``SingleAgentEnv`` opponent that is not one of ``OPPONENTS``."""


def _traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def _as_int32(x, shape: tuple, what: str, shape_note: str) -> jax.Array:
    """``x`` as int32 of ``shape``, refused with ``ActionError`` before any cast: a non-integer,
    a wrong shape or dtype, a value outside int32."""
    if isinstance(x, jax.core.Tracer):
        a = x
    else:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise ActionError(f"{what} must be an integer, got {type(x).__name__} ({e})") from None
        if a.dtype.kind in "OUSV":
            raise ActionError(f"{what} must be an integer, got {x!r}")
    if a.shape != shape:
        raise ActionError(f"{what} must be {shape_note}, got shape {a.shape}")
    if a.dtype == bool or not jnp.issubdtype(a.dtype, jnp.integer):
        raise ActionError(f"{what} must be an integer (int32), got dtype {a.dtype}")
    if isinstance(a, np.ndarray) and a.size and not (
        np.iinfo(np.int32).min <= a.min() and a.max() <= np.iinfo(np.int32).max
    ):
        bad = a.flat[np.flatnonzero((a < np.iinfo(np.int32).min) | (a > np.iinfo(np.int32).max))[0]]
        raise ActionError(f"{what} {int(bad)} does not fit int32: actions are "
                          f"0..{A.N_ACTIONS - 1}")
    return jnp.asarray(a).astype(jnp.int32)


def _as_action(action) -> jax.Array:
    return _as_int32(action, (), "action", "a scalar (the decider's action)")


def _as_actions(actions, n: int) -> jax.Array:
    """A batch of ``n`` actions, each checked as ``_as_action`` checks one."""
    return _as_int32(actions, (n,), "actions", f"of shape ({n},) (one per game)")


def _batch_size(state) -> int:
    if np.ndim(state["phase"]) != 1:
        raise InputError("step_batch takes a batch of states (from reset_batch or step_batch), "
                         f"got one of shape {np.shape(state['phase'])}: use step for one game")
    return int(np.shape(state["phase"])[0])


def _check_key(key, batch: bool = False) -> None:
    """One JAX PRNG key, typed or raw; with ``batch`` a batch of them
    (``jax.random.split(key, n)``)."""
    lead = 1 if batch else 0
    dtype = getattr(key, "dtype", None)
    shape = tuple(getattr(key, "shape", ()))
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        if len(shape) == lead:
            return
        if not batch:
            raise InputError(f"reset takes one key, got a batch of shape {shape} (vmap reset)")
    elif (dtype is not None and np.dtype(dtype) == np.uint32 and len(shape) == lead + 1
          and shape[-1] in (2, 4)):
        return
    got = type(key).__name__ if dtype is None else f"{dtype}{list(shape)}"
    if batch:
        raise InputError(f"reset_batch takes a batch of JAX PRNG keys "
                         f"(jax.random.split(key, n)), got {got}")
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


def check_actions(states, actions, player: int | None = None) -> None:
    """``check_action`` for every game of a batch: the masks in one call, the first game
    whose action is refused raises with ``check_action``'s message (and its index)."""
    a = np.asarray(actions)
    masks = np.asarray(_jit_masks(states))
    ok = (a >= 0) & (a < A.N_ACTIONS) & (np.asarray(states["phase"]) != PH_OVER)
    ok &= masks[np.arange(len(a)), np.clip(a, 0, A.N_ACTIONS - 1)]
    if player is not None:
        ok &= np.asarray(states["decider"]) == int(player)
    for i in np.flatnonzero(~ok)[:1]:
        try:
            check_action(jax.tree.map(lambda x, i=i: x[i], states), int(a[i]), player)
        except (IllegalActionError, WrongPlayerError) as e:
            raise type(e)(f"game {i}: {e}") from None


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


def advance_batch(states, actions, on):
    """``advance`` for a batch through the engine's batch-level step; a game where ``on`` is
    false (or that is over) keeps its state."""
    on = on & (states["phase"] != PH_OVER)
    new = engine_step_batch(states, actions)
    return select_rows(on, new, states)


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
        self._jit_step_batch = jax.jit(self._step_batch)
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

    def step_batch(self, states, actions):
        """``vmap(step)``'s results through the engine's batch-level step (``step_batch``)."""
        _check_state(states, "TcgEnv")
        a = _as_actions(actions, _batch_size(states))
        if self.checked and not _traced(states, a):
            check_actions(states, a)
        return self._jit_step_batch(states, a)

    def _step_batch(self, states, a):
        a, _ = jax.vmap(sanitize)(states, a)
        s = advance_batch(states, a, jnp.ones(a.shape, bool))
        return s, jax.vmap(self._timestep)(s)

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
        self._jit_step_batch = jax.jit(self._step_batch)
        self._jit_reset_batch = jax.jit(self._reset_batch)
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

    def _opponent_moves_batch(self, s, key, action=None):
        """``vmap(_opponent_moves)`` with the engine's batch-level step: the loop runs until
        every game reached the agent's decision or its end (as the vmapped loop does), and a
        game that already did keeps its state and key."""
        n = key.shape[0]
        first = jnp.full(n, action is not None)
        action = jnp.zeros(n, jnp.int32) if action is None else action

        def live(s, first):
            return (s["phase"] != PH_OVER) & (first | (s["decider"] != self.agent))

        def body(c):
            s, key, first = c
            on = live(s, first)
            split = jax.vmap(jax.random.split)(key)
            rest, k = split[:, 0], split[:, 1]
            a = jnp.where(first, action, jax.vmap(self._opponent_action)(s, k))
            key = select_rows(on & ~first, rest, key)
            return advance_batch(s, a, on), key, jnp.zeros(n, bool)

        s, key, _ = jax.lax.while_loop(lambda c: jnp.any(live(c[0], c[2])), body,
                                       (s, key, first))
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

    def _engine(self):
        """The context every reset and step of this env is traced in (``planted`` bends the
        engine there; one hook, so the single and the batch paths cannot disagree)."""
        return contextlib.nullcontext()

    def _reset(self, key):
        with self._engine():
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
        with self._engine():
            a, _ = sanitize(state.game, a)
            s, key = self._opponent_moves(state.game, state.key, a)
            return SingleState(s, key), self._timestep(s)

    def reset_batch(self, keys):
        """``vmap(reset)``'s results; the opponent's first decisions by the batch-level step."""
        _check_key(keys, batch=True)
        return self._jit_reset_batch(keys)

    def _reset_batch(self, keys):
        with self._engine():
            split = jax.vmap(jax.random.split)(keys)
            s, k2 = self._opponent_moves_batch(jax.vmap(new_state)(split[:, 0]), split[:, 1])
            return SingleState(s, k2), jax.vmap(self._timestep)(s)

    def step_batch(self, state, actions):
        """``vmap(step)``'s results: the agent's actions, then the opponent's decisions, each
        game's through the engine's batch-level step (``engine.step.step_batch``)."""
        if not isinstance(state, SingleState):
            raise InputError(f"SingleAgentEnv.step_batch takes a SingleState, "
                             f"got {type(state).__name__}")
        a = _as_actions(actions, _batch_size(state.game))
        if self.checked and not _traced(state, a):
            check_actions(state.game, a, self.agent)
        return self._jit_step_batch(state, a)

    def _step_batch(self, state, a):
        with self._engine():
            a, _ = jax.vmap(sanitize)(state.game, a)
            s, key = self._opponent_moves_batch(state.game, state.key, a)
            return SingleState(s, key), jax.vmap(self._timestep)(s)

    def observation(self, state):
        return observe(state.game, self.agent)
