"""How an env package describes itself to the core (its translation spec) and how the core
finds it: entry points in the group ``envport.envs`` that point at an :class:`EnvPort`.

The core knows nothing of any one env: ``envport verify <name>`` and ``envport bench <name>``
only call what the package's ``EnvPort`` provides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from envport.backend import Backend, CanonicalState
from envport.env import Env
from envport.errors import UnknownEnvError
from envport.plan import TranslationPlan

ENTRY_POINT_GROUP = "envport.envs"

# actions for a whole batch at one step: (rng, num_envs) -> array
ActionSampler = Callable[[np.random.Generator, int], np.ndarray]

# (episodes, seed, progress) -> float64[episodes]: one score per episode; progress(k) is called with
# the number of episodes just finished (an increment), may be called any number of times
PolicyEvaluator = Callable[[int, int, Callable[[int], None]], np.ndarray]


@dataclass
class L1Target:
    """A JAX env for the generic L1 checks, with a way to draw valid actions."""

    name: str
    make_env: Callable[[], Env]
    sample_action: Callable[[np.random.Generator], Any]
    # minutes rather than seconds (e.g. a long jit compile): the generic smoke test runs it
    # only with the slow tests; ``envport verify`` always runs it
    slow: bool = False
    # jit == no-jit and vmap == loop, which compare differently compiled programs: bit for bit
    # (0), or for a physics env a tolerance on float fields (a number: absolute, or a
    # Tolerance(atol, rtol)) over ``paired_steps`` inside its chaos horizon (None: the checks'
    # default); see envport.verify.checks
    tolerance: Any = 0.0
    paired_steps: int | None = None


@dataclass
class L1BackendTarget:
    """A candidate that is not a JAX env (a Rust emulator behind PyO3, a C library) for the
    backend-level L1 checks (:func:`envport.testing.check_backend`): spec, shapes and dtypes,
    determinism under the same seed, terminal flags, no NaN, ``load(state())`` round trip."""

    name: str
    make_backend: Callable[[], Backend]
    sample_actions: ActionSampler | None = None  # default: uniform over the action space
    steps: int = 100
    slow: bool = False


@dataclass
class L2Suite:
    """Single transitions from identical states.

    ``make_cases(rng, batch)`` returns ``(state, actions)`` for ``batch`` envs: a canonical
    state (plus any load-only keys, e.g. an RNG position) and one action per env. Both
    backends are created with ``num_envs == batch`` and must support ``load``.
    """

    name: str
    make_reference: Callable[[int], Backend]
    make_candidate: Callable[[int], Backend]
    make_cases: Callable[[np.random.Generator, int], tuple[CanonicalState, np.ndarray]]
    cases: int = 10_000
    batch: int = 1000
    # shown with the suite's results; a callable is read after the run (e.g. a filter's counts)
    note: str | Callable[[], str] = ""
    # an object whose int attributes the suite's backends and case sampler increment (counts
    # for the note); with worker processes each batch's increments are added to it here
    counters: Any = None
    # this suite's tolerance instead of the port's (a number, a Tolerance, or {field: either}),
    # e.g. for a float32 candidate beside float64 ones; None: the port's
    tolerance: Any = None


@dataclass
class L3Suite:
    """Matched seeds and identical random action sequences; every step is compared."""

    name: str
    make_reference: Callable[[], Backend]
    make_candidate: Callable[[], Backend]
    sample_actions: ActionSampler
    episodes: int = 100
    max_steps_per_seed: int = 200_000
    # a "still" action used when shrinking a failing action sequence
    neutral_action: Callable[[int], np.ndarray] | None = None
    # shown with the suite's results; a callable is read after the run (e.g. a filter's counts)
    note: str | Callable[[], str] = ""
    # steps per round trip (backends with a fast rollout, e.g. one lax.scan, gain from many)
    chunk: int = 512
    # compare each env only up to the step that ends its first episode: for pairs whose later
    # episodes start from resets that need not agree (e.g. an unseeded Gymnasium reset)
    first_episode_only: bool = False
    # as L2Suite.counters, per seed
    counters: Any = None


@dataclass
class ChaosSuite:
    """L3 for chaotic dynamics (physics), where no fixed tolerance can hold over a long episode
    for any implementation, the reference included: per seeded episode, the first step at which
    candidate and reference differ by more than ``threshold`` on ``fields`` (the candidate's
    divergence step), next to the first step at which the reference differs by as much from
    itself started from its reset state perturbed by ``eps`` (``perturb(state, eps)``, loaded
    into a second reference: the reference's own chaos horizon). The suite passes when the
    candidate's divergence is never earlier than the reference's own horizon on at least
    ``share`` of the episodes (an episode where neither diverges passes).

    Backends have one env (``make_reference()``, ``make_candidate()``); each episode is reset
    with its seed and stepped with actions from ``default_rng(seed)`` until its first episode
    ends on either side, both steps are known, or ``max_steps``. A step where ``terminated`` or
    ``truncated`` differ counts as a divergence at that step.
    """

    name: str
    make_reference: Callable[[], Backend]
    make_candidate: Callable[[], Backend]
    perturb: Callable[[CanonicalState, float], CanonicalState]
    sample_actions: ActionSampler
    episodes: int = 100
    threshold: float = 1e-6
    eps: float = 1e-12
    fields: tuple[str, ...] = ()  # compared fields (float); () = every float field
    max_steps: int = 1000
    share: float = 0.99
    note: str | Callable[[], str] = ""


@dataclass
class L4Suite:
    """A fixed policy (trained or built in) evaluated on both backends; a two one-sided test
    (TOST) says whether the mean episode score is equivalent within ``margin``.

    ``evaluate_reference(episodes, seed, progress)`` and ``evaluate_candidate(...)`` each play
    ``episodes`` episodes of the same policy on their backend and return one finite score per
    episode; the verifier seeds them ``seed`` and ``seed + 1`` (independent samples).
    """

    name: str
    evaluate_reference: PolicyEvaluator
    evaluate_candidate: PolicyEvaluator
    metric: str  # what one episode's score means, e.g. "greedy's result vs random: win 1, tie 0.5, loss 0"
    episodes: int = 10_000   # per backend
    margin: float = 0.02     # equivalence margin on the difference of means
    alpha: float = 0.05
    seed: int = 0
    # shown with the suite's results; a callable is read after the run
    note: str | Callable[[], str] = ""
    # what the policy is (e.g. a trained policy's run folder, direction, parameter count), for
    # verify.json; a callable is read after the run
    info: dict[str, Any] | Callable[[], dict[str, Any]] = field(default_factory=dict)


@dataclass
class PolicyTransfer:
    """L4 with trained policies: PPO policies trained on one backend, each evaluated on both.

    ``target`` names one of the port's :class:`TrainTarget` s; a policy is trained on the port
    (the target's JAX env on the device, or a target with only ``make_backend`` through the
    host loop, with ``train`` over its PPO settings) for every seed in ``seeds`` and,
    with ``reference_train`` set, on the reference too (the host loop over
    ``make_reference(num_envs)``, those PPO settings over the port's) -- the other direction.
    Each policy is played for ``episodes`` episodes on both backends and a TOST with
    ``margin`` (in the target's score units; ``margin_note`` says why that margin) compares the
    mean scores. ``verify`` trains a missing policy and reuses a stored one
    (``<out>/<env>/train/l4-...``).

    ``make_reference(num_envs)``: a numpy :class:`~envport.backend.Backend` playing the
    target's single-agent task with the same observations and actions as the target's env,
    resetting an env itself when its episode ends; a ``legal_mask()`` method where actions are
    masked. ``make_candidate_env``: the env the port side is evaluated on (default: the
    target's; a test plants a sim gap here); ``make_candidate_backend(num_envs)``: the same for
    a port that is a backend (default: the target's ``make_backend``), evaluated through the
    host loop; at most one of the two. ``score(ts)``: what TOST compares, summed per
    episode (default: the target's score); e.g. the battle's length, where a sim gap in a rule
    moves how long episodes last more than who wins them.
    """

    name: str
    target: str
    make_reference: Callable[[int], Backend]
    margin: float
    margin_note: str
    metric: str = ""  # default: the target's score name
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    episodes: int = 1000  # per backend and policy
    train: dict[str, Any] = field(default_factory=dict)
    reference_train: dict[str, Any] | None = None
    make_candidate_env: Callable[[], Env] | None = None
    make_candidate_backend: Callable[[int], Backend] | None = None
    greedy: bool = False  # the most likely action rather than a sample
    max_steps: int = 100_000  # per evaluation episode
    alpha: float = 0.05
    score: Callable | None = None  # per step, summed per episode; default: the target's


@dataclass
class BenchTarget:
    """One configuration to benchmark at several batch sizes.

    ``reference_stepper(num_envs)`` returns ``(step(actions), close())`` driving the raw
    reference; ``candidate_rollout(num_envs)`` returns ``(run(steps) -> None, compile_s)``
    where ``run`` executes ``steps`` batched steps and blocks until done.

    ``workload``: targets that name the same workload run the same env-steps in different
    setups (one reference process or N, one device or all); the report then also gives the
    best of each side at each batch size and the ratio of bests (``bench.best_of_each_side``).
    """

    name: str
    reference_stepper: Callable[[int], tuple[Callable[[np.ndarray], Any], Callable[[], None]]]
    candidate_rollout: Callable[[int], tuple[Callable[[int], None], float]]
    sample_actions: ActionSampler
    how_actions: str = ""
    workload: str | None = None


@dataclass
class ExtraBench:
    """A benchmark of the env's own design, run by ``envport bench`` after the side-by-side
    table of the :class:`BenchTarget` s (the documented extension of the core's harness).

    For a measurement the batched table cannot express, e.g. one emulator's frames/s against
    the reference's, interleaved rounds, best of k, both sides checked to end in the same state.
    ``run(out_dir, progress)`` writes its own report under ``out_dir/<env>/`` and returns its
    content; it records the host with :func:`envport.bench.host_info` like the table does.
    """

    name: str
    run: Callable[[Path, bool], Any]
    outputs: str = ""  # what it writes, shown by ``envport bench`` (e.g. "bench_single.md")


@dataclass(frozen=True)
class SystemRequirement:
    """A program an env needs that Python packages cannot bring (an assembler, node). ``envport
    prepare`` checks it is on PATH and, with ``--install-system``, apt-installs it as root."""

    command: str
    apt_package: str
    why: str


@dataclass
class TrainTarget:
    """A single-agent env to train PPO on (``envport train <env> --target <name>``).

    ``config``: the env's PPO settings (names of ``envport.train.PPOConfig``) over the
    defaults. ``score(ts)``: one step's contribution to the episode's score, jittable
    (default: the reward), e.g. Pong's points without the hit bonus or a win indicator.
    ``goal``: the score the run reports reaching (first env step where the mean of the last
    ``goal_episodes`` episodes gets there). ``evaluate``: envs the policy is evaluated on as
    training proceeds, by name (e.g. the same game against another opponent). ``score`` is
    also applied to the numpy time steps of a host-loop target (``make_backend``).
    """

    name: str
    make_env: Callable[[], Env] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    score: Callable[[Any], Any] | None = None
    score_name: str = "return"
    goal: float | None = None
    goal_episodes: int = 100
    evaluate: dict[str, Callable[[], Env]] = field(default_factory=dict)
    note: str = ""
    # a target without a JAX env: ``make_backend(num_envs)`` gives a numpy Backend (resetting
    # finished envs itself) that PPO trains on through the host loop (no resume)
    make_backend: Callable[[int], Backend] | None = None
    # a two-player simultaneous-move env trained by self-play: both players act from the
    # policy being trained, each game two rows of experience (``envport.train.selfplay``)
    self_play: bool = False
    # jax_enable_x64 while envport.train trains on ``make_env`` and plays policies on it (a
    # context, :func:`envport.train.run.precision`); None leaves the process's setting. A
    # float32 env sets False when its port's verify turns x64 on for a float64 candidate in
    # the same process (MJX under x64 computes parts of a float32 step in float64).
    x64: bool | None = None


@dataclass
class EnvPort:
    """An env package's translation spec: verification suites, benchmarks, generation plan."""

    name: str
    reference: str
    candidate: str
    install_reference: Callable[[], Any]
    check_reference: Callable[[], None]
    # 0: bit-exact; a number (absolute), a Tolerance(atol, rtol), or {field: either} per field
    tolerance: Any = 0.0
    l1: Sequence[L1Target | L1BackendTarget] = ()
    l2: Sequence[L2Suite] = ()
    l3: Sequence[L3Suite] = ()
    # L3 for chaotic physics: the candidate's divergence step against the reference's own
    # chaos horizon (run with L3)
    chaos: Sequence[ChaosSuite] = ()
    l4: Sequence[L4Suite] = ()
    # L4 suites of trained policies, built when L4 runs (they need ``envport[train]``)
    transfer: Sequence[PolicyTransfer] = ()
    bench: Sequence[BenchTarget] = ()
    # what ``envport train`` trains on (the first is the default)
    train: Sequence[TrainTarget] = ()
    notes: dict[str, str] = field(default_factory=dict)
    # what ``envport generate`` translates, module by module (None: the env cannot be generated)
    plan: TranslationPlan | None = None

    # -- hooks for the stages (``envport prepare``, ``envport bench``, the nox sessions) --------
    # what must happen in this interpreter before a stage (one of ``envport.sessions.STAGES``:
    # "tests", "verify", "bench", "train", "generate"), after the reference is installed, e.g.
    # build test ROMs, make test vectors, run the crate's native unit tests, a PGO build.
    # Called with the stage by ``envport prepare <env> --stage S``; it must be idempotent (cheap
    # when everything is up to date).
    prepare: Callable[[str], None] | None = None
    # programs the env needs from the system (checked by ``envport prepare``)
    system_requirements: Sequence[SystemRequirement] = ()
    # ``envport bench``'s num_envs when ``--batch-sizes`` is not given (None: the core's
    # 1 ... 8192), e.g. a reference that is one process per env stops far earlier
    bench_batch_sizes: Sequence[int] | None = None
    # benchmarks of the env's own design, after the side-by-side table
    extra_benches: Sequence[ExtraBench] = ()
    # the command lines a nox session stage runs, given the session's arguments, when they are
    # more than the default ``envport <stage> <env> *args`` (``envport.sessions.commands``):
    # ``(stage, args) -> [argv, ...]``; return ``sessions.default_commands(...)`` for the rest
    session_commands: Callable[[str, Sequence[str]], Sequence[Sequence[str]]] | None = None


def available() -> dict[str, Any]:
    """Entry points of every installed env package, by env name (not yet loaded)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get(name: str) -> EnvPort:
    eps = available()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise UnknownEnvError(
            f"unknown env {name!r}. Installed envs: {known}. An env package registers itself "
            f"under the entry-point group '{ENTRY_POINT_GROUP}'."
        )
    port = eps[name].load()
    return port() if callable(port) and not isinstance(port, EnvPort) else port
