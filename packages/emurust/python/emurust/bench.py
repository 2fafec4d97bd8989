"""emurust vs PyBoy 2.8.1 speed, measured side by side in one run (issue 4's targets).

emurust's extra bench (``EnvPort.extra_benches``): ``envport bench emurust`` runs it after the
core's side-by-side table (N PyBoy in one loop vs ``VecEnv``), with the core's host record.
Alone: ``python -m emurust.bench [--seconds S] [--out DIR]`` writes ``DIR/emurust/bench_single.json``,
``bench_single.md`` and, when matplotlib is importable, ``bench_single.png``:

* **single**: frames/s of ONE emulator, rendering on and off, ``emurust.PyBoy`` vs
  ``pyboy.PyBoy`` (compiled, ``window="null"``, ``cgb=False``, ``sound_emulated=False``,
  ``set_emulation_speed(0)``), per ROM (``game.gb`` and the repository's test ROMs). Both run in
  this process, interleaved (rounds of A, B then B, A, ...) so machine load hits both alike; each
  round both advance the same number of frames with the same seeded random held-button sequence
  (press/release on change, then ``tick(1, render)``), so they stay in lockstep: after the rounds
  their frame count, CPU registers/cycles and screen must be equal (``in_lockstep``). The figure
  is the best round (best-of-k). Issue 4's targets: >= 3x PyBoy with rendering off, >= 2x with
  rendering on.
* **vec**: throughput of N emulators of ``game.gb``, rendering every frame, at N = 1, 2, 8, 32,
  64: ``emurust.vec.VecEnv`` (threads = cores, RGBA observations) vs PyBoy in N processes
  (``multiprocessing``; each process steps its own PyBoy for the same number of frames, released
  together by a barrier). Total frames / wall time, best of the rounds, interleaved as above.

Only the timed loops are timed: construction, warm-up (``WARM_FRAMES`` frames, past the boot ROM)
and process start-up are not.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from emurust.utils import BUTTONS

DEFAULT_SIZES = (1, 2, 8, 32, 64)
TARGETS = {"render_off": 3.0, "render_on": 2.0}  # issue 4, single instance, one core
MODES = (("render_off", False), ("render_on", True))
WARM_FRAMES = 180  # the DMG boot ROM takes ~150 frames; warm caches past it, untimed
ACTION_LEN = 4096  # frames of the seeded held-button sequence (cycled)
MIN_FRAMES = 10
SEED = 4


# -- inputs --------------------------------------------------------------------------------

def action_sequence(seed: int, length: int = ACTION_LEN, num: int = 1) -> np.ndarray:
    """(length, num) uint8 held-button bitmasks (bit i = ``BUTTONS[i]``): each frame keeps the
    previous mask, or (probability 1/8) switches to a new random one."""
    rng = np.random.default_rng(seed)
    change = rng.random((length, num)) < 0.125
    change[0] = True
    new = rng.integers(0, 256, (length, num))
    out = np.empty((length, num), np.uint8)
    cur = np.zeros(num, np.int64)
    for t in range(length):
        cur = np.where(change[t], new[t], cur)
        out[t] = cur
    return out


class Driver:
    """Drives one PyBoy-API emulator with a cycled held-button sequence, one ``tick`` a frame;
    a mask change becomes ``button_press``/``button_release`` calls (PyBoy's event queue)."""

    def __init__(self, pb, actions):
        self.pb = pb
        self.actions = [int(a) for a in actions]
        self.held = 0
        self.t = 0

    def run(self, frames: int, render: bool) -> None:
        pb, acts = self.pb, self.actions
        press, release, tick = pb.button_press, pb.button_release, pb.tick
        n, held, t = len(acts), self.held, self.t
        for _ in range(frames):
            a = acts[t % n]
            t += 1
            changed = a ^ held
            if changed:
                for b in range(8):
                    if changed >> b & 1:
                        (press if a >> b & 1 else release)(BUTTONS[b])
                held = a
            tick(1, render)
        self.held, self.t = held, t


def _timed(driver: Driver, frames: int, render: bool) -> float:
    t0 = time.perf_counter()
    driver.run(frames, render)
    return time.perf_counter() - t0


def _machine_state(pb) -> tuple:
    r = pb.register_file
    return (pb.frame_count, pb._cycles(), r.A, r.F, r.B, r.C, r.D, r.E, r.HL, r.SP, r.PC,
            np.asarray(pb.screen.ndarray).tobytes())


# -- single instance -----------------------------------------------------------------------

def bench_rom(name: str, rom: Path, seconds: float, rounds: int, seed: int = SEED) -> dict:
    """One ROM, one emulator per side: best-of-``rounds`` frames/s, rendering off and on.

    Each round gives PyBoy about ``seconds / rounds`` s per mode (frames per round are fixed
    from a short calibration of PyBoy); emurust runs the same frames."""
    from emurust.verify import make_emurust, make_pyboy

    acts = action_sequence(seed)[:, 0]
    ref, cand = Driver(make_pyboy(rom), acts), Driver(make_emurust(rom), acts)
    try:
        for d in (ref, cand):
            d.run(WARM_FRAMES, True)
        frames = {}
        for mode, render in MODES:  # calibration (both sides, to stay in lockstep)
            calib = 30
            t = _timed(ref, calib, render)
            cand.run(calib, render)
            frames[mode] = max(MIN_FRAMES, round(calib / max(t, 1e-9) * seconds / rounds))
        times: dict[str, dict[str, list[float]]] = {
            m: {"emurust": [], "pyboy": []} for m, _ in MODES}
        for r in range(rounds):
            for mode, render in MODES:
                order = (("emurust", cand), ("pyboy", ref))
                for side, d in order if r % 2 == 0 else order[::-1]:
                    times[mode][side].append(_timed(d, frames[mode], render))
        lockstep = _machine_state(ref.pb) == _machine_state(cand.pb)
    finally:
        for d in (ref, cand):
            d.pb.stop(save=False)
    out: dict[str, Any] = {"rom": name, "in_lockstep": lockstep,
                           "frames_timed_per_side": {}}
    for mode, _ in MODES:
        f = frames[mode]
        fps = {s: [f / t for t in times[mode][s]] for s in ("emurust", "pyboy")}
        best = {s: max(v) for s, v in fps.items()}
        out[mode] = {
            "frames_per_round": f,
            "emurust_fps": best["emurust"],
            "pyboy_fps": best["pyboy"],
            "ratio": best["emurust"] / best["pyboy"],
            "emurust_fps_rounds": fps["emurust"],
            "pyboy_fps_rounds": fps["pyboy"],
        }
        out["frames_timed_per_side"][mode] = f * rounds
    return out


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize_single(rows: list[dict]) -> dict:
    out = {}
    for mode, _ in MODES:
        ratios = [r[mode]["ratio"] for r in rows]
        target = TARGETS[mode]
        game = next((r[mode]["ratio"] for r in rows if r["rom"] == "game"), None)
        out[mode] = {
            "target": target,
            "geomean_ratio": _geomean(ratios),
            "min_ratio": min(ratios) if ratios else None,
            "max_ratio": max(ratios) if ratios else None,
            "game_ratio": game,
            "roms_meeting_target": sum(x >= target for x in ratios),
            "roms": len(ratios),
            "met_on_every_rom": bool(ratios) and min(ratios) >= target,
        }
    return out


# -- vectorised ----------------------------------------------------------------------------

def _pyboy_worker(rom: str, actions: bytes, frames: int, rounds: int, barrier, results,
                  index: int) -> None:
    """One PyBoy in its own process: warm up, then per round wait for the barrier and step
    ``frames`` frames rendering each; reports (index, round, start, end) (``perf_counter`` is
    CLOCK_MONOTONIC on Linux, comparable across processes)."""
    from emurust.verify import make_pyboy

    try:
        d = Driver(make_pyboy(rom), np.frombuffer(actions, np.uint8))
        d.run(WARM_FRAMES, True)
    except BaseException as e:  # the parent must not wait forever at the barrier
        barrier.abort()
        results.put((index, -1, repr(e), 0.0))
        raise
    for r in range(rounds):
        barrier.wait()
        t0 = time.perf_counter()
        d.run(frames, True)
        results.put((index, r, t0, time.perf_counter()))
    d.pb.stop(save=False)


def _mp_context():
    methods = mp.get_all_start_methods()
    # forkserver: children are forked from a clean server process that imported PyBoy once (64
    # spawned interpreters would take a minute to start), never from this one — the caller may
    # hold threads (JAX's, in the test suite) and a fork() of a multithreaded process can deadlock
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["emurust.verify", "pyboy"])
        return ctx
    return mp.get_context("spawn")


def bench_vec(rom: Path, sizes: list[int], seconds: float, rounds: int, pyboy_fps: float,
              threads: int, seed: int = SEED) -> list[dict]:
    """Per N: PyBoy in N processes vs one ``VecEnv`` of N, both rendering every frame."""
    return [_vec_row(rom, n, seconds, rounds, pyboy_fps, threads, seed) for n in sizes]


def _vec_row(rom: Path, n: int, seconds: float, rounds: int, pyboy_fps: float, threads: int,
             seed: int) -> dict:
    from emurust.vec import VecEnv

    acts = action_sequence(seed, num=n)
    # frames per PyBoy process so that a round lasts about seconds / rounds
    par = min(n, os.cpu_count() or 1)
    frames = max(MIN_FRAMES, round(pyboy_fps * par / n * seconds / rounds))
    ctx = _mp_context()
    barrier = ctx.Barrier(n + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=_pyboy_worker, daemon=True,
                         args=(str(rom), acts[:, i].tobytes(), frames, rounds, barrier, results,
                               i)) for i in range(n)]
    for p in procs:
        p.start()
    try:
        env = VecEnv(rom, n, obs="rgba", threads=threads)
        env.reset()
        for t in range(WARM_FRAMES):
            env.step(acts[t % ACTION_LEN])
        pos = WARM_FRAMES
        t0 = time.perf_counter()
        calib = 0
        while calib < 10 or time.perf_counter() - t0 < 0.02:
            env.step(acts[(pos + calib) % ACTION_LEN])
            calib += 1
        steps = max(MIN_FRAMES, round(calib / (time.perf_counter() - t0) * seconds / rounds))
        pos += calib

        ref_t, cand_t = [], []
        for r in range(rounds):
            for side in ("emurust", "pyboy") if r % 2 == 0 else ("pyboy", "emurust"):
                if side == "emurust":
                    t0 = time.perf_counter()
                    for k in range(steps):
                        env.step(acts[(pos + k) % ACTION_LEN])
                    cand_t.append(time.perf_counter() - t0)
                    pos += steps
                else:
                    barrier.wait(timeout=600)
                    got = [results.get(timeout=600) for _ in range(n)]
                    if any(g[1] != r for g in got):
                        raise RuntimeError(
                            f"a PyBoy worker failed: {[g for g in got if g[1] != r]}")
                    ref_t.append(max(g[3] for g in got) - min(g[2] for g in got))
    finally:
        barrier.abort()  # workers are past their last round; on an error it frees them
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    cand_fps = [steps * n / t for t in cand_t]
    ref_fps = [frames * n / t for t in ref_t]
    return {
        "num_envs": n,
        "emurust_fps": max(cand_fps),
        "pyboy_fps": max(ref_fps),
        "ratio": max(cand_fps) / max(ref_fps),
        "emurust_frames_per_round": steps * n,
        "pyboy_frames_per_round": frames * n,
        "emurust_fps_rounds": cand_fps,
        "pyboy_fps_rounds": ref_fps,
    }


# -- report --------------------------------------------------------------------------------

def host_info() -> dict[str, Any]:
    """The core's host record (``envport.bench.host_info``, the one every envport benchmark
    writes) with the versions this bench compares and the extension's build."""
    from envport.bench import host_info as core_host_info

    info = core_host_info(packages=("emurust", "pyboy", "numpy"))
    info["cpu_model"] = info["cpu_model"] or info["processor"]
    info["emurust"] = info["emurust"] or _emurust_version()
    info["emurust_build"] = _emurust_build()
    return info


def _emurust_build() -> str:
    from emurust import build_info

    return build_info()


def _emurust_version() -> str:
    from emurust import __version__

    return __version__


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _f(x, spec=",.0f") -> str:
    return "—" if x is None else format(x, spec)


def render_markdown(rep: dict) -> str:
    h = rep["host"]
    lines = [
        "# emurust vs PyBoy: single instance and vectorised throughput",
        "",
        f"- host: {h['cpu_model']}, {h['cpu_count']} CPUs, Python {h['python']}, {h['platform']}",
        f"- versions: emurust {h['emurust']} ({h.get('emurust_build', 'plain')} build), "
        f"pyboy {h['pyboy']}, numpy {h['numpy']}",
        f"- date: {rep['date']}; load average at start {rep['load_start']}, "
        f"at end {rep['load_end']}",
        f"- command: `{rep['command']}`",
        f"- settings: {rep['seconds']:g} s of PyBoy stepping per measurement, {rep['rounds']} "
        f"interleaved rounds (best round reported), seed {rep['seed']}",
        "",
        "## Single instance (frames/s, one emulator, one core)",
        "",
        "Same process, interleaved rounds; both sides advance the same frames with the same "
        "seeded random held-button sequence (press/release on change, `tick(1, render)`). "
        "`lockstep`: frame count, registers, cycles and screen equal after the rounds.",
        "",
        "| ROM | emurust off | PyBoy off | ratio off | emurust on | PyBoy on | ratio on "
        "| lockstep |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rep["single"]:
        off, on = r["render_off"], r["render_on"]
        lines.append(
            f"| {r['rom']} | {_f(off['emurust_fps'])} | {_f(off['pyboy_fps'])} | "
            f"{off['ratio']:.2f}× | {_f(on['emurust_fps'])} | {_f(on['pyboy_fps'])} | "
            f"{on['ratio']:.2f}× | {'yes' if r['in_lockstep'] else 'NO'} |")
    lines += ["", "| mode | target | geomean ratio | min | max | game.gb | ROMs >= target |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for mode, s in rep["single_summary"].items():
        lines.append(
            f"| {mode.replace('_', ' ')} | {s['target']:g}× | {_f(s['geomean_ratio'], '.2f')}× | "
            f"{_f(s['min_ratio'], '.2f')}× | {_f(s['max_ratio'], '.2f')}× | "
            f"{_f(s['game_ratio'], '.2f')}× | {s['roms_meeting_target']}/{s['roms']} |")
    if rep.get("vec"):
        lines += [
            "",
            f"## Vectorised, game.gb, rendering every frame (total frames/s, {h['cpu_count']} "
            "cores)",
            "",
            f"emurust: one `VecEnv` (threads = {rep['vec_threads']}, RGBA observations). PyBoy: "
            "N processes, each stepping its own PyBoy the same number of frames; wall time "
            "from the first start to the last finish.",
            "",
            "| N | emurust VecEnv | PyBoy × N processes | ratio |",
            "|---:|---:|---:|---:|",
        ]
        for r in rep["vec"]:
            lines.append(f"| {r['num_envs']} | {_f(r['emurust_fps'])} | {_f(r['pyboy_fps'])} | "
                         f"{r['ratio']:.2f}× |")
    return "\n".join(lines) + "\n"


def plot(rep: dict, path: Path) -> bool:
    """Bar chart of the single-instance ratios and the vectorised throughput; False when
    matplotlib is not installed."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    fig = Figure(figsize=(11, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 2, 1)
    roms = [r["rom"] for r in rep["single"]]
    x = np.arange(len(roms))
    for k, (mode, _) in enumerate(MODES):
        ax.bar(x + (k - 0.5) * 0.4, [r[mode]["ratio"] for r in rep["single"]], 0.4,
               label=f"{mode.replace('_', ' ')} (target {TARGETS[mode]:g}×)", color=f"C{k}")
        ax.axhline(TARGETS[mode], color=f"C{k}", ls="--", lw=0.8)
    ax.set_xticks(x, roms, rotation=60, fontsize="x-small")
    ax.set_ylabel("emurust fps / PyBoy fps")
    ax.set_title("single instance", fontsize="small")
    ax.legend(fontsize="x-small")
    ax2 = fig.add_subplot(1, 2, 2)
    if rep.get("vec"):
        ns = [r["num_envs"] for r in rep["vec"]]
        ax2.plot(ns, [r["emurust_fps"] for r in rep["vec"]], "-s", label="emurust VecEnv")
        ax2.plot(ns, [r["pyboy_fps"] for r in rep["vec"]], "--o", label="PyBoy × N processes")
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ax2.legend(fontsize="x-small")
    ax2.set_xlabel("N")
    ax2.set_ylabel("frames / s (render on)")
    ax2.set_title("vectorised, game.gb", fontsize="small")
    ax2.grid(True, which="both", alpha=0.3)
    h = rep["host"]
    fig.text(0.01, 0.005, f"{h['cpu_model']}, {h['cpu_count']} CPUs; emurust {h['emurust']} "
             f"({h.get('emurust_build', 'plain')}), "
             f"pyboy {h['pyboy']}", fontsize=6, alpha=0.7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    return True


def run(out_dir: Path, seconds: float = 1.0, rounds: int = 5, roms: list[str] | None = None,
        sizes: list[int] | None = None, vec_rounds: int = 3, seed: int = SEED,
        progress: bool = True, command: str | None = None) -> dict:
    """Both benchmarks; writes ``out_dir/emurust/bench_single.{json,md,png}``."""
    from emurust.port import check_reference, rom_names, rom_path

    check_reference()
    if seconds <= 0 or rounds < 1 or vec_rounds < 1:
        raise ValueError("seconds must be > 0 and rounds >= 1")
    names = list(roms) if roms else rom_names()
    sizes = list(DEFAULT_SIZES if sizes is None else sizes)
    threads = os.cpu_count() or 1
    rep: dict[str, Any] = {
        "host": host_info(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command or "python -m emurust.bench",
        "load_start": _load(),
        "seconds": seconds, "rounds": rounds, "vec_rounds": vec_rounds, "seed": seed,
        "units": "frames/s (emulated Game Boy frames per wall-clock second); ratio = emurust / "
                 "PyBoy; best of the interleaved rounds",
        "targets": TARGETS,
        "single": [],
    }
    t_start = time.perf_counter()
    for name in names:
        row = bench_rom(name, rom_path(name), seconds, rounds, seed)
        rep["single"].append(row)
        if progress:
            print(f"[bench] {name:>10}: off {row['render_off']['ratio']:.2f}x "
                  f"({row['render_off']['emurust_fps']:,.0f} vs "
                  f"{row['render_off']['pyboy_fps']:,.0f} fps), on "
                  f"{row['render_on']['ratio']:.2f}x ({row['render_on']['emurust_fps']:,.0f} vs "
                  f"{row['render_on']['pyboy_fps']:,.0f} fps)", file=sys.stderr, flush=True)
    rep["single_summary"] = summarize_single(rep["single"])
    rep["vec"] = []
    rep["vec_threads"] = threads
    if sizes:
        game = next((r for r in rep["single"] if r["rom"] == "game"), None)
        if game is None:  # calibrate PyBoy on game.gb, rendering on
            game = bench_rom("game", rom_path("game"), min(seconds, 0.2), 1, seed)
        rep["vec"] = bench_vec(rom_path("game"), sizes, seconds, vec_rounds,
                               game["render_on"]["pyboy_fps"], threads, seed)
        if progress:
            for r in rep["vec"]:
                print(f"[bench] vec N={r['num_envs']:>3}: {r['ratio']:.2f}x "
                      f"({r['emurust_fps']:,.0f} vs {r['pyboy_fps']:,.0f} fps)",
                      file=sys.stderr, flush=True)
    rep["load_end"] = _load()
    rep["wall_s"] = time.perf_counter() - t_start
    dest = Path(out_dir) / "emurust"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "bench_single.json").write_text(json.dumps(rep, indent=2) + "\n")
    (dest / "bench_single.md").write_text(render_markdown(rep))
    png = dest / "bench_single.png"
    rep["plot"] = str(png) if plot(rep, png) else None
    return rep


def _csv(kind):
    return lambda s: [kind(x) for x in s.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m emurust.bench", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=1.0,
                   help="seconds of PyBoy stepping per measurement (ROM x render mode, or N), "
                        "split over the rounds (default 1)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds, single (default 5)")
    p.add_argument("--vec-rounds", type=int, default=3, help="interleaved rounds, vec (default 3)")
    p.add_argument("--out", default="reports", help="report folder (default: reports)")
    p.add_argument("--roms", type=_csv(str), default=None,
                   help="comma-separated ROM names (default: game + every test ROM)")
    p.add_argument("--sizes", type=_csv(int), default=list(DEFAULT_SIZES),
                   help="comma-separated N for the vectorised bench (default 1,2,8,32,64; "
                        "empty skips it)")
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)
    rep = run(Path(args.out), args.seconds, args.rounds, args.roms, args.sizes, args.vec_rounds,
              args.seed, command="python -m emurust.bench " + " ".join(sys.argv[1:] if argv is None
                                                                       else argv))
    dest = Path(args.out) / "emurust"
    sys.stdout.write(render_markdown(rep))
    print(f"report written to {dest / 'bench_single.json'} (and bench_single.md"
          + (", bench_single.png)" if rep["plot"] else ")"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
