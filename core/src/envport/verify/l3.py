"""L3: whole episodes from matched seeds and identical action sequences, every step compared.

The unit of work is one seed (:func:`run_l3_seed`): both backends are reset with it and
stepped with the same actions, drawn from ``default_rng(seed)``, in chunks of ``suite.chunk``
steps, until every env has ended an episode (``terminated`` or ``truncated``) or
``suite.max_steps_per_seed`` steps were taken. A seed's result depends on nothing but the seed,
which is what lets :func:`run_l3` hand seeds to worker processes and merge the results in seed
order into the report a single process would write.

On a divergence the seed's actions are shrunk to the shortest diverging prefix
(:mod:`envport.verify.shrink`) with the same backends, and the case can be saved as a JSON
regression.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import numpy as np

from envport.backend import Backend, CanonicalState
from envport.errors import EnvportError
from envport.registry import L3Suite
from envport.verify.diff import (
    FieldDiff,
    ToleranceSpec,
    diff_states,
    field_tolerances,
    max_abs_err,
    tolerance_for,
    unequal_rows,
)
from envport.verify.shrink import shrink

CHUNK = 512  # default steps compared per round trip (L3Suite.chunk)
FLAGS = ("terminated", "truncated")  # the canonical-state keys L3 needs


@dataclass
class Divergence:
    suite: str
    seed: int
    step: int  # global step index after reset (0 = first step; -1 = already after reset)
    diffs: list[FieldDiff]
    prefix: list | None = None  # shortest diverging action prefix (after shrinking)
    prefix_len: int | None = None
    replays: int = 0
    state_before: dict | None = None  # reference canonical state before the diverging step
    env: int = 0  # the first env that diverged

    def to_json(self) -> dict:
        return {
            "suite": self.suite, "seed": self.seed, "step": self.step, "env": self.env,
            "fields": [d.to_json() for d in self.diffs],
            "shortest_prefix_len": self.prefix_len, "shortest_prefix": self.prefix,
            "shrink_replays": self.replays,
            "state_before": None if self.state_before is None else {
                k: np.asarray(v).tolist() for k, v in self.state_before.items()},
        }

    def summary(self) -> str:
        first = self.diffs[0] if self.diffs else "?"
        return (f"[{self.suite}] seed {self.seed}, step {self.step}: {first}; shortest action "
                f"prefix: {self.prefix_len} steps")


@dataclass
class SeedResult:
    """What one seed contributed: episodes and env-steps compared, the largest absolute
    difference seen, the divergence if there was one."""

    seed: int
    episodes: int = 0
    steps: int = 0
    max_abs_err: float = 0.0
    divergence: Divergence | None = None
    counters: dict | None = None  # increments of the suite's counters (set by the executor)


@dataclass
class L3Result:
    suite: str
    episodes: int = 0
    steps: int = 0
    seeds: int = 0
    mismatches: int = 0
    max_abs_err: float = 0.0
    divergences: list[Divergence] = field(default_factory=list)

    def add(self, seed: SeedResult) -> None:
        self.seeds += 1
        self.episodes += seed.episodes
        self.steps += seed.steps
        self.max_abs_err = worst_err(self.max_abs_err, seed.max_abs_err)
        if seed.divergence is not None:
            self.mismatches += 1
            self.divergences.append(seed.divergence)


def worst_err(a: float, b: float) -> float:
    """The larger error, NaN dominating (a NaN on one side only is the worst difference)."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


# -- comparing a chunk of steps ----------------------------------------------------------------
def _bad(ref_states: CanonicalState, cand_states: CanonicalState, tolerance) -> np.ndarray:
    """bool[T, num_envs]: which env differs at which step, in any field (a missing field, or
    one of another shape or dtype, makes every env of every step differ)."""
    steps, envs = np.shape(next(iter(ref_states.values())))[:2]
    bad = np.zeros((steps, envs), bool)
    for k, ref in ref_states.items():
        cand = cand_states.get(k)
        if cand is None or np.shape(cand) != np.shape(ref) or np.asarray(cand).dtype != ref.dtype:
            bad[:] = True
            continue
        rows = (steps * envs, *ref.shape[2:])  # one row per (step, env): the fast row compare
        bad |= unequal_rows(ref.reshape(rows), np.asarray(cand).reshape(rows),
                            tolerance_for(tolerance, k)).reshape(steps, envs)
    if set(cand_states) - set(ref_states):
        bad[:] = True
    return bad


def _episode_ends(states: CanonicalState) -> np.ndarray:
    """bool[T, num_envs]: where an episode ended (terminated or truncated)."""
    missing = [k for k in FLAGS if k not in states]
    if missing:
        raise EnvportError(f"L3 needs the canonical-state keys {list(FLAGS)} (bool[num_envs], the "
                           f"last step's flags); the reference's state has no {missing}")
    steps = len(states["terminated"])
    ends = np.asarray(states["terminated"], bool) | np.asarray(states["truncated"], bool)
    return ends.reshape(steps, -1)


def first_divergence(ref_states: CanonicalState, cand_states: CanonicalState, tolerance,
                     active: np.ndarray | None = None) -> tuple[int, int, list[FieldDiff]] | None:
    """The earliest ``(step, env, diffs)`` where the states differ, among the (step, env)
    pairs that ``active`` (bool[T, num_envs]) selects, or None."""
    bad = _bad(ref_states, cand_states, tolerance)
    if active is not None:
        bad &= active
    if not bad.any():
        return None
    t, e = (int(i) for i in np.argwhere(bad)[0])
    diffs = diff_states({k: np.asarray(v)[t, e: e + 1] for k, v in ref_states.items()},
                        {k: np.asarray(v)[t, e: e + 1] for k, v in cand_states.items()}, tolerance)
    for d in diffs:
        d.env = e
    return t, e, diffs


class _Episodes:
    """Which (step, env) pairs are compared and how many episodes ended: everything, or with
    ``first_episode_only`` each env up to the step that ends its first episode."""

    def __init__(self, num_envs: int, first_only: bool):
        self.first_only = first_only
        self.ended = np.zeros(num_envs, bool)  # has ended an episode

    def active(self, ends: np.ndarray) -> np.ndarray | None:
        if not self.first_only:
            return None
        # an env's step t is compared while no episode of it ended before t (ending at t counts)
        ended_by = np.logical_or.accumulate(ends, axis=0) | self.ended  # ended at or before t
        ended_before = np.concatenate([self.ended[None], ended_by[:-1]], axis=0)
        return ~ended_before

    def count(self, ends: np.ndarray) -> int:
        """Record ``ends`` (bool[T, num_envs]); return the episodes it completes."""
        counted = ends & self.active(ends) if self.first_only else ends
        self.ended |= ends.any(axis=0)
        return int(counted.sum())


# -- one seed ---------------------------------------------------------------------------------
def run_l3_seed(suite: L3Suite, ref: Backend, cand: Backend, seed: int,
                tolerance: ToleranceSpec = 0.0) -> SeedResult:
    """Run one seed of ``suite`` on the two (already made) backends; shrink a divergence."""
    rng = np.random.default_rng(seed)
    ref.reset(seed)
    cand.reset(seed)
    out = SeedResult(seed)
    ref_state, cand_state = ref.state(), cand.state()
    field_tolerances(tolerance, set(ref_state) | set(cand_state))  # no tolerance for a typo
    start = diff_states(ref_state, cand_state, tolerance)
    if start:  # already after reset: the shortest prefix is no action at all
        out.divergence = Divergence(suite.name, seed, -1, start, [], 0)
        return out
    episodes = _Episodes(ref.num_envs, suite.first_episode_only)
    history: list[np.ndarray] = []
    steps = 0
    while not episodes.ended.all() and steps < suite.max_steps_per_seed:
        n_chunk = min(suite.chunk, suite.max_steps_per_seed - steps)
        actions = np.stack([suite.sample_actions(rng, ref.num_envs) for _ in range(n_chunk)])
        before = ref.state()
        rs, cs = ref.rollout(actions), cand.rollout(actions)
        ends = _episode_ends(rs)
        found = first_divergence(rs, cs, tolerance, episodes.active(ends))
        n = n_chunk if found is None else found[0] + 1
        history.append(actions[:n])
        out.episodes += episodes.count(ends[:n])
        out.steps += n * ref.num_envs
        out.max_abs_err = worst_err(out.max_abs_err, max_abs_err(
            {k: v[:n] for k, v in rs.items()}, {k: np.asarray(v)[:n] for k, v in cs.items()}))
        steps += n
        if found is not None:
            t, env, diffs = found
            state_before = {k: v[t - 1] for k, v in rs.items()} if t > 0 else before
            div = Divergence(suite.name, seed, steps - 1, diffs, state_before=state_before, env=env)
            _shrink_into(div, np.concatenate(history), ref, cand, seed, tolerance, suite)
            out.divergence = div
            break
    return out


def replay_divergence(ref: Backend, cand: Backend, seed: int, actions: np.ndarray,
                      tolerance: ToleranceSpec = 0.0, first_episode_only: bool = False
                      ) -> tuple[int, int, list[FieldDiff]] | None:
    """Reset both backends with ``seed``, apply ``actions`` (T first) and return the first
    divergence ``(step, env, diffs)`` (step -1: right after reset), or None."""
    ref.reset(seed)
    cand.reset(seed)
    start = diff_states(ref.state(), cand.state(), tolerance)
    if start:
        return -1, start[0].env, start
    if len(actions) == 0:
        return None
    rs, cs = ref.rollout(actions), cand.rollout(actions)
    episodes = _Episodes(ref.num_envs, first_episode_only)
    return first_divergence(rs, cs, tolerance, episodes.active(_episode_ends(rs)))


def _shrink_into(div: Divergence, actions, ref, cand, seed, tolerance, suite: L3Suite) -> None:
    neutral = None if suite.neutral_action is None else suite.neutral_action(ref.num_envs)

    def replay(trial: np.ndarray) -> int | None:
        found = replay_divergence(ref, cand, seed, trial, tolerance, suite.first_episode_only)
        return None if found is None else found[0]

    result = shrink(actions, replay, neutral)
    div.prefix = np.asarray(result.actions).tolist()
    div.prefix_len = len(result.actions)
    div.replays = result.replays
    # the (possibly simplified) case diverges at its last step; report that step's diff
    found = replay_divergence(ref, cand, seed, result.actions, tolerance, suite.first_episode_only)
    if found is not None:
        div.env, div.diffs = found[1], found[2]


# -- a suite ----------------------------------------------------------------------------------
def run_l3(suite: L3Suite, tolerance: ToleranceSpec = 0.0, *, episodes: int | None = None,
           progress: Callable[[int, int], None] | None = None,
           regressions_dir: Path | None = None, stop_after: int = 1, executor=None,
           index: int = 0) -> L3Result:
    """Run seeds 0, 1, 2, ... until ``episodes`` episodes were compared (default: the suite's).

    The suite stops after ``stop_after`` diverging seeds; each divergence is saved as a JSON
    regression case when ``regressions_dir`` is given. ``progress(env_steps, episodes)`` gets
    increments of env-steps and the running episode count. ``executor`` (see
    :mod:`envport.verify.workers`) runs the seeds, ``suite`` being its plan's L3 suite number
    ``index``; by default they run in this process, one after the other.
    """
    from envport.verify.workers import SerialExecutor, Shard, ShardPlan

    target = suite.episodes if episodes is None else episodes
    own = executor is None
    if own:
        executor, index = SerialExecutor(ShardPlan(l3=[suite], tolerance=tolerance)), 0
    res = L3Result(suite.name)

    def more(in_flight: int) -> bool:
        # a finished seed gives about as many episodes as the seeds so far did: do not start
        # seeds whose episodes would only be thrown away (1 per seed until one is known)
        per_seed = res.episodes / res.seeds if res.seeds else 1
        return res.episodes + in_flight * per_seed < target

    try:
        for seed in executor.ordered((Shard("L3", index, s) for s in count()), more):
            executor.merge_counters(suite, seed.counters)
            res.add(seed)
            if progress is not None:
                progress(seed.steps, res.episodes)
            if seed.divergence is not None:
                if regressions_dir is not None:
                    save_regression(seed.divergence, regressions_dir)
                if len(res.divergences) >= stop_after:
                    break
            if res.episodes >= target:
                break
    finally:
        if own:
            executor.close()
    return res


def save_regression(div: Divergence, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"l3-{_slug(div.suite)}-seed{div.seed}-step{div.step}.json"
    path = directory / name
    path.write_text(json.dumps(div.to_json(), indent=1))
    return path


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")
