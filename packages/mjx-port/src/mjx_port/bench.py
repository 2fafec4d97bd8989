"""Benchmarks of ``envport bench mjx``: the side-by-side table against Gymnasium, and anchors.

Port: the float32 env, batched with envport's ``BatchedAutoResetWrapper`` (only the envs whose
episode ended are reset), ``k`` batched steps in one jitted ``fori_loop`` (no host sync per step). Reference: Gymnasium's envs (MuJoCo C) in a
``SyncVectorEnv`` (one process) and an ``AsyncVectorEnv`` (one process per env), same-step
autoreset. Both sides run the same env-steps; the core reports compile time apart.

Anchors (the extra bench ``anchors``, also ``python -m mjx_port.bench``): at each batch size
the port beside the same physics with no env logic and beside Brax, each timed like the port
(``k`` batched steps in one jitted ``fori_loop``, the core's :func:`envport.bench.
measure_candidate`), from the same 64 cached action batches:

- ``mjx``: raw ``mjx.step`` x frame_skip on the port's float32 model, vmapped, ``ctrl`` set
  from the action, no observation, reward, reset or time limit: what MJX alone costs.
- ``mjx-c``: the same under the port's physics patches (C's plane-capsule contacts and C's
  constraint solve, ``mjx_port.contacts``/``mjx_port.solver``): port / mjx-c is the cost of the
  env logic alone (target >= 1.0x, i.e. nearly free), port / mjx what the C-exact physics adds.
- ``brax``: Brax's MJX-backed env of the same name (``brax.envs.get_environment(name,
  backend="mjx")``) in Brax's own training wrappers (``brax.envs.training.wrap``: vmap,
  episode length 1000, auto-reset). Brax's models differ from Gymnasium's (its own XML and
  solver settings), so it is a speed anchor only (target: port >= 2x Brax at matched batch).
  Needs ``mjx-port[bench]``.
- ``port-noreset`` (not in the default set): the port's step without the auto-reset wrapper
  (which runs a whole reset, a ``mjx.forward`` among it, at every step and keeps it where an
  episode ended): port / port-noreset is what the auto-reset costs.
- ``gymnasium``: Gymnasium's ``SyncVectorEnv`` from a Python loop (the table's reference), for
  batch sizes up to ``--gymnasium-max`` (default 256): port / Gymnasium on the same machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.registry import BenchTarget
from mjx_port.cases import sample_actions

ACTION_CACHE = 64
# Gymnasium's v5 ids -> Brax's env names (Brax's own models: a speed anchor only)
BRAX_NAMES = {
    "Ant-v5": "ant", "HalfCheetah-v5": "halfcheetah", "Hopper-v5": "hopper",
    "Humanoid-v5": "humanoid", "HumanoidStandup-v5": "humanoidstandup",
    "InvertedPendulum-v5": "inverted_pendulum",
    "InvertedDoublePendulum-v5": "inverted_double_pendulum", "Pusher-v5": "pusher",
    "Reacher-v5": "reacher", "Swimmer-v5": "swimmer", "Walker2d-v5": "walker2d",
}
ANCHORS = ("port", "mjx", "mjx-c", "brax", "gymnasium")  # the default set
OPTIONAL_ANCHORS = ("port-noreset",)


def _gymnasium_stepper(num_envs: int, env_id: str, asynchronous: bool):
    import gymnasium

    def make():
        return gymnasium.make(env_id)

    cls = gymnasium.vector.AsyncVectorEnv if asynchronous else gymnasium.vector.SyncVectorEnv
    envs = cls([make] * num_envs, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    return envs.step, envs.close


def _action_cache(num_envs: int, nu: int) -> jax.Array:
    """The 64 action batches every stepper of the anchors cycles through (the table's too)."""
    return jnp.asarray(
        np.stack(
            [sample_actions(np.random.default_rng(i), num_envs, nu) for i in range(ACTION_CACHE)]
        )
    )


def _looped(step, cache_actions):
    """``run(carry, k)``: ``k`` batched steps in one jitted ``fori_loop``, the ``i``-th from the
    ``i mod 64``-th cached action batch (``k`` is traced: no recompile per ``k``)."""

    @jax.jit
    def run(carry, k):
        def body(i, c):
            return step(c, cache_actions[i % ACTION_CACHE])

        return jax.lax.fori_loop(0, k, body, carry)

    return run


def _timed(run, carry, context=None):
    """``(steps(k), compile_s)`` over a jitted ``run(carry, k)``: the first call (trace and
    compile, one step) is timed apart; ``context`` (a context manager factory) is entered
    around every call (the port's physics patches act at trace time)."""
    from contextlib import nullcontext

    ctx = context or nullcontext
    holder = {"carry": carry}
    t0 = time.perf_counter()
    with ctx():
        holder["carry"] = jax.block_until_ready(run(holder["carry"], 1))
    compile_s = time.perf_counter() - t0

    def steps(k: int) -> None:
        with ctx():
            holder["carry"] = jax.block_until_ready(run(holder["carry"], k))

    return steps, compile_s


@cache
def _port_program(num_envs: int, env_id: str):
    """The port's jitted rollout at one batch size and its first state, built once per process:
    the table's two targets and the anchors share it (and its compile time: the first build's)."""
    from envport.wrappers import BatchedAutoResetWrapper
    from mjx_port.env import make

    # resets only the envs whose episode ended (none on 999 steps of 1,000), where a vmapped
    # AutoResetWrapper computes a whole reset (its mjx.forward included) at every step
    env = BatchedAutoResetWrapper(make(env_id, "float32"))
    run = _looped(lambda s, a: env.step(s, a)[0],
                  _action_cache(num_envs, env.spec.action_space.shape[0]))
    state = env.reset(jax.random.split(jax.random.PRNGKey(0), num_envs))[0]
    t0 = time.perf_counter()
    state = jax.block_until_ready(run(state, 1))
    return run, state, time.perf_counter() - t0


def _port_rollout(num_envs: int, env_id: str):
    """The port: ``(steps(k), compile_s)`` (core's ``candidate_rollout``)."""
    run, state, compile_s = _port_program(num_envs, env_id)
    steps, _ = _timed(run, state)
    return steps, compile_s


def _port_noreset_rollout(num_envs: int, env_id: str):
    """The port's step alone, vmapped, without the auto-reset wrapper (a diagnostic anchor:
    port / port-noreset is what the auto-reset costs)."""
    from envport.wrappers import VmapWrapper
    from mjx_port.env import make

    env = VmapWrapper(make(env_id, "float32"))
    run = _looped(lambda s, a: env.step(s, a)[0],
                  _action_cache(num_envs, env.spec.action_space.shape[0]))
    state = env.reset(jax.random.split(jax.random.PRNGKey(0), num_envs))[0]
    return _timed(run, state)


def _raw_mjx_rollout(num_envs: int, env_id: str, c_physics: bool = False):
    """Raw ``mjx.step`` x frame_skip on the port's float32 model and reset data: ``ctrl`` from
    the action, nothing else. ``c_physics``: under the port's contact and solver patches."""
    from mujoco import mjx

    from mjx_port.contacts import c_contacts
    from mjx_port.env import make
    from mjx_port.solver import c_solver

    env = make(env_id, "float32")
    model, frame_skip = env.model, env.frame_skip

    def physics(d, a):
        d = d.replace(ctrl=a)
        return jax.lax.fori_loop(0, frame_skip, lambda _, x: mjx.step(model, x), d)

    run = _looped(jax.vmap(physics), _action_cache(num_envs, env.nu))
    data = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), num_envs))[0].data

    def context():
        from contextlib import ExitStack

        stack = ExitStack()
        if c_physics:
            stack.enter_context(c_contacts())
            stack.enter_context(c_solver())
        return stack

    return _timed(run, data, context)


def _brax_env(env_id: str):
    try:
        from brax import envs
    except ImportError as e:
        from envport.errors import EnvportError

        raise EnvportError(
            "the Brax anchor needs brax: pip install 'mjx-port[bench]' "
            f"(in this repository `uv sync` installs it) ({e})"
        ) from None
    if env_id not in BRAX_NAMES:
        from envport.errors import EnvportError

        raise EnvportError(f"Brax has no env matching {env_id}")
    return envs.get_environment(BRAX_NAMES[env_id], backend="mjx")


def _brax_rollout(num_envs: int, env_id: str):
    """Brax's MJX env of the same name in ``brax.envs.training.wrap`` (vmap, episode length
    1000, auto-reset to the first state), stepped like the port."""
    from brax import envs

    from envport.errors import EnvportError
    from mjx_port.env import make

    env = _brax_env(env_id)
    nu = make(env_id, "float32").nu
    if env.action_size != nu:
        raise EnvportError(f"Brax's {BRAX_NAMES[env_id]} takes {env.action_size} actions, "
                           f"{env_id} {nu}")
    wrapped = envs.training.wrap(env, episode_length=1000)
    run = _looped(wrapped.step, _action_cache(num_envs, nu))
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), num_envs))
    return _timed(run, state)


def bench_target(env_id: str, nu: int, asynchronous: bool) -> BenchTarget:
    side = "AsyncVectorEnv (a process per env)" if asynchronous else "SyncVectorEnv"
    return BenchTarget(
        name=f"{env_id}, Gymnasium {side}",
        reference_stepper=partial(_gymnasium_stepper, env_id=env_id, asynchronous=asynchronous),
        candidate_rollout=partial(_port_rollout, env_id=env_id),
        sample_actions=lambda rng, n: sample_actions(rng, n, nu),
        how_actions=(
            "Both sides cycle through 64 cached batches of uniform actions in [-1.1, 1.1]. "
            f"Reference: gymnasium.vector.{side.split()[0]} over gymnasium.make(env_id) "
            "(TimeLimit 1000, same-step autoreset), called from a Python loop. Port: float32, "
            "BatchedAutoResetWrapper(env) (the env's own TimeLimit 1000) stepped in one "
            "jitted fori_loop; the Sync and Async targets share one compiled program per batch "
            "size (compile s: its first build)."
        ),
        workload=env_id,
    )


# -- anchors ----------------------------------------------------------------------------------
def anchor_rollouts(env_id: str) -> dict[str, Any]:
    """Each jitted anchor's ``rollout(num_envs) -> (steps(k), compile_s)``."""
    return {
        "port": partial(_port_rollout, env_id=env_id),
        "mjx": partial(_raw_mjx_rollout, env_id=env_id),
        "mjx-c": partial(_raw_mjx_rollout, env_id=env_id, c_physics=True),
        "brax": partial(_brax_rollout, env_id=env_id),
        "port-noreset": partial(_port_noreset_rollout, env_id=env_id),
    }


def _measure(anchor: str, rollout, n: int, min_seconds: float, gym_target: BenchTarget):
    from envport import bench

    if anchor == "gymnasium":
        sps, steps, secs = bench.measure_reference(gym_target, n, min_seconds)
        return {"sps": sps, "steps_timed": steps, "seconds": secs}
    steps_fn, compile_s = rollout(n)
    sps, steps, secs, k = bench.measure_candidate(steps_fn, n, min_seconds)
    return {"sps": sps, "steps_timed": steps, "seconds": secs, "steps_per_call": k,
            "compile_s": float(compile_s)}


def run_anchors(
    env_id: str = "HalfCheetah-v5",
    batch_sizes=(1, 8, 64),
    min_seconds: float = 2.0,
    anchors=ANCHORS,
    gymnasium_max: int = 256,
    out_dir: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """The port beside its anchors at each batch size (one after another, same process);
    writes ``out_dir/bench_anchors.{json,md}`` when ``out_dir`` is given."""
    from envport import bench
    from envport.errors import EnvportError
    from mjx_port.env import make

    unknown = sorted(set(anchors) - set(ANCHORS) - set(OPTIONAL_ANCHORS))
    if unknown:
        raise EnvportError(f"unknown anchor(s) {unknown}; known: "
                           f"{', '.join(ANCHORS + OPTIONAL_ANCHORS)}")
    if "brax" in anchors:
        _brax_env(env_id)  # brax installed and the env known, before minutes of measuring
    rollouts = anchor_rollouts(env_id)
    nu = make(env_id, "float32").nu
    gym_target = bench_target(env_id, nu, asynchronous=False)
    report: dict[str, Any] = {
        "env": env_id,
        "host": bench.host_info(["mujoco", "mujoco-mjx", "brax", "gymnasium", "mjx-port"]),
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "min_seconds": min_seconds,
        "batch_sizes": [int(n) for n in batch_sizes],
        "anchors": list(anchors),
        "gymnasium_max": gymnasium_max,
        "units": "env-steps/s (a batched step of num_envs envs counts num_envs steps); "
        "compile_s apart",
        "rows": [],
    }
    failed: dict[str, str] = {}  # anchor -> why larger sizes are skipped (out of memory)
    for n in report["batch_sizes"]:
        row: dict[str, Any] = {"num_envs": int(n), "ratios": {}}
        report["rows"].append(row)
        for a in anchors:
            if a in failed:
                row[a] = {"skipped": failed[a]}
                continue
            if a == "gymnasium" and n > gymnasium_max:
                row[a] = {"skipped": f"num_envs > {gymnasium_max}"}
                continue
            if progress:
                print(f"anchors {env_id}: {a} num_envs={n}", file=sys.stderr, flush=True)
            try:
                row[a] = _measure(a, rollouts.get(a), n, min_seconds, gym_target)
            except Exception as exc:
                if not bench.is_out_of_memory(exc):
                    raise
                failed[a] = f"out of memory at num_envs={n}"
                row[a] = {"skipped": failed[a]}
            port = row.get("port", {}).get("sps")
            row["ratios"] = {f"port/{b}": port / row[b]["sps"] for b in anchors
                             if b != "port" and port and row.get(b, {}).get("sps")}
            if progress:
                print(f"  {row[a]}", file=sys.stderr, flush=True)
            # written after every measurement: a run stopped at a time limit (an accelerator
            # lease) keeps what it measured
            _write(report, out_dir)
    return report


def _write(report: dict[str, Any], out_dir) -> None:
    if out_dir is None:
        return
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_anchors.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "bench_anchors.md").write_text(render_anchors(report))


def render_anchors(report: dict[str, Any]) -> str:
    from envport.bench import host_line

    anchors = report["anchors"]
    others = [a for a in anchors if a != "port"]
    lines = [
        f"# mjx-port anchors: {report['env']}", "",
        f"- host: {host_line(report['host'])}",
        "- versions: " + ", ".join(f"{k} {report['host'].get(k)}" for k in
                                    ("mujoco", "mujoco-mjx", "brax", "gymnasium", "mjx-port")),
        f"- date: {report['date']}; jax_enable_x64: {report['jax_enable_x64']}", "",
        "One run, each figure at least "
        f"{report['min_seconds']:g} s of stepping; env-steps/s, compile (s) in brackets. "
        "port: the float32 env with auto-reset; mjx: raw mjx.step x frame_skip; mjx-c: the "
        "same under the port's C contacts and solver; brax: Brax's MJX env of the same name "
        "(its own model: a speed anchor only); gymnasium: SyncVectorEnv from a Python loop "
        "(`mjx_port.bench` documents each).", "",
        "| num_envs | " + " | ".join(anchors) + " | " + " | ".join(f"port/{a}" for a in others)
        + " |",
        "|---:|" + "---:|" * (len(anchors) + len(others)),
    ]
    for r in report["rows"]:
        cells = []
        for a in anchors:
            m = r.get(a, {})
            if m.get("sps") is None:
                cells.append(("— " + m.get("skipped", "")).strip())
            elif "compile_s" in m:
                cells.append(f"{m['sps']:,.0f} ({m['compile_s']:.0f})")
            else:
                cells.append(f"{m['sps']:,.0f}")
        ratios = [r["ratios"].get(f"port/{a}") for a in others]
        cells += ["—" if x is None else f"{x:.2f}x" for x in ratios]
        lines.append(f"| {r['num_envs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def anchors_extra(out: Path, progress: bool) -> dict[str, Any]:
    """``envport bench mjx``'s extra bench: the anchors at the table's batch sizes and
    ``--min-seconds`` (read back from the ``bench.json`` it just wrote)."""
    from mjx_port.port import PORT

    dest = Path(out) / PORT.name
    table = dest / "bench.json"
    sizes, secs = PORT.bench_batch_sizes, 2.0
    if table.exists():
        t = json.loads(table.read_text())
        sizes, secs = t["batch_sizes"], t["min_seconds"]
    return run_anchors("HalfCheetah-v5", sizes, secs, out_dir=dest, progress=progress)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mjx_port.bench", description=__doc__.split("\n")[0])
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--batch-sizes", default="1,8,64",
                   type=lambda s: [int(x) for x in s.split(",") if x])
    p.add_argument("--min-seconds", type=float, default=2.0)
    p.add_argument("--anchors", default=",".join(ANCHORS),
                   type=lambda s: [x for x in s.split(",") if x],
                   help=f"of {', '.join(ANCHORS + OPTIONAL_ANCHORS)} (default: {','.join(ANCHORS)})")
    p.add_argument("--gymnasium-max", type=int, default=256,
                   help="largest num_envs Gymnasium's SyncVectorEnv is measured at")
    p.add_argument("--out", type=Path, default=Path("reports/mjx"),
                   help="folder of bench_anchors.json and bench_anchors.md")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    report = run_anchors(a.env, a.batch_sizes, a.min_seconds, a.anchors, a.gymnasium_max,
                         a.out, progress=not a.no_progress)
    print(render_anchors(report))
    print(f"written to {a.out / 'bench_anchors.json'} (and bench_anchors.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
