"""``envport bench pokejax``: Showdown in 1 and N processes against ``jit(vmap(battle.step))``
on 1 and N XLA devices (``port._bench_targets``; the report pairs the best of each side).

One env-step is one *decision point* of one battle (Showdown's request loop: both sides
choose at once, or only the forced side(s) during a forced switch), on both sides.

* Reference (``reference_stepper``): **Node processes running pokemon-showdown and nothing
  else per decision** (1, or one per core, side by side) — the driver's ``bench_start`` keeps
  ``REFERENCE_MAX_LIVE`` battle(s) in each process and ``bench_step`` plays each process's
  share of the ``num_envs`` decisions of a batched step on them: each side with a request
  plays the ``(k mod n)``-th of its ``n`` legal actions (Showdown's own request; ``k`` from
  the harness, uniform, so the choice is uniform over the legal actions), ``Battle.choose``
  runs the turn; an ended battle is replaced at once by a new
  one whose two teams come from a pool of ``RESET_POOL`` pairs that Showdown's
  ``gen1randombattle`` generator made up front (untimed; the candidate resets from a pool of
  the same size, so neither side generates teams in the timed loop). No state is exported: the
  one round trip per batched step carries only the ``k`` values. One battle at a time is
  Showdown's fastest setting (on the 2-core VM ~2,000-2,700 decisions/s; 512 interleaved
  battles ~1,500/s), and ``REFERENCE_WARMUP`` decisions are played before the timing starts
  (V8 compiles Showdown's hot paths during the first thousands). The verifier's harness
  exports every state to Python and is several times slower; the target compares with
  Showdown itself.
* Candidate (``candidate_rollout``): ``run(k)`` = ``k`` batched steps in one jitted
  ``fori_loop`` (dynamic ``k``, so no recompile per ``k``; the body is what a ``lax.scan`` step
  would be) of ``_batched_step``: the random bits of the whole batch from one
  ``jax.random.bits`` call, a uniform legal action per side (``legal.legal_mask`` and the
  same ``(k mod n)``-th rule, ``backends.pick_jax``), ``vmap(battle.step)``, then
  **auto-reset**: a battle that ended is replaced by a start battle of a pool of
  ``RESET_POOL`` drawn once in JAX (``env.new_state``: two ``teams.sample_team`` teams,
  ``start.new_battle``) — env ``i`` takes pool entry ``(i + t) mod RESET_POOL`` at step ``t``
  (a rolled window of the pool, no per-env gather) — with a fresh random battle seed
  (``start.start_prng``), so the batch keeps playing. The batch is split over every local
  device (``pmap``, see ``shards``). No Showdown involved. ``compile_s`` =
  trace + compile + the first batched step of the rollout (the pool's own small jit is drawn
  once per process and not included).
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import backends, env, legal, start
from pokejax import battle as B
from pokejax.reference import FORMAT, derive_seeds
from pokejax.showdown import Showdown

REFERENCE_MAX_LIVE = 1  # live battles in the one Showdown process: one at a time
REFERENCE_WARMUP = 3000  # decisions played before timing (V8 compiles Showdown's hot paths)
RUN_SEED = 0
RESET_POOL = 1024  # start battles the candidate resets from

HOW_ACTIONS = (
    "One env-step = one decision point of one battle. Reference: pokemon-showdown Node "
    "process(es) playing the decisions themselves (the target's count, side by side, each its "
    f"share of the batch over {REFERENCE_MAX_LIVE} live battle(s), "
    f"{REFERENCE_WARMUP} warm-up decisions untimed; each side plays the (k mod n)-th of its n "
    "legal actions from Showdown's request, k uniform from the harness; no state export; ended "
    f"battles replaced at once by new ones with teams from a pool of {RESET_POOL} "
    "Showdown-generated pairs made up front). Candidate: jit(fori_loop(one jax.random.bits "
    "call per batch, the same (k mod n)-th legal action from legal.legal_mask, "
    "vmap(battle.step), auto-reset of ended battles from a pool of "
    f"{RESET_POOL} start battles drawn once in JAX (teams.sample_team + start.new_battle) "
    "with a fresh random battle seed)), the batch split over the target's JAX devices (pmap; "
    "the bench session runs XLA:CPU with one device per core).")


class _RefStepper:
    """``num_envs`` env-steps per call, played by ``processes`` Showdown processes at once: each
    keeps ``REFERENCE_MAX_LIVE`` battle(s) (the driver's ``bench_start``) and plays its share of
    the batch (``bench_step``); the requests go out to all before any answer is read, so the
    processes run side by side (Showdown is single-threaded: N processes is how a user runs it
    on N cores). Process ``p`` draws its battles from run seed ``RUN_SEED + p``."""

    def __init__(self, num_envs: int, processes: int = 1, max_live: int = REFERENCE_MAX_LIVE):
        self.num_envs = int(num_envs)
        n = max(1, min(int(processes), self.num_envs))
        # process p plays envs [bounds[p], bounds[p + 1]) of every batched step
        self.bounds = np.linspace(0, self.num_envs, n + 1).round().astype(int)
        self.procs: list[Showdown] = []
        try:
            for p in range(n):
                sd = Showdown()
                self.procs.append(sd)
                share = int(self.bounds[p + 1] - self.bounds[p])
                sd.request("bench_start", format=FORMAT, seed=derive_seeds(RUN_SEED + p)["battle"],
                           live=min(share, int(max_live)), teamPool=RESET_POOL)
            rng = np.random.default_rng(RUN_SEED)
            warm = rng.integers(0, backends.ACTION_CHOICES, (REFERENCE_WARMUP * 2,))
            self._all("bench_step", [{"ks": warm.tolist()}] * n)
        except BaseException:
            self.close()
            raise
        self.decisions = 0

    def _all(self, cmd: str, args: list[dict]) -> list:
        for sd, a in zip(self.procs, args, strict=True):
            sd.post(cmd, **a)
        return [sd.reply() for sd in self.procs]

    def step(self, actions) -> None:
        ks = np.asarray(actions, np.int64).reshape(-1)
        if ks.size != 2 * self.num_envs:
            raise ValueError(f"expected {self.num_envs} x 2 actions, got shape {np.shape(actions)}")
        b = self.bounds
        parts = [{"ks": ks[2 * b[p]: 2 * b[p + 1]].tolist()} for p in range(len(self.procs))]
        self.decisions += sum(r["decisions"] for r in self._all("bench_step", parts))

    def close(self) -> None:
        for sd in self.procs:
            sd.close()


def reference_stepper(num_envs: int, processes: int = 1, max_live: int = REFERENCE_MAX_LIVE):
    s = _RefStepper(num_envs, processes, max_live)
    return s.step, s.close


@functools.cache
def start_pool(size: int = RESET_POOL, seed: int = RUN_SEED) -> B.Battle:
    """``size`` start battles (leaves [size, ...]) from ``env.new_state``: JAX-sampled teams
    (``teams.sample_team``), random battle seeds, ``start.new_battle``. Drawn once per process."""
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), size)
    return jax.block_until_ready(jax.jit(jax.vmap(lambda k: env.new_state(k).battle))(keys))


def _fresh_starts(pool: B.Battle, t, n: int, seeds) -> B.Battle:
    """``n`` start battles for step ``t``: env ``i`` gets pool battle ``(i + t) mod RESET_POOL``
    (a window of the pool rolled by ``t``: a contiguous slice, no per-env gather) with battle
    seed ``seeds[i]`` (uint32[n, 4], 16-bit words)."""
    size = jax.tree.leaves(pool)[0].shape[0]

    def window(x):
        w = jax.lax.dynamic_slice_in_dim(jnp.concatenate([x, x]), t % size, size)
        return jnp.tile(w, (-(-n // size),) + (1,) * (x.ndim - 1))[:n]

    fresh = jax.tree.map(window, pool)
    return fresh._replace(prng=jax.vmap(start.start_prng)(seeds, fresh.actives.speed))


def random_legal_actions(battles: B.Battle, bits) -> jax.Array:
    """int32[n, 2]: per battle and side the ``(k mod n)``-th legal action for ``k`` from the
    uint32 ``bits`` [n, 2] (``backends.pick_jax``; ``k mod 2520`` biases it by < 1e-6)."""
    k = (bits % backends.ACTION_CHOICES).astype(jnp.int32)
    return jax.vmap(jax.vmap(backends.pick_jax))(k, jax.vmap(legal.legal_mask)(battles))


def _batched_step(carry, pool: B.Battle, step_fn=B.step):
    """One env-step of every battle: a uniform legal action per side, ``step_fn``, auto-reset.

    The random numbers of the whole batch come from one ``jax.random.bits`` call (per-env
    keys would run a threefry per env and per draw: ~40% of the step on XLA:CPU)."""
    battles, key, t = carry
    n = battles.turn.shape[0]
    key, sub = jax.random.split(key)
    bits = jax.random.bits(sub, (n, 4), jnp.uint32)
    nb = jax.vmap(step_fn)(battles, random_legal_actions(battles, bits[:, :2]))
    w = bits[:, 2:]
    seeds = jnp.stack([w[:, 0] >> 16, w[:, 0] & 0xFFFF, w[:, 1] >> 16, w[:, 1] & 0xFFFF], axis=1)
    fresh = _fresh_starts(pool, t, n, seeds)
    ended = nb.ended
    nb = jax.tree.map(lambda x, y: jnp.where(ended.reshape((n,) + (1,) * (x.ndim - 1)), x, y),
                      fresh, nb)
    return nb, key, t + 1


def shards(num_envs: int, max_devices: int | None = None) -> int:
    """Devices the batch is split over: every local device (at most ``max_devices``) when they
    divide it evenly, else 1.

    On CPU, JAX sees one device unless told otherwise; ``nox -s bench-pokejax`` runs with
    ``--xla_force_host_platform_device_count`` = the core count, so each core steps its own
    shard (one XLA:CPU device per core beats one device splitting each of the ~2,000 small
    kernels of a step across the cores: ~1.6x on the 2-core VM)."""
    d = min(jax.local_device_count(), max_devices or jax.local_device_count())
    return d if num_envs % d == 0 else 1


def sharded(body, num_envs: int, seed: int = RUN_SEED, max_devices: int | None = None):
    """``(run, carry)`` for ``num_envs`` battles split over ``shards(num_envs)`` devices:
    ``run(carry, k)`` = ``k`` steps of ``body`` (a batched step of one shard's carry
    ``(battles, key, t)``) in a jitted ``fori_loop`` per device (``pmap``, traced ``k``: no
    recompile per ``k``); ``carry`` starts from the start pool."""
    pool = start_pool()
    d = shards(num_envs, max_devices)
    per = num_envs // d
    battles = jax.tree.map(
        lambda x: x[np.arange(num_envs) % RESET_POOL].reshape((d, per) + x.shape[1:]), pool)
    keys = jax.random.split(jax.random.PRNGKey(seed), d)
    offsets = jnp.arange(d, dtype=jnp.int32) * per  # each shard resets from its own window
    devices = jax.local_devices()[:d]

    def run_shard(carry, k):
        return jax.lax.fori_loop(0, k, lambda _, c: body(c, pool), carry)

    run = jax.pmap(run_shard, in_axes=(0, None), devices=devices)
    # placed as pmap outputs are, so the first call compiles the same program as later ones
    carry = jax.pmap(lambda c: c, devices=devices)((battles, keys, offsets))
    return run, jax.block_until_ready(carry)


def candidate_rollout(num_envs: int, seed: int = RUN_SEED, step_fn=B.step,
                      max_devices: int | None = None):
    """``(run(k), compile_s)``: ``run`` plays ``k`` batched steps and blocks until done (the
    batch split over at most ``max_devices`` devices, see ``sharded``)."""
    run, carry = sharded(lambda c, pool: _batched_step(c, pool, step_fn), num_envs, seed,
                         max_devices)
    holder = {"carry": carry}
    t0 = time.perf_counter()
    holder["carry"] = jax.block_until_ready(run(holder["carry"], jnp.int32(1)))
    compile_s = time.perf_counter() - t0  # trace + compile + one batched step

    def steps(k: int) -> None:
        holder["carry"] = jax.block_until_ready(run(holder["carry"], jnp.int32(k)))

    return steps, compile_s


def main(argv=None) -> None:
    """The JAX side alone (``tools/gpu/bench.sh``): see ``envport.bench.candidate_main``."""
    from envport.bench import candidate_main

    candidate_main("python -m pokejax.bench", candidate_rollout, HOW_ACTIONS, shards,
                   argv=argv)


if __name__ == "__main__":
    main()
