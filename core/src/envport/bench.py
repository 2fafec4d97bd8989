"""Benchmark harness: the reference and the candidate measured side by side, in one run.

A ratio measured on the same host in the same process is the figure we quote (DESIGN §5);
absolute steps/s only mean something next to the hardware they came from, so every report
carries a host line. JIT compile time is reported on its own and never enters steps/s.

Steps/s always counts *env-steps*: one batched step of ``num_envs`` envs is ``num_envs``
steps, for the reference and the candidate alike.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from envport.errors import EnvportError
from envport.registry import BenchTarget, EnvPort

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 32, 128, 512, 2048, 8192)
ACTION_CACHE = 64  # pre-drawn action batches, so action sampling stays out of the timing
_MAX_STEPS_PER_CALL = 1 << 26  # stop growing k if run(k) never gets slow (e.g. a no-op)


def _cpu_model() -> str | None:
    """The CPU's marketing name (``platform.processor()`` is often just the architecture)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def host_info(packages: Sequence[str] = ()) -> dict[str, Any]:
    """Where the figures came from; absolute steps/s are meaningless without it. The one
    host record of every envport benchmark (the side-by-side table and an env's extra
    benches): ``packages`` adds each distribution's installed version under its own name."""
    from importlib.metadata import PackageNotFoundError, version

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    for name in packages:
        try:
            info[name] = version(name)
        except PackageNotFoundError:
            info[name] = None
    try:
        import jax

        info["jax"] = jax.__version__
        info["jax_backend"] = jax.default_backend()
        devices = jax.devices()
        info["jax_devices"] = f"{len(devices)} x {devices[0].device_kind}" if devices else "none"
    except Exception as exc:  # a host without a working jax still gets a report
        info["jax"] = f"unavailable ({type(exc).__name__}: {exc})"
    return info


def host_line(host: dict[str, Any]) -> str:
    """One human-readable line naming the hardware and software behind the figures."""
    jax_part = f"jax {host.get('jax')}"
    if "jax_backend" in host:
        jax_part += f" ({host['jax_backend']}, {host.get('jax_devices', '?')})"
    cpu = host.get("cpu_model") or host["processor"]
    return (
        f"{cpu} / {host['machine']}, {host['cpu_count']} CPUs, "
        f"{jax_part}, Python {host['python']}, {host['platform']}"
    )


def is_out_of_memory(exc: BaseException) -> bool:
    """True for host ``MemoryError`` and for XLA's RESOURCE_EXHAUSTED (a jax OOM)."""
    if isinstance(exc, MemoryError):
        return True
    msg = str(exc)
    return isinstance(exc, RuntimeError) and (
        "RESOURCE_EXHAUSTED" in msg or "out of memory" in msg.lower()
    )


def _oom_reason(side: str, exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{side}: out of memory ({type(exc).__name__}: {first})"


def measure_reference(
    target: BenchTarget, num_envs: int, min_seconds: float
) -> tuple[float, int, float]:
    """Steps the raw reference for at least ``min_seconds``; returns (sps, env-steps, seconds).

    Actions are drawn up front so that the sampler's cost is not billed to the reference.
    """
    step, close = target.reference_stepper(num_envs)
    try:
        rng = np.random.default_rng(0)
        cache = [target.sample_actions(rng, num_envs) for _ in range(ACTION_CACHE)]
        # warm-up: caches, lazy allocation, a subprocess's first round trip
        warm_s = 0.1 * min_seconds
        t0, i = time.perf_counter(), 0
        while i < 1 or (i < ACTION_CACHE and time.perf_counter() - t0 < warm_s):
            step(cache[i % ACTION_CACHE])
            i += 1
        calls = 0
        t0 = time.perf_counter()
        while True:
            step(cache[calls % ACTION_CACHE])
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_seconds:
                break
    finally:
        close()
    steps = calls * num_envs
    return steps / elapsed, steps, elapsed


def measure_candidate(
    run: Callable[[int], None], num_envs: int, min_seconds: float
) -> tuple[float, int, float, int]:
    """Times ``run(k)`` for at least ``min_seconds``; returns (sps, env-steps, seconds, k).

    ``k`` (batched steps per call) grows until one call lasts a tenth of ``min_seconds``, so
    per-call dispatch overhead is amortised; then ``run(k)`` is repeated until the total
    reaches ``min_seconds``. Only repeat calls at an already-seen ``k`` are timed: a port
    whose ``run`` jits a ``scan`` of static length recompiles for every new ``k``, and that
    compile must not land in steps/s.
    """
    chunk_s = max(min_seconds / 10.0, 1e-3)
    k = 1
    run(k)  # warm-up: any per-k trace/compile happens here, untimed
    while True:
        t0 = time.perf_counter()
        run(k)
        t = time.perf_counter() - t0
        if t >= chunk_s or k >= _MAX_STEPS_PER_CALL:
            break
        want = k * 1.2 * chunk_s / max(t, 1e-9)
        k_new = 1 << max(1, math.ceil(math.log2(max(want, 2.0))))
        k = min(max(k_new, 2 * k), 1024 * k, _MAX_STEPS_PER_CALL)
        run(k)  # warm-up at the new k
    calls = 0
    t0 = time.perf_counter()
    while True:
        run(k)
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            break
    steps = calls * k * num_envs
    return steps / elapsed, steps, elapsed, k


def candidate_only(rollout: Callable[[int], tuple[Callable[[int], None], float]],
                   batch_sizes: Sequence[int], min_seconds: float, how_actions: str,
                   shards: Callable[[int], int] | None = None) -> dict[str, Any]:
    """A JAX env's side of its benchmark alone, at each batch size on every local device.

    An accelerator machine (``tools/gpu/bench.sh``) has JAX but not the reference (no node,
    no network): the reference's figures come from ``./dev bench-<env>`` on a CPU host and
    docs/benchmarks.md pairs the two with the hardware of each. ``rollout(n)`` is the env's
    ``(run(k), compile_s)`` as its bench targets use it; ``shards(n)`` the devices it splits a
    batch of ``n`` over.
    """
    import jax

    rows = []
    for n in batch_sizes:
        run, compile_s = rollout(int(n))
        sps, steps, secs, k = measure_candidate(run, int(n), min_seconds)
        rows.append({"num_envs": int(n), "candidate_sps": sps, "compile_s": compile_s,
                     "steps_timed": steps, "seconds": secs, "steps_per_call": k,
                     "devices": shards(int(n)) if shards else 1})
        print(f"num_envs {n}: {sps:,.0f} env-steps/s (compile {compile_s:.1f} s)", flush=True)
    return {"host": host_info(), "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.local_devices()], "how_actions": how_actions,
            "rows": rows}


def candidate_main(prog: str, rollout, how_actions: str, shards=None,
                   batch_sizes: str = "2048,8192,32768,131072", argv=None) -> None:
    """``python -m <env>.bench``: ``candidate_only`` from the command line, JSON to ``--out``."""
    import argparse
    import json
    from pathlib import Path

    env = prog.split()[-1].split(".")[0]
    p = argparse.ArgumentParser(prog=prog,
                                description=f"{env}'s JAX side of the benchmark alone "
                                            "(the accelerator script, tools/gpu/bench.sh)")
    p.add_argument("--batch-sizes", default=batch_sizes)
    p.add_argument("--min-seconds", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=Path(f"reports/{env}/bench_candidate.json"))
    a = p.parse_args(argv)
    report = candidate_only(rollout, [int(x) for x in a.batch_sizes.split(",")],
                            a.min_seconds, how_actions, shards)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {a.out}")


def _bench_row(
    target: BenchTarget, n: int, min_seconds: float, oom: dict[str, int | None]
) -> dict[str, Any]:
    """One batch size of one target. ``oom`` remembers, per side, the batch size that ran out
    of memory, so larger ones are skipped instead of thrashing the machine again."""
    row: dict[str, Any] = {
        "num_envs": n,
        "reference_sps": None,
        "candidate_sps": None,
        "ratio": None,
        "compile_s": None,
        "candidate_steps_timed": None,
        "reference_steps_timed": None,
        "candidate_seconds": None,
        "reference_seconds": None,
        "candidate_steps_per_call": None,
        "skipped": None,
    }
    reasons: list[str] = []

    if oom["reference"] is not None:
        reasons.append(f"reference: skipped, out of memory at num_envs={oom['reference']}")
    else:
        try:
            sps, steps, secs = measure_reference(target, n, min_seconds)
            row.update(reference_sps=sps, reference_steps_timed=steps, reference_seconds=secs)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            oom["reference"] = n
            reasons.append(_oom_reason("reference", exc))

    if oom["candidate"] is not None:
        reasons.append(f"candidate: skipped, out of memory at num_envs={oom['candidate']}")
    else:
        try:
            run, compile_s = target.candidate_rollout(n)
            row["compile_s"] = float(compile_s)
            sps, steps, secs, k = measure_candidate(run, n, min_seconds)
            row.update(
                candidate_sps=sps,
                candidate_steps_timed=steps,
                candidate_seconds=secs,
                candidate_steps_per_call=k,
            )
            del run
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            oom["candidate"] = n
            reasons.append(_oom_reason("candidate", exc))

    if row["reference_sps"] and row["candidate_sps"] is not None:
        row["ratio"] = row["candidate_sps"] / row["reference_sps"]
    if reasons:
        row["skipped"] = "; ".join(reasons)
    return row


def _select_targets(port: EnvPort, names: Sequence[str] | None) -> list[BenchTarget]:
    declared = list(port.bench)
    if not declared:
        raise EnvportError(f"env {port.name!r} declares no bench targets")
    if names is None:
        return declared
    by_name = {t.name: t for t in declared}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise EnvportError(
            f"unknown bench target(s) {', '.join(map(repr, unknown))} for env {port.name!r}. "
            f"Declared targets: {', '.join(by_name)}"
        )
    return [by_name[n] for n in names]


def run_bench(
    port: EnvPort,
    out_dir: Path,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    min_seconds: float = 2.0,
    progress: bool = True,
    targets: list[str] | None = None,
) -> dict[str, Any]:
    """Measures each bench target at each batch size and writes bench.json/.md/.png.

    Reference and candidate run in the same process, one after the other at each batch size,
    so the ratio compares them on identical hardware. Writes to ``out_dir/<port.name>/``.
    """
    from tqdm import tqdm

    from envport.extras import require

    require("matplotlib", "plot", "envport bench (bench.png)")  # before minutes of measuring
    sizes = [int(n) for n in batch_sizes]
    if not sizes or any(n < 1 for n in sizes):
        raise EnvportError(f"batch sizes must be positive integers, got {list(batch_sizes)}")
    if not min_seconds > 0:
        raise EnvportError(f"min_seconds must be > 0, got {min_seconds}")
    chosen = _select_targets(port, targets)
    host = host_info()
    report: dict[str, Any] = {
        "env": port.name,
        "reference": port.reference,
        "candidate": port.candidate,
        "host": host,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "min_seconds": min_seconds,
        "batch_sizes": sizes,
        "units": "env-steps/s (a batched step of num_envs envs counts num_envs steps); "
        "compile_s is reported separately and excluded from steps/s",
        "targets": {},
    }
    bar = tqdm(
        total=len(chosen) * len(sizes), disable=not progress, file=sys.stderr, unit="size",
        desc=f"bench {port.name}",
    )
    try:
        for target in chosen:
            oom: dict[str, int | None] = {"reference": None, "candidate": None}
            rows = []
            for n in sizes:
                bar.set_postfix_str(f"{target.name} num_envs={n}")
                rows.append(_bench_row(target, n, min_seconds, oom))
                bar.update(1)
            report["targets"][target.name] = {"how_actions": target.how_actions, "rows": rows,
                                              "workload": target.workload}
    finally:
        bar.close()
    report["best"] = best_of_each_side(report)

    dest = Path(out_dir) / port.name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (dest / "bench.md").write_text(render_markdown(report))
    plot(report, dest / "bench.png")
    return report


def _best(report: dict[str, Any], names: list[str], side: str,
          n: int | None) -> tuple[float | None, str | None, int | None]:
    """(steps/s, target, num_envs) of ``side``'s best row over ``names`` (at ``n`` if given)."""
    found = [(r[f"{side}_sps"], name, r["num_envs"]) for name in names
             for r in report["targets"][name]["rows"]
             if r[f"{side}_sps"] and (n is None or r["num_envs"] == n)]
    return max(found) if found else (None, None, None)


def best_of_each_side(report: dict[str, Any]) -> dict[str, Any]:
    """Per workload shared by several targets: at each batch size the best reference and the
    best candidate over those targets (each with the target it came from) and their ratio, and
    over all batch sizes the best of each side and the ratio of bests. Best against best:
    neither side is quoted where the other happened to dip."""
    groups: dict[str, list[str]] = {}
    for name, t in report["targets"].items():
        if t.get("workload"):
            groups.setdefault(t["workload"], []).append(name)
    out: dict[str, Any] = {}
    for workload, names in groups.items():
        if len(names) < 2:
            continue
        rows = []
        for n in report["batch_sizes"]:
            (ref, ref_t, _) = _best(report, names, "reference", n)
            (cand, cand_t, _) = _best(report, names, "candidate", n)
            rows.append({"num_envs": n, "reference_sps": ref, "reference_target": ref_t,
                         "candidate_sps": cand, "candidate_target": cand_t,
                         "ratio": cand / ref if ref and cand else None})
        ref, ref_t, ref_n = _best(report, names, "reference", None)
        cand, cand_t, cand_n = _best(report, names, "candidate", None)
        out[workload] = {
            "targets": names, "rows": rows,
            "overall": {"reference_sps": ref, "reference_target": ref_t, "reference_num_envs": ref_n,
                        "candidate_sps": cand, "candidate_target": cand_t,
                        "candidate_num_envs": cand_n,
                        "ratio_of_bests": cand / ref if ref and cand else None},
        }
    return out


def _fmt_sps(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def render_markdown(report: dict[str, Any]) -> str:
    """The human-readable table: one per target, ratio = candidate / reference."""
    lines = [
        f"# Benchmark: {report['env']}",
        "",
        f"- reference: {report['reference']}",
        f"- candidate: {report['candidate']}",
        f"- host: {host_line(report['host'])}",
        f"- date: {report['date']}",
        "",
        "All figures come from one run on the host above (reference and candidate side by "
        "side, at least "
        f"{report['min_seconds']:g} s of stepping each); they are not averaged over runs. "
        "Steps/s count env-steps; JIT compile time is listed separately and is not included.",
    ]
    for name, t in report["targets"].items():
        lines += ["", f"## {name}", ""]
        if t.get("how_actions"):
            lines += [f"Actions: {t['how_actions']}", ""]
        lines += [
            "| num_envs | reference steps/s | candidate steps/s | ratio | compile s | note |",
            "|---:|---:|---:|---:|---:|---|",
        ]
        for r in t["rows"]:
            ratio = "—" if r["ratio"] is None else f"{r['ratio']:,.2f}×"
            comp = "—" if r["compile_s"] is None else f"{r['compile_s']:.2f}"
            note = (r.get("skipped") or "").replace("|", "\\|")
            lines.append(
                f"| {r['num_envs']} | {_fmt_sps(r['reference_sps'])} | "
                f"{_fmt_sps(r['candidate_sps'])} | {ratio} | {comp} | {note} |"
            )
    for workload, g in (report.get("best") or {}).items():
        o = g["overall"]
        ratio = "—" if o["ratio_of_bests"] is None else f"{o['ratio_of_bests']:,.1f}×"
        lines += ["", f"## Best of each side: {workload}", "",
                  f"Over the targets {', '.join(g['targets'])}. Ratio of bests over all batch "
                  f"sizes: **{ratio}** (candidate {_fmt_sps(o['candidate_sps'])} steps/s, "
                  f"{o['candidate_target']}, num_envs {o['candidate_num_envs']}; reference "
                  f"{_fmt_sps(o['reference_sps'])} steps/s, {o['reference_target']}, "
                  f"num_envs {o['reference_num_envs']}).", "",
                  "| num_envs | best reference steps/s | from | best candidate steps/s | from "
                  "| ratio of bests |", "|---:|---:|---|---:|---|---:|"]
        for r in g["rows"]:
            ratio = "—" if r["ratio"] is None else f"{r['ratio']:,.2f}×"
            lines.append(f"| {r['num_envs']} | {_fmt_sps(r['reference_sps'])} | "
                         f"{r['reference_target'] or '—'} | {_fmt_sps(r['candidate_sps'])} | "
                         f"{r['candidate_target'] or '—'} | {ratio} |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    """Log-log steps/s against num_envs, a reference and a candidate line per target.

    Uses the Agg canvas directly (no pyplot), so it neither needs a display nor changes the
    caller's matplotlib backend.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    any_points = False
    for i, (name, t) in enumerate(report["targets"].items()):
        color = f"C{i % 10}"
        for side, style in (("reference", "--o"), ("candidate", "-s")):
            pts = [(r["num_envs"], r[f"{side}_sps"]) for r in t["rows"] if r[f"{side}_sps"]]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, style, color=color, label=f"{name}: {side}")
                any_points = True
    if any_points:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no measurements (all skipped)", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env-steps / s")
    ax.set_title(f"{report['env']}: {report['candidate']} vs {report['reference']}",
                 fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    fig.text(0.01, 0.005, host_line(report["host"]), fontsize=5, alpha=0.7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
