"""Our JAX PPO on pong-port and PuffeRL on PufferLib's C Pong, side by side in one run.

Each *pair* trains both trainers, one seed after the other (ours then PuffeRL for seed 0,
then seed 1, ...: load on a shared machine falls on both alike), at about the same policy
size, on PufferLib pong.ini's batch shape (131,072 env steps per update: 2,048 envs x 64
steps, 4 minibatches of 32,768) and the same step budget. What differs is stated per pair:
the network (PufferLib's one-layer GELU MLP, with or without its LSTM, against our two tanh
torsos), the epochs and the optimiser (PuffeRL: 1 epoch, Muon; ours: the target's epochs
and optimiser: Adam and 4 epochs, or in the "matched" pair PuffeRL's 1 epoch and Muon).

Both trainers' curves are read by the same rules (``pong_port.pufferl``): the score is
points won - points lost per game to 21; "+20 at step" is the first step where the mean of
the latest whole log intervals holding >= 100 episodes reaches +20; steady SPS is env steps
per second from the first interval past 20 % of the run to the end; overall SPS is steps over
the trainer's own clock (ours from its first update, compilation included; PuffeRL's from
its trainer's construction); wall is the whole call (imports, env and jit set-up included).

Writes ``<out>/pong/train/side-by-side.{json,md}`` and, per pair and seed, our run
(``<stamp>-<pair>-s<seed>``, an ordinary ``envport train`` run) and PuffeRL's
(``...-pufferl/pufferl.json``) under ``<out>/pong/train/``.

CLI: ``python -m pong_port.side_by_side [--pairs lstm-size,matched,small] [--seeds 0,1,2]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from envport.registry import TrainTarget
from envport.train.ppo import PPOConfig
from envport.train.run import TrainRun, read_config, read_metrics, run_root
from envport.train.run import train as train_ours
from pong_port import pufferl
from pong_port.train import TARGETS

STEPS = 12_000_000  # pong.ini's total_timesteps


@dataclass(frozen=True)
class Pair:
    name: str
    ours: TrainTarget
    puffer: pufferl.PufferPolicy
    note: str


_OURS = {t.name: t for t in TARGETS}
PAIRS = {
    p.name: p for p in [
        Pair("lstm-size", _OURS["pong.ini-batch-134k"], pufferl.PONG_INI_POLICY,
             "pong.ini's policy (MLP 128 + LSTM 128) against our MLP of about its size"),
        Pair("matched", _OURS["pong.ini-matched"], pufferl.PONG_INI_POLICY,
             "lstm-size with PuffeRL's update (1 epoch, Muon, pong.ini's learning rate): "
             "what differs is the network (no LSTM) and the framework"),
        Pair("small", _OURS["pong.ini-batch"], pufferl.PufferPolicy(748, rnn=False),
             "PuffeRL without its LSTM, its width chosen for our 64x64's parameter count"),
    ]
}


def budget(steps: int, batch: int) -> int:
    """PuffeRL trains until it has at least ``steps`` (whole updates); ours the same count."""
    return -(-steps // batch) * batch


def _ours(pair: Pair, seed: int, steps: int, run_dir: Path, progress: bool = False) -> dict:
    cfg = PPOConfig.from_dict({**pair.ours.config, "seed": seed})
    cfg = dataclasses.replace(cfg, total_steps=budget(steps, cfg.batch_size)).check()
    t0 = time.perf_counter()
    summary = train_ours(TrainRun("pong", pair.ours, cfg, run_dir, progress=progress))
    wall = time.perf_counter() - t0
    rows, _ = read_metrics(run_dir)
    points = [(r["step"], r["episodes"], (r["episode_score"] or 0.0) * r["episodes"])
              for r in rows]
    means = pufferl.recent_means(points)
    config = read_config(run_dir)
    return {
        "trainer": "ours", "seed": seed, "run_dir": str(run_dir),
        "policy": f"MLP {cfg.policy} x2 (actor, critic), tanh",
        "params": config["policy_params"],
        "envs": cfg.num_envs, "horizon": cfg.num_steps, "batch": cfg.batch_size,
        "minibatches": cfg.num_minibatches, "epochs": cfg.update_epochs,
        "optimizer": f"{cfg.optimizer.capitalize()} lr {cfg.learning_rate:g}", "steps": summary["env_steps"],
        "wall_s": wall, "train_s": summary["wall_s"],
        "sps": summary["env_steps"] / summary["wall_s"] if summary["wall_s"] else None,
        "sps_steady": pufferl.steady_sps([(r["step"], r["wall_s"]) for r in rows]),
        "goal_reached_at_step": pufferl.first_at_goal(means),
        "final_score": means[-1][1] if means else None,
        # the trainer's own report (same rule): a check on the line above
        "trainer_goal_reached_at_step": summary["goal_reached_at_step"],
    }


def _puffer(pair: Pair, seed: int, steps: int, out: Path) -> dict:
    res = pufferl.train(steps, seed, out, pair.puffer)
    cfg = res["config"]
    return {
        "trainer": "pufferl", "seed": seed, "run_dir": str(out),
        "policy": f"{pair.puffer.describe()} (PufferLib Default{'+LSTMWrapper' if pair.puffer.rnn else ''})",
        "params": cfg["policy_params"],
        "envs": cfg["num_agents"], "horizon": cfg["bptt_horizon"], "batch": cfg["batch_size"],
        "minibatches": cfg["minibatches_per_epoch"], "epochs": cfg["update_epochs"],
        "optimizer": f"{cfg['optimizer'].capitalize()} lr {cfg['learning_rate']:.3g}",
        "steps": res["train_steps"], "wall_s": res["wall_time_s"], "train_s": res["train_time_s"],
        "sps": res["sps"], "sps_steady": res["sps_steady"],
        "goal_reached_at_step": res["goal_reached_at_step"], "final_score": res["final_score"],
        "final_eval_score": res["final_eval_score"], "torch": res["torch"],
    }


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def pair_summary(runs: list[dict]) -> dict:
    """Per trainer: median SPS (overall, steady), median step to +20 and how many seeds got
    there; the SPS ratios ours / PuffeRL (of the medians)."""
    out = {}
    for who in ("ours", "pufferl"):
        mine = [r for r in runs if r["trainer"] == who]
        out[who] = {"seeds": len(mine),
                    "params": mine[0]["params"] if mine else None,
                    "sps": _median(r["sps"] for r in mine),
                    "sps_steady": _median(r["sps_steady"] for r in mine),
                    "reached": sum(r["goal_reached_at_step"] is not None for r in mine),
                    "goal_step_median": _median(r["goal_reached_at_step"] for r in mine),
                    "final_score_min": min((r["final_score"] for r in mine
                                            if r["final_score"] is not None), default=None)}
    for key in ("sps", "sps_steady"):
        a, b = out["ours"][key], out["pufferl"][key]
        out[f"{key}_ratio"] = a / b if a and b else None
    return out


def _host() -> dict:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import jax

    return {"cpu": model, "cpu_count": os.cpu_count(), "node": platform.node(),
            "python": platform.python_version(), "jax": jax.__version__,
            "devices": [str(d) for d in jax.devices()]}


def run(pairs: list[Pair], seeds: list[int], steps: int = STEPS, out: Path | str = "reports",
        stamp: str | None = None, progress: bool = False) -> dict:
    """Train every pair and seed, writing side-by-side.{json,md} after each run (a crash
    leaves the runs so far); returns the result."""
    root = run_root(Path(out), "pong")
    root.mkdir(parents=True, exist_ok=True)
    stamp = stamp or time.strftime("sbs-%Y%m%d-%H%M%S")
    result = {"stamp": stamp, "steps": steps, "seeds": list(seeds),
              "command": "python -m pong_port.side_by_side --pairs "
                         f"{','.join(p.name for p in pairs)} --seeds {','.join(map(str, seeds))}"
                         + (f" --steps {steps}" if steps != STEPS else ""),
              "host": _host(), "load_before": list(os.getloadavg()),
              "started": time.strftime("%Y-%m-%d %H:%M:%S"), "pairs": {}}
    for pair in pairs:
        result["pairs"][pair.name] = {"note": pair.note, "ours_target": pair.ours.name,
                                      "puffer_policy": asdict(pair.puffer), "runs": []}
    for pair in pairs:
        entry = result["pairs"][pair.name]
        for seed in seeds:
            base = root / f"{stamp}-{pair.name}-s{seed}"
            entry["runs"].append(_ours(pair, seed, steps, base, progress))
            entry["runs"].append(_puffer(pair, seed, steps, base.with_name(base.name + "-pufferl")))
            entry["summary"] = pair_summary(entry["runs"])
            result["load_after"] = list(os.getloadavg())
            result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
            write(result, root)
    return result


def write(result: dict, root: Path) -> None:
    (root / "side-by-side.json").write_text(json.dumps(result, indent=1) + "\n")
    (root / "side-by-side.md").write_text(markdown(result))


def _n(x, fmt="{:,.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def markdown(result: dict) -> str:
    host = result["host"]
    lines = [
        f"Command: `{result['command']}` ({result['started']} - {result.get('finished', '?')}, "
        f"run {result['stamp']}).",
        f"Host: {host['cpu']}, {host['cpu_count']} vCPU, Python {host['python']}, jax "
        f"{host['jax']} (CPU); load average (1/5/15 min) "
        + " before, ".join("/".join(f"{x:.1f}" for x in result[k])
                           for k in ("load_before", "load_after") if k in result) + " after.",
        "",
    ]
    for name, entry in result["pairs"].items():
        runs = entry["runs"]
        lines += [f"**{name}**: {entry['note']}.", ""]
        if runs:
            shapes = {}
            for r in runs:
                shapes.setdefault(r["trainer"], r)
            for who, r in shapes.items():
                lines.append(
                    f"- {who}: {r['policy']} = {r['params']:,} parameters; {r['envs']:,} envs x "
                    f"{r['horizon']} steps = {r['batch']:,} per update, {r['minibatches']} "
                    f"minibatches x {r['epochs']} epoch(s), {r['optimizer']}")
            lines.append("")
        lines += ["| trainer | seed | params | steps | wall s | SPS | steady SPS | +20 at step "
                  "| final score |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in runs:
            lines.append(
                f"| {r['trainer']} | {r['seed']} | {r['params']:,} | {r['steps']:,} | "
                f"{r['wall_s']:.0f} | {_n(r['sps'])} | {_n(r['sps_steady'])} | "
                f"{_n(r['goal_reached_at_step'])} | {_n(r['final_score'], '{:.2f}')} |")
        s = entry.get("summary")
        if s:
            lines += ["", f"Medians over seeds: ours {_n(s['ours']['sps_steady'])} steady SPS, "
                      f"PuffeRL {_n(s['pufferl']['sps_steady'])}: ratio "
                      f"**{_n(s['sps_steady_ratio'], '{:.2f}')}x** (overall SPS "
                      f"{_n(s['sps_ratio'], '{:.2f}')}x); +20 reached by "
                      f"{s['ours']['reached']}/{s['ours']['seeds']} seeds of ours (median step "
                      f"{_n(s['ours']['goal_step_median'])}) and "
                      f"{s['pufferl']['reached']}/{s['pufferl']['seeds']} of PuffeRL's (median "
                      f"step {_n(s['pufferl']['goal_step_median'])})."]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pong_port.side_by_side",
                                description=__doc__.splitlines()[0])
    p.add_argument("--pairs", default=",".join(PAIRS),
                   help=f"comma-separated, of {', '.join(PAIRS)} (default: all)")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated (default: %(default)s)")
    p.add_argument("--steps", type=int, default=STEPS, help="env steps per run (pong.ini's)")
    p.add_argument("--out", default="reports", help="report folder (default: %(default)s)")
    args = p.parse_args(argv)
    names = [n for n in args.pairs.split(",") if n]
    unknown = sorted(set(names) - set(PAIRS))
    if unknown:
        p.error(f"unknown pair(s) {', '.join(unknown)}; choose from {', '.join(PAIRS)}")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    try:
        result = run([PAIRS[n] for n in names], seeds, args.steps, args.out, progress=True)
    except pufferl.PufferlError as exc:
        sys.exit(f"error: {exc}")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
