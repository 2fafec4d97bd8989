"""``envport overhead <env>``: the share of PPO's wall time spent stepping the env, by policy size.

For every policy size, with the same ``num_envs x num_steps`` for all of them, two jitted PPO
updates are timed side by side (interleaved, so that a load that comes and goes hits both):

- **env**: :meth:`PPO.update` as training runs it, the env stepped inside the rollout's scan;
- **replay**: the identical update with the env step replaced by transitions recorded once from
  the real env (:class:`ReplayBatch`: the state is a step counter indexing device arrays of the
  recorded time steps). Everything else is PPO's own code on the same objects: the policy
  forward and sampling, the score and episode statistics, the truncation bootstrap, GAE, the
  epochs of minibatches, the optimiser. Recorded from the same runner with PPO's own rollout
  (:class:`RecordBatch`), the replay update computes exactly the update the env one does
  (``core/tests/test_overhead.py``). A run records once, with the first size's policy, and
  every size replays that recording (its arrays do not depend on the policy's size).

``share = 1 - t_replay / t_env``: what stepping the env costs out of an update. The raw figure
is reported; shares outside [0, 1] or far from the one the fastest calls give are flagged
as noise. Cross-checks: the env alone (the same batched, auto-resetting rollout with random
legal actions, no policy) against the update, and a split of the update into its rollout
(measured, with the env and with the replay) and the learning phase (the rest). ``--trace``
writes a ``jax.profiler`` trace of one update of each kind per size.

Compile time is measured apart (ahead-of-time ``lower().compile()``) and never enters the
update times. Each size runs one warm-up update pair (not counted) and ``updates`` timed
ones, more while the pairs took under ``min_seconds`` per kind (fast updates: a steadier
median), fewer once they passed ``max_seconds`` (large policies on a CPU; one pair at least,
then without a warm-up); the report says how many ran. A size whose memory estimate does not fit (:mod:`envport.train.memory`, counting the
env and the replay update's state side by side) is reported as not fitting, not run.

Reports: ``<out>/<env>/overhead/overhead.json``, ``overhead.md`` and ``overhead.png``
(share against parameters, log x; skipped with a note when matplotlib is missing).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport import __version__
from envport.errors import EnvportError
from envport.train import memory
from envport.train.networks import as_features, count_params, widths_for
from envport.train.ppo import MASKED_LOGIT, PPO, PPOConfig, Runner, TrainConfigError
from envport.train.run import precision

DEFAULT_SIZES = ("0.1M", "2M", "20M", "200M")
DEFAULT_NUM_ENVS = 128
DEFAULT_NUM_STEPS = 8
DEFAULT_UPDATES = 3
DEFAULT_MAX_SECONDS = 60.0
DEFAULT_MIN_SECONDS = 2.0
MAX_CALLS = 200  # per kind and size, however fast the calls
NOISE_GAP = 0.1  # |share(median) - share(fastest calls)| above this: flagged as noisy


# -- the replay ------------------------------------------------------------------------------


class RecordState(NamedTuple):
    inner: Any  # the batched env's own state
    t: jax.Array  # int32: steps recorded so far
    data: Any  # (TimeStep, final_obs), leaves [num_steps, num_envs, ...]


class RecordBatch:
    """The batched env with every ``step_with_final`` output written into ``data``: PPO's own
    rollout, run on a runner whose env state is a :class:`RecordState`, records its steps."""

    def __init__(self, batched):
        self.batched = batched

    def reset(self, keys):  # pragma: no cover - a recording starts from a runner's env state
        raise EnvportError("RecordBatch records from a runner's state (record())")

    def step_with_final(self, state: RecordState, action):
        inner, ts, final_obs = self.batched.step_with_final(state.inner, action)
        data = jax.tree.map(lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x, state.t, 0),
                            state.data, (ts, final_obs))
        return RecordState(inner, state.t + 1, data), ts, final_obs


class ReplayState(NamedTuple):
    t: jax.Array  # int32: the next recorded step (modulo the recording's length)
    data: Any  # what RecordBatch recorded


class ReplayBatch:
    """A batched "env" that replays recorded steps whatever the actions: its step is an index
    into device arrays, so an update on it costs what PPO costs without the env."""

    def reset(self, keys):  # pragma: no cover - a replay starts from replay_runner()
        raise EnvportError("ReplayBatch replays a recording (replay_runner())")

    def step_with_final(self, state: ReplayState, action):
        del action  # the recorded steps do not depend on it
        n = jax.tree.leaves(state.data)[0].shape[0]
        i = state.t % n
        ts, final_obs = jax.tree.map(
            lambda x: jax.lax.dynamic_index_in_dim(x, i, 0, keepdims=False), state.data)
        return ReplayState(state.t + 1, state.data), ts, final_obs


def _with_batched(ppo: PPO, batched) -> PPO:
    """The same PPO (config, network, optimiser, score: the same objects) on another batched
    env, with its own jitted update."""
    other = copy.copy(ppo)
    other.batched = batched
    other.update = jax.jit(other._update, donate_argnums=0)
    return other


def replay_ppo(ppo: PPO) -> PPO:
    """``ppo`` with the env step replaced by :class:`ReplayBatch`."""
    return _with_batched(ppo, ReplayBatch())


def _step_shapes(ppo: PPO, env_state, action_shape):
    action = jax.ShapeDtypeStruct(action_shape, ppo.spec.action_space.dtype)
    _, ts, final_obs = jax.eval_shape(ppo.batched.step_with_final, env_state, action)
    return ts, final_obs


def record(ppo: PPO, runner: Runner):
    """The env's steps of ``runner``'s next rollout, recorded by PPO's own rollout (the same
    keys, policy and actions as ``ppo.update(runner)`` would take); ``runner`` is not
    consumed. Leaves ``[num_steps, num_envs, ...]``."""
    n = ppo.config.num_envs
    action_shape = (n, ppo.action_dim) if ppo.continuous else (n,)
    shapes = _step_shapes(ppo, runner.env_state, action_shape)
    buf = jax.tree.map(lambda s: jnp.zeros((ppo.config.num_steps,) + s.shape, s.dtype), shapes)
    recorder = _with_batched(ppo, RecordBatch(ppo.batched))
    start = runner._replace(env_state=RecordState(runner.env_state, jnp.zeros((), jnp.int32), buf))
    (env_state, *_), _, _ = jax.jit(recorder._rollout)(start)
    return env_state.data


def record_bytes(ppo: PPO, runner_shapes) -> int:
    n = ppo.config.num_envs
    action_shape = (n, ppo.action_dim) if ppo.continuous else (n,)
    shapes = _step_shapes(ppo, runner_shapes.env_state, action_shape)
    return ppo.config.num_steps * sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize
                                      for s in jax.tree.leaves(shapes))


def _copy(tree):
    return jax.tree.map(jnp.copy, tree)


def replay_runner(runner: Runner, data) -> Runner:
    """A runner for :func:`replay_ppo` starting where ``runner`` is, replaying ``data``: copies
    of both (an update donates its runner: ``runner`` and ``data`` stay usable)."""
    state = ReplayState(jnp.zeros((), jnp.int32), _copy(data))
    return _copy(runner._replace(env_state=None))._replace(env_state=state)


def env_only(ppo: PPO):
    """``(run(env_state, mask, key), start(key))``: the batched, auto-resetting env stepped
    ``num_steps`` times with random legal actions and no policy; the observations, rewards and
    final observations are summed so that nothing the rollout uses is optimised away."""
    c = ppo.config

    def run(env_state, mask, key):
        def step(carry, _):
            s, mask, key, acc = carry
            key, k = jax.random.split(key)
            if ppo.continuous:
                action = jax.random.normal(k, (c.num_envs, ppo.action_dim))
            else:
                action = jax.random.categorical(k, jnp.where(mask, 0.0, MASKED_LOGIT))
            s, ts, final_obs = ppo.batched.step_with_final(s, ppo.env_action(action))
            obs, mask = ppo.features(ts)
            acc = (acc + obs.sum() + as_features(final_obs, ppo.obs_shape).sum()
                   + jnp.asarray(ts.reward, jnp.float32).sum())
            return (s, mask, key, acc), None

        carry, _ = jax.lax.scan(step, (env_state, mask, key, jnp.zeros((), jnp.float32)), None,
                                length=c.num_steps)
        return carry

    def start(key):
        env_state, ts = ppo.batched.reset(jax.random.split(key, c.num_envs))
        return env_state, ppo.features(ts)[1]

    return jax.jit(run), jax.jit(start)


# -- timing ----------------------------------------------------------------------------------


def _block(x):
    return jax.block_until_ready(x)


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = _block(fn(*args))
    return time.perf_counter() - t0, out


def _compile(fn, *args):
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    return compiled, time.perf_counter() - t0


def _stats(times: list[float]) -> dict:
    """The timed calls of one kind: the first dropped as warm-up when there are more."""
    timed = times[1:] if len(times) > 1 else times
    return {"median_s": statistics.median(timed), "min_s": min(timed), "timed": len(timed),
            "warmup_dropped": len(times) > 1, "calls_s": [round(t, 6) for t in times]}


def _more(times: list[float], calls: int, min_seconds: float, max_seconds: float) -> bool:
    """Another call? At least ``calls`` and ``min_seconds`` in all (fast calls repeat, for a
    stable median), but never past ``max_seconds`` (slow calls stop early), one at least."""
    spent = sum(times)
    if not times:
        return True
    if spent >= max_seconds or len(times) >= MAX_CALLS:
        return False
    return len(times) < calls or spent < min_seconds


def _repeat(fn, arg, calls: int, min_seconds: float, max_seconds: float) -> list[float]:
    """Calls of ``fn(arg)`` (a non-donating function) while :func:`_more` says so."""
    times: list[float] = []
    while _more(times, calls, min_seconds, max_seconds):
        t, _ = _timed(fn, arg)
        times.append(t)
    return times


def _share(t_replay: float, t_env: float) -> float:
    return 1.0 - t_replay / t_env


def policy_of(size: str) -> str:
    """A size as PPOConfig.policy takes it: a preset, or widths (``64x64`` or ``64,64``)."""
    return size.replace("x", ",")


def validate_sizes(sizes: Sequence[str]) -> list[str]:
    """The sizes as given, each a preset or widths such as ``64x64`` (a clear error for
    anything else), before anything is built."""
    sizes = [s.strip() for s in sizes if s.strip()]
    if not sizes:
        raise EnvportError("no policy sizes given (e.g. --sizes 0.1M,2M,20M,200M)")
    for s in sizes:
        widths_for(policy_of(s), 1, 1)  # PolicyPresetError (an EnvportError) for a bad one
    return sizes


def size_config(target, size: str, num_envs: int, num_steps: int, updates: int) -> PPOConfig:
    settings = {**target.config, "policy": policy_of(size), "num_envs": num_envs,
                "num_steps": num_steps, "seed": 0}
    # only the learning-rate schedule depends on the run's length: long enough for what runs
    settings["total_steps"] = num_envs * num_steps * (updates + 2)
    try:
        return PPOConfig.from_dict(settings).check()
    except (TrainConfigError, TypeError) as exc:
        raise EnvportError(f"{target.name}: {exc}") from None


def measure_size(env, target, size: str, num_envs: int, num_steps: int, *,
                 updates: int = DEFAULT_UPDATES, max_seconds: float = DEFAULT_MAX_SECONDS,
                 min_seconds: float = DEFAULT_MIN_SECONDS, available: int | None = None,
                 trace_dir: Path | None = None, phases: bool = True,
                 recording: dict | None = None, note=lambda s: None) -> dict:
    """One policy size: the env and replay updates timed side by side (see the module doc).

    ``recording``: a dict shared by the sizes of one run: the first size that runs records the
    env's steps into it (``data``, ``policy``, ``seconds``) and the others replay the same
    steps (the recorded arrays do not depend on the policy's size); without it, each size
    records its own."""
    from envport.bench import is_out_of_memory

    cfg = size_config(target, size, num_envs, num_steps, updates)
    ppo = PPO(env, cfg, score=target.score, self_play=target.self_play)
    params = count_params(ppo.obs_dim, ppo.action_dim, ppo.widths, ppo.continuous)
    row: dict[str, Any] = {"policy": size, "params": params, "widths": list(ppo.widths)}
    note("memory check")
    shapes = jax.eval_shape(ppo.init)
    recorded = record_bytes(ppo, shapes)
    # the env and the replay update side by side, the recording and the replay's copy of it
    estimate = (2 * memory.estimate_bytes(cfg, ppo.obs_dim, ppo.action_dim, ppo.widths)
                + 2 * recorded)
    row["estimate_gib"] = round(estimate / 2**30, 3)
    row["recorded_mib"] = round(recorded / 2**20, 2)
    try:
        memory.check_fits(estimate, size, params, available)
    except memory.PolicyTooLargeError as exc:
        row.update(status="did not fit", reason=str(exc))
        return row
    try:
        return _measure(ppo, row, updates, min_seconds, max_seconds, trace_dir, phases,
                        {} if recording is None else recording, note)
    except Exception as exc:  # an allocation the estimate missed: reported, not a crash
        if not is_out_of_memory(exc):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        row.update(status="out of memory", reason=f"{type(exc).__name__}: {first}")
        return row


def _measure(ppo: PPO, row: dict, updates: int, min_seconds: float, max_seconds: float,
             trace_dir, phases, recording: dict, note):
    note("init")
    init_s, runner = _timed(ppo.init)
    if "data" not in recording:
        note("record")
        seconds, data = _timed(record, ppo, runner)
        recording.update(data=data, policy=row["policy"], seconds=round(seconds, 3))
    rp = replay_ppo(ppo)
    replay = replay_runner(runner, recording["data"])
    note("compile")
    env_update, compile_env = _compile(ppo.update, runner)
    replay_update, compile_replay = _compile(rp.update, replay)
    row.update(init_s=round(init_s, 3), replays_recording_of=recording["policy"],
               compile_s={"env": round(compile_env, 3), "replay": round(compile_replay, 3)})

    t_env: list[float] = []
    t_replay: list[float] = []
    pairs: list[float] = []  # the two updates of a pair together
    while _more(pairs, updates + 1, 2 * min_seconds, max_seconds):
        note(f"update {len(t_env) + 1}/{updates + 1}")
        t, (runner, _) = _timed(env_update, runner)
        t_env.append(t)
        t2, (replay, _) = _timed(replay_update, replay)
        t_replay.append(t2)
        pairs.append(t + t2)
    env_s, replay_s = _stats(t_env), _stats(t_replay)
    row.update(status="ok", t_env=env_s, t_replay=replay_s,
               updates_timed=env_s["timed"], updates_planned=updates,
               capped=len(t_env) < updates + 1)
    row["share"] = _share(replay_s["median_s"], env_s["median_s"])
    row["share_fastest"] = _share(replay_s["min_s"], env_s["min_s"])
    row["noisy"] = bool(not 0.0 <= row["share"] <= 1.0
                        or abs(row["share"] - row["share_fastest"]) > NOISE_GAP)

    if phases:  # the rollout alone (with the env, with the replay); learning is the rest
        rollout_calls = max(1, min(updates, 2)) + 1
        for name, p, r in (("env", ppo, runner), ("replay", rp, replay)):
            note(f"rollout ({name})")
            fn, c = _compile(jax.jit(p._rollout), r)
            row.setdefault("rollout", {})[name] = {
                **_stats(_repeat(fn, r, rollout_calls, min_seconds, max_seconds / 4)),
                "compile_s": round(c, 3)}
        row["learn_s"] = env_s["median_s"] - row["rollout"]["env"]["median_s"]

    if trace_dir is not None:
        note("trace")
        path = Path(trace_dir) / row["policy"].replace(",", "x")
        with jax.profiler.trace(str(path)):
            with jax.profiler.TraceAnnotation("update with the env"):
                runner, _ = _block(env_update(runner))
            with jax.profiler.TraceAnnotation("update with the replay"):
                replay, _ = _block(replay_update(replay))
        row["trace"] = str(path)
    del runner, replay
    return row


def measure_env_only(env, target, num_envs: int, num_steps: int, updates: int,
                     min_seconds: float, max_seconds: float) -> dict:
    """The env alone (random legal actions, no policy) over ``num_envs x num_steps`` steps."""
    cfg = size_config(target, "8", num_envs, num_steps, updates)
    ppo = PPO(env, cfg, score=target.score, self_play=target.self_play)
    run, start = env_only(ppo)
    env_state, mask = _block(start(jax.random.PRNGKey(1)))
    key = jax.random.PRNGKey(2)
    compiled, compile_s = _compile(run, env_state, mask, key)
    times = _repeat(lambda a: compiled(*a), (env_state, mask, key), updates + 1, min_seconds,
                    max_seconds)
    out = {**_stats(times), "compile_s": round(compile_s, 3)}
    out["sps"] = num_envs * num_steps / out["median_s"]
    return out


# -- the report ------------------------------------------------------------------------------


def hardware() -> dict:
    from envport.bench import host_info, host_line

    info = host_info()
    dev = jax.devices()[0]
    info["device"] = dev.device_kind
    info["device_platform"] = dev.platform
    info["host_line"] = host_line(info)
    avail = memory.available_bytes()
    info["memory_available_gib"] = None if avail is None else round(avail / 2**30, 2)
    info["compilation_cache_dir"] = jax.config.jax_compilation_cache_dir or None
    return info


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


def run_overhead(env_name: str, target, sizes: Sequence[str] = DEFAULT_SIZES, *,
                 num_envs: int = DEFAULT_NUM_ENVS, num_steps: int = DEFAULT_NUM_STEPS,
                 updates: int = DEFAULT_UPDATES, max_seconds: float = DEFAULT_MAX_SECONDS,
                 min_seconds: float = DEFAULT_MIN_SECONDS, out: Path | str = "reports", progress: bool = True, trace: bool = False,
                 phases: bool = True, available: int | None = None,
                 command: str | None = None) -> dict:
    """Measure every size for ``target`` (a :class:`~envport.registry.TrainTarget` with a JAX
    env) and write ``<out>/<env_name>/overhead/``; returns the report."""
    from tqdm import tqdm

    if target.make_env is None:
        raise EnvportError(f"training target {target.name!r} has no JAX env (make_env): the "
                           "overhead is measured on the on-device update")
    sizes = validate_sizes(sizes)
    if updates < 1 or num_envs < 1 or num_steps < 1:
        raise EnvportError("updates, num_envs and num_steps must be >= 1")
    first = size_config(target, sizes[0], num_envs, num_steps, updates)  # a bad batch fails here
    out_dir = Path(out) / env_name / "overhead"
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "env": env_name, "target": target.name, "command": command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "envport": __version__, "hardware": hardware(), "load_start": _load(),
        "num_envs": num_envs, "num_steps": num_steps, "batch": num_envs * num_steps,
        "update_epochs": first.update_epochs, "num_minibatches": first.num_minibatches,
        "updates": updates, "min_seconds": min_seconds, "max_seconds": max_seconds,
        "sizes": [],
    }
    with precision(target):  # a float32 env in an x64 process (TrainTarget.x64)
        env = target.make_env()
        bar = tqdm(total=len(sizes) + 1, disable=not progress, file=sys.stderr, unit="size",
                   desc=f"overhead {env_name}", dynamic_ncols=True)
        try:
            bar.set_postfix_str("env alone")
            report["env_only"] = measure_env_only(env, target, num_envs, num_steps, updates,
                                                  min_seconds, max_seconds)
            bar.update(1)
            recording: dict = {}  # recorded once, by the first size that runs; replayed by all
            for size in sizes:
                def note(what, size=size):
                    bar.set_postfix_str(f"{size}: {what}")
                row = measure_size(env, target, size, num_envs, num_steps, updates=updates,
                                   max_seconds=max_seconds, min_seconds=min_seconds,
                                   available=available, phases=phases,
                                   trace_dir=out_dir / "trace" if trace else None,
                                   recording=recording, note=note)
                if row.get("status") == "ok":
                    row["env_only_share"] = report["env_only"]["median_s"] / row["t_env"]["median_s"]
                report["sizes"].append(row)
                bar.update(1)
        finally:
            bar.close()
    report["recorded_with"] = recording.get("policy")
    report["record_s"] = recording.get("seconds")
    del recording
    report["load_end"] = _load()
    report["notes"] = _notes(report)
    write_report(report, out_dir)
    return report


def _notes(report: dict) -> list[str]:
    notes = []
    capped = [r for r in report["sizes"] if r.get("capped")]
    if capped:
        names = ", ".join(f"{r['policy']} ({r['updates_timed']} timed"
                          + ("" if r["t_env"]["warmup_dropped"] else ", no warm-up") + ")"
                          for r in capped)
        notes.append(f"On this {report['hardware']['device_platform']} the calls of {names} "
                     f"passed --max-seconds {report['max_seconds']:g}, so they ran fewer than "
                     f"the {report['updates']} timed updates (+1 warm-up) asked for.")
    noisy = [r["policy"] for r in report["sizes"] if r.get("noisy")]
    if noisy:
        notes.append(f"Noisy: {', '.join(noisy)} (share outside [0, 1], or more than "
                     f"{NOISE_GAP:g} from the share of the fastest calls); the raw figures are "
                     "shown, not clipped.")
    load = report.get("load_start"), report.get("load_end")
    cpus = report["hardware"].get("cpu_count")
    if all(load) and cpus and max(load[0][0], load[1][0]) > 0.5 * cpus:
        notes.append(f"Other load shared the machine: 1-minute load average {load[0][0]} at the "
                     f"start and {load[1][0]} at the end, on {cpus} CPUs.")
    return notes


def _s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def markdown(report: dict) -> str:
    h = report["hardware"]
    eo = report["env_only"]
    lines = [
        f"# {report['env']} / {report['target']}: the env's share of PPO wall time",
        "",
        f"Hardware: {h['host_line']}; device {h['device']} ({h['device_platform']}), "
        f"{h['memory_available_gib']} GiB available at the start. {report['created']}, "
        f"envport {report['envport']}." + (f" Command: `{report['command']}`."
                                           if report.get("command") else ""),
        "",
        f"Every size: {report['num_envs']:,} envs x {report['num_steps']} steps = "
        f"{report['batch']:,} env steps per update, {report['update_epochs']} epochs of "
        f"{report['num_minibatches']} minibatches. *env*: the jitted PPO update with the env "
        "stepped in the rollout; *replay*: the identical update replaying transitions recorded "
        f"once from the env (by the {report.get('recorded_with') or '-'} policy's rollout). "
        "Env share = 1 - replay / env (median seconds per update; in brackets "
        "from the fastest calls). The env alone (random legal actions, no policy): "
        f"{_s(eo['median_s'])} s per {report['batch']:,} steps ({eo['sps']:,.0f} steps/s, "
        f"compile {eo['compile_s']:.1f} s).",
        "",
        "| policy | parameters | torso | update, env (s) | update, replay (s) | env share "
        "| env alone / update | rollout env / replay (s) | learn (s) | compile env / replay (s) "
        "| updates timed |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["sizes"]:
        torso = "x".join(map(str, r["widths"]))
        if r.get("status") != "ok":
            lines.append(f"| {r['policy']} | {r['params']:,} | {torso} | {r['status']}, "
                         f"estimate {r['estimate_gib']:.1f} GiB | | | | | | | |")
            continue
        ro = r.get("rollout")
        rollout = "-" if not ro else f"{_s(ro['env']['median_s'])} / {_s(ro['replay']['median_s'])}"
        flag = " (noisy)" if r["noisy"] else ""
        timed = f"{r['updates_timed']}" + ("" if r["t_env"]["warmup_dropped"] else ", no warm-up")
        lines.append(
            f"| {r['policy']} | {r['params']:,} | {torso} | {_s(r['t_env']['median_s'])} "
            f"| {_s(r['t_replay']['median_s'])} | **{r['share']:.1%}** "
            f"[{r['share_fastest']:.1%}]{flag} | {r['env_only_share']:.1%} | {rollout} "
            f"| {_s(r.get('learn_s'))} | {r['compile_s']['env']:.1f} / "
            f"{r['compile_s']['replay']:.1f} | {timed} |")
    lines += ["", "learn = update with the env - its rollout (the rollout measured alone)."]
    for n in report.get("notes", []):
        lines += ["", n]
    if report.get("plot_note"):
        lines += ["", report["plot_note"]]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in report["sizes"] if r.get("status") == "ok"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    if ok:
        x = [r["params"] for r in ok]
        ax.plot(x, [r["share"] for r in ok], "o-", label="1 - replay / env (median)")
        ax.plot(x, [r["share_fastest"] for r in ok], "x", color="C0", alpha=0.6,
                label="same, fastest calls")
        ax.plot(x, [r["env_only_share"] for r in ok], "s--", color="C1", alpha=0.8,
                label="env alone / update")
        for r in ok:
            ax.annotate(r["policy"], (r["params"], r["share"]), textcoords="offset points",
                        xytext=(4, 6), fontsize=8)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("policy parameters")
    ax.set_ylabel("share of PPO update time in the env")
    h = report["hardware"]
    ax.set_title(f"{report['env']}: {report['num_envs']} envs x {report['num_steps']} steps, "
                 f"{h['device']}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(report: dict, out_dir: Path) -> None:
    out_dir = Path(out_dir)
    try:
        plot(report, out_dir / "overhead.png")
        report["plot"] = str(out_dir / "overhead.png")
    except ImportError:
        report["plot_note"] = "matplotlib is not installed: no overhead.png."
    (out_dir / "overhead.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out_dir / "overhead.md").write_text(markdown(report))
