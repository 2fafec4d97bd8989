"""The single-agent task of ``tcgjax.env.SingleAgentEnv`` played by the Python reference: the
reference side of L4 with trained policies (``tcgjax.port``'s ``PolicyTransfer``).

``ReferenceSingleAgent(num_envs, opponent)`` is a numpy :class:`~envport.backend.Backend`: each
env is a ``tcgjax.reference`` game in which the agent (player ``agent``) acts and the opponent's
decisions are played in between by the reference's own chooser (``random_chooser`` or
``heuristic_chooser``). The same task as the JAX env, from the reference alone:

* observation: the §18 vector of ``tcgjax.engine.observe``, built here in numpy from the
  reference's array layout (:func:`observe_vector`, tested equal to the JAX one);
* actions: the 76-action enumeration (``tcgjax.reference.actions``); ``legal_mask()`` is the
  reference's mask; an illegal action raises ``IllegalActionError`` (nothing is replaced);
* reward: +1 / -1 to the agent on the step its game is won / lost, 0 otherwise and at a tie;
* episodes: a deck pairing drawn uniformly from decks.json's 15 x 15 and a uniform 32-bit game
  seed per game (the JAX env's distribution, from this backend's own ``numpy`` generator);
  a finished game is replaced by a new one at once (auto-reset: the observation returned with
  ``terminated`` is the new game's first).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from envport.backend import Backend, StepResult
from envport.types import Box, Discrete, EnvSpec
from tcgjax import __version__
from tcgjax.engine.observe import OBS_SIZE
from tcgjax.env import UnknownOpponentError  # one error for both engines' opponent names
from tcgjax.reference import actions as A
from tcgjax.reference import deck_list, legal_actions, new_game
from tcgjax.reference import step as ref_step
from tcgjax.reference.arrays import FIELDS, from_arrays, to_arrays
from tcgjax.reference.choosers import heuristic_chooser, random_chooser
from tcgjax.reference.engine import IllegalActionError
from tcgjax.reference.state import PH_SETUP, TIE

F32 = np.float32
CHOOSERS = {"random": random_chooser, "heuristic": heuristic_chooser}


def top_cards(a: dict) -> np.ndarray:
    """(2, 4) top card of each slot, -1 where empty (numpy, from the array layout)."""
    n = np.maximum(a["pk_stack_n"] - 1, 0)
    tops = np.take_along_axis(a["pk_stack"], n[..., None], axis=-1)[..., 0]
    return np.where(a["pk_present"], tops, -1)


def _side(a: dict, q: int, tops: np.ndarray, hide: bool) -> np.ndarray:
    board = [
        a["pk_present"][q],
        tops[q],
        a["pk_stack_n"][q],
        a["pk_damage"][q],
        a["pk_tool"][q],
        a["pk_poisoned"][q],
        a["pk_burned"][q],
        a["pk_status"][q],
        a["pk_played_turn"][q] == a["turn"],
        a["pk_ability_used"][q],
    ]
    # hidden (setup, the opponent's placement): the top card and Tool read -1, the rest 0
    parts = [
        np.full(4, -1.0 if i in (1, 4) else 0.0, F32) if hide else np.asarray(x, F32)
        for i, x in enumerate(board)
    ]
    parts.append(np.zeros(32, F32) if hide else a["pk_energy"][q].astype(F32).reshape(-1))
    effects = a["pk_effects"][q]
    parts.append(np.zeros(effects.size, F32) if hide else effects.astype(F32).reshape(-1))
    hand_n = a["hand_n"][q] + (int(a["pk_present"][q].sum()) if hide else 0)
    scalars = np.array(
        [
            a["points"][q],
            a["deck_n"][q],
            hand_n,
            a["discard_n"][q],
            a["zone_current"][q],
            a["zone_next"][q],
            a["supporter_played"][q],
            a["retreated"][q],
            a["zone_attached"][q],
            a["setup_done"][q],
        ],
        F32,
    )
    return np.concatenate(
        parts
        + [
            scalars,
            a["discard"][q].astype(F32),
            a["discarded_energy"][q].astype(F32),
            a["energy_types"][q].astype(F32),
            a["player_effects"][q].astype(F32).reshape(-1),
        ]
    )


def observe_vector(a: dict, player: int) -> np.ndarray:
    """float32[OBS_SIZE]: what ``player`` may know (§18) of the array-layout state ``a``, the
    vector ``tcgjax.engine.observe.observe`` gives (observer first)."""
    me, opp = player, 1 - player
    tops = top_cards(a)
    setup = int(a["phase"]) == PH_SETUP
    general = np.array(
        [
            a["turn"],
            a["phase"],
            a["choice"],
            a["decider"] == me,
            a["first_player"] == me,
            a["retreat_target"],
            a["retreat_left"],
            a["winner"] == me,
            a["winner"] == opp,
            a["ex_present"],
            a["ex_kind"],
            a["ex_player"] == me,
            a["ex_card"],
            a["ex_attack"],
            a["ex_phase"],
            a["ex_units_left"],
        ],
        F32,
    )
    own = np.concatenate([a["hand"][me], a["deck_cards"][me]]).astype(F32)
    out = np.concatenate(
        [
            general,
            a["ex_addr"].astype(F32),
            own,
            _side(a, me, tops, False),
            _side(a, opp, tops, setup),
        ]
    )
    assert out.shape == (OBS_SIZE,), out.shape
    return out


SPEC = EnvSpec(
    id="tcgjax-pocket-reference-single",
    version=__version__,
    observation_space=Box(-1.0, 1000.0, (OBS_SIZE,)),
    action_space=Discrete(A.N_ACTIONS),
    metadata={"engine": "tcgjax.reference", "actions": "tcgjax.reference.actions (76)"},
)


class ReferenceSingleAgent(Backend):
    """``num_envs`` reference games, the agent against ``opponent`` (see the module).

    ``episodes_per_env`` (default None: auto-reset for ever, what training needs): an env that
    has ended that many games since ``reset`` starts no new one and idles, so an evaluation that
    counts each env's first game only does not pay for games nobody counts: its observation
    stays its last game's final one, reward 0, flags False, its ``legal_mask()`` row is all
    True and its action is ignored."""

    name = "tcgjax.reference single-agent"
    spec = SPEC
    supports_load = True

    def __init__(
        self,
        num_envs: int = 1,
        opponent: str = "random",
        agent: int = 0,
        episodes_per_env: int | None = None,
    ):
        if not isinstance(opponent, str) or opponent not in CHOOSERS:
            raise UnknownOpponentError(
                f"unknown opponent {opponent!r}: the reference's choosers are "
                f"{', '.join(map(repr, CHOOSERS))}"
            )
        if agent not in (0, 1):
            raise ValueError(f"agent must be 0 or 1, got {agent!r}")
        if episodes_per_env is not None and int(episodes_per_env) < 1:
            raise ValueError(f"episodes_per_env must be None or >= 1, got {episodes_per_env!r}")
        self.num_envs, self.opponent, self.agent = int(num_envs), opponent, agent
        self.episodes_per_env = None if episodes_per_env is None else int(episodes_per_env)
        self.spec = dataclasses.replace(SPEC, metadata={**SPEC.metadata, "opponent": opponent})
        self.name = f"tcgjax.reference single-agent vs {opponent}"
        n = self.num_envs
        self.games: list = [None] * n
        self._choosers: list = [None] * n
        self._legal: list[list[int]] = [[] for _ in range(n)]
        self._obs = np.zeros((n, OBS_SIZE), F32)
        self.episodes = np.zeros(n, np.int64)
        self.idle = np.zeros(n, bool)
        self._rng = np.random.default_rng(0)

    # -- one game ---------------------------------------------------------------------------
    def _new(self, i: int) -> None:
        decks = deck_list()
        a, b = int(self._rng.integers(15)), int(self._rng.integers(15))
        seed, cseed = int(self._rng.integers(2**32)), int(self._rng.integers(2**63))
        self.games[i] = new_game(decks[a], decks[b], seed, log_enabled=False)
        self._choosers[i] = CHOOSERS[self.opponent](cseed)
        self._advance(i)

    def _advance(self, i: int) -> None:
        """The opponent's decisions until the agent's (or the end), then the agent's view."""
        st, choose = self.games[i], self._choosers[i]
        while not st.done and st.decider != self.agent:
            ref_step(st, choose(st, legal_actions(st)), st.decider)
        self._legal[i] = legal_actions(st)
        self._obs[i] = observe_vector(to_arrays(st), self.agent)

    # -- Backend ----------------------------------------------------------------------------
    def reset(self, seed: int) -> np.ndarray:
        self._rng = np.random.default_rng([int(seed), 0x7C6])
        self.episodes[:] = 0
        self.idle[:] = False
        for i in range(self.num_envs):
            self._new(i)
        return self._obs.copy()

    def step(self, actions) -> StepResult:
        actions = np.asarray(actions).reshape(-1)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"{self.num_envs} actions expected, got shape {actions.shape}")
        n = self.num_envs
        reward, terminated = np.zeros(n, F32), np.zeros(n, bool)
        for i in np.flatnonzero(~self.idle):
            st, act = self.games[i], int(actions[i])
            if act not in self._legal[i]:
                what = A.describe(act) if 0 <= act < A.N_ACTIONS else "out of range"
                raise IllegalActionError(
                    f"env {i}: action {act} ({what}) is not legal for the agent now;"
                    f" legal: {self._legal[i]}"
                )
            ref_step(st, act, self.agent)
            self._advance(i)
            if st.done:
                terminated[i] = True
                if st.winner != TIE:
                    reward[i] = 1.0 if st.winner == self.agent else -1.0
                self.episodes[i] += 1
                if self.episodes_per_env is not None and self.episodes[i] >= self.episodes_per_env:
                    self.idle[i] = True  # keeps the final observation
                else:
                    self._new(i)
        return StepResult(self._obs.copy(), reward, terminated, np.zeros(n, bool))

    def legal_mask(self) -> np.ndarray:
        """bool[num_envs, 76]: the agent's legal actions in every game (all True idling)."""
        out = np.zeros((self.num_envs, A.N_ACTIONS), bool)
        for i, legal in enumerate(self._legal):
            out[i, legal] = True
        out[self.idle] = True
        return out

    def load(self, state: dict) -> None:
        """Continue from the given games (the array layout, batch first): one env per game,
        each with a fresh opponent chooser (seeded by its index), the opponent's decisions
        played up to the agent's."""
        n = len(np.asarray(state["phase"]))
        self.__init__(n, self.opponent, self.agent, self.episodes_per_env)
        for i in range(n):
            st = from_arrays({k: np.asarray(state[k])[i] for k in FIELDS})
            st.log = None
            self.games[i], self._choosers[i] = st, CHOOSERS[self.opponent](i)
            self._advance(i)

    def state(self) -> dict:
        arrs = [to_arrays(st) for st in self.games]
        out = {k: np.stack([a[k] for a in arrs]) for k in FIELDS}
        out["terminated"] = np.array([st.done for st in self.games])
        out["truncated"] = np.zeros(self.num_envs, bool)
        return out


def make_reference(num_envs: int, opponent: str = "random") -> ReferenceSingleAgent:
    """The L4 reference side: ``num_envs`` reference games against ``opponent``, one game each
    (the evaluation counts each env's first game)."""
    return ReferenceSingleAgent(num_envs, opponent, episodes_per_env=1)
