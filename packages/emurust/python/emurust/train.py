"""What ``envport train emurust`` trains on: PPO on the repository's ``game.gb`` ("catch the
falling block", ``emurust/roms/game.s``) through the host loop, on emurust's ``VecEnv``
(default target ``game.gb``) or on real PyBoy 2.8.1 in worker processes (target ``game.gb on
PyBoy``): the same task, observations, actions, rewards and resets on both, so their PPO
steps/s compare the emulators inside a training loop.

The task, as a user of PyBoy would set it up:

* **start**: every episode starts from the save state taken ``START_FRAMES`` frames after power-on
  (the frame ``main`` has run ``new_game``: score 0, paddle centred, the first block spawned),
  not from power-on;
* **actions**: ``Discrete(3)`` = no button, LEFT held, RIGHT held (``ACTIONS``; game.s reads only
  LEFT/RIGHT while a game runs, START only after a miss, which here ends the episode), as
  held-button masks: a change of mask becomes ``button_press``/``button_release`` calls;
* **frameskip** ``FRAMESKIP`` = 4 frames per step (``tick(4, render=False)``; nothing is drawn:
  the observation is read from WRAM);
* **observation**: 4 WRAM bytes, ``OBS_ADDRS`` (paddle x, block x, block y, fall speed) / 255 as
  float32;
* **reward**: the increase of the score byte (0xC000) over the step: +1 per caught block; the
  score of an episode is its catches;
* **done**: the done byte (0xC001) set, i.e. a missed block (terminated), or ``MAX_STEPS`` steps
  (truncated); the env is then put back to the start state before the step returns (the
  returned observation is the new episode's first, as PufferLib's envs and ``VecEnv`` do).

``VecEnvBackend`` is ``emurust.vec.VecEnv`` (``obs="ram"``, N emulators on Rust threads);
``PyBoyBackend`` runs N ``pyboy.PyBoy`` in ``workers`` processes (default: one per core, the
envs split evenly), stepped in lockstep through shared memory. Both check actions the same way.

``python -m emurust.train compare --vecenv RUN_ID --pyboy RUN_ID`` reads the two runs
(``reports/emurust/train/<run-id>``), measures a uniform random policy on the same task and
writes ``reports/emurust/train/comparison.{json,md,png}`` (``./dev train-emurust`` runs all of
it).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from emurust.bench import host_info
from emurust.utils import BUTTONS
from emurust.vec import GAMES, mask
from envport import Box, Discrete, EnvSpec
from envport.actions import validate_actions
from envport.backend import Backend, StepResult
from envport.errors import EnvportError
from envport.registry import PolicyTransfer, TrainTarget

ROM = "game"
FRAMESKIP = 4
# game.s's main calls new_game in frame 70 after power-on (no boot ROM): the state after it has
# score 0, the paddle at x 72 and the first block at y 24 (tested)
START_FRAMES = 70
MAX_STEPS = 2500  # 10,000 frames; an episode this long is truncated
WRAM = 0xC000
SCORE_ADDR, DONE_ADDR = GAMES[ROM]["score_addr"], GAMES[ROM]["done_addr"]
# the observation: paddle x, block x, block y, fall speed (game.s's fixed WRAM addresses)
OBS_ADDRS = (0xC002, 0xC003, 0xC004, 0xC00B)
ACTION_NAMES = ("none", "left", "right")
ACTIONS = np.array([0, mask("left"), mask("right")], np.uint8)  # held-button masks
SPEC = EnvSpec("emurust/game.gb-catch", "v0", Box(0.0, 1.0, (len(OBS_ADDRS),), np.float32),
               Discrete(len(ACTIONS)),
               metadata={"frameskip": FRAMESKIP, "start_frames": START_FRAMES,
                         "max_steps": MAX_STEPS, "actions": ACTION_NAMES,
                         "obs": [f"wram[{a:#06x}] / 255" for a in OBS_ADDRS]})
_SPAN = max(OBS_ADDRS + (SCORE_ADDR, DONE_ADDR)) + 1 - WRAM  # WRAM bytes a PyBoy worker reads
_OBS_COLS = np.array([a - WRAM for a in OBS_ADDRS])


def features(raw: np.ndarray) -> np.ndarray:
    """float32[N, 4]: the observed WRAM bytes ``uint8[N, 4]`` scaled to [0, 1]."""
    return np.asarray(raw, np.float32) / np.float32(255.0)


def _rom():
    from emurust.port import rom_path

    return rom_path(ROM)


def _masks(backend: Backend, actions) -> np.ndarray:
    a = validate_actions(backend.spec.action_space, actions, backend.num_envs)
    return ACTIONS[a.astype(np.int64)]


class VecEnvBackend(Backend):
    """``num_envs`` emurust emulators of game.gb in one ``VecEnv`` (see the module docstring)."""

    spec = SPEC

    def __init__(self, num_envs: int, *, frameskip: int = FRAMESKIP, max_steps: int = MAX_STEPS,
                 threads: int = 0):
        from emurust.vec import VecEnv

        self.num_envs = int(num_envs)
        self.env = VecEnv(_rom(), self.num_envs, frameskip=frameskip, obs="ram", game=ROM,
                          max_steps=max_steps, skip_frames=START_FRAMES, threads=threads)
        self.name = f"emurust VecEnv ({self.num_envs} envs, frameskip {frameskip})"
        self._raw = None

    def reset(self, seed: int) -> np.ndarray:
        # the emulator is deterministic: every episode starts from the same state
        self.env.reset(seed)
        self._raw = self.env.observations[:, _OBS_COLS]
        self._last = (np.zeros(self.num_envs, np.float32), np.zeros(self.num_envs, bool),
                      np.zeros(self.num_envs, bool))
        return features(self._raw)

    def step(self, actions) -> StepResult:
        if self._raw is None:
            raise RuntimeError("call reset(seed) before step()")
        obs, rew, term, trunc, _ = self.env.step(_masks(self, actions))
        self._raw = obs[:, _OBS_COLS]  # fancy indexing copies out of the Rust buffer
        self._last = (np.array(rew, np.float32), np.array(term, bool), np.array(trunc, bool))
        return StepResult(features(self._raw), *(x.copy() for x in self._last))

    def state(self) -> dict[str, np.ndarray]:
        if self._raw is None:
            raise RuntimeError("call reset(seed) before state()")
        rew, term, trunc = self._last
        return {"ram": self._raw.copy(), "reward": rew.copy(), "terminated": term.copy(),
                "truncated": trunc.copy()}


# -- PyBoy in worker processes ------------------------------------------------------------------

def _pyboy_worker(conn, rom: str, lo: int, hi: int, frameskip: int, max_steps: int, shared) -> None:
    """Envs ``lo:hi`` as PyBoy objects in this process. Commands on ``conn``: ``"reset"``,
    ``"step"`` (actions read from shared memory), ``"close"``; each answered ``("ok", None)`` or
    ``("error", traceback)`` after the shared buffers are written."""
    try:
        from emurust.verify import make_pyboy

        acts, raw, rew, term, trunc = _views(shared)
        k = hi - lo
        pbs = [make_pyboy(rom) for _ in range(k)]
        pbs[0].tick(START_FRAMES, False)
        f = io.BytesIO()
        pbs[0].save_state(f)
        start = f.getvalue()
        held, prev, steps = [0] * k, [0] * k, [0] * k
        press = [pb.button_press for pb in pbs]
        release = [pb.button_release for pb in pbs]

        def restart(j):
            pbs[j].load_state(io.BytesIO(start))
            held[j], steps[j] = 0, 0
            m = pbs[j].memory[WRAM:WRAM + _SPAN]
            prev[j] = m[SCORE_ADDR - WRAM]
            raw[lo + j] = [m[c] for c in _OBS_COLS]

        conn.send(("ok", None))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            cmd = conn.recv()
        except EOFError:
            cmd = "close"
        try:
            if cmd == "close":
                for pb in pbs:
                    pb.stop(save=False)
                conn.close()
                return
            if cmd == "reset":
                for j in range(k):
                    restart(j)
                rew[lo:hi], term[lo:hi], trunc[lo:hi] = 0.0, 0, 0
            elif cmd == "step":
                for j in range(k):
                    pb, a = pbs[j], int(acts[lo + j])
                    changed = a ^ held[j]
                    if changed:
                        for b in range(8):  # in button order, as VecEnv queues them
                            if changed >> b & 1:
                                (press[j] if a >> b & 1 else release[j])(BUTTONS[b])
                        held[j] = a
                    pb.tick(frameskip, False)
                    steps[j] += 1
                    m = pb.memory[WRAM:WRAM + _SPAN]
                    score = m[SCORE_ADDR - WRAM]
                    rew[lo + j] = score - prev[j]
                    prev[j] = score
                    done = m[DONE_ADDR - WRAM] != 0
                    cut = not done and max_steps and steps[j] >= max_steps
                    term[lo + j], trunc[lo + j] = done, cut
                    if done or cut:
                        restart(j)
                    else:
                        raw[lo + j] = [m[c] for c in _OBS_COLS]
            else:
                raise ValueError(f"unknown command {cmd!r}")
            conn.send(("ok", None))
        except BaseException:
            conn.send(("error", traceback.format_exc()))


def _views(shared):
    """numpy views over the shared buffers: actions, observed bytes, rewards, flags."""
    acts, raw, rew, term, trunc = shared
    n = len(acts)
    return (np.frombuffer(acts, np.uint8), np.frombuffer(raw, np.uint8).reshape(n, -1),
            np.frombuffer(rew, np.float32), np.frombuffer(term, np.uint8),
            np.frombuffer(trunc, np.uint8))


def _mp_context():
    # forkserver: children forked from a clean server process (the caller holds JAX's threads,
    # and a fork of a multithreaded process can deadlock); spawn where there is none
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["emurust.train", "pyboy"])
        return ctx
    return mp.get_context("spawn")


class PyBoyBackend(Backend):
    """``num_envs`` PyBoy 2.8.1 emulators of game.gb in ``workers`` processes (default: one per
    core, at most one per env), the same task as :class:`VecEnvBackend`."""

    spec = SPEC
    WAIT_S = 600.0  # a worker that answers nothing for this long is reported as hung

    def __init__(self, num_envs: int, *, workers: int | None = None, frameskip: int = FRAMESKIP,
                 max_steps: int = MAX_STEPS):
        from emurust.port import check_reference

        check_reference()
        self.num_envs = n = int(num_envs)
        if n < 1:
            raise EnvportError(f"num_envs must be >= 1, got {num_envs}")
        workers = min(n, workers or os.cpu_count() or 1)
        self.name = f"PyBoy ({n} envs in {workers} processes, frameskip {frameskip})"
        ctx = _mp_context()
        shared = (ctx.RawArray("B", n), ctx.RawArray("B", n * len(OBS_ADDRS)),
                  ctx.RawArray("f", n), ctx.RawArray("B", n), ctx.RawArray("B", n))
        self._acts, self._raw, self._rew, self._term, self._trunc = _views(shared)
        bounds = np.linspace(0, n, workers + 1).round().astype(int)
        self._procs, self._conns = [], []
        self._started = False
        try:
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_pyboy_worker, daemon=True, name=f"pyboy-{lo}-{hi}",
                                args=(child, str(_rom()), int(lo), int(hi), frameskip, max_steps,
                                      shared))
                p.start()
                child.close()
                self._procs.append(p)
                self._conns.append(parent)
            self._wait("start")
        except BaseException:
            self.close()
            raise

    def _wait(self, what: str) -> None:
        errors = []
        for p, c in zip(self._procs, self._conns, strict=True):
            deadline = time.monotonic() + self.WAIT_S
            while not c.poll(0.5):
                if not p.is_alive():
                    errors.append(f"{p.name} exited (code {p.exitcode})")
                    break
                if time.monotonic() > deadline:
                    errors.append(f"{p.name} did not answer within {self.WAIT_S:.0f} s")
                    break
            else:
                try:
                    status, info = c.recv()
                except (EOFError, OSError):
                    p.join(timeout=5)
                    status, info = "error", f"exited (code {p.exitcode})"
                if status != "ok":
                    errors.append(f"{p.name}: {info}")
        if errors:
            raise EnvportError(f"PyBoy worker failed at {what}: " + "; ".join(errors))

    def _send(self, cmd: str) -> None:
        for c in self._conns:
            try:
                c.send(cmd)
            except (BrokenPipeError, OSError):
                pass  # a dead worker: _wait reports it
        self._wait(cmd)

    def reset(self, seed: int) -> np.ndarray:
        self._send("reset")
        self._started = True
        return features(self._raw)

    def step(self, actions) -> StepResult:
        if not self._started:
            raise RuntimeError("call reset(seed) before step()")
        self._acts[:] = _masks(self, actions)
        self._send("step")
        return StepResult(features(self._raw), self._rew.copy(), self._term.astype(bool),
                          self._trunc.astype(bool))

    def state(self) -> dict[str, np.ndarray]:
        if not self._started:
            raise RuntimeError("call reset(seed) before state()")
        return {"ram": self._raw.copy(), "reward": self._rew.copy(),
                "terminated": self._term.astype(bool), "truncated": self._trunc.astype(bool)}

    def close(self) -> None:
        for c in self._conns:
            try:
                c.send("close")
            except (BrokenPipeError, OSError):
                pass
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        for c in self._conns:
            c.close()
        self._procs, self._conns = [], []

    def __del__(self):
        if getattr(self, "_procs", None):
            self.close()


# -- targets ------------------------------------------------------------------------------------

# Learns on a 2-core CPU in a few minutes: 64 envs x 128 steps, 4 epochs of 4 minibatches.
PPO_SETTINGS = {
    "num_envs": 64, "num_steps": 128, "total_steps": 1_000_000, "update_epochs": 4,
    "num_minibatches": 4, "learning_rate": 1e-3, "gamma": 0.99, "gae_lambda": 0.95,
    "clip_coef": 0.2, "ent_coef": 0.01, "vf_coef": 0.5, "max_grad_norm": 0.5, "policy": "64,64",
}
SCORE_NAME = "catches per game"
NOTE = (f"game.gb from its start state, frameskip {FRAMESKIP}, actions none/left/right, "
        f"observation 4 WRAM bytes; reward = score increase; done = a miss")

TARGETS = [
    TrainTarget(name="game.gb", make_backend=VecEnvBackend, config=PPO_SETTINGS,
                score_name=SCORE_NAME, note=NOTE + "; emurust VecEnv"),
    TrainTarget(name="game.gb on PyBoy", make_backend=PyBoyBackend, config=PPO_SETTINGS,
                score_name=SCORE_NAME, note=NOTE + "; PyBoy 2.8.1, one process per core"),
]


# -- L4: trained policies -----------------------------------------------------------------------

# half the target's budget: policies of 15-20 catches per game (random: 0.31) whose games last
# at most ~490 steps, so that 1,000 games on PyBoy take about a minute
TRANSFER_STEPS = 500_000
TRANSFER_MARGIN = 3.0
TRANSFER_NOTE = (
    f"Margin {TRANSFER_MARGIN:g} catches per game. Measured on 500k-step policies (seeds 0 "
    "and 1, 1,000 games each, sampled actions): 17.1 and 19.5 catches per game with a standard "
    "deviation of 12.3, so a standard error of 0.39 per side and 0.55 for the difference of "
    "two independent 1,000-game means; the margin is 5.5 of those, so an exact port (expected "
    "difference 0; its 90% CI is +-0.9 wide) passes unless its sample difference exceeds 2.1 "
    "(3.8 standard errors, about 1 in 7,000 per policy), while the planted gap (the joypad one "
    "step late, emurust.planted.LateInput) moves these policies by 12 and 15 catches "
    "(tests/test_emurust_transfer.py). A smaller margin needs more games: halving it, four "
    "times as many on PyBoy. Policies: PPO through the host loop on emurust's VecEnv and on "
    f"PyBoy 2.8.1 in processes, {TRANSFER_STEPS:,} env steps each at the game.gb target's "
    "settings; each plays sampled actions.")

TRANSFER = PolicyTransfer(
    name="PPO on game.gb", target="game.gb", make_reference=PyBoyBackend,
    margin=TRANSFER_MARGIN, margin_note=TRANSFER_NOTE, metric=SCORE_NAME,
    seeds=(0, 1, 2, 3, 4), episodes=1000, train={"total_steps": TRANSFER_STEPS},
    reference_train={})


# -- comparison ---------------------------------------------------------------------------------

def random_scores(episodes_per_env: int = 8, num_envs: int = 64, seed: int = 0,
                  backend: Backend | None = None) -> np.ndarray:
    """float64[num_envs * episodes_per_env]: catches per episode of a uniform random policy,
    each env's first ``episodes_per_env`` episodes (every episode counted, however long)."""
    own = backend is None
    backend = VecEnvBackend(num_envs) if own else backend
    n = backend.num_envs
    rng = np.random.default_rng(seed)
    try:
        backend.reset(seed)
        total = np.zeros(n)
        done = np.zeros(n, np.int64)
        out: list[list[float]] = [[] for _ in range(n)]
        while done.min() < episodes_per_env:
            r = backend.step(rng.integers(0, len(ACTIONS), n))
            total += r.reward
            for i in np.flatnonzero(r.terminated | r.truncated):
                if done[i] < episodes_per_env:
                    out[i].append(total[i])
                    done[i] += 1
                total[i] = 0.0
        return np.array([s for row in out for s in row])
    finally:
        if own:
            backend.close()


def _mean_ci(x) -> dict:
    x = np.asarray(x, np.float64)
    se = x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
    return {"episodes": len(x), "mean": float(x.mean()),
            "ci95": [float(x.mean() - 1.96 * se), float(x.mean() + 1.96 * se)]}


def final_policy(run_dir: Path):
    """(PPO, parameters) of a run's checkpoint."""
    import jax

    from envport.train.ppo import PPO, PPOConfig
    from envport.train.run import checkpoint_params, read_config

    cfg = PPOConfig.from_dict(read_config(run_dir)["config"])
    ppo = PPO(None, cfg, spec=SPEC)
    return ppo, checkpoint_params(Path(run_dir), ppo.init_params(jax.random.PRNGKey(0)))


def evaluate_run(run_dir: Path, episodes: int = 256, seed: int = 12345) -> dict:
    """The run's final policy (its checkpoint), sampled actions, one episode on each of
    ``episodes`` VecEnv envs."""
    from envport.train.host import evaluate_backend

    ppo, params = final_policy(run_dir)
    with VecEnvBackend(episodes) as backend:
        return _mean_ci(evaluate_backend(ppo, params, backend, seed))


def interleaved_sps(config, rounds: int = 3, updates: int = 2, seed: int = 0,
                    params=None) -> dict:
    """PPO updates (the host loop, ``config``'s batch) on both backends in alternating rounds
    (A, B then B, A, ...), so that load from other work on the machine hits both alike; the
    first update of each (with the compile) is not timed. ``params``: the policy to start from
    (e.g. a trained one: its long episodes reset the emulators less often than an untrained
    policy's; default a fresh one), with a fresh optimiser. One ``HostPPO`` (one compile) drives
    both, its backend swapped between them, each side with its own training state. Median SPS
    per side over the rounds."""
    from envport.train.host import HostPPO

    sides = {"emurust VecEnv": VecEnvBackend(config.num_envs),
             "PyBoy processes": PyBoyBackend(config.num_envs)}
    sps: dict[str, list[float]] = {s: [] for s in sides}
    try:
        host = HostPPO(sides["emurust VecEnv"], config)
        states = {}
        for s, b in sides.items():
            host.backend = b
            st = host.init(seed)
            if params is not None:
                st = st._replace(params=params, opt_state=host.ppo.tx.init(params))
            states[s], _ = host.update(st)
        order = list(sides)
        for r in range(rounds):
            for s in order if r % 2 == 0 else order[::-1]:
                host.backend = sides[s]
                t0 = time.perf_counter()
                for _ in range(updates):
                    states[s], _ = host.update(states[s])
                sps[s].append(updates * config.batch_size / (time.perf_counter() - t0))
    finally:
        for b in sides.values():
            b.close()
    med = {s: float(np.median(v)) for s, v in sps.items()}
    return {"rounds": rounds, "updates_per_round": updates, "batch": config.batch_size,
            "policy": "fresh" if params is None else "given",
            "sps_rounds": sps, "sps": med,
            "ratio": med["emurust VecEnv"] / med["PyBoy processes"]}


def _find_runs(root: Path, run_id: str) -> list[Path]:
    if (root / run_id / "config.json").exists():
        return [root / run_id]
    runs = sorted(p.parent for p in root.glob(f"{run_id}-s*/config.json"))
    if not runs:
        raise EnvportError(f"no training run {run_id!r} under {root}")
    return runs


def compare(out: Path, vecenv: str, pyboy: str, random_episodes_per_env: int = 8,
            eval_episodes: int = 256, interleaved_rounds: int = 5,
            command: str | None = None) -> dict:
    """Read both runs, measure the random policy, evaluate the final policies, time PPO updates
    on both backends in interleaved rounds (``interleaved_rounds``, 0: not); write
    ``<out>/emurust/train/comparison.{json,md,png}``."""
    from envport.train.ppo import PPOConfig
    from envport.train.run import read_metrics

    root = Path(out) / "emurust" / "train"
    sides = {}
    for side, run_id in (("emurust VecEnv", vecenv), ("PyBoy processes", pyboy)):
        runs = []
        for run_dir in _find_runs(root, run_id):
            cfg = json.loads((run_dir / "config.json").read_text())
            summary = json.loads((run_dir / "summary.json").read_text())
            rows, _ = read_metrics(run_dir)
            runs.append({
                "run_id": run_dir.name, "target": cfg["target"], "seed": cfg["config"]["seed"],
                "backend": cfg["devices"][-1], "env_steps": summary["env_steps"],
                "wall_s": summary["wall_s"], "sps_median": summary["sps_median"],
                "score_recent": summary["score_recent"],
                "final_policy_on_vecenv": evaluate_run(run_dir, eval_episodes),
                "curve": [(r["step"], r["wall_s"], r["score_recent"]) for r in rows],
            })
        sides[side] = runs
    rnd = _mean_ci(random_scores(random_episodes_per_env))
    first = _find_runs(root, vecenv)[0]
    config = PPOConfig.from_dict(json.loads((first / "config.json").read_text())["config"])
    # from the emurust run's final policy: the SPS of the episodes the trained policy plays
    inter = (interleaved_sps(config, interleaved_rounds, params=final_policy(first)[1])
             if interleaved_rounds else None)
    sps = {s: float(np.median([r["sps_median"] for r in runs])) for s, runs in sides.items()}
    rep = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command or "python -m emurust.train compare",
        "host": {**host_info(),  # the bench's: CPU, versions, emurust build
                 "load_average_at_compare": [round(x, 2) for x in os.getloadavg()]},
        "task": {"rom": "game.gb", "frameskip": FRAMESKIP, "start_frames": START_FRAMES,
                 "max_steps": MAX_STEPS, "actions": list(ACTION_NAMES),
                 "obs": SPEC.metadata["obs"], "score": SCORE_NAME},
        "runs": sides,
        "sps": sps,
        "sps_ratio": sps["emurust VecEnv"] / sps["PyBoy processes"],
        "sps_interleaved": inter,
        "random_policy": rnd,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "comparison.json").write_text(json.dumps(rep, indent=2) + "\n")
    (root / "comparison.md").write_text(render_markdown(rep))
    png = root / "comparison.png"
    rep["plot"] = str(png) if _plot(rep, png) else None
    return rep


def _ci(e: dict) -> str:
    return f"{e['mean']:.2f} [{e['ci95'][0]:.2f}, {e['ci95'][1]:.2f}]"


def render_markdown(rep: dict) -> str:
    h, t = rep["host"], rep["task"]
    lines = [
        "# emurust: PPO on game.gb, emurust VecEnv vs PyBoy in processes",
        "",
        f"- host: {h['cpu_model']}, {h['cpu_count']} CPUs; load average (1, 5, 15 min) when "
        f"compared: {h['load_average_at_compare']}",
        f"- task: {t['rom']} from frame {t['start_frames']}, frameskip {t['frameskip']}, "
        f"actions {'/'.join(t['actions'])}, observation {', '.join(t['obs'])}; "
        f"score = {t['score']}",
        f"- command: `{rep['command']}`; date {rep['date']}",
        "",
        "| backend | run | env steps | wall | median PPO SPS | score, last >= 100 training "
        "episodes | final policy on VecEnv (episodes, 95 % CI) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for side, runs in rep["runs"].items():
        for r in runs:
            e = r["final_policy_on_vecenv"]
            score = "—" if r["score_recent"] is None else f"{r['score_recent']:.2f}"
            lines.append(f"| {side} | {r['run_id']} | {r['env_steps']:,} | {r['wall_s']:.0f} s | "
                         f"{r['sps_median']:,.0f} | {score} | {_ci(e)} ({e['episodes']}) |")
    rnd = rep["random_policy"]
    lines += ["", f"- PPO SPS ratio (emurust / PyBoy), the runs' medians: "
              f"**{rep['sps_ratio']:.2f}×**"]
    inter = rep.get("sps_interleaved")
    if inter:
        v, p = inter["sps"]["emurust VecEnv"], inter["sps"]["PyBoy processes"]
        lines.append(f"- PPO SPS interleaved ({inter['rounds']} alternating rounds of "
                     f"{inter['updates_per_round']} updates of {inter['batch']:,} steps from "
                     f"the emurust run's final policy, medians): emurust {v:,.0f}, PyBoy "
                     f"{p:,.0f}, ratio "
                     f"**{inter['ratio']:.2f}×**")
    lines += [
        f"- uniform random policy: {_ci(rnd)} catches per game ({rnd['episodes']} episodes)",
    ]
    return "\n".join(lines) + "\n"


def _plot(rep: dict, path: Path) -> bool:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    fig = Figure(figsize=(11, 4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    for k, (side, runs) in enumerate(rep["runs"].items()):
        for r in runs:
            pts = [(s, w, v) for s, w, v in r["curve"] if v is not None]
            if not pts:
                continue
            s, w, v = zip(*pts, strict=True)
            label = f"{side} ({r['sps_median']:,.0f} SPS)"
            style = {"color": f"C{k}", "lw": 3 - 1.5 * k, "ls": "-" if k == 0 else "--"}
            axes[0].plot(s, v, label=label, **style)  # the same curve on both: one dashed
            axes[1].plot(w, v, label=label, **style)
    for ax, xlabel in zip(axes, ("env steps", "wall seconds"), strict=True):
        ax.axhline(rep["random_policy"]["mean"], color="grey", ls="--", lw=1, label="random policy")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(rep["task"]["score"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(f"PPO on game.gb: emurust VecEnv vs PyBoy processes, SPS ratio "
                 f"{rep['sps_ratio']:.2f}x", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m emurust.train",
                                description="emurust's PPO comparison (VecEnv vs PyBoy)")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare", help="compare a VecEnv run with a PyBoy run")
    c.add_argument("--vecenv", required=True, help="run id of the game.gb target's run")
    c.add_argument("--pyboy", required=True, help="run id of the 'game.gb on PyBoy' run")
    c.add_argument("--out", default="reports", help="report folder (default: reports)")
    c.add_argument("--random-episodes-per-env", type=int, default=8,
                   help="random-policy episodes per env, 64 envs (default 8: 512 episodes)")
    c.add_argument("--eval-episodes", type=int, default=256,
                   help="episodes each final policy plays on VecEnv (default 256)")
    c.add_argument("--interleaved-rounds", type=int, default=5,
                   help="alternating rounds of PPO updates timed on both backends (0: none)")
    args = p.parse_args(argv)
    rep = compare(Path(args.out), args.vecenv, args.pyboy, args.random_episodes_per_env,
                  args.eval_episodes, args.interleaved_rounds, command="python -m emurust.train " + " ".join(
                      sys.argv[1:] if argv is None else argv))
    sys.stdout.write(render_markdown(rep))
    print(f"written to {Path(args.out) / 'emurust' / 'train' / 'comparison.json'} (and .md"
          + (", .png)" if rep["plot"] else ")"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
