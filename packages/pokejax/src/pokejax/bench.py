"""``envport bench pokejax``: one Showdown process against ``jit(vmap(battle.step))``.

One env-step is one *decision point* of one battle (Showdown's request loop: both sides
choose at once, or only the forced side(s) during a forced switch), on both sides.

* Reference (``reference_stepper``): the reference backend of ``envport verify``
  (``backends.ShowdownReference``): ``num_envs`` battles in **one** Node process running
  pokemon-showdown, stepped with one ``choose_many`` request per batched step; each side plays
  the ``(k mod n)``-th of its ``n`` legal actions (Showdown's own request), ``k`` uniform, so the
  choice is uniform over the legal actions. The cost billed includes what the verifier pays per
  decision: the JSON round trip and the exported battle turned into the canonical state in
  Python. An ended battle is replaced at once by the next battle of the run (teams from
  Showdown's ``gen1randombattle`` generator, ``start``), so the batch keeps playing. At most
  ``REFERENCE_MAX_LIVE`` battles are live in the process: above that, a batched step of
  ``num_envs`` env-steps is played as ``num_envs / REFERENCE_MAX_LIVE`` rounds over those
  battles (the same number of decisions, the same single process; it only bounds Showdown's
  memory and the start-up cost of thousands of battles).
* Candidate (``candidate_rollout``): ``run(k)`` = ``k`` batched steps in one jitted
  ``fori_loop`` (dynamic ``k``, so no recompile per ``k``; the body is what a ``lax.scan`` step
  would be) of ``vmap`` over battles of: a uniform random legal action per side drawn in JAX
  from ``legal.legal_mask`` (``opponents.random_policy``), ``battle.step``, then **auto-reset**:
  a battle that ended is replaced by a random one of ``RESET_POOL`` start battles drawn once
  in JAX (``env.new_state``: two ``teams.sample_team`` teams, ``start.new_battle``) with a
  fresh random battle seed (``start.start_prng``), so the batch keeps playing. The pool keeps
  the reset cheap: sampling two fresh teams per env at every step (``vmap`` computes the reset
  for every env and selects it where the battle ended) made the step ~9x slower at 256 envs,
  the pool ~1.2x. No Showdown involved. ``compile_s`` = trace + compile + the first batched
  step of the rollout (the pool's own small jit is drawn once per process and not included).
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import backends, env, opponents, start
from pokejax import battle as B

REFERENCE_MAX_LIVE = 512  # live battles in the one Showdown process
RUN_SEED = 0
RESET_POOL = 1024  # start battles the candidate resets from

HOW_ACTIONS = (
    "One env-step = one decision point of one battle. Reference: one pokemon-showdown Node "
    "process (the verifier's ShowdownReference: one choose_many request per batched step, each "
    "exported battle turned into the canonical state in Python), each side playing the "
    "(k mod n)-th of its n legal actions for k drawn uniformly from 64 cached batches, i.e. a "
    "uniform legal action; ended battles are replaced at once by new Showdown-generated ones; "
    f"at most {REFERENCE_MAX_LIVE} live battles, larger batches are played as rounds over them. "
    "Candidate: jit(fori_loop(vmap(random legal action from legal.legal_mask in JAX + "
    f"battle.step + auto-reset of ended battles from a pool of {RESET_POOL} start battles drawn "
    f"once in JAX (teams.sample_team + start.new_battle) with a fresh random battle seed))).")


class _RefStepper:
    """``num_envs`` env-steps per call over ``min(num_envs, REFERENCE_MAX_LIVE)`` live battles."""

    def __init__(self, num_envs: int, max_live: int = REFERENCE_MAX_LIVE):
        self.num_envs = int(num_envs)
        self.live = min(self.num_envs, int(max_live))
        self.rounds = -(-self.num_envs // self.live)
        self.ref = backends.ShowdownReference(self.live, only_supported=False)
        self.ref.reset(RUN_SEED)
        self._next = backends.iter_setups(self.ref.sd, RUN_SEED, False, first=self.live)
        self.decisions = 0
        self.battles = self.live

    def step(self, actions) -> None:
        actions = np.asarray(actions)
        done = 0
        for _ in range(self.rounds):
            n = min(self.live, self.num_envs - done)
            a = actions[done: done + n]
            if n < self.live:  # the last partial round: the other battles get k = 0 ...
                a = np.concatenate([a, np.zeros((self.live - n, 2), a.dtype)])
            self.ref.step(a)  # ... (a real decision each, so the round counts `live` steps)
            done += n
            self.decisions += self.live
            self._restart_ended()

    def _restart_ended(self) -> None:
        ended = [i for i, e in enumerate(self.ref.exports) if e["ended"]]
        if not ended:
            return
        sd = self.ref.sd
        sd.request("close_many", battles=[self.ref.handles[i] for i in ended])
        for i in ended:
            self.ref._set(i, *backends.start(sd, next(self._next)))
            self.battles += 1

    def close(self) -> None:
        self.ref.close()


def reference_stepper(num_envs: int, max_live: int = REFERENCE_MAX_LIVE):
    s = _RefStepper(num_envs, max_live)
    return s.step, s.close


@functools.cache
def start_pool(size: int = RESET_POOL, seed: int = RUN_SEED) -> B.Battle:
    """``size`` start battles (leaves [size, ...]) from ``env.new_state``: JAX-sampled teams
    (``teams.sample_team``), random battle seeds, ``start.new_battle``. Drawn once per process."""
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), size)
    return jax.block_until_ready(jax.jit(jax.vmap(lambda k: env.new_state(k).battle))(keys))


def _one_step(b: B.Battle, key: jax.Array, pool: B.Battle, step_fn=B.step):
    key, k1, k2, kp, ks = jax.random.split(key, 5)
    acts = jnp.stack([opponents.random_policy(k1, b, 0), opponents.random_policy(k2, b, 1)])
    nb = step_fn(b, acts)
    # auto-reset: a random start battle of the pool with a fresh battle seed
    fresh = jax.tree.map(lambda x: x[jax.random.randint(kp, (), 0, RESET_POOL)], pool)
    seed = jax.random.randint(ks, (4,), 0, 0x10000, dtype=jnp.int32).astype(jnp.uint32)
    fresh = fresh._replace(prng=start.start_prng(seed, fresh.team.speed[:, 0]))
    nb = jax.tree.map(lambda x, y: jnp.where(nb.ended, x, y), fresh, nb)
    return nb, key


def candidate_rollout(num_envs: int, seed: int = RUN_SEED, step_fn=B.step):
    """``(run(k), compile_s)``: ``run`` plays ``k`` batched steps and blocks until done."""
    keys = jax.random.split(jax.random.PRNGKey(seed), num_envs + 1)
    pool = start_pool()
    battles = jax.tree.map(lambda x: x[np.arange(num_envs) % RESET_POOL], pool)
    step = jax.vmap(lambda b, k: _one_step(b, k, pool, step_fn))

    @jax.jit
    def run(carry, k):
        return jax.lax.fori_loop(0, k, lambda _, c: step(*c), carry)

    holder = {"carry": jax.block_until_ready((battles, jax.random.split(keys[0], num_envs)))}
    t0 = time.perf_counter()
    holder["carry"] = jax.block_until_ready(run(holder["carry"], 1))
    compile_s = time.perf_counter() - t0  # trace + compile + one batched step

    def steps(k: int) -> None:
        holder["carry"] = jax.block_until_ready(run(holder["carry"], k))

    return steps, compile_s


