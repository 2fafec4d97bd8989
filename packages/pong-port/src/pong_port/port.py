"""pong-port's translation spec for the envport core (entry point ``envport.envs: pong``)."""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from envport.registry import BenchTarget, EnvPort, L1Target, L2Suite, L3Suite, PolicyTransfer
from pong_port import __version__, reference_build
from pong_port.cases import sample_actions, sample_states
from pong_port.config import PongConfig
from pong_port.env import Pong, PufferVecPong
from pong_port.plan import PLAN
from pong_port.train import PONG_INI
from pong_port.train import TARGETS as TRAIN_TARGETS

DISCRETE = PongConfig()
FRAMESKIP8 = PongConfig(frameskip=8)
CONTINUOUS = PongConfig(continuous=True)

L2_NOTE = (
    "The C reference cannot load a state through its API, so both sides are loaded directly: "
    "the reference's `struct Pong` of each env is written through ctypes (layout mirrored from "
    "pong.h and checked by a test), the port's pytree from the same values. States are sampled "
    "densely around every branch of c_step (walls, paddle edges, scoring, max_score-1, tiny "
    "|vy|, out-of-range paddles, stale observations). libc's global RNG can only be positioned "
    "by srand(seed) + k rand() calls, so each batch draws a (seed, k) pair applied to both."
)


def _reference(num_envs: int, config: PongConfig, allow_out_of_range: bool = False):
    from pong_port.reference import PongReference

    return PongReference(num_envs, config, allow_out_of_range=allow_out_of_range)


def _candidate(num_envs: int, config: PongConfig, allow_out_of_range: bool = False):
    from pong_port.backends import PongCandidate

    return PongCandidate(num_envs, config, allow_out_of_range=allow_out_of_range)


def _neutral(config: PongConfig):
    if config.continuous:
        return lambda n: np.zeros((n, 1), np.float32)
    return lambda n: np.zeros(n, np.int32)


def _l2(name: str, config: PongConfig, cases: int, out_of_range: float = 0.05) -> L2Suite:
    def make_cases(rng, batch):
        return (sample_states(rng, batch, config),
                sample_actions(rng, batch, config, out_of_range=out_of_range))

    return L2Suite(
        name=name, cases=cases, batch=1000, note=L2_NOTE,
        make_reference=partial(_reference, config=config, allow_out_of_range=True),
        make_candidate=partial(_candidate, config=config, allow_out_of_range=True),
        make_cases=make_cases,
    )


def _l3(name: str, num_envs: int, config: PongConfig, episodes: int = 100,
        out_of_range: float = 0.0) -> L3Suite:
    allow = out_of_range > 0
    return L3Suite(
        name=name, episodes=episodes,
        make_reference=partial(_reference, num_envs, config, allow),
        make_candidate=partial(_candidate, num_envs, config, allow),
        sample_actions=lambda rng, n: sample_actions(rng, n, config, out_of_range=out_of_range),
        neutral_action=_neutral(config),
    )


def _l1_targets() -> list[L1Target]:
    short = PongConfig(max_score=2)  # short games, so terminal steps happen within the check
    return [
        L1Target("Pong discrete, max_score=2", lambda: Pong(short),
                 lambda rng: np.int32(rng.integers(0, 3))),
        L1Target("Pong continuous, frameskip=4", lambda: Pong(PongConfig(continuous=True, frameskip=4, max_score=2)),
                 lambda rng: rng.uniform(-1, 1, (1,)).astype(np.float32)),
    ]


# -- benchmark -------------------------------------------------------------------------------
ACTION_CACHE = 64


def _reference_stepper(num_envs: int, config: PongConfig):
    from pong_port.reference import PufferPong

    env = PufferPong(num_envs, config)
    env.reset(0)
    return env.step, env.close


def _candidate_rollout(num_envs: int, config: PongConfig):
    """``run(k)``: k batched steps in one jitted ``fori_loop`` (k is dynamic: no recompiles),
    actions cycling through a cache of random batches drawn once on the device."""
    env = PufferVecPong(num_envs, config)
    cache = jnp.asarray(np.stack([sample_actions(np.random.default_rng(i), num_envs, config)
                                  for i in range(ACTION_CACHE)]))

    @jax.jit
    def run(state, k):
        def body(i, s):
            s, _ = env.step(s, cache[i % ACTION_CACHE])
            return s
        return jax.lax.fori_loop(0, k, body, state)

    holder = {"state": env.reset(0)[0]}
    t0 = time.perf_counter()
    holder["state"] = jax.block_until_ready(run(holder["state"], 1))
    compile_s = time.perf_counter() - t0

    def steps(k: int) -> None:
        holder["state"] = jax.block_until_ready(run(holder["state"], k))

    return steps, compile_s


def _bench(name: str, config: PongConfig) -> BenchTarget:
    return BenchTarget(
        name=name,
        reference_stepper=partial(_reference_stepper, config=config),
        candidate_rollout=partial(_candidate_rollout, config=config),
        sample_actions=lambda rng, n: sample_actions(rng, n, config),
        how_actions=(
            "Both sides cycle through 64 cached batches of uniformly random actions. Reference: "
            "PufferLib's Python wrapper step (copy into the float32 action buffer + vec_step over "
            "the C envs), called from a Python loop. Port: PufferVecPong.step inside one jitted "
            "fori_loop on the device, actions indexed from a device array; no host sync per step."
        ),
    )


# -- L4: trained policies ------------------------------------------------------------------
TRANSFER_STEPS = 6_000_000  # half the target's budget: policies between +15 and +20
TRANSFER_NOTE = (
    "Margin 1 point of the game score (points won - lost, range -21..+21): a gap that moves a "
    "policy's result by one point per game. With 1,000 games per backend the standard error of "
    "the difference is about 0.2 points for these policies, so an exact port passes with room "
    "(its expected difference is 0), while a planted paddle speed of 9 instead of 8 moves a "
    "policy by more than 10 points (tests/test_pong_transfer.py). Policies: PPO on the port "
    f"(on-device) and on PufferLib's C Pong (the host loop), {TRANSFER_STEPS:,} env steps each "
    "at the frameskip=8 target's settings; each plays sampled actions.")


def _puffer_c(num_envs: int):
    from pong_port.reference import PongReference

    return PongReference(num_envs, PONG_INI)


TRANSFER = PolicyTransfer(
    name="PPO vs the scripted paddle", target="frameskip=8", make_reference=_puffer_c,
    margin=1.0, margin_note=TRANSFER_NOTE, metric="score (points won - lost) of one game",
    seeds=(0, 1, 2, 3, 4), episodes=1000, train={"total_steps": TRANSFER_STEPS},
    reference_train={})


def check_reference() -> None:
    from pong_port.reference import load_binding

    load_binding()


def session_commands(stage: str, args: list[str]) -> list[list[str]]:
    """``train`` without arguments: PPO on seeds 0, 1, 2, then the side by side with PufferLib's
    own trainer (PuffeRL in its venv, built first when missing: torch is downloaded once) ->
    reports/pong/train/side-by-side.{json,md}. Otherwise ``envport <stage> pong *args``."""
    if stage == "tests":
        return []
    if stage != "train":
        return [["envport", stage, "pong", *args]]
    if args:
        return [["envport", "train", "pong", *args]]
    return [["envport", "train", "pong", "--seeds", "0,1,2"],
            ["python", "-m", "pong_port.pufferl", "build"],
            ["python", "-m", "pong_port.side_by_side", "--seeds", "0,1,2"]]


PORT = EnvPort(
    name="pong",
    reference=f"pufferlib {reference_build.PUFFERLIB_VERSION} ocean/pong (C, built from the PyPI sdist)",
    candidate=f"pong-port {__version__} (jax {jax.__version__}, {jax.default_backend()})",
    install_reference=reference_build.build,
    check_reference=check_reference,
    tolerance=0.0,
    l1=_l1_targets(),
    l2=[
        _l2("discrete, frameskip=1", DISCRETE, 10_000),
        _l2("discrete, frameskip=8", FRAMESKIP8, 5_000),
        _l2("continuous, frameskip=1", CONTINUOUS, 5_000),
    ],
    l3=[
        _l3("num_envs=1, frameskip=1", 1, DISCRETE),
        _l3("num_envs=16, frameskip=8", 16, FRAMESKIP8),
        _l3("continuous, num_envs=1, frameskip=1", 1, CONTINUOUS),
        _l3("out-of-range actions, num_envs=8, frameskip=3", 8, PongConfig(frameskip=3),
            episodes=24, out_of_range=0.2),
    ],
    bench=[_bench("frameskip=1", DISCRETE), _bench("frameskip=8", FRAMESKIP8)],
    train=TRAIN_TARGETS,
    transfer=[TRANSFER],
    plan=PLAN,
    session_commands=session_commands,
)
