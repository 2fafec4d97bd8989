#!/usr/bin/env python3
"""Tabulate where Showdown draws random numbers in gen1randombattle: play seeded random
battles with the driver's draw trace on and count each (function, caller) site.

The JAX engine must make the same draws in the same order, including draws that have no game
meaning (speed-tie shuffles of event handlers); this table is the map.
Usage: python -m pokejax.tools.draw_sites [--battles 100] [--out reports/pokejax/draw_sites.md]
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np

from pokejax import choices, reference
from pokejax.showdown import Showdown


def site_key(draw: dict) -> str:
    names = [s.split(" (")[0] for s in draw["sites"]]
    location = draw["sites"][1].split(" (")[-1].rstrip(")") if len(draw["sites"]) > 1 else ""
    return " <- ".join(names[:3]) + f"  [{location}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("reports/pokejax/draw_sites.md"))
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    args_seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    turns = draws = 0
    with Showdown() as sd:
        for i in range(args.battles):
            seeds = reference.derive_seeds(2024, i)
            p1 = sd.request("team", format=reference.FORMAT, seed=seeds["p1"])["packed"]
            p2 = sd.request("team", format=reference.FORMAT, seed=seeds["p2"])["packed"]
            st = sd.request("start", format=reference.FORMAT, seed=seeds["battle"], p1team=p1,
                            p2team=p2, trace=True)
            battle, state, rng = st["battle"], st["state"], np.random.default_rng(i)
            while not state["ended"] and state["turn"] < 500:
                r1, r2 = reference.sides_requests(state)
                a1, a2 = reference.choose_random(rng, r1), reference.choose_random(rng, r2)
                res = sd.request("choose", battle=battle,
                                 p1=None if a1 is None else choices.choice_string(a1),
                                 p2=None if a2 is None else choices.choice_string(a2))
                state = res["state"]
                for d in res["draws"]:
                    key = site_key(d)
                    counts[key] += 1
                    args_seen[key][(d["from"], d["to"])] += 1
                    draws += 1
            turns += state["turn"]
            sd.request("close", battle=battle)
    lines = [f"# Showdown PRNG draw sites (gen1randombattle, {args.battles} random battles, "
             f"{turns} turns, {draws} draws)", "",
             "| count | site (callee <- caller <- ...) [file:line] | arguments (from, to): count |",
             "|---:|---|---|"]
    for key, n in counts.most_common():
        shown = ", ".join(f"{a}: {c}" for a, c in args_seen[key].most_common(4))
        lines.append(f"| {n} | `{key}` | {shown} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:40]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
