"""Player choices: 9 actions per player, their legal mask and Showdown's choice strings.

Actions 0-3 are "move 1".."move 4" and 4-8 are "switch 2".."switch 6" (Showdown numbers team
slots in the side's *current* order, active first). Forced situations map onto the same ids:
Struggle and Recharge appear in Showdown's request as the only move, so action 0 is the one
legal action; a forced switch allows only switches; a side that must wait (``wait`` in its
request) has no legal action and passes.
"""

from __future__ import annotations

import numpy as np

NUM_ACTIONS = 9
MOVE_ACTIONS = range(0, 4)
SWITCH_ACTIONS = range(4, 9)


def legal_mask(request: dict | None) -> np.ndarray:
    """bool[9] from a Showdown request (all False when the side has nothing to choose)."""
    mask = np.zeros(NUM_ACTIONS, bool)
    if not request or request.get("wait"):
        return mask
    side = request["side"]["pokemon"]
    force_switch = bool(request.get("forceSwitch")) and any(request["forceSwitch"])
    active = (request.get("active") or [None])[0]
    trapped = bool(active and (active.get("trapped") or active.get("maybeTrapped")))
    if not force_switch and active is not None:
        for i, move in enumerate(active["moves"][:4]):
            mask[i] = not move.get("disabled", False)
    if not trapped or force_switch:
        for slot in range(1, min(len(side), 6)):
            mon = side[slot]
            mask[4 + slot - 1] = not mon["active"] and not mon["condition"].endswith(" fnt")
    return mask


def choice_string(action: int) -> str:
    action = int(action)
    if action in MOVE_ACTIONS:
        return f"move {action + 1}"
    if action in SWITCH_ACTIONS:
        return f"switch {action - 2}"
    raise ValueError(f"action must be in 0..{NUM_ACTIONS - 1}, got {action}")


def needs_choice(request: dict | None) -> bool:
    return bool(request) and not request.get("wait")
