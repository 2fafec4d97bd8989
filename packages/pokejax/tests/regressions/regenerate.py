"""Record the whole-battle L3 divergences found during development as regression battles.

Each entry names a run seed and a battle of ``tests/test_battle.py``'s harness (battle
``derive_seeds(run, i)``, choices from ``numpy.random.default_rng(run)`` shared across the
run's battles); this script replays the run up to that battle on Showdown and stores the
battle's seeds and its full choice sequence in
``packages/pokejax/tests/regressions/battles.json``, which ``test_battle`` replays on both
engines. Usage: ``python packages/pokejax/tests/regressions/regenerate.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pokejax import choices, reference
from pokejax.showdown import Showdown

OUT = Path(__file__).resolve().parent / "battles.json"  # beside this script
FORMAT = reference.FORMAT
# (run seed, battle seed, what the engine got wrong there)
FOUND = [
    (44, [61500, 25145, 32054, 49377], "both sides forced to switch: instaswitch order"),
    (45, [14042, 29626, 14459, 30721], "switch-in burn faints the incoming Pokemon: the foe's switch is cancelled"),
]


def record(sd: Showdown, run: int, battle_seed: list[int], max_turns: int = 300) -> dict:
    rng = np.random.default_rng(run)
    for i in range(10_000):
        seeds = reference.derive_seeds(run, i)
        teams = [sd.request("team", format=FORMAT, seed=seeds[p])["packed"] for p in ("p1", "p2")]
        st = sd.request("start", format=FORMAT, seed=seeds["battle"], p1team=teams[0], p2team=teams[1])
        handle, state, actions = st["battle"], st["state"], []
        while not state["ended"] and state["turn"] <= max_turns:
            acts = [reference.choose_random(rng, side["request"]) for side in state["sides"]]
            state = sd.request("choose", battle=handle,
                               p1=None if acts[0] is None else choices.choice_string(acts[0]),
                               p2=None if acts[1] is None else choices.choice_string(acts[1]))["state"]
            actions.append(acts)
        sd.request("close", battle=handle)
        if seeds["battle"] == battle_seed:
            return {"seeds": seeds, "actions": actions, "turns": state["turn"]}
    raise RuntimeError(f"battle {battle_seed} not found in run {run}")


def main() -> None:
    with Showdown() as sd:
        out = [{"run": run, "why": why, **record(sd, run, seed)} for run, seed, why in FOUND]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(out)} battles to {OUT}")


if __name__ == "__main__":
    main()
