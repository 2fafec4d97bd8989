"""tcgjax's translation spec for the envport core (entry point ``envport.envs: tcgjax``)."""

from __future__ import annotations

import random

import jax
import numpy as np

from envport.registry import BenchTarget, EnvPort, ExtraBench, L1Target, L2Suite, L3Suite
from envport.wrappers import AutoResetWrapper
from tcgjax import __version__
from tcgjax.backends import CHOOSER, JaxEngineBackend, ReferenceBackend
from tcgjax.env import SingleAgentEnv
from tcgjax.plan import PLAN
from tcgjax.reference import deck_list, legal_actions, new_game, step
from tcgjax.reference.actions import N_ACTIONS
from tcgjax.reference.arrays import FIELDS, to_arrays
from tcgjax.train import TARGETS as TRAIN_TARGETS
from tcgjax.train import train_commands
from tcgjax.transfer import transfers

L2_NOTE = (
    "States are sampled from reference games (random chooser, pairings cycling through all "
    "15 x 15), loaded into both engines with the reference's own array layout, and one chooser "
    "action applied: every field must be equal."
)


def _cases(rng: np.random.Generator, batch: int):
    decks = deck_list()
    r = random.Random(int(rng.integers(2**31)))
    states = []
    while len(states) < batch:
        a, b = r.randrange(15), r.randrange(15)
        st = new_game(decks[a], decks[b], r.randrange(2**32), log_enabled=False)
        while not st.done and len(states) < batch:
            if r.random() < 0.3:
                states.append(to_arrays(st))
            step(st, r.choice(legal_actions(st)))
    stacked = {k: np.stack([s[k] for s in states]) for k in FIELDS}
    return stacked, rng.integers(0, CHOOSER, batch).astype(np.int32)


def _actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, CHOOSER, n).astype(np.int32)


BENCH_WORKLOAD = "random legal play (chooser indices), games restarted on a random pairing"


def _bench_setups() -> dict[str, tuple[int, int | None]]:
    """Target name -> (reference processes, JAX max devices): one reference process against one
    XLA device, and one reference process per core (single-threaded Python: how a user runs it
    on N cores) against every local device (one per core under ``nox -s bench-tcgjax``)."""
    import os

    cores = os.cpu_count() or 1
    setups: dict[str, tuple[int, int | None]] = {"reference 1 process, JAX 1 device": (1, 1)}
    if cores > 1:
        setups[f"reference {cores} processes, JAX every device"] = (cores, None)
    return setups


def _bench_targets() -> list[BenchTarget]:
    """Decisions per second; see ``tcgjax/bench.py`` for both sides. Two setups of one workload,
    so the report pairs the best of each side (``bench.json`` "best")."""
    import functools

    from tcgjax import bench

    return [
        BenchTarget(
            name=name,
            reference_stepper=functools.partial(bench.reference_stepper, processes=procs),
            candidate_rollout=functools.partial(bench.candidate_rollout, max_devices=devices),
            sample_actions=bench.sample_actions,
            how_actions=bench.HOW_ACTIONS,
            workload=BENCH_WORKLOAD,
        )
        for name, (procs, devices) in _bench_setups().items()
    ]


def _games_extra(out, progress):
    """Games/s beside decisions/s: each side's mean game length measured on complete games,
    the table's decisions/s over it (``bench_games``)."""
    from tcgjax import bench

    return bench.run_games_extra(out)


FUZZ_STEPS = 1_000_000


def session_commands(stage: str, args: list[str]) -> list[list[str]]:
    """``verify``: ``envport verify tcgjax *args``, then the fuzz run (``python -m tcgjax.fuzz``:
    10^6 JAX env-steps times ``--scale`` when given, every invariant on every state; summary
    in ``<out>/tcgjax/fuzz.json``). ``train`` without arguments: each target once with its
    learning curves (``train.train_commands``). The other stages: the core's default."""
    from envport.sessions import default_commands

    if stage == "train" and not args:
        return train_commands()
    cmds = default_commands(PORT, stage, args)
    if stage != "verify":
        return cmds

    def opt(name: str, default: str) -> str:
        for i, a in enumerate(args):
            if a == name and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(name + "="):
                return a.split("=", 1)[1]
        return default

    steps = max(1024, int(FUZZ_STEPS * float(opt("--scale", "1"))))
    out = f"{opt('--out', 'reports')}/tcgjax/fuzz.json"
    return [*cmds, ["python", "-m", "tcgjax.fuzz", "--steps", str(steps), "--out", out]]


PORT = EnvPort(
    name="tcgjax",
    reference=f"tcgjax.reference {__version__} (pure Python, from the written specification)",
    candidate=f"tcgjax.engine {__version__} (jax {jax.__version__}, {jax.default_backend()})",
    install_reference=lambda: None,
    check_reference=lambda: None,
    tolerance=0.0,
    l1=[
        # auto-reset: a finished game has no legal action, and the checks step on for 300
        # steps (games end after ~20 decisions of the agent)
        L1Target(
            "SingleAgentEnv vs random, auto-reset (unchecked: illegal actions become the first "
            "legal one)",
            lambda: AutoResetWrapper(SingleAgentEnv(checked=False)),
            lambda rng: np.int32(rng.integers(0, N_ACTIONS)),
            slow=True,  # jit == no-jit runs the engine op by op: minutes on CPU
        )
    ],
    l2=[
        L2Suite(
            name="reference states, one chooser action",
            make_reference=ReferenceBackend,
            make_candidate=JaxEngineBackend,
            make_cases=_cases,
            cases=10_000,
            batch=500,
            note=L2_NOTE,
        )
    ],
    l3=[
        L3Suite(
            name="full games, 32 at a time, seeded random chooser",
            make_reference=lambda: ReferenceBackend(32),
            make_candidate=lambda: JaxEngineBackend(32),
            sample_actions=_actions,
            episodes=10_000,
            first_episode_only=True,
        )
    ],
    bench=_bench_targets(),
    extra_benches=[ExtraBench("games", _games_extra, outputs="bench_games.json, bench_games.md")],
    train=TRAIN_TARGETS,
    transfer=transfers(),
    session_commands=session_commands,
    plan=PLAN,
)
