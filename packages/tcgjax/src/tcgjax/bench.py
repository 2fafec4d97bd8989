"""``envport bench tcgjax``: the pure-Python reference in 1 and N processes against the JAX engine
on 1 and N XLA devices (``port._bench_targets``; the report pairs the best of each side).

One env-step is one *decision* (one action of the decider) of one game, on both sides. Both
sides play the same workload: chooser-index actions (``tcgjax.backends``: ``k`` plays the
``k mod n``-th of the decider's ``n`` legal actions, ascending), ``k`` uniform, so the play is a
seeded uniformly random legal choice; a game that ends is replaced at once by a new game on a new
uniformly random deck pairing (15 x 15) with a new random game seed. Decisions and finished
games are counted on both sides (``RECORDS``); the ``games`` extra bench adds games/s (each
side's decisions/s over its mean game length, ``mean_game_length``).

* Reference (``reference_stepper``): ``tcgjax.reference`` games stepped in Python
  (``legal_actions`` + ``step``), in this process (1 process) or split over N worker processes
  (``multiprocessing`` spawn, one per core: the reference is single-threaded Python, so N
  processes is how a user runs it on N cores); each process plays its share of the ``num_envs``
  games of a batched step, the ``k`` values sent to all before any reply is read. A restart
  runs the reference's ``new_game`` (§5 setup, shuffles included) inside the timed loop, as the
  candidate's does.
* Candidate (``candidate_rollout``): ``run(k)`` = ``k`` batched steps in one jitted
  ``fori_loop`` (traced ``k``: no recompile per ``k``, no host sync per step) of
  ``batched_step``: one ``jax.random.bits`` call for the batch, the ``k mod n``-th legal action
  (``legal_mask`` + ``kth_true``), ``engine.step.step_batch`` (``vmap(step)``'s results, each
  automatic phase run for the batch only when some game is at it), then **restart**: the ended games get a
  fresh ``new_game`` (§5 setup in JAX, shuffles included) on a random pairing and seed, under
  a ``lax.cond`` that skips it when no game ended; so every game runs at every step and an
  env-step is a decision. One game (batch 1 on a device) is stepped without ``vmap``, where
  the engine's branches stay real branches. The batch is split over every
  local device (``pmap``, see ``shards``); the bench session runs XLA:CPU with one device per
  core. ``compile_s`` = trace + compile + the first batched step.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import random
import time

import jax
import jax.numpy as jnp
import numpy as np

from tcgjax.backends import CHOOSER
from tcgjax.engine.legal import legal_mask
from tcgjax.engine.setup import deck_arrays, new_game
from tcgjax.engine.step import kth_true, select_rows, step_batch
from tcgjax.engine.step import step as engine_step
from tcgjax.reference import deck_list, legal_actions
from tcgjax.reference import new_game as ref_new_game
from tcgjax.reference import step as ref_step
from tcgjax.reference.state import PH_OVER

RUN_SEED = 0
N_DECKS = 15
_DECKS = deck_list()
DECK_CARDS = np.stack([deck_arrays(d, d)[0][0] for d in _DECKS])  # (15, 20)
DECK_TYPES = np.stack([deck_arrays(d, d)[1][0] for d in _DECKS])  # (15, 3)

HOW_ACTIONS = (
    "One env-step = one decision of one game. Both sides: chooser index k uniform in "
    f"[0, {CHOOSER}), the (k mod n)-th of the decider's n legal actions; a game that ends is "
    "replaced at once by a new game (setup included) on a uniformly random deck pairing of "
    "the 15 decks with a random game seed. Reference: tcgjax.reference (pure Python) in the "
    "target's process count (in-process for 1; multiprocessing workers, each its share of the "
    "batch, side by side). Candidate: jit(fori_loop(one jax.random.bits call per batch, "
    "legal_mask + kth_true, engine.step.step_batch (vmap(step)'s results, each action part "
    "and phase run on the games at it; no vmap for one game), restart of ended games "
    "by a vmapped new_game under lax.cond)), the batch split over the target's JAX devices "
    "(pmap; the bench session runs XLA:CPU with one device per core)."
)

# (side, setup, num_envs) -> {"decisions", "games", "env_steps"}: lifetime counts of every
# stepper and rollout made in this process (warm-up included), for tests and inspection
RECORDS: dict[tuple[str, int | None, int], dict[str, int]] = {}


def _record(side: str, setup: int | None, num_envs: int) -> dict[str, int]:
    rec = {"decisions": 0, "games": 0, "env_steps": 0}
    RECORDS[(side, setup, int(num_envs))] = rec
    return rec


# ------------------------------------------------------------------------ reference ----------
class RefGames:
    """``n`` reference games played by chooser indices, each restarted at once when it ends
    (new pairing and seed from ``random.Random(seed)``)."""

    def __init__(self, n: int, seed: int):
        self.rnd = random.Random(seed)
        self.games = [self._new() for _ in range(int(n))]
        self.decisions = 0
        self.finished = 0

    def _new(self):
        r = self.rnd
        a, b = r.randrange(N_DECKS), r.randrange(N_DECKS)
        return ref_new_game(_DECKS[a], _DECKS[b], r.randrange(2**32), log_enabled=False)

    def step(self, ks) -> None:
        games = self.games
        for i, k in enumerate(ks.tolist()):
            st = games[i]
            legal = legal_actions(st)
            ref_step(st, legal[k % len(legal)])
            if st.done:
                self.finished += 1
                games[i] = self._new()
        self.decisions += len(games)


def _worker(conn, n: int, seed: int) -> None:
    """A reference process: ``n`` games; each message is their ``k`` values (int64 bytes), each
    reply the (decisions, games finished) so far."""
    games = RefGames(n, seed)
    while True:
        msg = conn.recv_bytes()
        if not msg:
            break
        games.step(np.frombuffer(msg, np.int64))
        conn.send((games.decisions, games.finished))
    conn.close()


class RefStepper:
    """``num_envs`` decisions per call, played by ``processes`` reference processes side by side
    (1: this process itself). Process ``p`` seeds its games from ``RUN_SEED + p``."""

    def __init__(self, num_envs: int, processes: int = 1):
        self.num_envs = int(num_envs)
        n = max(1, min(int(processes), self.num_envs))
        self.bounds = np.linspace(0, self.num_envs, n + 1).round().astype(int)
        self.record = _record("reference", int(processes), self.num_envs)
        self.local = RefGames(self.num_envs, RUN_SEED) if n == 1 else None
        self.procs: list = []
        self.conns: list = []
        self.counts = [(0, 0)] * n
        if n > 1:
            ctx = mp.get_context("spawn")  # no fork of a process that runs XLA threads
            try:
                for p in range(n):
                    parent, child = ctx.Pipe()
                    share = int(self.bounds[p + 1] - self.bounds[p])
                    proc = ctx.Process(target=_worker, args=(child, share, RUN_SEED + p),
                                       daemon=True)
                    proc.start()
                    child.close()
                    self.procs.append(proc)
                    self.conns.append(parent)
            except BaseException:
                self.close()
                raise

    def step(self, actions) -> None:
        ks = np.asarray(actions, np.int64).reshape(-1)
        if ks.size != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        if self.local is not None:
            self.local.step(ks)
            self.counts = [(self.local.decisions, self.local.finished)]
        else:
            b = self.bounds
            for p, c in enumerate(self.conns):
                c.send_bytes(ks[b[p]: b[p + 1]].tobytes())
            self.counts = [c.recv() for c in self.conns]
        self.record["decisions"] = sum(d for d, _ in self.counts)
        self.record["games"] = sum(g for _, g in self.counts)
        self.record["env_steps"] += self.num_envs

    def close(self) -> None:
        for c in self.conns:
            try:
                c.send_bytes(b"")
                c.close()
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
        self.conns, self.procs = [], []


def reference_stepper(num_envs: int, processes: int = 1):
    s = RefStepper(num_envs, processes)
    return s.step, s.close


def sample_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    """Chooser indices for one batched step (the reference side's action cache)."""
    return rng.integers(0, CHOOSER, n).astype(np.int64)


# ------------------------------------------------------------------------ candidate ----------
def chooser_action(s, k):
    """The ``k mod n``-th (ascending) of the decider's ``n`` legal actions, and the mask."""
    m = legal_mask(s)
    n = jnp.maximum(jnp.sum(m), 1)
    return kth_true(m, (k % n).astype(jnp.int32)), m


def chooser_step(s, k):
    """``engine.step`` with the ``k mod n``-th legal action (the game must be running)."""
    return engine_step(s, chooser_action(s, k)[0])


def start_games(pair_a, pair_b, seeds):
    """A batch of new games: deck pairing (``pair_a``, ``pair_b``) and game seed, vmapped."""
    cards = jnp.stack([jnp.asarray(DECK_CARDS)[pair_a], jnp.asarray(DECK_CARDS)[pair_b]], 1)
    types = jnp.stack([jnp.asarray(DECK_TYPES)[pair_a], jnp.asarray(DECK_TYPES)[pair_b]], 1)
    return jax.vmap(new_game)(cards, types, seeds)


def restart(states, over, pair_a, pair_b, seeds):
    """Ended games (``over``) replaced by new games on their pairings and seeds (per env). The
    new games are set up for the whole batch and selected (``new_game`` costs well under 1% of
    a batched step), under a ``lax.cond`` that skips it when no game ended."""

    def do(states):
        fresh = start_games(pair_a, pair_b, seeds)
        return select_rows(over, fresh, states)

    return jax.lax.cond(jnp.any(over), do, lambda s: s, states)


def batched_step(carry):
    """One decision of every game with a random chooser index, then the restart of ended games
    (so every game is running at every step). ``carry`` = (states, key, games finished)."""
    states, key, games = carry
    n = states["phase"].shape[0]
    key, sub = jax.random.split(key)
    bits = jax.random.bits(sub, (n, 3), jnp.uint32)
    k = (bits[:, 0] % CHOOSER).astype(jnp.int32)
    pair_a = (bits[:, 1] % N_DECKS).astype(jnp.int32)
    pair_b = ((bits[:, 1] >> 16) % N_DECKS).astype(jnp.int32)
    if n == 1:
        # one game: no vmap, so the engine's lax.switch / lax.cond stay real branches (under
        # vmap a batched switch computes every branch and selects)
        one = chooser_step(jax.tree.map(lambda x: x[0], states), k[0])
        over = one["phase"] == PH_OVER
        one = jax.lax.cond(over, lambda s: jax.tree.map(
            lambda x: x[0], start_games(pair_a, pair_b, bits[:, 2])), lambda s: s, one)
        states = jax.tree.map(lambda x: x[None], one)
    else:
        states = step_batch(states, jax.vmap(chooser_action)(states, k)[0])
        over = states["phase"] == PH_OVER
        states = restart(states, over, pair_a, pair_b, bits[:, 2])
    return states, key, games + jnp.sum(over, dtype=jnp.int32)


def shards(num_envs: int, max_devices: int | None = None) -> int:
    """Devices the batch is split over: every local device (at most ``max_devices``) when they
    divide it evenly, else 1. On CPU, JAX sees one device unless told otherwise; ``nox -s
    bench-tcgjax`` sets ``--xla_force_host_platform_device_count`` to the core count."""
    d = min(jax.local_device_count(), max_devices or jax.local_device_count())
    return d if num_envs % d == 0 else 1


@functools.cache
def _runner(per: int, d: int):
    """The pmapped ``run(carry, k)`` for ``d`` shards of ``per`` games (cached: one compile per
    shape in this process)."""

    def run_shard(carry, k):
        states, key = carry
        states, key, games = jax.lax.fori_loop(
            0, k, lambda _, c: batched_step(c), (states, key, jnp.int32(0)))
        return (states, key), games

    return jax.pmap(run_shard, in_axes=(0, None), devices=jax.local_devices()[:d])


def initial_states(num_envs: int, seed: int = RUN_SEED):
    """``num_envs`` new games on random pairings (numpy rng from ``seed``)."""
    r = np.random.default_rng(seed)
    a = r.integers(0, N_DECKS, num_envs)
    b = r.integers(0, N_DECKS, num_envs)
    seeds = r.integers(0, 2**32, num_envs, dtype=np.uint64).astype(np.uint32)
    return jax.jit(start_games)(a, b, seeds)


def release_programs() -> None:
    """Drop every compiled program of this process (JAX's caches and ``_runner``'s).

    A compiled batched step holds ~9,000 memory mappings on XLA:CPU (its kernels' code
    sections); Linux's default ``vm.max_map_count`` is 65,530, so a benchmark that kept one
    program per batch size and device count (ten) aborted in LLVM ("Cannot allocate memory").
    Each size's program is used for that size only, so the benchmark releases the earlier ones
    before compiling the next."""
    _runner.cache_clear()
    jax.clear_caches()


def candidate_rollout(num_envs: int, seed: int = RUN_SEED, max_devices: int | None = None):
    """``(run(k), compile_s)``: ``run`` plays ``k`` batched steps of ``num_envs`` games (split
    over at most ``max_devices`` devices) and blocks until done. Programs compiled for earlier
    calls are released first (``release_programs``)."""
    release_programs()
    n = int(num_envs)
    d = shards(n, max_devices)
    per = n // d
    states = initial_states(n, seed)
    states = jax.tree.map(lambda x: x.reshape((d, per) + x.shape[1:]), states)
    keys = jax.random.split(jax.random.PRNGKey(seed), d)
    devices = jax.local_devices()[:d]
    carry = jax.block_until_ready(jax.pmap(lambda c: c, devices=devices)((states, keys)))
    run = _runner(per, d)
    record = _record("candidate", max_devices, n)
    holder = {"carry": carry}

    def steps(k: int) -> None:
        holder["carry"], games = run(holder["carry"], jnp.int32(k))
        record["games"] += int(np.sum(jax.device_get(games)))  # blocks until done
        record["decisions"] += int(k) * n  # every game runs at every step (restart)
        record["env_steps"] += int(k) * n

    steps.holder = holder  # the carry, for tests
    t0 = time.perf_counter()
    steps(1)
    compile_s = time.perf_counter() - t0  # trace + compile + one batched step
    return steps, compile_s


def cores() -> int:
    return os.cpu_count() or 1


# ------------------------------------------------------------------------ games/s ------------
LENGTH_GAMES = 2000  # complete games per side for the mean game length


def mean_game_length(side: str, games: int = LENGTH_GAMES, seed: int = RUN_SEED + 7) -> dict:
    """Decisions per finished game of the benchmark's workload on one side, from ``games``
    complete games played back to back by one env (the reference's ``RefGames``; the JAX
    rollout of one game, compiled by the table already). With restarts, a side's steady-state
    games/s is its decisions/s over this length."""
    t0 = time.perf_counter()
    if side == "reference":
        g = RefGames(1, seed)
        ks = np.random.default_rng(seed).integers(0, CHOOSER, 1 << 16)
        i = 0
        while g.finished < games:
            g.step(ks[i % ks.size: i % ks.size + 1])
            i += 1
        decisions, finished = g.decisions, g.finished
    else:
        run, _ = candidate_rollout(1, seed=seed, max_devices=1)
        rec = RECORDS[("candidate", 1, 1)]
        while rec["games"] < games:
            run(max(1000, int((games - rec["games"]) * 100)))
        decisions, finished = rec["decisions"], rec["games"]
    return {"side": side, "games": finished, "decisions": decisions,
            "decisions_per_game": decisions / finished, "seconds": time.perf_counter() - t0}


def games_report(bench_json: dict, lengths: dict[str, dict]) -> dict:
    """Games/s beside the table's decisions/s: each side's decisions/s over its mean game length
    (``mean_game_length``). Counting the games that end inside a row's own few seconds would
    not do: the batch's games all start at once, so at large batches hardly any ends (and the
    short ones first) before the row's timing stops. Best against best as the core does."""
    per_game = {side: lengths[side]["decisions_per_game"] for side in ("reference", "candidate")}
    rows = []
    for name, t in bench_json["targets"].items():
        for r in t["rows"]:
            row = {"target": name, "num_envs": r["num_envs"]}
            for side in ("reference", "candidate"):
                sps = r.get(f"{side}_sps")
                row[f"{side}_decisions_per_s"] = sps
                row[f"{side}_games_per_s"] = sps / per_game[side] if sps else None
            ref, cand = row["reference_games_per_s"], row["candidate_games_per_s"]
            row["games_ratio"] = cand / ref if ref and cand else None
            rows.append(row)

    def best(key):
        found = [(r[key], r["target"], r["num_envs"]) for r in rows if r[key]]
        return max(found) if found else (None, None, None)

    out = {"lengths": lengths, "rows": rows}
    for key in ("games_per_s", "decisions_per_s"):
        ref, cand = best(f"reference_{key}"), best(f"candidate_{key}")
        out[f"best_{key}"] = {
            "reference": ref[0], "reference_target": ref[1], "reference_num_envs": ref[2],
            "candidate": cand[0], "candidate_target": cand[1], "candidate_num_envs": cand[2],
            "ratio_of_bests": cand[0] / ref[0] if ref[0] and cand[0] else None,
        }
    return out


def _fmt(x, spec=",.0f") -> str:
    return "—" if x is None else format(x, spec)


def games_markdown(report: dict) -> str:
    ln = report["lengths"]
    lines = [
        "# tcgjax: games/s and decisions/s", "",
        f"- host: {report['host_line']}", f"- date: {report['date']}", "",
        "Decisions/s are the side-by-side table's (bench.json). Games/s = decisions/s / the "
        "side's mean game length, from complete games of the same workload played back to "
        "back by one env: reference "
        f"{ln['reference']['decisions_per_game']:.2f} decisions per game over "
        f"{ln['reference']['games']:,} games, JAX "
        f"{ln['candidate']['decisions_per_game']:.2f} over {ln['candidate']['games']:,} games.",
        "", "| target | num_envs | ref decisions/s | ref games/s | JAX decisions/s | JAX games/s "
        "| games/s ratio |", "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        ratio = _fmt(r["games_ratio"], ",.3f") + "×" if r["games_ratio"] else "—"
        lines.append(
            f"| {r['target']} | {r['num_envs']} | {_fmt(r['reference_decisions_per_s'])} | "
            f"{_fmt(r['reference_games_per_s'], ',.1f')} | "
            f"{_fmt(r['candidate_decisions_per_s'])} | "
            f"{_fmt(r['candidate_games_per_s'], ',.1f')} | {ratio} |")
    for key, label in (("games_per_s", "games/s"), ("decisions_per_s", "decisions/s")):
        b = report[f"best_{key}"]
        ratio = _fmt(b["ratio_of_bests"], ",.3f") + "×" if b["ratio_of_bests"] else "—"
        lines += ["", f"Best against best, {label}: JAX {_fmt(b['candidate'], ',.1f')} "
                  f"({b['candidate_target']}, num_envs {b['candidate_num_envs']}) vs reference "
                  f"{_fmt(b['reference'], ',.1f')} ({b['reference_target']}, "
                  f"num_envs {b['reference_num_envs']}): **{ratio}**"]
    return "\n".join(lines) + "\n"


def run_games_extra(out_dir, games: int = LENGTH_GAMES) -> dict:
    """The ``games`` extra bench: reads ``<out>/tcgjax/bench.json`` (the table, written just
    before), measures both sides' mean game length and writes ``bench_games.{json,md}``."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from envport.bench import host_info, host_line

    dest = Path(out_dir) / "tcgjax"
    table = json.loads((dest / "bench.json").read_text())
    lengths = {side: mean_game_length(side, games) for side in ("reference", "candidate")}
    host = host_info(["tcgjax"])
    report = {"host": host, "host_line": host_line(host),
              "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "how_actions": HOW_ACTIONS, **games_report(table, lengths)}
    (dest / "bench_games.json").write_text(json.dumps(report, indent=2) + "\n")
    (dest / "bench_games.md").write_text(games_markdown(report))
    return report


def main(argv=None) -> None:
    """The JAX side alone (``tools/gpu/bench.sh``): see ``envport.bench.candidate_main``."""
    from envport.bench import candidate_main

    candidate_main("python -m tcgjax.bench", candidate_rollout, HOW_ACTIONS, shards, batch_sizes="1024,8192,32768,131072",
                   argv=argv)


if __name__ == "__main__":
    main()
