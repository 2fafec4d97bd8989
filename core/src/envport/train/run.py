"""A training run on disk: ``reports/<env>/train/<run-id>/``.

- ``config.json``: env, target, the PPO config, the policy's widths and parameter count,
  devices and versions — written before the first update;
- ``metrics.jsonl``: one line per update (env steps, wall time, SPS, losses, episode means),
  plus ``{"eval": ...}`` lines when evaluation envs are declared;
- ``checkpoint.msgpack`` + ``checkpoint.json``: the whole :class:`~envport.train.ppo.Runner`
  (flax serialization) after the latest checkpointed update; ``--resume`` continues from it
  and computes the same next update as the run that wrote it would have;
- ``curve.png``: the score against env steps; ``summary.json`` at the end;
- ``evaluation.json``: written by ``envport evaluate`` (:func:`evaluate_run`), the checkpointed
  policy's score on each evaluation env over many episodes, sampled and most-likely actions.

A new run never writes into an existing run directory.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from envport import __version__
from envport.errors import EnvportError
from envport.train import memory
from envport.train.evaluate import evaluate
from envport.train.host import HostPPO
from envport.train.networks import count_params
from envport.train.ppo import PPO, PPOConfig, Runner, summarize
from envport.train.sharding import data_mesh, shard_runner

CHECKPOINT = "checkpoint.msgpack"


class RunExistsError(EnvportError, FileExistsError):
    """The run directory already exists: nothing is written over an existing run."""


class ResumeMismatchError(EnvportError, ValueError):
    """The checkpoint belongs to another env, target or config."""


@dataclass
class TrainRun:
    env_name: str
    target: object  # registry.TrainTarget
    config: PPOConfig
    run_dir: Path
    devices: int = 1
    progress: bool = True
    checkpoint_every: int = 10  # updates
    eval_every: int = 0  # updates; 0: only at the end (when evaluation envs are declared)
    eval_episodes: int = 200
    # stop after this many updates in this call (checkpointed; ``resume`` goes on): runs longer
    # than one sitting
    stop_after: int | None = None
    # start from the policy of another run (its checkpoint's parameters, a fresh optimiser),
    # e.g. against a harder opponent after an easier one; the widths must match
    init_from: Path | None = None


def default_run_id(config: PPOConfig) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{config.policy.replace(',', 'x')}-s{config.seed}"


def run_root(out: Path, env_name: str) -> Path:
    return Path(out) / env_name / "train"


def run_identity(run: TrainRun, ppo: PPO) -> dict:
    """What a checkpoint must match to be resumed."""
    return {"env": run.env_name, "target": run.target.name, "env_id": ppo.spec.id,
            "env_version": ppo.spec.version, "config": run.config.to_dict()}


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def save_checkpoint(run_dir: Path, runner: Runner, identity: dict) -> None:
    data = serialization.to_bytes(jax.device_get(runner))
    tmp = run_dir / (CHECKPOINT + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, run_dir / CHECKPOINT)
    write_json(run_dir / "checkpoint.json", {**identity, "update": int(runner.update)})


def load_checkpoint(run_dir: Path, template: Runner, identity: dict) -> Runner:
    meta_path = run_dir / "checkpoint.json"
    if not meta_path.exists():
        raise ResumeMismatchError(f"{run_dir} has no checkpoint to resume from")
    meta = json.loads(meta_path.read_text())
    for key in ("env", "target", "env_id", "env_version", "config"):
        if meta.get(key) != identity[key]:
            raise ResumeMismatchError(
                f"cannot resume {run_dir}: its {key} is {meta.get(key)!r}, this run's is "
                f"{identity[key]!r}")
    return serialization.from_bytes(jax.device_get(template), (run_dir / CHECKPOINT).read_bytes())


def checkpoint_params(run_dir: Path, template, what: str = "--init-from"):
    """The parameters in ``run_dir``'s checkpoint, shaped like ``template`` (a policy of the
    same widths); a clear error, starting with ``what``, when the run or its shapes do not
    fit."""
    path = run_dir / CHECKPOINT
    if not path.exists():
        raise EnvportError(f"{what} {run_dir}: no {CHECKPOINT} there")
    raw = serialization.msgpack_restore(path.read_bytes())["params"]
    want = jax.tree.map(np.shape, jax.device_get(template))
    try:
        params = serialization.from_state_dict(template, raw)
        got = jax.tree.map(np.shape, params)
    except (KeyError, ValueError) as exc:
        raise EnvportError(f"{what} {run_dir}: its policy does not fit this one "
                           f"({exc})") from None
    if got != want:
        cfg = read_config(run_dir)
        raise EnvportError(f"{what} {run_dir}: its policy ({cfg.get('policy_widths')}, "
                           f"{cfg.get('env_id')}) has other shapes than this run's")
    return jax.tree.map(jax.numpy.asarray, params)


def read_config(run_dir: Path) -> dict:
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise ResumeMismatchError(f"{run_dir} is not a training run (no config.json)")
    return json.loads(path.read_text())


class _GoalTracker:
    """Mean score of the latest episodes (whole updates, at least ``episodes`` of them) and
    the first env step where it reached the goal."""

    def __init__(self, goal, episodes: int):
        self.goal, self.episodes = goal, episodes
        self.window: collections.deque = collections.deque()
        self.reached_at = None

    def add(self, n: int, score_sum: float, step: int):
        if n:
            self.window.append((n, score_sum))
        while len(self.window) > 1 and sum(k for k, _ in list(self.window)[1:]) >= self.episodes:
            self.window.popleft()
        count = sum(k for k, _ in self.window)
        mean = sum(s for _, s in self.window) / count if count else None
        if (self.goal is not None and self.reached_at is None and mean is not None
                and count >= self.episodes and mean >= self.goal):
            self.reached_at = step
        return mean, count


class _Device:
    """The on-device PPO of a JAX env: the state is a Runner, checkpointed whole."""

    resumable = True

    def __init__(self, run: TrainRun):
        self.ppo = PPO(run.target.make_env(), run.config, score=run.target.score,
                       self_play=run.target.self_play)
        self.mesh = data_mesh(run.devices, run.config.num_envs)

    def start(self, run_dir: Path, identity: dict, resume: bool,
              init_from: Path | None = None) -> Runner:
        runner = self.ppo.init()
        if resume:
            runner = load_checkpoint(run_dir, runner, identity)
        elif init_from is not None:
            params = checkpoint_params(Path(init_from), runner.params)
            runner = runner._replace(params=params, opt_state=self.ppo.tx.init(params))
        return shard_runner(runner, self.mesh)

    def update(self, state):
        return self.ppo.update(state)

    def done_updates(self, state) -> int:
        return int(state.update)

    def devices(self) -> list[str]:
        return [str(d) for d in self.mesh.devices.flat]


class _Host:
    """The host loop over the target's numpy backend (``TrainTarget.make_backend``): the
    checkpoint holds the parameters and optimiser, not the backend's process, so it does not
    resume."""

    resumable = False

    def __init__(self, run: TrainRun):
        if run.devices != 1:
            raise EnvportError("a host-loop target trains on one device (--devices 1)")
        self.backend = run.target.make_backend(run.config.num_envs)
        self.host = HostPPO(self.backend, run.config, score=run.target.score)
        self.ppo = self.host.ppo

    def start(self, run_dir: Path, identity: dict, resume: bool,
              init_from: Path | None = None):
        if init_from is not None:
            raise EnvportError("--init-from is for on-device runs; a host-loop run starts fresh")
        if resume:
            raise ResumeMismatchError(
                f"{run_dir} trained on a host backend ({self.backend.name}); host-loop runs do "
                "not resume (a backend's process state is not checkpointed): start a new run")
        return self.host.init()

    def update(self, state):
        return self.host.update(state)

    def done_updates(self, state) -> int:
        return int(state.update)

    def devices(self) -> list[str]:
        return [str(jax.devices()[0]), f"host: {self.backend.name}"]


def precision(target):
    """The target's ``x64`` (``TrainTarget.x64``) as a ``jax.enable_x64`` context, for
    everything traced on its env; no change when it declares none. Programs traced inside are
    cached under that setting, so they are called inside it too."""
    return contextlib.nullcontext() if target.x64 is None else jax.enable_x64(bool(target.x64))


def train(run: TrainRun, resume: bool = False) -> dict:
    """Run (or, with ``resume``, continue) the run in ``run.run_dir``; returns the summary.
    A target with ``make_env`` trains on the device; one with only ``make_backend`` through
    the host loop."""
    target = run.target
    if target.make_env is None and target.make_backend is None:
        raise EnvportError(f"training target {target.name!r} has neither make_env (a JAX env) "
                           "nor make_backend (a numpy backend for the host loop)")
    run_dir = Path(run.run_dir)
    if resume:
        read_config(run_dir)
    elif run_dir.exists():
        raise RunExistsError(f"{run_dir} exists: choose another --run-id (nothing is written "
                             "over an existing run) or --resume it")
    with precision(target):  # the env is built under it too (MJX sizes its arrays then)
        trainer = _Device(run) if target.make_env is not None else _Host(run)
        try:
            return _train(run, trainer, run_dir, resume)
        finally:
            if isinstance(trainer, _Host):
                trainer.backend.close()


def _train(run: TrainRun, trainer, run_dir: Path, resume: bool) -> dict:
    cfg, target, ppo = run.config, run.target, trainer.ppo
    identity = run_identity(run, ppo)
    params = count_params(ppo.obs_dim, ppo.action_dim, ppo.widths, ppo.continuous)
    memory.check_fits(memory.estimate_bytes(cfg, ppo.obs_dim, ppo.action_dim, ppo.widths),
                      policy=cfg.policy, params=params)
    if resume and run.init_from is not None:
        raise EnvportError("--init-from starts a new run; a resumed run continues its own policy")
    state = trainer.start(run_dir, identity, resume, run.init_from)
    if not resume:
        run_dir.mkdir(parents=True)
        write_json(run_dir / "config.json", {
            **identity, "policy_widths": list(ppo.widths), "policy_params": params,
            "score_name": target.score_name, "goal": target.goal,
            "goal_episodes": target.goal_episodes, "devices": trainer.devices(),
            "loop": "device" if trainer.resumable else "host",
            "host": platform.node(), "cpu_count": os.cpu_count(),
            "versions": {"envport": __version__, "jax": jax.__version__,
                         "python": platform.python_version()},
            "evaluate": sorted(target.evaluate),
            "init_from": None if run.init_from is None else str(run.init_from)})
    print(f"{run.env_name}/{target.name}: policy {cfg.policy} = {params:,} parameters "
          f"(torso {'x'.join(map(str, ppo.widths))}), {cfg.num_updates} updates of "
          f"{cfg.batch_size:,} env steps on {', '.join(trainer.devices())} -> {run_dir}")
    return _loop(run, trainer, state, identity, resume)


def _loop(run: TrainRun, trainer, runner, identity: dict, resume: bool) -> dict:
    from tqdm import tqdm

    cfg, target, run_dir, ppo = run.config, run.target, Path(run.run_dir), trainer.ppo
    start = trainer.done_updates(runner)
    tracker = _GoalTracker(target.goal, target.goal_episodes)
    eval_envs: dict = {}  # made at the first evaluation, kept for the run
    history = _read_history(run_dir) if resume else []
    for row in history:
        tracker.add(row.get("episodes", 0), (row.get("episode_score") or 0) * row.get("episodes", 0),
                    row["step"])
    wall0 = history[-1]["wall_s"] if history else 0.0
    t0 = time.perf_counter()
    bar = tqdm(total=cfg.num_updates, initial=start, disable=not run.progress, unit="update",
               dynamic_ncols=True)
    compile_s = None
    end = cfg.num_updates if run.stop_after is None else min(cfg.num_updates,
                                                             start + run.stop_after)
    with open(run_dir / "metrics.jsonl", "a") as log:
        for u in range(start, end):
            t_update = time.perf_counter()
            runner, metrics = trainer.update(runner)
            m = summarize(metrics)
            now = time.perf_counter()
            if compile_s is None:
                compile_s = now - t_update  # the first call includes the compile
            step = (u + 1) * cfg.batch_size
            mean, count = tracker.add(m["episodes"], (m["episode_score"] or 0) * m["episodes"],
                                      step)
            row = {"update": u + 1, "step": step, "wall_s": round(wall0 + now - t0, 3),
                   "sps": round(cfg.batch_size / (now - t_update), 1), **m,
                   "score_recent": mean, "score_recent_episodes": count}
            log.write(json.dumps(row) + "\n")
            log.flush()
            history.append(row)
            bar.update(1)
            bar.set_postfix(sps=f"{row['sps']:,.0f}", score=_fmt(mean), ret=_fmt(m["episode_return"]),
                            loss=f"{m['loss']:.3f}", ent=f"{m['entropy']:.2f}")
            last = u + 1 == end
            if last or (run.checkpoint_every and (u + 1) % run.checkpoint_every == 0):
                save_checkpoint(run_dir, runner, identity)
            if target.evaluate and (u + 1 == cfg.num_updates or (run.eval_every and (u + 1) % run.eval_every == 0)):
                log.write(json.dumps({"eval": _evaluate(run, ppo, runner, u + 1, eval_envs),
                                      "update": u + 1, "step": step}) + "\n")
                log.flush()
    bar.close()
    steady = [r["sps"] for r in history[1:]] or [history[-1]["sps"]] if history else [0.0]
    summary = {
        "run_dir": str(run_dir), "env": run.env_name, "target": target.name,
        "updates": len(history), "finished": len(history) >= cfg.num_updates, "env_steps": history[-1]["step"] if history else 0,
        "wall_s": history[-1]["wall_s"] if history else 0.0,
        "first_update_s": compile_s, "sps_median": float(np.median(steady)),
        "score_name": target.score_name, "score_recent": tracker.add(0, 0.0, 0)[0],
        "goal": target.goal, "goal_reached_at_step": tracker.reached_at,
    }
    write_json(run_dir / "summary.json", summary)
    try:
        plot_curve(run_dir)
    except ImportError:  # matplotlib is an optional extra
        pass
    return summary


def _evaluate(run: TrainRun, ppo: PPO, runner: Runner, update: int, envs: dict) -> dict:
    """The target's evaluation envs, each made once per run (``envs`` keeps them), so every
    evaluation after the first reuses its compiled player."""
    out = {}
    for name, make_env in sorted(run.target.evaluate.items()):
        env = envs[name] = envs.get(name) or make_env()
        out[name] = _score_ci(evaluate(ppo, runner.params, env, run.eval_episodes,
                                       seed=run.config.seed * 1_000_003 + update))
    return out


def _score_ci(scores: np.ndarray) -> dict:
    se = scores.std(ddof=1) / np.sqrt(len(scores)) if len(scores) > 1 else float("nan")
    return {"episodes": len(scores), "mean": float(scores.mean()),
            "ci95": [float(scores.mean() - 1.96 * se), float(scores.mean() + 1.96 * se)]}


def load_policy(run_dir: Path, target, what: str = "envport evaluate") -> tuple[PPO, object]:
    """The PPO a device run of ``target`` trained and its checkpointed parameters. Call it
    under ``precision(target)``: it builds the target's env."""
    run_dir = Path(run_dir)
    cfg = read_config(run_dir)
    if cfg.get("target") != target.name:
        raise ResumeMismatchError(f"{run_dir} trained target {cfg.get('target')!r}, not "
                                  f"{target.name!r}")
    if target.make_env is None:
        raise EnvportError(f"target {target.name!r} trains through the host loop: evaluate it "
                           "on its backend (envport.train.host.evaluate_backend)")
    ppo = PPO(target.make_env(), PPOConfig.from_dict(cfg["config"]), score=target.score,
              self_play=target.self_play)
    return ppo, checkpoint_params(run_dir, ppo.init().params, what=what)


def evaluate_run(run_dir: Path, target, episodes: int, seed: int = 0) -> dict:
    """The run's checkpointed policy on each of ``target``'s evaluation envs (its own env when
    it declares none) for ``episodes`` episodes, once sampling its actions and once taking the
    most likely one, each with a 95% CI; written to ``evaluation.json`` in ``run_dir``."""
    run_dir = Path(run_dir)
    with precision(target):
        ppo, params = load_policy(run_dir, target)
        envs = target.evaluate or {target.name: target.make_env}
        results = {name: {mode: _score_ci(evaluate(ppo, params, make_env(), episodes, seed=seed,
                                                   greedy=mode == "argmax"))
                          for mode in ("sample", "argmax")}
                   for name, make_env in sorted(envs.items())}
    rows, _ = read_metrics(run_dir)
    report = {"run": run_dir.name, "target": target.name, "score_name": target.score_name,
              "env_steps": rows[-1]["step"] if rows else 0, "seed": seed, "results": results}
    write_json(run_dir / "evaluation.json", report)
    return report


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def _read_history(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "eval" not in r]


def read_metrics(run_dir: Path) -> tuple[list[dict], list[dict]]:
    """(per-update rows, evaluation rows) of a run."""
    path = Path(run_dir) / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "eval" not in r], [r for r in rows if "eval" in r]


def plot_curve(run_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = read_config(run_dir)
    rows, evals = read_metrics(run_dir)
    fig, ax = plt.subplots(figsize=(7, 4))
    pts = [(r["step"], r["score_recent"]) for r in rows if r.get("score_recent") is not None]
    if pts:
        ax.plot(*zip(*pts, strict=True), label=f"training ({cfg['score_name']}, recent episodes)")
    for name in cfg.get("evaluate", []):
        e = [(r["step"], r["eval"][name]["mean"]) for r in evals if name in r["eval"]]
        if e:
            ax.plot(*zip(*e, strict=True), "o-", label=f"eval: {name}")
    if cfg.get("goal") is not None:
        ax.axhline(cfg["goal"], color="grey", ls="--", lw=1, label="goal")
    ax.set_xlabel("env steps")
    ax.set_ylabel(cfg["score_name"])
    ax.set_title(f"{cfg['env']} / {cfg['target']}: PPO {cfg['config']['policy']} "
                 f"({cfg['policy_params']:,} params), seed {cfg['config']['seed']}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(run_dir) / "curve.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def list_runs(out: Path, env: str | None = None) -> list[dict]:
    """Every training run under ``out`` (``<env>/train/<run-id>``), oldest first."""
    runs = []
    for cfg_path in sorted(Path(out).glob("*/train/*/config.json")):
        run_dir = cfg_path.parent
        cfg = json.loads(cfg_path.read_text())
        if env and cfg.get("env") != env:
            continue
        summary_path = run_dir / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        rows = _read_history(run_dir)
        runs.append({"env": cfg.get("env"), "run_id": run_dir.name, "target": cfg.get("target"),
                     "policy": cfg["config"]["policy"], "params": cfg.get("policy_params"),
                     "seed": cfg["config"]["seed"], "updates": len(rows),
                     "of": PPOConfig.from_dict(cfg["config"]).num_updates,
                     "score": summary.get("score_recent", rows[-1].get("score_recent") if rows else None),
                     "score_name": cfg.get("score_name"), "mtime": cfg_path.stat().st_mtime})
    return sorted(runs, key=lambda r: r["mtime"])


def check_resume(env_name: str, target, config: PPOConfig, root: Path) -> list[dict]:
    """The training smoke every env passes: ``config``'s updates in one run, and again
    stopped after the first update and resumed from its checkpoint; the per-update metrics
    of the two must be equal (raises ``AssertionError`` otherwise). Returns the rows."""
    def rows(run_dir):
        return [{k: v for k, v in r.items() if k not in ("wall_s", "sps")}
                for r in read_metrics(run_dir)[0]]

    root = Path(root)
    whole, part = root / env_name / "train" / "whole", root / env_name / "train" / "part"
    small = {"progress": False, "eval_episodes": 4}  # evaluation runs, on a few episodes
    train(TrainRun(env_name, target, config, whole, **small))
    train(TrainRun(env_name, target, config, part, stop_after=1, **small))
    train(TrainRun(env_name, target, config, part, **small), resume=True)
    a, b = rows(whole), rows(part)
    assert a == b, f"a resumed run differs from an uninterrupted one:\n{a}\n{b}"
    assert len(a) == config.num_updates
    return a
