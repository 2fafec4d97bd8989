"""The reference (one live Showdown process) and the candidate (the JAX engine) as envport
backends: what ``envport verify pokejax`` (L2, L3) drives and compares.

Battles. Battle ``i`` of run ``seed`` is ``reference.derive_seeds(seed, i)``: the battle seed
and both team seeds, teams from Showdown's own ``gen1randombattle`` generator. While the
engine lacks some random-battle moves (``unsupported_moves()``), ``only_supported=True`` keeps
only the battles whose two teams use engine moves: battle ``i`` of the run is then the
``i``-th *kept* one, the same on both sides, and ``TeamFilter`` counts what was skipped.

Actions are mask-agnostic, because the core's samplers know nothing of legal masks: per env
and side an integer ``k`` in ``[0, 2 * ACTION_CHOICES)``; each backend plays the ``(k mod n)``-th
of the ``n`` legal actions of *its own* legal mask (the reference from Showdown's request,
``choices.legal_mask``; the candidate from the JAX state, ``pokejax.legal.legal_mask``), or
nothing when ``n == 0``. ``ACTION_CHOICES`` is lcm(1..9), so a uniform ``k`` is a uniform
legal action for every ``n``. ``k >= ACTION_CHOICES`` prefers switching: the ``(k mod n)``-th
of the ``n`` legal *switches* when there is one, else as above (a chooser that only switches
plays a battle to the turn limit). A mask that differs shows up twice: in the ``legal`` field
and in the next state.

Canonical state (the fields L2/L3 diff), one row per env, built the same way on both sides
from a ``battle.Battle``: the reference's is ``canonical(showdown_battle.load(export))`` of
Showdown's exported battle, the candidate's the JAX battle's own — every leaf of the pytree
under its path (``team.hp`` [2, 6], ``prng.hi``, ``turn``, ``forced``, ``ended``, ...), after
``normalize`` (fields Showdown does not keep in that situation), plus

- ``legal`` bool[2, 9]: the legal masks;
- ``unmodelled`` int32: how many things the export holds that the engine does not model
  (volatiles outside ``MODELLED_VOLATILES``, side conditions); the
  candidate's is 0 by definition, so the loader can never hide such a difference;
- ``terminated`` bool: the battle ended on this step;
- ``truncated`` bool: always False (a Gen 1 random battle ends by its own rules, never by an
  outside time limit).

A battle that ended stays ended: the engine's step is a no-op on it, and the reference sends
Showdown nothing for it. The L3 runner counts an episode per ``terminated`` flag and runs a
seed until every env ended once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from envport.actions import validate_actions
from envport.backend import Backend, CanonicalState, StepResult
from envport.types import Box, Discrete, EnvSpec
from pokejax import (
    __version__,
    choices,
    data,
    duel,
    legal,
    reference,
    showdown_battle,
)
from pokejax import battle as B
from pokejax.codec import STATUSES
from pokejax.legality import engine_moves
from pokejax.showdown import Showdown, ShowdownError

FORMAT = reference.FORMAT
NUM_ACTIONS = choices.NUM_ACTIONS
ACTION_CHOICES = 2520  # lcm(1, ..., 9)
SLP = STATUSES.index("slp")
# what the engine state carries of Showdown's volatiles (showdown_state.fighter reads these)
MODELLED_VOLATILES = frozenset({"confusion", "flinch", "mustrecharge", "substitute", "twoturnmove",
                                *duel.SELF_VOLATILES})

SPEC = EnvSpec(
    id="pokejax/gen1randombattle",
    version=__version__,
    observation_space=Box(0, 1, (2, NUM_ACTIONS), np.int8),  # the two legal masks
    action_space=Discrete(2 * ACTION_CHOICES, np.int32, (2,)),
    num_agents=2,
    metadata={"actions": "per side k: the (k mod n)-th of the n legal actions (none if n == 0); "
                         "k >= 2520: of the legal switches when there are any"},
)


# -- which battles ------------------------------------------------------------------------------
def random_battle_moves() -> frozenset[str]:
    """Every move Showdown's gen1randombattle generator can give a Pokémon."""
    out: set[str] = set()
    for entry in data.load()["randomSets"].values():
        for value in entry.values():
            if isinstance(value, list):
                out.update(value)
    return frozenset(out)


def unsupported_moves() -> frozenset[str]:
    """Random-battle moves the engine does not have yet (empty once the engine is complete)."""
    return random_battle_moves() - engine_moves()


def models_last_damage() -> bool:
    """``battle.lastDamage`` only matters to Counter; compared once the engine has Counter."""
    return "counter" in engine_moves()


@dataclass
class TeamFilter:
    """Counts for the suite notes: battles drawn and kept by ``battle_setups``, and the
    decisions the reference played (L3 env-steps also count the no-op steps of ended battles)."""

    drawn: int = 0
    kept: int = 0
    decisions: int = 0
    seen: set = field(default_factory=set)  # battle_setups keys already counted

    def summary(self) -> str:
        if not self.drawn:
            return "no battles drawn yet"
        played = f"; {self.decisions} decisions played by the reference" if self.decisions else ""
        return (f"{self.kept} of {self.drawn} drawn battles kept "
                f"({100 * self.kept / self.drawn:.1f}%; {self.drawn - self.kept} filtered out){played}")


@dataclass
class Setup:
    index: int  # the battle's index in its run (derive_seeds(seed, index))
    seeds: dict
    teams: tuple[str, str]  # packed


def iter_setups(sd: Showdown, seed: int, only_supported: bool, counts: TeamFilter | None = None,
                first: int = 0, max_draws: int = 200_000):
    """Battles ``first``, ``first + 1``, ... of run ``seed``, skipping (and counting) those
    whose teams use a move the engine lacks when ``only_supported``."""
    moves = engine_moves()
    for i in range(first, first + max_draws):
        seeds = reference.derive_seeds(seed, i)
        teams = [sd.request("team", format=FORMAT, seed=seeds[p]) for p in ("p1", "p2")]
        ok = not only_supported or all(m in moves for t in teams for s in t["sets"] for m in s["moves"])
        if counts is not None:
            counts.drawn += 1
            counts.kept += ok
        if ok:
            yield Setup(i, seeds, (teams[0]["packed"], teams[1]["packed"]))
    raise RuntimeError(f"no battle of run {seed} in {max_draws} draws has supported teams")


# (seed, n, only_supported) -> (setups, battles drawn, battles kept)
_SETUPS: dict[tuple[int, int, bool], tuple[list[Setup], int, int]] = {}


def battle_setups(sd: Showdown, seed: int, n: int, only_supported: bool,
                  counts: TeamFilter | None = None) -> list[Setup]:
    """The first ``n`` battles of run ``seed`` (of those with supported teams when
    ``only_supported``). Remembered per process: resets of the same seed (both backends, the
    shrinker's replays, later suites) ask Showdown's generator once. ``counts`` counts each
    seed's draws once, whatever this process ran before, so a suite's counts are the same in
    one process and summed over worker processes."""
    key = (int(seed), int(n), bool(only_supported))
    if key not in _SETUPS:
        tally = TeamFilter()
        it = iter_setups(sd, seed, only_supported, tally)
        setups = [next(it) for _ in range(n)]
        _SETUPS[key] = (setups, tally.drawn, tally.kept)
    setups, drawn, kept = _SETUPS[key]
    if counts is not None and key not in counts.seen:
        counts.seen.add(key)
        counts.drawn += drawn
        counts.kept += kept
    return setups


def start(sd: Showdown, setup: Setup) -> tuple[int, dict]:
    started = sd.request("start", format=FORMAT, seed=setup.seeds["battle"],
                         p1team=setup.teams[0], p2team=setup.teams[1])
    return started["battle"], started["state"]


# -- actions --------------------------------------------------------------------------------------
SWITCHES = np.arange(choices.NUM_ACTIONS) >= 4  # actions 4-8: "switch 2" .. "switch 6"


def preferred(k, mask):
    """The mask ``k`` picks from: the legal switches when ``k >= ACTION_CHOICES`` and there
    is one, else every legal action (numpy or JAX; ``mask`` bool[9])."""
    xp = jnp if isinstance(mask, jax.Array) or isinstance(k, jax.Array) else np
    switches = mask & SWITCHES
    return xp.where((k >= ACTION_CHOICES) & xp.any(switches, axis=-1), switches, mask)


def pick(k, mask) -> int:
    """The (k mod n)-th legal action of ``mask`` (bool[9]; of its switches for a switching
    ``k``, see ``preferred``), -1 when there is none."""
    mask = np.asarray(preferred(int(k), np.asarray(mask, bool)), bool)
    k = int(k) % ACTION_CHOICES
    n = int(mask.sum())
    if n == 0:
        return -1
    return int(np.flatnonzero(mask)[int(k) % n])


def choose_args(acts) -> dict:
    """The driver's ``choose`` arguments for actions (-1 or None: the side sends nothing)."""
    return {p: None if a is None or a < 0 else choices.choice_string(a)
            for p, a in zip(("p1", "p2"), acts, strict=True)}


def pick_jax(k, mask):
    """``pick`` for one side in JAX (jittable, vmappable). The running count is unrolled over
    the 9 actions: under ``vmap`` a ``cumsum`` + ``argmax`` becomes reduce-window and reduce
    kernels on XLA:CPU that cost more than the whole legal mask."""
    m = mask.astype(jnp.int32)
    n = jnp.sum(m, axis=-1)
    r = jnp.asarray(k, jnp.int32) % jnp.maximum(n, 1)
    seen, idx = jnp.int32(0), jnp.int32(-1)
    for a in range(mask.shape[-1]):
        seen = seen + m[..., a]
        idx = jnp.where((idx < 0) & (seen > r), a, idx)
    return idx


# -- canonical state ----------------------------------------------------------------------------
def _path_name(path) -> str:
    return ".".join(str(getattr(k, "name", getattr(k, "key", k))) for k in path)


def flatten(b: B.Battle) -> dict:
    """Every leaf of the battle (teams joined, ``Battle.view``) under its path ("team.hp",
    "prng.hi", "turn", ...)."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(b.view())
    return {_path_name(p): v for p, v in leaves}


def normalize(flat: dict, xp=np) -> dict:
    """Project one battle's fields (no batch axis) onto what Showdown's export determines.

    - ``team.last_slot`` and the side-level selections (``battle.SIDE_FIELDS``): only the
      active record carries its side's (``side.lastSelectedMoveSlot``, ...);
      the engine keeps a stale value on benched Pokémon, the loader writes -1.
    - ``team.sleep_time``, ``team.rest_sleep``: only meaningful while asleep;
      ``team.confusion_time`` only while confused (the engine keeps the last values).
    - a fainted Pokémon (HP 0) never acts again in Gen 1: all its fields are compared as 0
      (Showdown keeps its last stats, the engine clears them) — except its status and the
      side-level fields its record carries while it is the active (the incoming Pokémon
      takes them over).
    - ``field.last_damage``: dropped until the engine models ``battle.lastDamage``
      (``models_last_damage``).
    Add a rule here when ``duel.Fighter`` gains a field Showdown only keeps in some states.
    """
    out = dict(flat)
    team = {k: v for k, v in out.items() if k.startswith("team.")}
    status = team["team.status"]
    for name in ("team.last_slot", *(f"team.{k}" for k in B.SIDE_FIELDS)):
        v = out[name]
        out[name] = xp.where(xp.arange(v.shape[1]) == 0, v, xp.full_like(v, -1))
    asleep = status == SLP
    for name in ("team.sleep_time", "team.rest_sleep"):
        if name in out:
            out[name] = xp.where(asleep, out[name], xp.zeros_like(out[name]))
    if "team.confusion_time" in out and "team.confused" in out:
        v = out["team.confusion_time"]
        out["team.confusion_time"] = xp.where(out["team.confused"], v, xp.zeros_like(v))
    fainted = team["team.hp"] <= 0
    # kept: the side's selections (they outlive a fainted active) and the status ('fnt' on a
    # fainted active, '' once switched out: both engines agree, and the engine's faint
    # bookkeeping reads it)
    # and the modified stats (set when it fainted; a double forced switch sorts by them)
    kept = {"team.status", "team.modified", "team.last_slot", *(f"team.{k}" for k in B.SIDE_FIELDS)}
    for name in set(team) - kept:
        v = out[name]
        mask = fainted.reshape(fainted.shape + (1,) * (v.ndim - fainted.ndim))
        out[name] = xp.where(mask, xp.zeros_like(v), v)
    if not models_last_damage():
        out.pop("field.last_damage", None)
    return out


def unmodelled(export: dict) -> int:
    """How many things Showdown's exported battle holds that the engine state cannot."""
    n = 0
    for side in export["sides"]:
        n += len(side.get("sideConditions") or {})
        for mon in side["pokemon"]:
            n += sum(v not in MODELLED_VOLATILES for v in mon["volatiles"])
    return n




def reference_canonical(export: dict) -> dict:
    """One env's canonical state from Showdown's exported battle (no batch axis)."""
    out = normalize(flatten(showdown_battle.load(export)), np)
    out = {k: np.asarray(v) for k, v in out.items()}
    out["legal"] = np.stack([choices.legal_mask(s["request"]) for s in export["sides"]])
    out["unmodelled"] = np.int32(unmodelled(export))
    return out


def stack(rows: list[dict]) -> CanonicalState:
    return {k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]}


# -- the reference ------------------------------------------------------------------------------
class ShowdownReference(Backend):
    """``num_envs`` battles in one Showdown process (``pokejax/js/driver.js``)."""

    supports_load = True

    def __init__(self, num_envs: int, *, only_supported: bool, counts: TeamFilter | None = None,
                 cases: L2Cases | None = None):
        self.spec, self.num_envs = SPEC, int(num_envs)
        self.only_supported, self.counts, self.cases = only_supported, counts, cases
        self.name = f"pokemon-showdown (live, {FORMAT})"
        self.sd = Showdown()
        self.handles: list[int | None] = [None] * self.num_envs
        self.exports: list[dict | None] = [None] * self.num_envs
        self.rows: list[dict | None] = [None] * self.num_envs
        self.terminated = np.zeros(self.num_envs, bool)
        if cases is not None:
            cases.reference = self

    # battles
    def _close_battles(self) -> None:
        live = [h for h in self.handles if h is not None]
        if live and self.sd is not None:
            self.sd.request("close_many", battles=live)
        self.handles = [None] * self.num_envs

    def _set(self, i: int, handle: int | None, export: dict) -> None:
        self.handles[i], self.exports[i] = handle, export
        self.rows[i] = reference_canonical(export)

    def _obs(self) -> np.ndarray:
        return np.stack([r["legal"] for r in self.rows]).astype(np.int8)

    def reset(self, seed: int) -> np.ndarray:
        self._close_battles()
        setups = battle_setups(self.sd, seed, self.num_envs, self.only_supported, self.counts)
        for i, setup in enumerate(setups):
            self._set(i, *start(self.sd, setup))
        self.terminated[:] = False
        return self._obs()

    def step(self, actions) -> StepResult:
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        items, envs = [], []
        for i, export in enumerate(self.exports):
            if export is None:
                raise RuntimeError("call reset(seed) or load(state) before step()")
            if export["ended"]:
                continue
            acts = [pick(actions[i, s], self.rows[i]["legal"][s]) for s in (0, 1)]
            items.append({"battle": self.handles[i], **choose_args(acts)})
            envs.append(i)
        results = self.sd.request("choose_many", items=items) if items else []
        if self.counts is not None:
            self.counts.decisions += len(items)
        ended_before = np.array([e["ended"] for e in self.exports])
        for i, item, res in zip(envs, items, results, strict=True):
            if not res["accepted"]:
                raise ShowdownError(f"env {i}: Showdown refused {item} although its request's legal "
                                    f"mask allowed it: {res['error']}")
            self._set(i, self.handles[i], res["state"])
        ended = np.array([e["ended"] for e in self.exports])
        self.terminated = ended & ~ended_before
        reward = np.zeros((self.num_envs, 2), np.float32)
        for i in np.flatnonzero(self.terminated):
            w = showdown_battle.WINNERS[self.exports[i]["winner"]]
            if w:
                reward[i, w - 1], reward[i, 2 - w] = 1.0, -1.0
        return StepResult(self._obs(), reward, self.terminated.copy(), np.zeros(self.num_envs, bool))

    def state(self) -> CanonicalState:
        out = stack(self.rows)
        out["terminated"] = self.terminated.copy()
        out["truncated"] = np.zeros(self.num_envs, bool)
        return out

    def load(self, state: CanonicalState) -> None:
        """Restore each env's recorded battle with Showdown's ``Battle.fromJSON`` (the JSON
        ``serialize`` wrote when the case was recorded) and check it equals ``state``."""
        if self.cases is None:
            super().load(state)
        jsons = [self.cases.json(int(c)) for c in np.asarray(state["case"])]
        self._close_battles()
        for lo in range(0, len(jsons), 100):
            for j, res in enumerate(self.sd.request("restore_many", jsons=jsons[lo: lo + 100])):
                self._set(lo + j, res["battle"], res["state"])
        self.terminated = np.asarray(state["terminated"], bool).copy()
        mine = self.state()
        for k, v in mine.items():
            if not np.array_equal(v, np.asarray(state[k])):
                raise RuntimeError(f"Battle.fromJSON restored a battle whose {k!r} differs from "
                                   "the recorded one")

    def describe(self) -> str:
        return self.name

    def close(self) -> None:
        close_showdown(self)


def close_showdown(backend) -> None:
    """A Showdown backend's ``close``: its battles closed (best effort: the process may already
    be gone), then its process; again it does nothing."""
    if backend.sd is None:
        return
    try:
        backend._close_battles()
    except ShowdownError:
        pass
    backend.sd.close()
    backend.sd = None


# -- L2 cases -----------------------------------------------------------------------------------
class L2Cases:
    """Decision points recorded live from seeded random battles: at each decision of a battle
    played with uniform ``k`` actions, with probability ``p_case`` the battle is serialised
    (``Battle.toJSON``) and becomes a case ``(canonical state, k)``. The recording runs in the
    reference backend's Showdown process; the JSONs of the latest batch are kept for
    ``ShowdownReference.load``. A batch is a function of its generator alone (case ids count
    from 0 in each batch), so batches recorded by different worker processes are the ones one
    process would record."""

    def __init__(self, only_supported: bool, p_case: float = 0.25,
                 counts: TeamFilter | None = None):
        self.only_supported, self.p_case, self.counts = only_supported, p_case, counts
        self.reference: ShowdownReference | None = None
        self._jsons: dict[int, str] = {}
        self._next = 0
        self.battles = 0

    def json(self, case: int) -> str:
        return self._jsons[case]

    def __call__(self, rng: np.random.Generator, batch: int) -> tuple[CanonicalState, np.ndarray]:
        if self.reference is None or self.reference.sd is None:
            raise RuntimeError("L2Cases records through a live ShowdownReference: create it first")
        sd = self.reference.sd
        self._jsons = {}
        self._next = 0  # ids only name the JSONs of this batch
        rows, ks, ids = [], [], []
        setups = iter_setups(sd, int(rng.integers(0, 2**31)), self.only_supported, self.counts)
        while len(rows) < batch:
            setup = next(setups)
            handle, export = start(sd, setup)
            self.battles += 1
            try:
                while not export["ended"] and len(rows) < batch:
                    k = rng.integers(0, ACTION_CHOICES, size=2).astype(np.int32)
                    row = reference_canonical(export)
                    if rng.random() < self.p_case:
                        self._jsons[self._next] = sd.request("serialize", battle=handle)
                        row = dict(row, terminated=np.bool_(False), truncated=np.bool_(False),
                                   case=np.int64(self._next))
                        rows.append(row)
                        ks.append(k)
                        ids.append(self._next)
                        self._next += 1
                    acts = [pick(k[s], row["legal"][s]) for s in (0, 1)]
                    res = sd.request("choose", battle=handle, **choose_args(acts))
                    if not res["accepted"]:
                        raise ShowdownError(f"Showdown refused {acts}: {res['error']}")
                    export = res["state"]
            finally:
                sd.request("close", battle=handle)
        return stack(rows), np.stack(ks)


class CraftedCases(L2Cases):
    """L2 cases at the positions of ``end_states.SCENARIOS``: a seeded random battle played
    ``0..max_decisions`` random decisions to a normal (move) request, then edited into a
    scenario drawn uniformly, serialised there; the action is a uniform ``k``. As for
    ``L2Cases``, a batch is a function of its generator alone."""

    def __init__(self, only_supported: bool, counts: TeamFilter | None = None,
                 max_decisions: int = 30):
        super().__init__(only_supported, counts=counts)
        self.max_decisions = max_decisions

    def _case(self, sd, rng, setups) -> tuple[int, dict, str]:
        from pokejax.end_states import SCENARIOS

        while True:
            handle, export = start(sd, next(setups))
            self.battles += 1
            for _ in range(int(rng.integers(0, self.max_decisions + 1))):
                if export["ended"]:
                    break
                k = rng.integers(0, ACTION_CHOICES, size=2)
                row = reference_canonical(export)
                acts = [pick(k[s], row["legal"][s]) for s in (0, 1)]
                export = sd.request("choose", battle=handle, **choose_args(acts))["state"]
            while not export["ended"] and any(s["request"] and s["request"].get("forceSwitch")
                                              for s in export["sides"]):
                row = reference_canonical(export)  # finish a forced switch: a move request next
                acts = [pick(0, row["legal"][s]) for s in (0, 1)]
                export = sd.request("choose", battle=handle, **choose_args(acts))["state"]
            if not export["ended"]:
                break
            sd.request("close", battle=handle)
        name = list(SCENARIOS)[int(rng.integers(0, len(SCENARIOS)))]
        export = sd.request("edit", battle=handle, **SCENARIOS[name].edit)
        return handle, export, name

    def __call__(self, rng: np.random.Generator, batch: int) -> tuple[CanonicalState, np.ndarray]:
        if self.reference is None or self.reference.sd is None:
            raise RuntimeError("CraftedCases records through a live ShowdownReference: create it "
                               "first")
        sd = self.reference.sd
        self._jsons = {}
        rows, ks = [], []
        setups = iter_setups(sd, int(rng.integers(0, 2**31)), self.only_supported, self.counts)
        for case in range(batch):
            handle, export, _ = self._case(sd, rng, setups)
            try:
                self._jsons[case] = sd.request("serialize", battle=handle)
            finally:
                sd.request("close", battle=handle)
            rows.append(dict(reference_canonical(export), terminated=np.bool_(False),
                             truncated=np.bool_(False), case=np.int64(case)))
            ks.append(rng.integers(0, ACTION_CHOICES, size=2).astype(np.int32))
        return stack(rows), np.stack(ks)


# -- the candidate ------------------------------------------------------------------------------
@functools.cache
def _compiled(step_fn: Callable, legal_fn: Callable):
    """(step, canonical) for a batch, jitted once per (engine step, legal mask) pair and
    shared by every candidate backend of the process (an engine compile takes minutes)."""

    def canonical_one(b: B.Battle, terminated) -> dict:
        out = normalize(flatten(b), jnp)
        out["legal"] = legal_fn(b)
        out["unmodelled"] = jnp.int32(0)
        out["terminated"] = terminated
        out["truncated"] = jnp.zeros_like(terminated)
        return out

    def step_one(b: B.Battle, k):
        mask = legal_fn(b)
        acts = jnp.stack([pick_jax(k[s] % ACTION_CHOICES, preferred(k[s], mask[s]))
                          for s in (0, 1)])
        nb = step_fn(b, acts)
        term = nb.ended & ~b.ended
        return nb, term, canonical_one(nb, term)

    return jax.jit(jax.vmap(step_one)), jax.jit(jax.vmap(canonical_one))


class JaxCandidate(Backend):
    """The JAX engine: ``jit(vmap(battle.step))`` over ``num_envs`` battles, actions picked
    from its own legal mask. Start states come from Showdown (its team generator and
    ``start``, loaded with ``showdown_battle.load``); everything after is the engine alone.

    ``legal_fn`` (default ``pokejax.legal.legal_mask``) and ``step_fn`` (default
    ``battle.step``) are swappable for tests (a planted bug, a stand-in mask)."""

    supports_load = True

    def __init__(self, num_envs: int, *, only_supported: bool, legal_fn: Callable | None = None,
                 step_fn: Callable | None = None):
        self.spec, self.num_envs = SPEC, int(num_envs)
        self.only_supported = only_supported
        self.legal_fn = legal_fn or legal.legal_mask
        self.step_fn = step_fn or B.step
        self._step, self._canonical = _compiled(self.step_fn, self.legal_fn)
        self.name = f"pokejax {__version__} (jax {jax.__version__}, {jax.default_backend()})"
        self._sd: Showdown | None = None
        self._template: B.Battle | None = None
        self.battle: B.Battle | None = None
        self.terminated = None
        self._rows: CanonicalState | None = None

    def _showdown(self) -> Showdown:
        if self._sd is None:
            self._sd = Showdown()
        return self._sd

    def _starts(self, setups: list[Setup]) -> list[B.Battle]:
        sd = self._showdown()
        out = []
        for setup in setups:
            handle, export = start(sd, setup)
            sd.request("close", battle=handle)
            out.append(showdown_battle.load(export))
        return out

    def template(self) -> B.Battle:
        """One unbatched battle: the pytree structure, shapes and dtypes ``load`` fills."""
        if self._template is None:
            self._template = self._starts(battle_setups(self._showdown(), 0, 1, False))[0]
        return self._template

    def _install(self, b: B.Battle, terminated) -> None:
        self.battle = jax.device_put(b)
        self.terminated = jnp.asarray(terminated, bool)
        self._rows = None

    def reset(self, seed: int) -> np.ndarray:
        setups = battle_setups(self._showdown(), seed, self.num_envs, self.only_supported)
        battles = self._starts(setups)
        self._install(jax.tree.map(lambda *xs: np.stack(xs), *battles), np.zeros(self.num_envs, bool))
        return self.state()["legal"].astype(np.int8)

    def step(self, actions) -> StepResult:
        if self.battle is None:
            raise RuntimeError("call reset(seed) or load(state) before step()")
        actions = validate_actions(self.spec.action_space, actions, self.num_envs)
        self.battle, self.terminated, rows = self._step(self.battle, jnp.asarray(actions))
        self._rows = {k: np.asarray(v) for k, v in rows.items()}
        term = self._rows["terminated"]
        winner = self._rows["winner"]
        reward = np.zeros((self.num_envs, 2), np.float32)
        for side in (0, 1):
            reward[:, side] = np.where(term & (winner == side + 1), 1.0,
                                       np.where(term & (winner == 2 - side), -1.0, 0.0))
        return StepResult(self._rows["legal"].astype(np.int8), reward, term.copy(),
                          np.zeros(self.num_envs, bool))

    def state(self) -> CanonicalState:
        if self._rows is None:
            self._rows = {k: np.asarray(v) for k, v in self._canonical(self.battle, self.terminated).items()}
        return dict(self._rows)

    def load(self, state: CanonicalState) -> None:
        """The JAX battle from a canonical state (fields it lacks take the template's zeros)."""
        tmpl = self.template()
        leaves, treedef = jax.tree_util.tree_flatten_with_path(tmpl.view())
        n = len(np.asarray(state["turn"]))
        if n != self.num_envs:
            raise ValueError(f"state holds {n} envs, the backend {self.num_envs}")
        filled = []
        for path, leaf in leaves:
            name = _path_name(path)
            value = state.get(name)
            if value is None:
                value = np.zeros((n, *np.shape(leaf)), np.asarray(leaf).dtype)
            filled.append(np.asarray(value).astype(np.asarray(leaf).dtype))
        view = jax.tree_util.tree_unflatten(treedef, filled)
        self._install(B.Battle.from_view(view), state["terminated"])

    def close(self) -> None:
        if self._sd is not None:
            self._sd.close()
            self._sd = None
