"""The ``envport`` command: the same verbs for every installed env package.

``envport list`` shows what is installed, ``envport verify <env>`` runs the verification
hierarchy, ``envport bench <env>`` measures candidate against reference. Errors a user can
hit (unknown env, reference missing, bad action) print one line and exit 2, no traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from envport import __version__, registry
from envport.errors import EnvportError

VERIFY_LEVELS = ("L1", "L2", "L3", "L4")
STAGES = ("tests", "verify", "bench", "train", "generate")  # = envport.sessions.STAGES
PROMPT_KINDS = ("translate", "repair", "optimise")  # = envport.generate.prompts.KINDS (not imported: cheap CLI start)


def _csv(text: str) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, got nothing")
    return items


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """``"1,32,128"`` -> ``(1, 32, 128)``; rejects non-integers and sizes below 1."""
    sizes = []
    for item in _csv(text):
        try:
            n = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"batch size {item!r} is not an integer (expected e.g. 1,32,128)"
            ) from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"batch size must be >= 1, got {n}")
        sizes.append(n)
    return tuple(sizes)


def parse_levels(text: str) -> list[str]:
    """``"l1,L3"`` -> ``["L1", "L3"]``; rejects levels the hierarchy does not have."""
    levels = [s.upper() for s in _csv(text)]
    bad = [s for s in levels if s not in VERIFY_LEVELS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown level(s) {', '.join(bad)}; choose from {', '.join(VERIFY_LEVELS)}"
        )
    return levels


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return x


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so docs and tests can inspect it)."""
    p = argparse.ArgumentParser(
        prog="envport",
        description="Fast RL environments, verified equivalent to their references.",
    )
    p.add_argument("--version", action="version", version=f"envport {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="list installed env packages")
    ir = sub.add_parser("install-reference",
                        help="install/build an env's pinned reference implementation")
    ir.add_argument("env", help="env name (see `envport list`)")

    pp = sub.add_parser("prepare",
                        help="what an env needs before a stage (ROMs, vectors, native tests)")
    pp.add_argument("env", help="env name (see `envport list`)")
    pp.add_argument("--stage", default="verify", choices=STAGES,
                    help="the stage to prepare for (default: verify)")
    pp.add_argument("--install-system", action="store_true",
                    help="apt-install missing system programs (as root, e.g. in CI)")
    sc = sub.add_parser("session-commands",
                        help="print the command lines of an env's stage as JSON (for nox/CI)")
    sc.add_argument("env", help="env name (see `envport list`)")
    sc.add_argument("stage", choices=STAGES)
    sc.add_argument("args", nargs=argparse.REMAINDER,
                    help="the session's arguments (after --)")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("env", help="env name (see `envport list`)")
    common.add_argument("--out", default="reports", help="report folder (default: reports)")
    common.add_argument("--no-progress", action="store_true", help="no progress bars")
    common.add_argument(
        "--install", action="store_true",
        help="install the pinned reference implementation first",
    )

    v = sub.add_parser("verify", parents=[common], help="run the verification hierarchy")
    v.add_argument(
        "--scale", type=_positive_float, default=1.0,
        help="multiply the declared verification budget (cases, episodes) by this",
    )
    v.add_argument(
        "--levels", type=parse_levels, default=None,
        help=f"comma-separated subset of {','.join(VERIFY_LEVELS)} (default: all declared)",
    )
    v.add_argument(
        "--suites", type=_csv, default=None, metavar="NAMES",
        help="comma-separated parts of suite names (case-insensitive), e.g. HalfCheetah: run "
             "only the matching suites of each level; such a run claims no equivalence",
    )
    v.add_argument(
        "--workers", type=_positive_int, default=None,
        help="worker processes sharing the L2 batches and L3 seeds, each with its own "
             "reference process (default: one per core); the report does not depend on it",
    )
    v.add_argument(
        "--ray", nargs="?", const=True, default=None, metavar="ADDRESS",
        help="run the shards as Ray tasks: on a local Ray started for the run, or on the "
             "cluster at ADDRESS (e.g. auto, 10.0.0.5:6379); needs envport[ray]",
    )

    b = sub.add_parser("bench", parents=[common], help="benchmark candidate vs reference")
    b.add_argument(
        "--batch-sizes", type=parse_batch_sizes, default=None,
        help="comma-separated num_envs values (default: 1,32,128,512,2048,8192)",
    )
    b.add_argument(
        "--min-seconds", type=_positive_float, default=2.0,
        help="minimum timed seconds per measurement (default: 2.0)",
    )
    b.add_argument("--targets", type=_csv, default=None, help="comma-separated bench targets")
    b.add_argument("--no-extras", action="store_true",
                   help="skip the env's own extra benchmarks (also skipped with --targets)")

    pr = sub.add_parser("prompt", help="print a rendered generation prompt")
    pr.add_argument("env", help="env name (see `envport list`)")
    pr.add_argument("--module", default=None,
                    help="module of the translation plan (default: the first)")
    pr.add_argument("--kind", default="translate", choices=PROMPT_KINDS,
                    help="which template (default: translate)")
    pr.add_argument("--report", type=Path, default=None,
                    help="verify.json that a repair prompt is about (default: reports/<env>/verify.json)")
    pr.add_argument("--bench", type=Path, default=None,
                    help="bench.json that an optimise prompt shows (default: reports/<env>/bench.json)")
    pr.add_argument("--system", action="store_true", help="print the system prompt first")

    g = sub.add_parser("generate", help="translate the env with a model, verify, repair, record")
    g.add_argument("env", help="env name (see `envport list`)")
    g.add_argument("--out", default="reports", help="report folder (default: reports)")
    g.add_argument("--modules", type=_csv, default=None,
                   help="comma-separated modules of the plan to generate (default: all)")
    g.add_argument("--model", default=None, help="Anthropic model (default: claude-sonnet-4-6)")
    g.add_argument("--iterations", type=_positive_int, default=None,
                   help="T: iterations per phase (L1, compose, L2, L3) of a module before it "
                        "needs a human (default: 3; with --resume: the run's own)")
    g.add_argument("--max-tokens", type=_positive_int, default=None,
                   help="token budget of the run (default: 3,000,000; with --resume: the run's)")
    g.add_argument("--max-usd", type=_positive_float, default=None,
                   help="dollar budget of the run (default: 20; with --resume: the run's)")
    g.add_argument("--scale", type=_positive_float, default=0.01,
                   help="verification budget per iteration, as a fraction of the declared one")
    g.add_argument("--levels", type=parse_levels, default=["L1", "L2", "L3"],
                   help="levels verified each iteration (default: L1,L2,L3)")
    g.add_argument("--timeout", type=_positive_float, default=900.0,
                   help="seconds a test or verification subprocess may run (default: 900)")
    g.add_argument("--memory-gb", type=_positive_float, default=8.0,
                   help="address-space limit of those subprocesses in GiB (default: 8)")
    g.add_argument("--no-jail", action="store_true",
                   help="let generated code write outside the work dir (default: it may not)")
    g.add_argument("--optimise", action="store_true",
                   help="after everything passed: the optimise phase (bench, change, re-verify)")
    g.add_argument("--bench-batch-sizes", type=parse_batch_sizes, default=(1, 128, 2048),
                   help="num_envs the optimise phase benchmarks (default: 1,128,2048)")
    again = g.add_mutually_exclusive_group()
    again.add_argument("--replay", metavar="RUN_ID", default=None,
                       help="re-run a recorded run from its recorded responses (no API call)")
    again.add_argument("--resume", metavar="RUN_ID", default=None,
                       help="continue an interrupted or stopped run in its own directory: "
                            "replay its responses, then go on live (--iterations, --max-tokens, "
                            "--max-usd raise its budget)")

    t = sub.add_parser("train", help="train PPO on an env (needs envport[train])")
    t.add_argument("env", help="env name (see `envport list`)")
    t.add_argument("--target", default=None,
                   help="which of the env's training targets (default: its first)")
    t.add_argument("--policy", default=None,
                   help="network size: a preset (0.1M, 2M, 20M, 200M) or hidden widths "
                        "such as 64,64 (default: the target's)")
    t.add_argument("--steps", type=_positive_int, default=None,
                   help="total env steps (default: the target's)")
    t.add_argument("--num-envs", type=_positive_int, default=None, help="parallel envs")
    t.add_argument("--seeds", type=_csv, default=["0"],
                   help="comma-separated seeds, one run each (default: 0)")
    t.add_argument("--devices", type=_positive_int, default=1,
                   help="split the envs over this many devices (data parallel)")
    t.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="any PPO setting, e.g. --set learning_rate=1e-3 (repeatable)")
    t.add_argument("--out", default="reports", help="report folder (default: reports)")
    t.add_argument("--run-id", default=None, help="run directory name (default: time-policy-seed)")
    t.add_argument("--resume", metavar="RUN_ID", default=None,
                   help="continue reports/<env>/train/RUN_ID from its checkpoint")
    t.add_argument("--stop-after", type=_positive_int, default=None, metavar="UPDATES",
                   help="stop (checkpointed) after this many updates; --resume goes on")
    t.add_argument("--init-from", metavar="RUN_ID", default=None,
                   help="start from the policy of reports/<env>/train/RUN_ID (its parameters, "
                        "a fresh optimiser; same policy widths)")
    t.add_argument("--checkpoint-every", type=_positive_int, default=10, help="updates")
    t.add_argument("--eval-every", type=int, default=0,
                   help="updates between evaluations on the target's evaluation envs "
                        "(default: only at the end)")
    t.add_argument("--eval-episodes", type=_positive_int, default=200)
    t.add_argument("--no-progress", action="store_true", help="no progress bar")

    e = sub.add_parser("evaluate", help="play a training run's policy on its evaluation envs "
                                        "(needs envport[train])")
    e.add_argument("env", help="env name (see `envport list`)")
    e.add_argument("run_id", help="the run: reports/<env>/train/RUN_ID (see `envport runs`)")
    e.add_argument("--episodes", type=_positive_int, default=1000,
                   help="episodes per evaluation env and action mode (default: 1000)")
    e.add_argument("--seed", type=int, default=0, help="evaluation seed (default: 0)")
    e.add_argument("--out", default="reports", help="report folder (default: reports)")

    o = sub.add_parser("overhead",
                       help="the env's share of PPO wall time at several policy sizes "
                            "(needs envport[train])")
    o.add_argument("env", help="env name (see `envport list`)")
    o.add_argument("--target", default=None,
                   help="which of the env's training targets (default: its first)")
    o.add_argument("--sizes", type=_csv, default=None,
                   help="comma-separated policy sizes: presets, or hidden widths written "
                        "with x such as 64x64 (default: 0.1M,2M,20M,200M)")
    o.add_argument("--num-envs", type=_positive_int, default=None,
                   help="parallel envs, the same for every size (default: 128)")
    o.add_argument("--num-steps", type=_positive_int, default=None,
                   help="rollout steps per update, the same for every size (default: 8)")
    o.add_argument("--updates", type=_positive_int, default=None,
                   help="timed updates per size, after one warm-up (default: 3; fewer where "
                        "a size's calls pass --max-seconds)")
    o.add_argument("--max-seconds", type=_positive_float, default=None,
                   help="stop timing a size once its update calls took this long; at least "
                        "one pair runs (default: 60)")
    o.add_argument("--min-seconds", type=_positive_float, default=None,
                   help="fast updates repeat until each kind took this long (default: 2)")
    o.add_argument("--trace", action="store_true",
                   help="also write a jax.profiler trace of one update of each kind per size")
    o.add_argument("--no-phases", action="store_true",
                   help="skip timing the rollouts alone (the rollout / learn split)")
    o.add_argument("--out", default="reports", help="report folder (default: reports)")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")

    r = sub.add_parser("runs", help="list recorded generation and training runs")
    r.add_argument("env", nargs="?", default=None, help="only this env's runs")
    r.add_argument("--out", default="reports", help="report folder (default: reports)")
    return p


def _cmd_list(args: argparse.Namespace) -> int:
    eps = registry.available()
    if not eps:
        print(f"no envs installed (entry-point group '{registry.ENTRY_POINT_GROUP}')")
        return 0
    for name in sorted(eps):
        print(f"{name}  ({eps[name].value})")
        try:
            port = registry.get(name)
        except Exception as exc:  # a broken package must not hide the others
            print(f"  error loading: {type(exc).__name__}: {exc}")
            continue
        print(f"  reference: {port.reference}")
        print(f"  candidate: {port.candidate}")
    return 0


def _prepare(args: argparse.Namespace) -> registry.EnvPort:
    port = registry.get(args.env)
    if args.install:
        port.install_reference()
    else:
        port.check_reference()
    return port


def _cmd_install_reference(args: argparse.Namespace) -> int:
    port = registry.get(args.env)
    port.install_reference()
    port.check_reference()
    print(f"{port.name}: reference ready ({port.reference})")
    return 0


def _cmd_prepare(args: argparse.Namespace) -> int:
    from envport import sessions

    port = registry.get(args.env)
    sessions.prepare(port, args.stage, install_system=args.install_system)
    print(f"{port.name}: prepared for {args.stage}")
    return 0


def _cmd_session_commands(args: argparse.Namespace) -> int:
    import json

    from envport import sessions

    rest = list(args.args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    print(json.dumps(sessions.commands(registry.get(args.env), args.stage, rest)))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    port = _prepare(args)
    # looked up at call time: the verify package is heavy and optional for `list`
    verify = importlib.import_module("envport.verify")
    out = Path(args.out)
    report = verify.run(  # workers None: one per core
        port, out_dir=out, scale=args.scale, levels=args.levels, progress=not args.no_progress,
        workers=args.workers, ray=args.ray, suites=args.suites,
    )
    if args.suites is not None:  # the chosen suites' verdict; no claim for the port
        ok = bool(report["selected_passed"])
        print(f"{port.name}: the suites matching {', '.join(args.suites)} "
              f"{'PASSED' if ok else 'FAILED'} (a --suites run claims no equivalence)")
    else:
        ok = bool(report["equivalent"])
        print(f"{port.name}: {'EQUIVALENT' if ok else 'NOT EQUIVALENT'}")
        not_run = sorted(set(report.get("required_levels", ())) - set(report.get("levels", {})))
        if not_run:
            print(f"(equivalence needs {', '.join(report['required_levels'])}; not run: "
                  f"{', '.join(not_run)})")
    if "execution" in report:
        ex = report["execution"]
        print(f"L2/L3 ran on {ex['workers']} worker(s) ({ex['executor']}) in "
              f"{report['wall_s']:.1f} s all levels")
    print(f"report written to {out / port.name / 'verify.json'} (and verify.md)")
    return 0 if ok else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    port = _prepare(args)
    from envport import bench

    kwargs = {}
    if args.batch_sizes is not None:
        kwargs["batch_sizes"] = args.batch_sizes
    elif port.bench_batch_sizes is not None:
        kwargs["batch_sizes"] = tuple(port.bench_batch_sizes)
    out = Path(args.out)
    report = bench.run_bench(
        port, out_dir=out, min_seconds=args.min_seconds, progress=not args.no_progress,
        targets=args.targets, **kwargs,
    )
    for name, t in report["targets"].items():
        for r in t["rows"]:
            ratio = "skipped" if r["ratio"] is None else f"{r['ratio']:.2f}x"
            print(f"{name} num_envs={r['num_envs']}: {ratio}")
    print(f"report written to {out / port.name / 'bench.json'} (and bench.md, bench.png)")
    if args.targets is None and not args.no_extras:
        for extra in port.extra_benches:
            print(f"{port.name}: extra bench {extra.name}", flush=True)
            extra.run(out, not args.no_progress)
            if extra.outputs:
                print(f"{extra.name}: written to {out / port.name} ({extra.outputs})")
    return 0


def _cmd_prompt(args: argparse.Namespace) -> int:
    from envport.generate import failures, prompts

    port = registry.get(args.env)
    plan = prompts.require_plan(port)
    module = plan.module(args.module) if args.module else plan.modules[0]
    if args.system:
        print(prompts.system_prompt(port).text)
    if args.kind == "translate":
        prompt = prompts.translate_prompt(port, module)
    elif args.kind == "repair":
        path = args.report or Path("reports") / port.name / "verify.json"
        report = prompts.load_json(path)
        if report is None:
            raise EnvportError(f"a repair prompt is about a verification report and {path} does "
                               f"not exist: run `envport verify {port.name}` or pass --report")
        failure = failures.from_verify_report(report)
        if failure is None:
            raise EnvportError(f"{path} shows no failure: there is nothing to repair")
        prompt = prompts.repair_prompt(port, module, failure)
    else:
        bench = prompts.load_json(args.bench or Path("reports") / port.name / "bench.json")
        prompt = prompts.optimise_prompt(port, bench)
    print(prompt.text)
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from envport.generate import agent, costs, model, prompts, sandbox

    port = registry.get(args.env)
    prompts.require_plan(port)
    out = Path(args.out)
    given = {k: v for k, v in (("iterations", args.iterations), ("tokens", args.max_tokens),
                               ("usd", args.max_usd)) if v is not None}
    if args.replay:
        summary = agent.replay(port, args.replay, out)
    else:
        live = model.AnthropicModel()  # raises MissingApiKeyError first: nothing runs without a key
        port.check_reference()
        if args.resume:  # the run's own budget, but for what a flag raises
            budget = dataclasses.replace(agent.recorded_budget(port, args.resume, out), **given)
            summary = agent.resume(port, args.resume, live, out, budget=budget if given else None)
        else:
            budget = dataclasses.replace(costs.Budget(), **given)
            modules = None if args.modules is None else tuple(args.modules)
            if modules is not None:
                port.plan.select(modules)  # unknown module names fail before anything runs
            config = agent.RunConfig(
                env=port.name, model=args.model or model.DEFAULT_MODEL, modules=modules,
                budget=budget, levels=tuple(args.levels), scale=args.scale,
                limits=sandbox.Limits(args.timeout, int(args.memory_gb * 2**30),
                                      jail=not args.no_jail),
                optimise=args.optimise, bench_batch_sizes=tuple(args.bench_batch_sizes))
            summary = agent.generate(port, live, config, out)
    print(f"{port.name}: {summary['status'].upper()} after {summary['iterations']} iteration(s), "
          f"{summary['tokens']} tokens, ${summary['usd']:.4f}")
    if summary.get("needs_human"):
        print(f"needs a human: {summary['needs_human']}")
    print(f"records in {summary['run_dir']} (generate.json, generate.md)")
    return 0 if summary["status"] == "passed" else 1


def _ppo_settings(items: list[str]) -> dict:
    import json

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise EnvportError(f"--set {item!r}: expected NAME=VALUE, e.g. learning_rate=1e-3")
        try:
            out[name.strip()] = json.loads(value)
        except ValueError:
            out[name.strip()] = value  # a bare string, e.g. policy=2M
    return out


def _train_target(env: str, name: str | None):
    """(the env's training targets by name, the chosen one): its first without ``name``;
    a one-line error for an env without targets or an unknown target."""
    port = registry.get(env)
    if not port.train:
        raise EnvportError(f"{env} declares no training target")
    targets = {t.name: t for t in port.train}
    name = name or port.train[0].name
    if name not in targets:
        raise EnvportError(f"unknown training target {name!r} for {env}; choose from "
                           f"{', '.join(targets)}")
    return targets, targets[name]


def _train_overrides(args: argparse.Namespace) -> dict:
    """The PPO settings given on the command line: ``--set`` items, then ``--policy``,
    ``--steps`` and ``--num-envs`` over them."""
    given = _ppo_settings(args.set)
    for key, value in (("policy", args.policy), ("total_steps", args.steps),
                       ("num_envs", args.num_envs)):
        if value is not None:
            given[key] = value
    return given


def _cmd_train(args: argparse.Namespace) -> int:
    from envport.train import ppo, run

    targets, target = _train_target(args.env, args.target)
    name = target.name
    given = _train_overrides(args)
    settings = {**target.config, **given}
    root = run.run_root(Path(args.out), args.env)
    if args.resume:
        run_dir = root / args.resume
        stored = run.read_config(run_dir)
        if stored.get("target") != name and args.target:
            raise run.ResumeMismatchError(
                f"{args.resume} trained target {stored.get('target')!r}, not {name!r}")
        target = targets.get(stored.get("target"), target)
        cfg = ppo.PPOConfig.from_dict(stored["config"])
        changed = {k: v for k, v in given.items() if stored["config"].get(k) != v}
        if changed:
            raise run.ResumeMismatchError(
                f"cannot resume {args.resume} with other settings ({changed}): a resumed run "
                "keeps its own config")
        runs = [(cfg, run_dir, True)]
    else:
        runs = []
        for seed in args.seeds:
            try:
                cfg = ppo.PPOConfig.from_dict({**settings, "seed": int(seed)}).check()
            except ValueError as exc:
                raise EnvportError(str(exc)) from None
            run_id = args.run_id + (f"-s{seed}" if len(args.seeds) > 1 else "") if args.run_id \
                else run.default_run_id(cfg)
            runs.append((cfg, root / run_id, False))
    for cfg, run_dir, resume in runs:
        summary = run.train(run.TrainRun(
            args.env, target, cfg, run_dir, devices=args.devices, progress=not args.no_progress,
            checkpoint_every=args.checkpoint_every, stop_after=args.stop_after, eval_every=args.eval_every,
            eval_episodes=args.eval_episodes,
            init_from=root / args.init_from if args.init_from else None), resume=resume)
        goal = summary["goal"]
        reached = summary["goal_reached_at_step"]
        print(f"{summary['run_dir']}: {summary['updates']} updates, {summary['env_steps']:,} "
              f"env steps, {summary['wall_s']:.0f} s, median {summary['sps_median']:,.0f} SPS; "
              f"{summary['score_name']} {summary['score_recent']}"
              + ("" if goal is None else f"; goal {goal} " + (
                  f"reached at step {reached:,}" if reached else "not reached")))
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from envport.train import run

    run_dir = run.run_root(Path(args.out), args.env) / args.run_id
    _, target = _train_target(args.env, run.read_config(run_dir).get("target"))
    report = run.evaluate_run(run_dir, target, args.episodes, args.seed)
    print(f"{run_dir} after {report['env_steps']:,} env steps, {args.episodes:,} episodes each "
          f"({report['score_name']}, 95% CI):")
    for name, modes in report["results"].items():
        print(f"  {name}: " + "; ".join(
            f"{mode} {r['mean']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]"
            for mode, r in modes.items()))
    print(f"written to {run_dir / 'evaluation.json'}")
    return 0


def _cmd_overhead(args: argparse.Namespace) -> int:
    from envport.train import overhead

    _, target = _train_target(args.env, args.target)
    sizes = overhead.validate_sizes(args.sizes or overhead.DEFAULT_SIZES)
    given = {k: v for k, v in (("num_envs", args.num_envs), ("num_steps", args.num_steps),
                               ("updates", args.updates), ("min_seconds", args.min_seconds),
                               ("max_seconds", args.max_seconds))
             if v is not None}
    command = " ".join(["envport overhead", args.env]
                       + ([f"--target {args.target}"] if args.target else [])
                       + [f"--sizes {','.join(sizes)}"]
                       + [f"--{k.replace('_', '-')} {v:g}" if isinstance(v, float)
                          else f"--{k.replace('_', '-')} {v}" for k, v in given.items()])
    report = overhead.run_overhead(
        args.env, target, sizes, out=Path(args.out), progress=not args.no_progress,
        trace=args.trace, phases=not args.no_phases, command=command, **given)
    for r in report["sizes"]:
        if r.get("status") != "ok":
            print(f"{r['policy']} ({r['params']:,} params): {r['status']}, estimate "
                  f"{r['estimate_gib']:.1f} GiB")
            continue
        print(f"{r['policy']} ({r['params']:,} params): update {r['t_env']['median_s']:.3g} s "
              f"with the env, {r['t_replay']['median_s']:.3g} s replayed -> env share "
              f"{r['share']:.1%}{' (noisy)' if r['noisy'] else ''}, {r['updates_timed']} "
              "update(s) timed")
    out = Path(args.out) / args.env / "overhead"
    print(f"report written to {out / 'overhead.json'} (and overhead.md"
          + (", overhead.png)" if report.get("plot") else "; no plot: matplotlib missing)"))
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    from envport.generate import records

    runs = records.list_runs(Path(args.out), args.env)
    try:
        from envport.train.run import list_runs
    except Exception:  # without envport[train] there are no training runs to read
        training = []
    else:
        training = list_runs(Path(args.out), args.env)
    if not runs and not training:
        print(f"no generation or training runs under {args.out}")
        return 0
    for r in training:
        score = "-" if r["score"] is None else f"{r['score']:.3f}"
        print(f"{r['env']}  {r['run_id']}  train {r['target']}  policy={r['policy']} "
              f"({r['params']:,} params)  seed={r['seed']}  updates={r['updates']}/{r['of']}  "
              f"{r['score_name']}={score}")
    for r in runs:
        usd = "?" if r["usd"] is None else f"${r['usd']:.4f}"
        extra = f" replay of {r['replay_of']}" if r.get("replay_of") else ""
        extra += f" resumed from {r['resumed_from']}" if r.get("resumed_from") else ""
        extra += f" resumed {r['resumes']}x" if r.get("resumes") else ""
        print(f"{r['env']}  {r['run_id']}  {r['status']}  iterations={r['iterations']}  "
              f"tokens={r['tokens']}  {usd}  {r['model']}{extra}")
    return 0


_COMMANDS = {"list": _cmd_list, "install-reference": _cmd_install_reference,
             "prepare": _cmd_prepare, "session-commands": _cmd_session_commands,
             "verify": _cmd_verify, "bench": _cmd_bench, "prompt": _cmd_prompt,
             "generate": _cmd_generate, "train": _cmd_train, "evaluate": _cmd_evaluate,
             "overhead": _cmd_overhead,
             "runs": _cmd_runs}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``envport`` console script; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help/--version/bad arguments
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return _COMMANDS[args.command](args)
    except EnvportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
