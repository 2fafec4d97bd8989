"""L3: whole episodes from matched seeds and identical action sequences, every step compared."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from envport.backend import Backend
from envport.registry import L3Suite
from envport.verify.diff import FieldDiff, diff_states, max_abs_err, unequal_rows
from envport.verify.shrink import shrink

CHUNK = 512  # steps compared per round trip


@dataclass
class Divergence:
    suite: str
    seed: int
    step: int  # global step index after reset (0 = first step)
    diffs: list[FieldDiff]
    prefix: list | None = None  # shortest diverging action prefix (after shrinking)
    prefix_len: int | None = None
    replays: int = 0
    state_before: dict | None = None  # reference canonical state before the diverging step

    def to_json(self) -> dict:
        return {
            "suite": self.suite, "seed": self.seed, "step": self.step,
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
class L3Result:
    suite: str
    episodes: int = 0
    steps: int = 0
    seeds: int = 0
    mismatches: int = 0
    max_abs_err: float = 0.0
    divergences: list[Divergence] = field(default_factory=list)


def _first_divergence(ref_states, cand_states, tolerance) -> tuple[int, list[FieldDiff]] | None:
    """The earliest step whose canonical states differ, with that step's field diffs."""
    steps = len(next(iter(ref_states.values())))
    bad = np.zeros(steps, bool)
    for k, ref in ref_states.items():
        cand = cand_states.get(k)
        if cand is None or np.shape(cand) != ref.shape:
            bad[:] = True
        else:
            bad |= unequal_rows(ref, cand, tolerance)
    if not bad.any():
        return None
    t = int(np.flatnonzero(bad)[0])
    return t, diff_states({k: v[t] for k, v in ref_states.items()},
                          {k: np.asarray(v)[t] for k, v in cand_states.items()}, tolerance)


def _replay_fn(ref: Backend, cand: Backend, seed: int, tolerance):
    def replay(actions: np.ndarray) -> int | None:
        ref.reset(seed)
        cand.reset(seed)
        found = _first_divergence(ref.rollout(actions), cand.rollout(actions), tolerance)
        return None if found is None else found[0]

    return replay


def run_l3(suite: L3Suite, tolerance: float = 0.0, *, episodes: int | None = None,
           progress=None, regressions_dir: Path | None = None, stop_after: int = 1) -> L3Result:
    """Run seeds 0, 1, 2, ... until ``episodes`` full episodes were compared.

    One seed runs until every env in the batch finished at least one episode. On a
    divergence, the case is shrunk and (if ``regressions_dir``) saved as a JSON regression
    case; the suite stops after ``stop_after`` divergences.
    """
    target = suite.episodes if episodes is None else episodes
    res = L3Result(suite.name)
    ref, cand = suite.make_reference(), suite.make_candidate()
    try:
        seed = 0
        while res.episodes < target:
            rng = np.random.default_rng(seed)
            ref.reset(seed)
            cand.reset(seed)
            res.seeds += 1
            start_diffs = diff_states(ref.state(), cand.state(), tolerance)
            if start_diffs:  # already after reset: the shortest prefix is no action at all
                res.mismatches += 1
                div = Divergence(suite.name, seed, -1, start_diffs, [], 0)
                res.divergences.append(div)
                if regressions_dir is not None:
                    save_regression(div, regressions_dir)
                if len(res.divergences) >= stop_after:
                    break
                seed += 1
                continue
            done_once = np.zeros(ref.num_envs, bool)
            history: list[np.ndarray] = []
            steps_this_seed = 0
            diverged = False
            while not done_once.all() and steps_this_seed < suite.max_steps_per_seed:
                actions = np.stack([suite.sample_actions(rng, ref.num_envs) for _ in range(CHUNK)])
                before = ref.state()
                rs, cs = ref.rollout(actions), cand.rollout(actions)
                found = _first_divergence(rs, cs, tolerance)
                n = CHUNK if found is None else found[0] + 1
                history.append(actions[:n])
                term = np.asarray(rs["terminated"][:n]).reshape(n, -1)
                res.episodes += int(term.sum())
                done_once |= term.any(axis=0)
                res.steps += n * ref.num_envs
                res.max_abs_err = max(res.max_abs_err, max_abs_err(
                    {k: v[:n] for k, v in rs.items()}, {k: np.asarray(v)[:n] for k, v in cs.items()}))
                steps_this_seed += n
                if progress is not None:
                    progress(n * ref.num_envs, res.episodes)
                if found is not None:
                    t, diffs = found
                    step = steps_this_seed - 1
                    state_before = ({k: v[t - 1] for k, v in rs.items()} if t > 0 else before)
                    div = Divergence(suite.name, seed, step, diffs, state_before=state_before)
                    _shrink_into(div, np.concatenate(history), ref, cand, seed, tolerance, suite)
                    res.mismatches += 1
                    res.divergences.append(div)
                    if regressions_dir is not None:
                        save_regression(div, regressions_dir)
                    diverged = True
                    break
            if diverged and len(res.divergences) >= stop_after:
                break
            seed += 1
    finally:
        ref.close()
        cand.close()
    return res


def _shrink_into(div: Divergence, actions, ref, cand, seed, tolerance, suite: L3Suite) -> None:
    neutral = None if suite.neutral_action is None else suite.neutral_action(ref.num_envs)
    result = shrink(actions, _replay_fn(ref, cand, seed, tolerance), neutral)
    div.prefix = np.asarray(result.actions).tolist()
    div.prefix_len = len(result.actions)
    div.replays = result.replays
    # the (possibly simplified) case diverges at its last step; report that step's diff
    ref.reset(seed)
    cand.reset(seed)
    found = _first_divergence(ref.rollout(result.actions), cand.rollout(result.actions), tolerance)
    if found is not None:
        div.diffs = found[1]


def save_regression(div: Divergence, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"l3-{_slug(div.suite)}-seed{div.seed}-step{div.step}.json"
    path = directory / name
    path.write_text(json.dumps(div.to_json(), indent=1))
    return path


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")
