"""Where the time of one env-step goes: ``python -m pokejax.profile`` (run by ``nox -s
bench-pokejax`` after the benchmark).

Ablations of the benchmark's candidate step (``bench._batched_step``), each compiled on its
own and timed in one process, interleaved, best of ``REPEATS`` (so load on the host hits
every variant alike):

* ``policy``: the batch's random bits, ``legal.legal_mask`` and the ``(k mod n)``-th legal
  action (``backends.pick_jax``) — the actions only;
* ``policy + step``: the same, then ``vmap(battle.step)`` (no auto-reset);
* ``env-step``: the benchmark's whole step (policy, step, auto-reset);
* ``use_move x1``: one ``duel.use_move`` per battle (p1's active on p2's with its first
  move; a step runs two of them, traced once in a ``fori_loop``).

Differences give the parts: the engine's step = ``policy + step`` - ``policy``; the auto-reset
= ``env-step`` - ``policy + step``. Also reported: the compile time of each variant. Writes
``reports/pokejax/profile.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from pokejax import battle as B
from pokejax import bench, duel

REPEATS = 5
STEPS = 10  # batched steps per timed call


def _policy(battles, key):
    n = battles.turn.shape[0]
    key, sub = jax.random.split(key)
    return bench.random_legal_actions(battles, jax.random.bits(sub, (n, 2), jnp.uint32)), key


def _variants():
    def policy_only(c, pool):
        battles, key, t = c
        actions, key = _policy(battles, key)
        # consume the actions without stepping (else XLA drops the policy)
        return battles._replace(turn=battles.turn + (actions[:, 0] > 8)), key, t + 1

    def policy_step(c, pool):
        battles, key, t = c
        actions, key = _policy(battles, key)
        return jax.vmap(B.step)(battles, actions), key, t + 1

    def use_move_once(c, pool):
        battles, key, t = c

        def one(b):
            me = jax.tree.map(lambda x: x[0], b.actives)
            foe = jax.tree.map(lambda x: x[1], b.actives)
            state, me, foe, field = duel.use_move(b.prng, me, foe, jnp.int32(0), ~b.ended,
                                                  b.field, (jnp.bool_(False), jnp.bool_(False)))
            actives = jax.tree.map(lambda m, f: jnp.stack([m, f]), me, foe)
            return b._replace(prng=state, actives=actives, field=field)

        return jax.vmap(one)(battles), key, t + 1

    return {
        "policy": policy_only,
        "policy + step": policy_step,
        "env-step": bench._batched_step,
        "use_move x1": use_move_once,
    }


def profile(num_envs: int = 2048, repeats: int = REPEATS, progress: bool = True) -> dict:
    runs, compile_s = {}, {}
    for name, body in _variants().items():
        fn, carry0 = bench.sharded(body, num_envs)
        t0 = time.perf_counter()
        carry = jax.block_until_ready(fn(carry0, jnp.int32(1)))
        compile_s[name] = time.perf_counter() - t0
        runs[name] = [fn, carry]
        if progress:
            print(f"compiled {name}: {compile_s[name]:.1f} s", flush=True)
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, r in runs.items():
            t0 = time.perf_counter()
            r[1] = jax.block_until_ready(r[0](r[1], jnp.int32(STEPS)))
            best[name] = min(best[name], (time.perf_counter() - t0) / STEPS)
    ms = {name: 1e3 * t for name, t in best.items()}
    full = ms["env-step"]
    parts = [
        ("policy (random bits, legal mask, pick)", ms["policy"]),
        ("battle.step (engine)", ms["policy + step"] - ms["policy"]),
        ("  of which 2 x use_move (est. from use_move x1)", 2 * ms["use_move x1"]),
        ("auto-reset (pool window + select)", ms["env-step"] - ms["policy + step"]),
    ]
    return {
        "num_envs": num_envs, "devices": bench.shards(num_envs), "steps_per_call": STEPS, "repeats": repeats,
        "variants_ms_per_step": {k: round(v, 3) for k, v in ms.items()},
        "compile_s": {k: round(v, 2) for k, v in compile_s.items()},
        "env_steps_per_s": round(num_envs / (full / 1e3)),
        "parts": [{"part": p, "ms_per_step": round(v, 3), "share": round(v / full, 3)}
                  for p, v in parts],
    }


def render_markdown(r: dict) -> str:
    lines = [
        "# pokejax: where the time of an env-step goes",
        "",
        f"- batch: {r['num_envs']} battles over {r['devices']} device(s); best of "
        f"{r['repeats']} timed calls of {r['steps_per_call']} batched steps per variant",
        f"- env-step: {r['variants_ms_per_step']['env-step']:.2f} ms per batched step = "
        f"{r['env_steps_per_s']:,} env-steps/s",
        "",
        "| part | ms / batched step | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {p['part']} | {p['ms_per_step']:.2f} | {100 * p['share']:.0f}% |" for p in r["parts"]]
    lines += ["", "| variant | ms / step | compile s |", "|---|---:|---:|"]
    lines += [f"| {k} | {v:.2f} | {r['compile_s'][k]:.1f} |" for k, v in r["variants_ms_per_step"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pokejax.profile", description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=REPEATS)
    p.add_argument("--out", default="reports")
    args = p.parse_args(argv)
    r = profile(args.num_envs, args.repeats)
    out = Path(args.out) / "pokejax"
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile.json").write_text(json.dumps(r, indent=2) + "\n")
    (out / "profile.md").write_text(render_markdown(r))
    print(render_markdown(r))
    print(f"written to {out / 'profile.json'} (and profile.md)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
