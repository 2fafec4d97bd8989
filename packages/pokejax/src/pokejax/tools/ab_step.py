"""A/B timing of the engine step alone: ``python -m pokejax.tools.ab_step BASE_SRC [--batch N]``.

``BASE_SRC`` is a copy of an earlier ``pokejax`` source tree (the folder that holds the
``pokejax`` package, e.g. from ``git archive <rev> packages/pokejax/src | tar -x -C /tmp/base``).
Both versions are imported into one process (the base first, its modules then moved out of
``sys.modules``), each gets the same mid-battle states (the base's benchmark step played
``--warm`` times from the start pool) and the same legal actions, and ``jit(vmap(step))`` of
each is timed in interleaved rounds (A, B, B, A, ...): on a shared, noisy machine the median
of the per-round times compares the two under the same load. Compile is timed apart. Also
prints the number of fusions in each compiled module (where the step's kernels come from).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time

import jax
import jax.numpy as jnp


def _import_pokejax(src: str | None):
    for name in [m for m in sys.modules if m == "pokejax" or m.startswith("pokejax.")]:
        del sys.modules[name]
    if src is not None:
        sys.path.insert(0, src)
    try:
        mods = {n: importlib.import_module(f"pokejax.{n}") for n in ("battle", "bench", "legal")}
    finally:
        if src is not None:
            sys.path.remove(src)
    mods["all"] = {}
    for name in [m for m in sys.modules if m == "pokejax" or m.startswith("pokejax.")]:
        mods["all"][name] = sys.modules.pop(name)
    return mods


def _convert(x, modules):
    """``x`` with each NamedTuple rebuilt as the same-named class of ``modules`` (the other
    version's classes are different types to JAX's pytrees)."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        cls = getattr(modules[type(x).__module__], type(x).__name__)
        return cls(*(_convert(v, modules) for v in x))
    return x


def _fusions(compiled_text: str) -> int:
    return sum(
        1
        for line in compiled_text.splitlines()
        if line.lstrip().startswith(("%fused", "fused_computation")) and "{" in line
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base_src")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=5, help="steps per timed call")
    ap.add_argument("--warm", type=int, default=40, help="benchmark steps before the states")
    args = ap.parse_args(argv)

    base = _import_pokejax(args.base_src)
    new = _import_pokejax(None)
    bench = base["bench"]
    n = args.batch
    run, carry = bench.sharded(bench._batched_step, n, max_devices=1)
    carry = jax.block_until_ready(run(carry, jnp.int32(args.warm)))
    battles = jax.tree.map(lambda x: x[0], carry[0])
    bits = jax.random.bits(jax.random.PRNGKey(7), (n, 2), jnp.uint32)
    actions = jax.block_until_ready(bench.random_legal_actions(battles, bits))
    print(
        f"batch {n}: {int(jnp.sum(battles.ended))} ended, "
        f"{int(jnp.sum(jnp.any(battles.forced, axis=1)))} forced",
        flush=True,
    )

    fns = {}
    for tag, mods in (("A (base)", base), ("B (new)", new)):
        # through the version's own canonical layout, so each gets its own storage (dtypes)
        b = _convert(battles, mods["all"])
        b = type(b).from_view(b.view())
        t0 = time.perf_counter()
        lowered = jax.jit(jax.vmap(mods["battle"].step)).lower(b, actions)
        compiled = lowered.compile()
        comp_s = time.perf_counter() - t0
        out = jax.block_until_ready(compiled(b, actions))
        fns[tag] = (compiled, b, out)
        print(f"{tag}: compile {comp_s:.1f} s, {_fusions(compiled.as_text())} fusions", flush=True)
    (ca, ba, oa), (cb, bb, ob) = fns["A (base)"], fns["B (new)"]
    same = all(
        bool(jnp.array_equal(x, y))
        for x, y in zip(jax.tree.leaves(oa), jax.tree.leaves(ob), strict=True)
    )
    print("outputs bit-identical:", same, flush=True)

    def timed(c, b):
        t0 = time.perf_counter()
        for _ in range(args.calls):
            jax.block_until_ready(c(b, actions))
        return (time.perf_counter() - t0) / args.calls * 1e3

    ta, tb = [], []
    for r in range(args.rounds):
        order = ((ca, ba, ta), (cb, bb, tb)) if r % 2 == 0 else ((cb, bb, tb), (ca, ba, ta))
        for c, b, acc in order:
            acc.append(timed(c, b))
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(
        f"A {ma:.2f} ms/step (min {min(ta):.2f}), B {mb:.2f} ms/step (min {min(tb):.2f}), "
        f"B/A {mb / ma:.3f}; per-round B/A median "
        f"{statistics.median(b / a for a, b in zip(ta, tb, strict=True)):.3f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
