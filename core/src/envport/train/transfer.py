"""L4 with trained policies: cross-backend policy transfer.

A port's :class:`~envport.registry.PolicyTransfer` becomes one L4 suite per trained policy:
for every seed a PPO policy is trained on the port and, where the reference is fast enough to
train on, on the reference (the same PPO through the host loop). The port is the target's JAX
env (the on-device PPO) or, for a target with only ``make_backend`` (a port that is a numpy
backend, such as an emulator), that backend through the host loop. Each policy then plays
``episodes`` episodes on both backends -- a JAX env through
:func:`~envport.train.evaluate.evaluate`, a backend through
:func:`~envport.train.host.evaluate_backend` -- and the verifier's TOST compares the mean
scores. A sim-to-sim gap shows as a policy that scores differently on the two.

Policies are stored as training runs, ``<out>/<env>/train/l4-<target>-<direction>-<hash>-s<seed>/``
(``envport runs`` lists them), with ``policy.msgpack`` (the parameters) and ``policy.json``
(what they are). A stored policy is reused; a missing one is trained first, an interrupted
port run resumed. The hash is of the PPO config and the env's spec (id, version, observation
shape, actions), so a changed budget or observation trains new policies rather than
reusing ones it does not describe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from envport.errors import EnvportError
from envport.registry import EnvPort, L4Suite, PolicyTransfer, TrainTarget
from envport.train.evaluate import evaluate
from envport.train.host import evaluate_backend
from envport.train.networks import count_params
from envport.train.ppo import PPO, PPOConfig
from envport.train.run import (
    TrainRun,
    checkpoint_params,
    precision,
    run_root,
    train,
    write_json,
)

__all__ = ["DIRECTIONS", "StoredPolicy", "policy_config", "policy_dir", "ensure_policy",
           "transfer_suites"]

DIRECTIONS = ("port", "reference")
POLICY = "policy.msgpack"
# evaluation seeds: the reference plays seed, the port seed + 1 (L4's independent samples),
# apart from every training seed
EVAL_SEED = 100_000


@dataclass
class StoredPolicy:
    ppo: PPO
    params: object
    info: dict  # policy.json


def _target(port: EnvPort, transfer: PolicyTransfer) -> TrainTarget:
    for target in port.train:
        if target.name == transfer.target:
            return target
    raise EnvportError(f"{port.name}: transfer {transfer.name!r} names training target "
                       f"{transfer.target!r}, which the port does not declare (it has: "
                       f"{', '.join(t.name for t in port.train) or 'none'})")


def _check_target(port: EnvPort, transfer: PolicyTransfer, target: TrainTarget) -> None:
    """A transfer's port side must be something to train and evaluate on, said one way."""
    if target.make_env is None and target.make_backend is None:
        raise EnvportError(f"{port.name}: transfer {transfer.name!r}: training target "
                           f"{target.name!r} has neither make_env (a JAX env) nor make_backend "
                           "(a numpy backend for the host loop)")
    if transfer.make_candidate_env is not None and transfer.make_candidate_backend is not None:
        raise EnvportError(f"{port.name}: transfer {transfer.name!r} sets both "
                           "make_candidate_env and make_candidate_backend; the port side is "
                           "evaluated on one of them")


def _spec(target: TrainTarget):
    """The spec of the target's env, or of its backend (one env, closed again)."""
    if target.make_env is not None:
        with precision(target):
            return target.make_env().spec
    with target.make_backend(1) as backend:
        return backend.spec


def policy_config(target: TrainTarget, transfer: PolicyTransfer, direction: str,
                  seed: int) -> PPOConfig:
    """The PPO config a policy of ``direction`` is trained with: the target's settings, the
    transfer's ``train`` over them, and for the reference its ``reference_train`` on top."""
    if direction not in DIRECTIONS:
        raise EnvportError(f"unknown training direction {direction!r}; one of {DIRECTIONS}")
    settings = {**target.config, **transfer.train}
    if direction == "reference":
        if transfer.reference_train is None:
            raise EnvportError(f"transfer {transfer.name!r} does not train on the reference")
        settings.update(transfer.reference_train)
    try:
        return PPOConfig.from_dict({**settings, "seed": int(seed)}).check()
    except ValueError as exc:
        raise EnvportError(f"transfer {transfer.name!r}: {exc}") from None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "target"


def spec_identity(spec) -> dict:
    """What a stored policy must agree with the env on: its id, version and the shapes the
    network was built for."""
    space = spec.action_space
    return {"env_id": spec.id, "env_version": spec.version,
            "obs_shape": list(spec.observation_space.shape),
            "actions": getattr(space, "n", None) or list(space.shape)}


def policy_dir(out: Path, env_name: str, target: TrainTarget, config: PPOConfig,
               direction: str, spec=None) -> Path:
    key = {**config.to_dict(), "seed": None, **(spec_identity(spec) if spec is not None else {})}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    return run_root(out, env_name) / f"l4-{_slug(target.name)}-{direction}-{digest}-s{config.seed}"


def _template(ppo: PPO):
    return ppo.init_params(jax.random.PRNGKey(0))


def _load(run_dir: Path, ppo: PPO, identity: dict) -> StoredPolicy:
    info = json.loads((run_dir / "policy.json").read_text())
    for key, want in identity.items():
        if info.get(key) != want:
            raise EnvportError(f"{run_dir / 'policy.json'}: its {key} is {info.get(key)!r}, "
                               f"this suite's is {want!r}; move the folder away to retrain")
    params = serialization.from_bytes(_template(ppo), (run_dir / POLICY).read_bytes())
    return StoredPolicy(ppo, params, info)


def _save(run_dir: Path, ppo: PPO, params, info: dict) -> StoredPolicy:
    (run_dir / POLICY).write_bytes(serialization.to_bytes(jax.device_get(params)))
    write_json(run_dir / "policy.json", info)
    return StoredPolicy(ppo, params, info)


def _train(env_name: str, target: TrainTarget, config: PPOConfig, run_dir: Path,
           template, progress: bool) -> tuple[object, dict]:
    """Train (or finish) the run and return its parameters and summary. A port run that
    stopped is resumed; a host run (no resume) that stopped is an error naming the folder."""
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    if not summary.get("finished"):
        summary = train(TrainRun(env_name, target, config, run_dir, progress=progress),
                        resume=run_dir.exists())
    return checkpoint_params(run_dir, template, what="the L4 policy run"), summary


def ensure_policy(port: EnvPort, transfer: PolicyTransfer, direction: str, seed: int,
                  out: Path, progress: bool = True) -> StoredPolicy:
    """The policy of ``seed`` trained on ``direction`` ("port" or "reference"): loaded from
    ``out`` when stored, else trained (a port run resumed where it stopped) and stored. On the
    reference the target's env (or backend) is replaced by the reference backend: the host
    loop. A target with only a backend trains on it through the host loop in both directions."""
    target = _target(port, transfer)
    config = policy_config(target, transfer, direction, seed)
    spec = _spec(target)
    ppo = PPO(None, config, score=target.score, spec=spec)
    run_dir = policy_dir(out, port.name, target, config, direction, spec)
    identity = {"env": port.name, "target": target.name, "direction": direction,
                "config": config.to_dict(), **spec_identity(spec)}
    if (run_dir / "policy.json").exists():
        return _load(run_dir, ppo, identity)
    trained_on = target if direction == "port" else dataclasses.replace(
        target, make_env=None, evaluate={}, make_backend=transfer.make_reference)
    params, summary = _train(port.name, trained_on, config, run_dir, _template(ppo), progress)
    return _save(run_dir, ppo, params, {
        **identity, "run_dir": str(run_dir), "policy": config.policy,
        "policy_params": count_params(ppo.obs_dim, ppo.action_dim, ppo.widths, ppo.continuous),
        "env_steps": summary.get("env_steps"), "training_score": summary.get("score_recent"),
        "score_name": target.score_name, "train_wall_s": summary.get("wall_s")})


def _suite(port: EnvPort, transfer: PolicyTransfer, target: TrainTarget, direction: str,
           seed: int, out: Path, progress: bool) -> L4Suite:
    cache: dict[str, StoredPolicy] = {}

    def policy() -> StoredPolicy:
        if "p" not in cache:
            cache["p"] = ensure_policy(port, transfer, direction, seed, out, progress)
        return cache["p"]

    score = transfer.score or target.score

    def on_backend(make_backend):
        def play(episodes: int, eval_seed: int, tick) -> np.ndarray:
            p = policy()
            backend = make_backend(episodes)
            try:
                return evaluate_backend(p.ppo, p.params, backend, eval_seed,
                                        greedy=transfer.greedy, score=score,
                                        max_steps=transfer.max_steps, progress=tick)
            finally:
                backend.close()
        return play

    def on_env(episodes: int, eval_seed: int, tick) -> np.ndarray:
        p = policy()
        make_env = transfer.make_candidate_env or target.make_env
        with precision(target):
            scores = evaluate(p.ppo, p.params, make_env(), episodes, eval_seed,
                              greedy=transfer.greedy, score=score,
                              max_steps=transfer.max_steps)
        tick(episodes)
        return scores

    # the port side: a planted candidate where the transfer gives one, else the target's own
    if transfer.make_candidate_backend is not None:
        on_port = on_backend(transfer.make_candidate_backend)
    elif transfer.make_candidate_env is not None or target.make_env is not None:
        on_port = on_env
    else:
        on_port = on_backend(target.make_backend)

    def info() -> dict:
        stored = {k: v for k, v in cache["p"].info.items() if k != "config"} if cache else {}
        return {**stored, "seed": seed, "greedy": transfer.greedy}

    return L4Suite(
        name=f"{transfer.name}: policy trained on the {direction}, seed {seed}",
        evaluate_reference=on_backend(transfer.make_reference), evaluate_candidate=on_port,
        metric=transfer.metric or target.score_name, episodes=transfer.episodes,
        margin=transfer.margin, alpha=transfer.alpha, seed=EVAL_SEED + 2 * int(seed),
        note=transfer.margin_note, info=info)


def transfer_suites(port: EnvPort, out: Path, progress: bool = True) -> list[L4Suite]:
    """One L4 suite per (transfer, direction, seed) the port declares; each trains or loads its
    policy when it first runs."""
    suites = []
    for transfer in port.transfer:
        target = _target(port, transfer)
        _check_target(port, transfer, target)
        directions = ("port", "reference") if transfer.reference_train is not None else ("port",)
        for direction in directions:
            policy_config(target, transfer, direction, 0)  # a bad config fails before any run
            suites += [_suite(port, transfer, target, direction, s, Path(out), progress)
                       for s in transfer.seeds]
    return suites
