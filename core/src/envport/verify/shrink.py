"""Shrink a diverging action sequence to a small regression case.

Both backends are deterministic given the seed and the actions, and step ``t`` only depends
on actions ``0..t``; so the prefix ending at the first divergence is already the shortest
*prefix*. We then try to make the case simpler to read: replace chunks of actions by a
neutral one (delta-debugging style) while the replay still diverges, re-cutting the prefix
at the (possibly earlier) first divergence after each success.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# replay(actions) -> index of the first diverging step, or None if the replay matches
Replay = Callable[[np.ndarray], int | None]


@dataclass
class ShrinkResult:
    actions: np.ndarray  # the shortest diverging prefix found, shape (T, ...)
    diverges_at: int  # its last step, where the first divergence shows
    replays: int  # how many replays the search used
    simplified: int  # actions replaced by the neutral one


def shrink(actions: np.ndarray, replay: Replay, neutral: np.ndarray | None = None,
           max_replays: int = 64) -> ShrinkResult:
    first = replay(actions)
    if first is None:
        raise ValueError("the given action sequence does not diverge")
    best = np.array(actions[: first + 1])
    replays, simplified = 1, 0
    if neutral is None:
        return ShrinkResult(best, first, replays, 0)
    chunk = max(1, len(best) // 2)
    while chunk >= 1 and replays < max_replays:
        start = 0
        while start < len(best) and replays < max_replays:
            trial = best.copy()
            trial[start: start + chunk] = neutral
            if np.array_equal(trial, best):
                start += chunk
                continue
            replays += 1
            at = replay(trial)
            if at is not None:
                changed = int(np.sum(np.any((trial != best).reshape(len(best), -1), axis=1)))
                simplified += changed
                best = trial[: at + 1]
            else:
                start += chunk
        chunk //= 2
    return ShrinkResult(best, len(best) - 1, replays, simplified)
