"""mjx-port's translation spec for the envport core (entry point ``envport.envs: mjx``).

Reference: Gymnasium 1.4's MuJoCo v5 envs (MuJoCo C 3.17). Candidate: the port on MJX 3.17 in
float64. Both physics engines run the same model from the same XML; what one step does is
equal to ~1e-14 (measured), so L2 compares every float field within 1e-9 absolute.

L3 cannot use a fixed tolerance over a whole episode: these systems are chaotic and MuJoCo C
parts from itself within tens to hundreds of steps when its start is perturbed by 1e-12
(issue 22). Each L3 suite therefore runs whole seeded episodes only up to a horizon that is
well inside the env's measured chaos horizon (docs/mjx.md), every step compared within 1e-9.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

from envport import Tolerance
from envport.registry import (
    EnvPort,
    ExtraBench,
    L1BackendTarget,
    L1Target,
    L2Suite,
    L3Suite,
)
from mjx_port import __version__
from mjx_port.bench import anchors_extra, bench_target
from mjx_port.cases import sample_actions, sample_states
from mjx_port.chaos import chaos_suites
from mjx_port.precision import F32_TOLERANCE
from mjx_port.statistical import TRAINED_RETURN_SD, random_policy_l4, trained_policy_transfer
from mjx_port.train import TARGETS as TRAIN_TARGETS
from mjx_port.train import train_commands

TOLERANCE = 1e-9
# env -> L3 horizon in env steps (episodes truncated there on both sides), inside the steps at
# which the port and Gymnasium were seen to part by more than 1e-9 (docs/mjx.md)
ENVS = {
    "HalfCheetah-v5": 10,  # roundoff grows ~1.5-3x per step: 1.6e-9 in qvel by step 20 (seen)
    "Hopper-v5": 1000,  # random-action episodes end (fall) long before any growth shows
    "Walker2d-v5": 1000,
    "Ant-v5": 20,  # 2e-13 by step 19 (seed 3); rarely falls under random actions
    "Swimmer-v5": 500,  # slow growth: 2e-11 by step 500, first 1e-9 at 671 and 817 (8 seeds)
    "Reacher-v5": 50,  # whole episodes (TimeLimit 50): <= 3e-14 over 24 seeds
    "Pusher-v5": 60,  # ~3x per 10 steps in contact: 2e-12 by 60, 9.7e-10 by 99 (1 of 16 seeds)
    "InvertedPendulum-v5": 1000,  # random-action episodes end (the pole falls) in a few steps
    "InvertedDoublePendulum-v5": 1000,
}
L1_PAIRED_STEPS = 10  # steps jit == no-jit and vmap == loop compare (l1_target)
NU = {
    "HalfCheetah-v5": 6,
    "Hopper-v5": 3,
    "Walker2d-v5": 6,
    "Ant-v5": 8,
    "Swimmer-v5": 2,
    "Reacher-v5": 2,
    "Pusher-v5": 7,
    "InvertedPendulum-v5": 1,
    "InvertedDoublePendulum-v5": 1,
}
BOUND = {"Pusher-v5": 2.0, "InvertedPendulum-v5": 3.0}  # action space [-b, b]; others 1

F32_NOTE = (
    "Port in float32 (the env users train on), from C's float64 state rounded to float32; "
    "per-field tolerances measured on other cases (mjx_port.precision: 10x the largest error, "
    "rounded up), the exact fields exact."
)
L2_NOTE = (
    "States from Gymnasium's own rollouts (MuJoCo C; seeded resets, uniformly random actions, a "
    "state recorded every 1-12 steps, so early steps, contact gaits, falls and pre-termination "
    "states all occur): qpos, qvel, qacc_warmstart (the Newton solver starts from it) and the "
    "episode's step count are loaded into both sides through Gymnasium's set_state and the "
    "port's reset_to. Actions uniform in the action space widened by 10% ([-1.1, 1.1]; "
    "Pusher [-2.2, 2.2], InvertedPendulum [-3.3, 3.3]): MuJoCo clamps ctrl to the range, the "
    "control cost uses the raw action, as in Gymnasium. Port in float64."
)


def _x64() -> None:
    # float64 physics: the verify/bench process belongs to this env alone
    jax.config.update("jax_enable_x64", True)


def _reference(num_envs: int, env_id: str, max_episode_steps: int | None = None):
    from mjx_port.backends import GymnasiumMujoco

    return GymnasiumMujoco(num_envs, env_id, max_episode_steps=max_episode_steps)


def _candidate(num_envs: int, env_id: str, max_episode_steps: int | None = None,
               dtype: str = "float64"):
    if dtype == "float64":
        _x64()
    from mjx_port.backends import MjxCandidate

    # a float32 candidate runs with x64 off inside the backend, whatever the process's setting
    return MjxCandidate(num_envs, env_id, dtype=dtype, max_episode_steps=max_episode_steps)


def actions_for(env_id: str):
    """The env's action sampler ``(rng, n)``: uniform in its action space widened by 10%."""
    return partial(sample_actions, nu=NU[env_id], bound=BOUND.get(env_id, 1.0))


def l2_suite(env_id: str, cases: int = 10_000, batch: int = 1000,
             dtype: str = "float64") -> L2Suite:
    """One env step from Gymnasium's states; the float64 port within the port's 1e-9, the
    float32 port within its measured, declared tolerances (``mjx_port.precision``)."""
    actions = actions_for(env_id)

    def make_cases(rng, n):
        return sample_states(rng, n, env_id), actions(rng, n)

    float32 = dtype == "float32"
    return L2Suite(
        name=f"{env_id}, {dtype}",
        cases=cases,
        batch=batch,
        note=L2_NOTE.replace("Port in float64.", F32_NOTE) if float32 else L2_NOTE,
        make_reference=partial(_reference, env_id=env_id),
        make_candidate=partial(_candidate, env_id=env_id, dtype=dtype),
        make_cases=make_cases,
        tolerance=F32_TOLERANCE.get(env_id) if float32 else None,
    )


def l3_suite(
    env_id: str, episodes: int = 100, horizon: int | None = None, num_envs: int = 1
) -> L3Suite:
    nu = NU[env_id]
    horizon = ENVS[env_id] if horizon is None else horizon
    return L3Suite(
        name=f"{env_id}, float64, seeded resets, first {horizon} steps",
        episodes=episodes,
        make_reference=partial(_reference, num_envs, env_id, horizon),
        make_candidate=partial(_candidate, num_envs, env_id, horizon),
        sample_actions=actions_for(env_id),
        neutral_action=lambda n: np.zeros((n, nu), np.float32),
        max_steps_per_seed=horizon,
        chunk=horizon,
        note=(
            f"Both sides reset with Gymnasium's seeded reset (numpy default_rng(seed)); each "
            f"episode is compared step by step, truncated at step {horizon} (TimeLimit "
            f"{horizon} on both sides), inside the env's chaos horizon (docs/mjx.md)."
        ),
    )


def _float64_env(env_id: str):
    import jax.numpy as jnp

    from mjx_port.env import make

    _x64()
    return make(env_id, dtype=jnp.float64)


def l1_target(env_id: str) -> L1Target:
    """The generic JAX env checks on the float64 port. jit == no-jit and vmap == loop compare
    two differently fused XLA programs, which part by roundoff (1e-16 relative at reset, about
    1e-12 after 10 steps on HalfCheetah, growing with the chaos): they compare float fields
    within 1e-9 absolute + 1e-9 relative (the L2/L3 bar, relative for the solver's large
    internal fields) over the first 10 steps, inside every env's chaos horizon; the rest is
    exact, determinism included."""
    actions = actions_for(env_id)
    return L1Target(
        name=f"{env_id}, float64",
        make_env=partial(_float64_env, env_id),
        sample_action=lambda rng: actions(rng, 1)[0],
        slow=True,  # an MJX compile: tens of seconds on CPU; the eager steps: seconds each
        tolerance=Tolerance(atol=TOLERANCE, rtol=TOLERANCE),
        paired_steps=L1_PAIRED_STEPS,
    )


def l1_backend_target(env_id: str) -> L1BackendTarget:
    """The backend-level L1 checks (spec, shapes and dtypes, determinism under the same seed,
    terminal flags, no NaN, load(state()) round trip) on the float64 candidate; unlike the JAX
    env checks they compare nothing across differently compiled programs."""
    return L1BackendTarget(
        name=f"{env_id}, float64 backend",
        make_backend=partial(_candidate, 2, env_id),
        sample_actions=actions_for(env_id),
        steps=20,
        slow=True,  # an MJX compile: tens of seconds on CPU
    )


def session_commands(stage: str, args: list[str]) -> list[list[str]]:
    """``train`` without arguments: each training target once (``train.train_commands``);
    everything else the core's default."""
    from envport.sessions import default_commands

    if stage == "train" and not args:
        return train_commands()
    return default_commands(PORT, stage, args)


def check_reference() -> None:
    from mjx_port.env import _gym_classes

    _gym_classes()  # raises unless the pinned gymnasium is installed
    import mujoco

    if not mujoco.__version__.startswith("3.17."):
        raise RuntimeError(
            f"mjx-port is verified against MuJoCo 3.17; {mujoco.__version__} is installed"
        )


def install_reference() -> None:
    # the reference (gymnasium[mujoco], MuJoCo C) is a pinned dependency of this package
    check_reference()


PORT = EnvPort(
    name="mjx",
    reference="gymnasium 1.4.0 MuJoCo v5 envs (MuJoCo C 3.17)",
    candidate=f"mjx-port {__version__} (mujoco-mjx 3.17, jax {jax.__version__}, float64)",
    install_reference=install_reference,
    check_reference=check_reference,
    tolerance={"qpos": TOLERANCE, "qvel": TOLERANCE, "obs": TOLERANCE, "reward": TOLERANCE},
    # the JAX env checks (l1_target). The backend checks (l1_backend_target) are not declared:
    # their load(state()) round trip fails, as the canonical state lacks qacc_warmstart, so a
    # loaded run parts from the unloaded one by 1e-17 one step later (docs/mjx.md)
    l1=[l1_target(e) for e in ENVS],
    # float64 within 1e-9; float32 within its measured tolerances (mjx_port.precision)
    l2=[l2_suite(e) for e in ENVS] + [l2_suite(e, dtype="float32") for e in F32_TOLERANCE],
    l3=[l3_suite(e) for e in ENVS],
    # the L3 bar: the port's divergence step against C's own chaos horizon, per env at
    # 1e-6 (C + 1e-12) and at 1e-9 (C + 1e-15) (mjx_port.chaos, docs/mjx.md)
    chaos=[s for e in ENVS for s in chaos_suites(e, actions_for(e))],
    # the statistical bar past the chaos horizon: episode returns under uniformly random
    # actions, 1,000 episodes a side, TOST (mjx_port.statistical)
    l4=[random_policy_l4(e, partial(_reference, env_id=e), partial(_candidate, env_id=e))
        for e in ENVS],
    # L4 with trained policies: PPO on the float32 port and on Gymnasium, five seeds each,
    # played on both (mjx_port.statistical.trained_policy_transfer)
    transfer=[trained_policy_transfer(t.name, partial(_reference, env_id=t.name),
                                      partial(_candidate, env_id=t.name))
              for t in TRAIN_TARGETS if t.name in TRAINED_RETURN_SD],
    bench=[bench_target("HalfCheetah-v5", NU["HalfCheetah-v5"], a) for a in (False, True)],
    # MJX on CPU: small batches (issue 22: a scan at 1,024 did not finish in minutes)
    bench_batch_sizes=(1, 8, 64),
    # PPO on HalfCheetah-v5 (the default) and Hopper-v5, float32 (mjx_port.train)
    train=TRAIN_TARGETS,
    session_commands=session_commands,
    # the port beside raw mjx.step, mjx.step with the port's physics, Brax and Gymnasium
    # (mjx_port.bench: bench_anchors.{json,md})
    extra_benches=[ExtraBench("anchors", anchors_extra,
                              outputs="bench_anchors.json, bench_anchors.md")],
)
