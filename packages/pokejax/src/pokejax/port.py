"""pokejax's translation spec for the envport core (entry point ``envport.envs: pokejax``).

L2 and L3 compare the JAX engine (``battle.step``, ``jit(vmap(...))``) with a live Showdown
0.11.11 on seeded ``gen1randombattle`` battles; backends, actions and the canonical state are
described in ``pokejax/backends.py``. L1 runs the core's functional-env checks on the
single-agent env (``pokejax.env``) with auto-reset.

``ONLY_SUPPORTED_TEAMS`` is the one switch of the scope: while the engine lacks some
random-battle moves it is on, and both levels only use battles whose two teams consist of
engine moves; the suite notes say how many battles were filtered out. It turns itself off
(every Showdown random battle is used) once ``duel`` has every random-battle move.
"""

from __future__ import annotations

import time
from functools import partial

import jax
import numpy as np

from envport.registry import (
    BenchTarget,
    EnvPort,
    ExtraBench,
    L1Target,
    L2Suite,
    L3Suite,
    L4Suite,
    PolicyTransfer,
)
from envport.wrappers import AutoResetWrapper
from pokejax import __version__, install
from pokejax.backends import (
    ACTION_CHOICES,
    JaxCandidate,
    L2Cases,
    ShowdownReference,
    TeamFilter,
    unsupported_moves,
)
from pokejax.plan import PLAN
from pokejax.train import TARGETS as TRAIN_TARGETS

# THE SWITCH: only battles whose teams use moves the engine has (until it has them all)
ONLY_SUPPORTED_TEAMS = bool(unsupported_moves())

L3_ENVS = 100  # battles per seed (one Showdown process, one vmapped engine batch)
L3_BATTLES = 1_000
L2_CASES = 10_000


def _l1_targets() -> list[L1Target]:
    from pokejax.env import SingleAgentEnv

    # actions drawn without the mask: the env replaces an illegal one by the first legal one
    # under jit (and records it), which the checks exercise too
    return [L1Target("single agent vs random (auto-reset)",
                     lambda: AutoResetWrapper(SingleAgentEnv("random")),
                     lambda rng: np.int32(rng.integers(0, 9)), slow=True)]


def sample_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    """Per env and side a uniform ``k``: the (k mod n_legal)-th legal action on each side."""
    return rng.integers(0, ACTION_CHOICES, size=(n, 2)).astype(np.int32)


def sample_switches(rng: np.random.Generator, n: int) -> np.ndarray:
    """A chooser that only switches (a uniform legal switch whenever there is one): nothing
    is ever hit, so every battle runs until the turn limit ties it after turn 1000."""
    return sample_actions(rng, n) + ACTION_CHOICES


def neutral_action(n: int) -> np.ndarray:
    return np.zeros((n, 2), np.int32)  # the first legal action of each side


def _scope(counts: TeamFilter, only_supported: bool) -> str:
    if not only_supported:
        return ("every gen1randombattle battle (the engine has every random-battle move); "
                f"{counts.summary()}")
    missing = ", ".join(sorted(unsupported_moves()))
    return (f"FILTERED: only battles whose two teams use engine moves (missing: {missing}); "
            f"{counts.summary()}")


L2_NOTE = (
    "Decision points recorded live: seeded random battles played with uniform random legal "
    "actions, each decision kept with probability 1/4, the battle serialised there by "
    "Showdown (Battle.toJSON). Reference: Battle.fromJSON of that JSON (checked equal to the "
    "recorded state), then the choices; candidate: the recorded canonical state loaded into "
    "the JAX battle, then battle.step. Compared: every field of the canonical state, the "
    "legal masks and the count of unmodelled Showdown state. Scope: ")
L3_NOTE = (
    "Battle i of run seed = reference.derive_seeds(seed, i) (battle and team seeds, teams "
    "from Showdown's generator, start state loaded into the JAX battle); both sides then play "
    "the same per-side k (the (k mod n)-th legal action of their own mask) and are compared "
    "after every decision until every battle of the seed ended. Scope: ")


def _l2(cases: int = L2_CASES, batch: int = 1000, only_supported: bool = ONLY_SUPPORTED_TEAMS,
        legal_fn=None, step_fn=None, name: str = "gen1randombattle decision points") -> L2Suite:
    counts = TeamFilter()
    recorder = L2Cases(only_supported, counts=counts)
    return L2Suite(
        name=name, cases=cases, batch=batch,
        make_reference=partial(ShowdownReference, only_supported=only_supported, cases=recorder),
        make_candidate=partial(JaxCandidate, only_supported=only_supported, legal_fn=legal_fn,
                               step_fn=step_fn),
        make_cases=recorder,
        note=lambda: L2_NOTE + _scope(counts, only_supported),
        counters=counts,
    )


CRAFTED_NOTE = (
    "Positions a few decisions from how a battle ends, which random play rarely reaches "
    "(pokejax.end_states: the turn limit, Gen 1's Endless Battle Clause and controls one step "
    "short of each): a seeded random battle played 0-30 random decisions to a move request, then "
    "edited in Showdown (driver `edit`: turn counter, HP, status, moves, types; requests made "
    "again) and serialised; reference: Battle.fromJSON of that JSON, then the choices; "
    "candidate: the exported state loaded into the JAX battle, then battle.step. Scope: ")


def _l2_crafted(cases: int = 1000, batch: int = 100,
                only_supported: bool = ONLY_SUPPORTED_TEAMS) -> L2Suite:
    from pokejax.backends import CraftedCases

    counts = TeamFilter()
    recorder = CraftedCases(only_supported, counts=counts)
    return L2Suite(
        name="crafted end-of-battle positions (turn limit, Endless Battle Clause)",
        cases=cases, batch=batch,
        make_reference=partial(ShowdownReference, only_supported=only_supported, cases=recorder),
        make_candidate=partial(JaxCandidate, only_supported=only_supported),
        make_cases=recorder,
        note=lambda: CRAFTED_NOTE + _scope(counts, only_supported),
        counters=counts,
    )


def _l3(num_envs: int = L3_ENVS, episodes: int = L3_BATTLES,
        only_supported: bool = ONLY_SUPPORTED_TEAMS, legal_fn=None, step_fn=None,
        name: str | None = None, chooser=sample_actions, note: str = "") -> L3Suite:
    counts = TeamFilter()
    return L3Suite(
        name=name or f"gen1randombattle, {num_envs} battles per seed",
        episodes=episodes, max_steps_per_seed=4096,
        make_reference=partial(ShowdownReference, num_envs, only_supported=only_supported,
                               counts=counts),
        make_candidate=partial(JaxCandidate, num_envs, only_supported=only_supported,
                               legal_fn=legal_fn, step_fn=step_fn),
        sample_actions=chooser, neutral_action=neutral_action,
        note=lambda: L3_NOTE + note + _scope(counts, only_supported),
        counters=counts,
    )


SWITCH_ENVS, SWITCH_BATTLES = 20, 40  # 40 battles of 1,000 turns: 40,000 decisions


def _l3_switching(num_envs: int = SWITCH_ENVS, episodes: int = SWITCH_BATTLES, **kw) -> L3Suite:
    return _l3(num_envs, episodes, chooser=sample_switches,
               name=f"gen1randombattle, switch-only chooser to the turn limit, {num_envs} "
                    "battles per seed",
               note="Chooser: a uniform legal switch whenever there is one (k >= 2520), so "
                    "every battle ends by the turn limit, a tie after turn 1000. ", **kw)


L4_NOTE = (
    "Policy: opponents.greedy_policy (the legal move with the highest expected damage: base "
    "power x STAB x type effectiveness x Atk/Def or Spc/Spc ratio x accuracy, fixed-damage "
    "moves their damage; switches only when no move is legal, uniformly among the legal "
    "switches) against a player uniform over its legal actions; greedy is p1 in even battles, "
    "p2 in odd ones; every battle is played until it ends by the rules (a tie, 0.5, at the latest "
    "after turn 1000, on both sides; one still running after {max_decisions} decisions stops the "
    "run as an error, never half a point). Reference: pokemon-showdown in Node (driver.js `match`, no round trip per "
    "turn): teams from Showdown's gen1randombattle generator, legal actions from Showdown's "
    "request, greedy transliterated to JS with the JAX numbers (move table, float32 type "
    "multipliers, JAX's float32 accuracy factors) and float32 arithmetic (Math.fround), checked "
    "equal to the JAX policy's scores and choice at every decision of 40 whole battles "
    "(tests/test_match.py); chooser PRNG: Showdown's, chunks of {chunk} battles seeded from "
    "the run seed. Candidate: JAX only: env.new_state (teams.sample_team, start.new_battle) "
    "keyed by battle index, greedy_policy/random_policy and battle.step in one "
    "jit(while_loop(vmap)) per {batch} battles. Last run: ")


def _l4(episodes: int = 10_000, margin: float = 0.02,
        name: str = "greedy vs random win rate") -> L4Suite:
    from pokejax import match

    def note() -> str:
        return (L4_NOTE.format(max_decisions=match.MAX_DECISIONS, chunk=match.CHUNK,
                               batch=match.BATCH)
                + (match.summary() or "none"))

    return L4Suite(
        name=name,
        evaluate_reference=match.showdown_scores,
        evaluate_candidate=match.jax_scores,
        metric=("greedy's result vs a uniformly random player: win 1, tie 0.5, loss 0 "
                "(greedy on p1 in even battles, p2 in odd)"),
        episodes=episodes, margin=margin, note=note,
    )


# -- L4 with trained policies: PPO policies trained on the port, played on both -------------
TRANSFER_STEPS = 500_000  # vs-random: ~0.95 wins by then (docs/training.md)
TRANSFER_EPISODES = 1_000
TRANSFER_COMMON = (
    "Policies: PPO on the port (target vs-random, {steps:,} env steps, seeds 0-4), each playing "
    "sampled actions for {episodes:,} battles a side against the random opponent: on the JAX "
    "env (SingleAgentEnv('random')) and on the live Showdown (single_reference."
    "ShowdownSingleAgent: Showdown's battles and requests, the observation built from its "
    "exported state by the loader L2 and L3 check). Not trained on Showdown: it plays ~450 agent "
    "decisions/s here (1,000 battles in one process), so five policies through the host loop "
    "would take about two hours. ")
WIN_NOTE = TRANSFER_COMMON + (
    "Margin 0.05 of the win rate: for these policies (0.94-0.96 against random) the standard "
    "error of the difference is ~0.008 at 1,000 battles a side, so an exact port passes with "
    "room. The win rate hardly moves under the planted crit gap (both sides crit more): the "
    "battle-length suites carry the power.")
LENGTH_NOTE = TRANSFER_COMMON + (
    "Metric: the battle's length in the agent's decisions (~36 for these policies, s.d. ~8). "
    "Margin 2 decisions: the standard error of the difference is ~0.37 at 1,000 battles a "
    "side, so an exact port fails a suite with probability ~2e-4; a rule that changes how much "
    "damage is dealt moves it by more: doubling the critical-hit rate (pokejax.planted) "
    "shortens battles by ~2.2 decisions and fails L4 (tests/test_pokejax_transfer.py).")


def _showdown_vs_random(num_envs: int):
    from pokejax.single_reference import ShowdownSingleAgent

    # one battle per env: the evaluation counts each env's first episode only
    return ShowdownSingleAgent(num_envs, "random", episodes_per_env=1)


def decisions(ts):
    """1 per agent step: summed over an episode, the battle's length in the agent's decisions."""
    return ts.reward * 0 + 1


def transfers(steps: int = TRANSFER_STEPS, episodes: int = TRANSFER_EPISODES, seeds=range(5),
              **kw) -> list[PolicyTransfer]:
    """The two L4 transfer checks on the same port-trained policies: win rate and length."""
    fmt = {"steps": steps, "episodes": episodes}
    common = dict(target="vs-random", make_reference=_showdown_vs_random, seeds=tuple(seeds),
                  episodes=episodes, train={"total_steps": steps}, **kw)
    return [
        PolicyTransfer(name="PPO vs random, win rate", margin=0.05,
                       margin_note=WIN_NOTE.format(**fmt),
                       metric="win (1) or not (0) of one battle against random", **common),
        PolicyTransfer(name="PPO vs random, battle length", margin=2.0,
                       margin_note=LENGTH_NOTE.format(**fmt), score=decisions,
                       metric="the agent's decisions in one battle against random", **common),
    ]


BENCH_WORKLOAD = "gen1randombattle, random legal play"


def _bench_targets() -> list[BenchTarget]:
    """Decision points per second; see ``pokejax/bench.py`` for both sides. Two setups of one
    workload, so the report pairs the best of each side: one Showdown process against the engine
    on one XLA device, and Showdown in one process per core (it is single-threaded; that is how
    a user runs it on N cores) against the engine on every local device (one per core under
    ``nox -s bench-pokejax``; the GPU on a GPU machine)."""
    import functools
    import os

    from pokejax import bench

    cores = os.cpu_count() or 1
    setups = [("Showdown 1 process, pokejax 1 device", 1, 1)]
    if cores > 1:
        setups.append((f"Showdown {cores} processes, pokejax every device", cores, None))
    return [
        BenchTarget(
            name=name,
            reference_stepper=functools.partial(bench.reference_stepper, processes=procs),
            candidate_rollout=functools.partial(bench.candidate_rollout, max_devices=devices),
            sample_actions=sample_actions,
            how_actions=bench.HOW_ACTIONS,
            workload=BENCH_WORKLOAD,
        )
        for name, procs, devices in setups
    ]


def _profile(out, progress):
    """Where the time of one env-step goes (``pokejax.profile``), after the bench."""
    from pokejax import profile

    return profile.main(["--out", str(out)])


def session_commands(stage: str, args: list[str]) -> list[list[str]]:
    """``train`` without arguments: PPO against the greedy opponent (target ``vs-greedy``, about
    an hour on a 2-vCPU CPU), evaluated against both built-in opponents as it goes, then its
    final policy over 2,000 battles against each (``envport evaluate``: sampled and most likely
    actions, 95% CIs, in the run's evaluation.json). The other stages: the core's default."""
    from envport.sessions import default_commands

    if stage == "train" and not args:
        run_id = time.strftime("vs-greedy-%Y%m%d-%H%M%S")
        return [["envport", "train", "pokejax", "--target", "vs-greedy", "--run-id", run_id,
                 "--eval-every", "100", "--eval-episodes", "400"],
                ["envport", "evaluate", "pokejax", run_id, "--episodes", "2000"]]
    return default_commands(PORT, stage, args)


PORT = EnvPort(
    name="pokejax",
    reference=f"pokemon-showdown {install.SHOWDOWN_VERSION} (npm), gen1randombattle",
    candidate=f"pokejax {__version__} (jax {jax.__version__}, {jax.default_backend()})",
    install_reference=install.install,
    check_reference=install.check,
    tolerance=0.0,
    l1=_l1_targets(),
    l2=[_l2(), _l2_crafted()],
    l3=[_l3(), _l3_switching()],
    l4=[_l4()],
    bench=_bench_targets(),
    train=TRAIN_TARGETS,
    transfer=transfers(),
    session_commands=session_commands,
    plan=PLAN,
    extra_benches=[ExtraBench("profile", _profile, outputs="profile.json, profile.md")],
    notes={"status": "engine covers every gen1randombattle move; L1-L4 pass; speed and its "
                     "profile in docs/benchmarks.md"},
)
