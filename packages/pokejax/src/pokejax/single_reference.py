"""The reference side of L4 with trained policies: ``SingleAgentEnv``'s task played by the live
Showdown, as a numpy :class:`~envport.backend.Backend` (the host loop trains and evaluates on it).

:class:`ShowdownSingleAgent` plays ``num_envs`` gen1randombattle battles in one Showdown
process (``pokejax/js/driver.js``); the agent is ``agent_side`` (p1 by default), the other side
is the built-in opponent. What it returns is what ``env.SingleAgentEnv(opponent)`` returns for
the same battle:

* ``spec``: the env's spec (observation float32[OBS_SIZE], actions ``Discrete(9)``);
* observations: Showdown's exported battle converted to the engine's ``Battle``
  (``showdown_battle.load``, the loader L2 and L3 check against the engine) and observed with
  ``observe.observe``; what the agent has seen of the opponent (``observe.Revealed``) is kept
  per env and updated after every Showdown decision with ``observe.update``, as the env updates
  it after every ``battle.step``. One jitted function per batch does the observing;
* ``legal_mask()``: the agent's legal actions from Showdown's request (``choices.legal_mask``),
  in the env's enumeration (0-3 move slot, 4-8 "switch 2".."switch 6");
* ``step(actions)``: the agent plays its action (it must be legal: ``IllegalActionError``
  otherwise, before anything is sent to Showdown), the opponent chooses at the same decision;
  decisions where only the opponent chooses (its forced switch) are played through in the same
  step, as ``SingleAgentEnv._skip_waiting`` does, so after every step the agent has a choice;
  reward +1 / -1 to the agent when its battle ends with a win / loss (0 on a tie and
  otherwise); ``truncated`` is always False (a Gen 1 battle ends by its own turn limit).

Opponents: ``"random"`` (uniform over its legal actions from Showdown's request, drawn from a
numpy Generator seeded by ``reset``'s seed), ``"greedy"`` (``opponents.greedy_policy`` on the
converted battle, its random switches keyed from that Generator), or any JAX
``policy(key, battle, side) -> action`` as ``SingleAgentEnv`` takes (jitted and vmapped over the
batch on the converted battles; a deterministic one lets a test replay the same opponent on
both sides).

Auto-reset, in the step that ends a battle: the step returns that battle's reward and
``terminated=True`` with the observation (and ``legal_mask()``) of a new battle already started
in its place, as ``envport.wrappers.AutoResetWrapper`` does for the JAX env and as the host loop
expects (a backend does not return the final observation). The ended battle's last observation
is kept in ``final_obs``. Battles: ``reset(seed)`` starts battles ``0..num_envs-1`` of run
``seed`` (``reference.derive_seeds``, teams from Showdown's own generator, as
``backends.ShowdownReference``), and each new battle afterwards is the run's next one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from envport.actions import validate_actions
from envport.backend import Backend, CanonicalState, StepResult
from pokejax import choices, observe, showdown_battle
from pokejax.backends import (
    FORMAT,
    Setup,
    choose_args,
    close_showdown,
    iter_setups,
    reference_canonical,
    stack,
    start,
)
from pokejax.battle import Battle, split
from pokejax.duel import Field, Fighter
from pokejax.env import SingleAgentEnv
from pokejax.legal import ACTION_NAMES, IllegalActionError
from pokejax.prng import PrngState
from pokejax.showdown import Showdown, ShowdownError
from pokejax.showdown_state import fighter

SIDES = ("p1", "p2")


def initial_revealed(b: Battle) -> observe.Revealed:
    """What each side has seen at the start of battle ``b`` (no batch axis; numpy or JAX
    leaves): the other's lead, none of its moves, as ``observe.initial`` has it from the teams."""
    species = jnp.asarray(b.team.base_species, jnp.int32)
    seen = jnp.zeros(species.shape, bool).at[..., 0].set(True)
    return observe.Revealed(species=species, seen=seen,
                            moves_seen=jnp.zeros((*species.shape, 4), bool))


@functools.cache
def _observer(me: int):
    """``(revealed, before, after, changed, fresh) -> (revealed, obs)`` over a batch, jitted:
    ``revealed`` updated for the envs whose battle moved from ``before`` to ``after``
    (``changed``), started again for those with a new battle (``fresh``), kept otherwise;
    ``obs`` float32[n, OBS_SIZE], ``me``'s observation of ``after``."""

    def one(rev, before, after, changed, fresh):
        moved = observe.update(rev, before, after)
        rev = jax.tree.map(lambda new, init, old: jnp.where(fresh, init, jnp.where(changed, new, old)),
                           moved, initial_revealed(after), rev)
        return rev, observe.observe(after, rev, me).features

    return jax.jit(jax.vmap(one))


@functools.cache
def _policy_fn(policy: Callable, side: int):
    """``(keys, battles) -> actions int32[n]``: ``policy`` for ``side``, jitted over a batch."""
    return jax.jit(jax.vmap(lambda key, b: jnp.asarray(policy(key, b, side), jnp.int32)))


class _Converter:
    """Showdown's exported battles -> the engine's ``Battle``, written in place into
    batch-leading numpy buffers (one row per env): ``showdown_battle.load``'s conversion (each
    Pokémon through ``showdown_state.fighter``) without building and stacking a pytree per
    battle, which costs more than the conversion itself. ``check(export)`` compares one row
    with ``showdown_battle.load`` leaf by leaf (run on the first battle of every reset, so a
    field added to the engine state cannot be left out here unnoticed)."""

    def __init__(self, n: int, export: dict):
        b = showdown_battle.load(export)
        self.team = {k: np.zeros((n, *np.shape(v)), np.asarray(v).dtype)
                     for k, v in b.team._asdict().items()}
        self.hi = np.zeros(n, np.uint32)
        self.lo = np.zeros(n, np.uint32)
        self.last_damage = np.zeros(n, np.int32)
        self.turn = np.zeros(n, np.int32)
        self.forced = np.zeros((n, 2), bool)
        self.ended = np.zeros(n, bool)
        self.winner = np.zeros(n, np.int32)
        self._fields = tuple(Fighter._fields)
        self._bufs = [self.team[k] for k in self._fields]

    def write(self, i: int, export: dict) -> None:
        bufs = self._bufs
        for s, side in enumerate(export["sides"]):
            mons = side["pokemon"]
            if len(mons) != 6:
                raise ValueError(f"pokejax battles hold six Pokémon per side, got {len(mons)}")
            for k, mon in enumerate(mons):
                f = fighter(mon, side["lastSelectedMoveSlot"], side) if k == 0 else fighter(mon)
                for buf, v in zip(bufs, f, strict=True):
                    buf[i, s, k] = v
        prng = showdown_battle._prng(export["seed"])
        self.hi[i], self.lo[i] = prng.hi, prng.lo
        self.last_damage[i] = export.get("lastDamage") or 0
        self.turn[i] = export["turn"]
        self.forced[i] = [showdown_battle._forced(side) for side in export["sides"]]
        self.ended[i] = export["ended"]
        self.winner[i] = showdown_battle.WINNERS[export["winner"]]

    def snapshot(self) -> list[np.ndarray]:
        return [x.copy() for x in self._arrays()]

    def _arrays(self) -> list[np.ndarray]:
        return [*self._bufs, self.hi, self.lo, self.last_damage, self.turn, self.forced,
                self.ended, self.winner]

    def battle(self, arrays: list[np.ndarray] | None = None) -> Battle:
        """The batch as a ``Battle`` (leaves [n, ...]) of the current rows or a snapshot."""
        a = self._arrays() if arrays is None else arrays
        nf = len(self._fields)
        actives, bench = split(Fighter(*a[:nf]), axis=2)
        hi, lo, last_damage, turn, forced, ended, winner = a[nf:]
        return Battle(actives=actives, bench=bench, prng=PrngState(hi=hi, lo=lo),
                      field=Field(last_damage=last_damage), turn=turn, forced=forced,
                      ended=ended, winner=winner)

    def check(self, i: int, export: dict) -> None:
        want = showdown_battle.load(export)
        got = jax.tree.map(lambda x: x[i], self.battle())
        if jax.tree.structure(got) != jax.tree.structure(want):
            raise RuntimeError("single_reference's converter builds a Battle of another structure "
                               "than showdown_battle.load: update _Converter")
        for (path, g), w in zip(jax.tree_util.tree_flatten_with_path(got)[0],
                                jax.tree.leaves(want), strict=True):
            if not np.array_equal(g, w) or np.asarray(g).dtype != np.asarray(w).dtype:
                raise RuntimeError(f"single_reference's converter differs from "
                                   f"showdown_battle.load at {jax.tree_util.keystr(path)}")


class ShowdownSingleAgent(Backend):
    """``num_envs`` battles of ``SingleAgentEnv(opponent, agent_side)``'s task on the live
    Showdown (see the module docstring). ``only_supported`` keeps only battles whose teams use
    moves the engine has (``backends.iter_setups``; every move is supported once the engine is
    complete). ``setups[i]`` is env ``i``'s current battle (its index in the run, seeds and
    teams). ``final_obs`` holds, after each step, the observation of the battle each env
    ended with at that step (the returned one for envs that did not end).

    ``episodes_per_env`` (default None: auto-reset for ever, what training needs): an env that
    has ended that many battles since ``reset`` starts no new one; it idles (for an evaluation
    that only counts each env's first episodes, and need not pay for battles nobody counts):
    its observation stays its last battle's final one, reward 0, flags False, its
    ``legal_mask()`` row is all True and its action is ignored. ``idle`` says which envs idle.

    ``pipeline``: a round of decisions is sent to Showdown in that many parts, the next part
    posted before the last one's answers are converted, so that Node simulates while Python
    converts."""

    supports_load = False

    def __init__(self, num_envs: int, opponent: str | Callable = "random", *, agent_side: int = 0,
                 only_supported: bool = True, episodes_per_env: int | None = None,
                 pipeline: int = 2):
        env = SingleAgentEnv(opponent, agent_side=agent_side)  # checks both arguments
        if episodes_per_env is not None and int(episodes_per_env) < 1:
            raise ValueError(f"episodes_per_env must be None or >= 1, got {episodes_per_env!r}")
        self.spec, self.num_envs = env.spec, int(num_envs)
        self.opponent = opponent
        self.me, self.opp = agent_side, 1 - agent_side
        self.only_supported = only_supported
        self.episodes_per_env = None if episodes_per_env is None else int(episodes_per_env)
        self.pipeline = max(1, int(pipeline))
        self._policy = None if isinstance(opponent, str) and opponent == "random" \
            else _policy_fn(env.opponent, self.opp)
        self._observe = _observer(agent_side)
        self.name = f"pokemon-showdown (live, {FORMAT}, single agent {SIDES[agent_side]} vs " \
                    f"{env.spec.metadata['opponent']})"
        self.sd: Showdown | None = Showdown()
        self.handles: list[int | None] = [None] * self.num_envs
        self.exports: list[dict | None] = [None] * self.num_envs
        self.setups: list[Setup | None] = [None] * self.num_envs  # each env's current battle
        self.decisions = 0  # Showdown decisions played (both sides' choices at once count one)
        self.battles = 0  # battles started
        self.episodes = np.zeros(self.num_envs, np.int64)  # battles ended per env since reset
        self.idle = np.zeros(self.num_envs, bool)
        self._setups = None
        self._rng: np.random.Generator | None = None
        self._conv: _Converter | None = None
        self._rev = None
        self._masks = np.zeros((self.num_envs, 2, choices.NUM_ACTIONS), bool)
        self._obs: np.ndarray | None = None
        self.final_obs: np.ndarray | None = None
        self._terminated = np.zeros(self.num_envs, bool)

    # -- battles ---------------------------------------------------------------------------------
    def _close_battles(self, envs=None) -> None:
        envs = range(self.num_envs) if envs is None else envs
        live = [self.handles[i] for i in envs if self.handles[i] is not None]
        if live and self.sd is not None:
            self.sd.request("close_many", battles=live)
        for i in envs:
            self.handles[i] = None

    def _write(self, i: int, export: dict) -> None:
        """Env ``i``'s battle is now ``export``: its converted battle and its masks."""
        self.exports[i] = export
        if self._conv is None:
            self._conv = _Converter(self.num_envs, export)
        self._conv.write(i, export)
        sides = export["sides"]
        if export["ended"]:
            self._masks[i] = False
        else:
            self._masks[i, 0] = choices.legal_mask(sides[0]["request"])
            self._masks[i, 1] = choices.legal_mask(sides[1]["request"])

    def _new_battles(self, envs) -> None:
        self._close_battles(envs)
        for i in envs:
            setup = next(self._setups)
            handle, export = start(self.sd, setup)
            self.battles += 1
            self.handles[i], self.setups[i] = handle, setup
            self._write(i, export)
            if export["ended"] or not self._masks[i, self.me].any():
                raise ShowdownError(f"env {i}: a new battle does not start with a choice for "
                                    f"{SIDES[self.me]}")

    def _advance(self, before, changed, fresh) -> np.ndarray:
        self._rev, obs = self._observe(self._rev, self._conv.battle(before), self._conv.battle(),
                                       jnp.asarray(changed), jnp.asarray(fresh))
        return np.asarray(obs)

    # -- the backend ---------------------------------------------------------------------------
    def reset(self, seed: int) -> np.ndarray:
        if self.sd is None:
            raise RuntimeError(f"{self.name} is closed")
        self._close_battles()
        self._setups = iter_setups(self.sd, int(seed), self.only_supported)
        self._rng = np.random.default_rng([int(seed), 0x51])
        self._new_battles(range(self.num_envs))
        self._conv.check(0, self.exports[0])
        self.episodes[:] = 0
        self.idle[:] = False
        fresh = np.ones(self.num_envs, bool)
        if self._rev is None:
            self._rev = jax.vmap(initial_revealed)(self._conv.battle())
        self._obs = self._advance(self._conv.snapshot(), ~fresh, fresh)
        self.final_obs = self._obs.copy()
        self._terminated[:] = False
        return self._obs.copy()

    def legal_mask(self) -> np.ndarray:
        """bool[num_envs, 9]: the agent's legal actions now (Showdown's request; all True for
        an idle env, whose action is ignored)."""
        if self._obs is None:
            raise RuntimeError("call reset(seed) before legal_mask()")
        out = self._masks[:, self.me].copy()
        out[self.idle] = True
        return out

    def _check_legal(self, actions: np.ndarray) -> None:
        ok = self._masks[np.arange(self.num_envs), self.me, actions] | self.idle
        if ok.all():
            return
        i = int(np.flatnonzero(~ok)[0])
        a = int(actions[i])
        legal = ", ".join(f"{k} ({ACTION_NAMES[k]})" for k in np.flatnonzero(self._masks[i, self.me]))
        forced = " (forced switch)" if not self._masks[i, self.me, :4].any() else ""
        raise IllegalActionError(
            f"env {i}: {SIDES[self.me]}'s action {a} ({ACTION_NAMES[a]}) is not legal now; "
            f"legal: {legal}{forced} ({int((~ok).sum())} of {self.num_envs} envs illegal)")

    def _opponent_actions(self, envs: list[int]) -> dict[int, int]:
        """The opponent's choice in each of ``envs`` (-1 where it has none)."""
        masks = self._masks[:, self.opp]
        if self._policy is None:
            return {i: int(self._rng.choice(np.flatnonzero(masks[i]))) if masks[i].any() else -1
                    for i in envs}
        key = jax.random.PRNGKey(int(self._rng.integers(0, 2**31)))
        acts = np.asarray(self._policy(jax.random.split(key, self.num_envs), self._conv.battle()))
        out = {}
        for i in envs:
            a = int(acts[i]) if masks[i].any() else -1
            if a >= 0 and not masks[i, a]:
                raise ShowdownError(f"env {i}: the opponent chose {a} ({ACTION_NAMES[a]}), which "
                                    "Showdown's request does not allow (the engine's legal mask "
                                    "on the converted battle differs from Showdown's)")
            out[i] = a
        return out

    def _round(self, acting: list[int], actions: np.ndarray | None) -> np.ndarray:
        """One decision in each of ``acting``: the agent's ``actions`` (None: it waits) and
        the opponent's choices, sent in ``pipeline`` parts. Returns the observations."""
        opp = self._opponent_actions(acting)
        items = []
        for i in acting:
            acts = [-1, -1]
            acts[self.me] = -1 if actions is None else int(actions[i])
            acts[self.opp] = opp[i]
            items.append({"battle": self.handles[i], **choose_args(acts)})
        before = self._conv.snapshot()
        changed = np.zeros(self.num_envs, bool)
        k = self.pipeline if len(items) >= 16 * self.pipeline else 1
        bounds = np.linspace(0, len(items), k + 1).astype(int)
        refused = []
        self.sd.post("choose_many", items=items[bounds[0]:bounds[1]])
        for part in range(k):
            results = self.sd.reply()
            lo, hi = bounds[part], bounds[part + 1]
            if part + 1 < k:  # Showdown plays the next part while this one is converted
                self.sd.post("choose_many", items=items[hi:bounds[part + 2]])
            for i, item, res in zip(acting[lo:hi], items[lo:hi], results, strict=True):
                if not res["accepted"]:
                    refused.append(f"env {i}: Showdown refused {item}: {res['error']}")
                    continue
                self._write(i, res["state"])
                changed[i] = True
        self.decisions += len(items)
        if refused:
            raise ShowdownError("; ".join(refused[:5]))
        return self._advance(before, changed, np.zeros(self.num_envs, bool))

    def step(self, actions) -> StepResult:
        if self._obs is None:
            raise RuntimeError("call reset(seed) before step()")
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        self._check_legal(actions)
        obs = self._obs
        # every live env has a battle and a choice; then the decisions where only the
        # opponent chooses, until the agent has a choice again or the battle is over
        acting = [int(i) for i in np.flatnonzero(~self.idle)]
        first = True
        while acting:
            obs = self._round(acting, actions if first else None)
            first = False
            acting = [i for i in acting
                      if not self.exports[i]["ended"] and not self._masks[i, self.me].any()]
        ended = self._conv.ended & ~self.idle
        reward = np.zeros(self.num_envs, np.float32)
        for i in np.flatnonzero(ended):
            w = showdown_battle.WINNERS[self.exports[i]["winner"]]
            reward[i] = 0.0 if w == 0 else (1.0 if w == self.me + 1 else -1.0)
        self.final_obs = obs.copy()
        self.episodes += ended
        if ended.any():
            done = ended.copy()
            if self.episodes_per_env is not None:
                done &= self.episodes >= self.episodes_per_env
                self._close_battles([int(i) for i in np.flatnonzero(done)])
                self.idle |= done
            again = ended & ~done if self.episodes_per_env is not None else ended
            if again.any():
                self._new_battles([int(i) for i in np.flatnonzero(again)])
                obs = self._advance(self._conv.snapshot(), np.zeros(self.num_envs, bool), again)
        self._obs = obs
        self._terminated = ended
        return StepResult(obs.copy(), reward, ended.copy(), np.zeros(self.num_envs, bool))

    def state(self) -> CanonicalState:
        """Each env's current battle as ``backends.ShowdownReference``'s canonical row (both
        sides' legal masks included), plus the last step's ``terminated``/``truncated``."""
        if self._obs is None:
            raise RuntimeError("call reset(seed) before state()")
        out = stack([reference_canonical(e) for e in self.exports])
        out["terminated"] = self._terminated.copy()
        out["truncated"] = np.zeros(self.num_envs, bool)
        return out

    def close(self) -> None:
        close_showdown(self)
