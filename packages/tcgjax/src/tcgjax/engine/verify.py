"""L2 and L3 against the reference (shared by the tests and the EnvPort suites).

* ``l2``: reference states from random games, each loaded into the JAX engine with one legal
  action; every field of the result and the legal mask must equal the reference's.
* ``l3``: whole games in lockstep: the JAX state is only ever produced by JAX ``step`` (never
  reloaded), the same seeded random chooser picks for both engines from the reference's legal
  actions, and after every action every field and the legal mask must be equal.

Both run in fixed batches (``batch``) so one compiled ``jit(vmap(step))`` serves every call.
"""

from __future__ import annotations

import random
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from ..reference import actions as A
from ..reference import get_deck, legal_actions, new_game, step
from ..reference import legal_mask as ref_mask
from ..reference.arrays import FIELDS, to_arrays
from .legal import legal_mask
from .state import stack_states
from .step import select_rows, step_batch
from .step import step as jax_step

BATCH = 64


def compiled(batched: bool = False):
    """(batched step, batched legal mask), jitted; the step is ``vmap(step)``, or with
    ``batched`` the batch-level ``step_batch`` (the same results, checked the same way)."""
    return jax.jit(step_batch if batched else jax.vmap(jax_step)), jax.jit(jax.vmap(legal_mask))


def pairings(n_games: int, offset: int = 0) -> list[tuple[int, int]]:
    """Deck pairings cycling through all 15 x 15."""
    return [((g // 15) % 15, g % 15) for g in range(offset, offset + n_games)]


def _row(batch: dict, i: int) -> dict:
    return {k: v[i] for k, v in batch.items()}


def _diff(a: dict, b: dict) -> list[str]:
    return [k for k in FIELDS if not np.array_equal(np.asarray(a[k]), np.asarray(b[k]))]


def sample_transitions(n_games: int, seed: int = 0):
    """(pre-state arrays, actions, post-state arrays, post masks, labels) from random games."""
    rnd = random.Random(seed)
    pre, acts, post, masks, labels = [], [], [], [], []
    for g, (a, b) in enumerate(pairings(n_games, seed)):
        st = new_game(get_deck(a), get_deck(b), seed=seed * 100003 + g, log_enabled=False)
        while not st.done:
            act = rnd.choice(legal_actions(st))
            pre.append(to_arrays(st))
            acts.append(act)
            labels.append(A.describe(act).split("(")[0])
            step(st, act)
            post.append(to_arrays(st))
            masks.append(ref_mask(st))
    return pre, acts, post, masks, labels


def l2(n_games: int, seed: int = 0, fns=None, batch: int = BATCH) -> dict:
    """L2 over the transitions of ``n_games`` random reference games. Returns a report:
    ``states``, ``mismatches`` (list of (index, action, fields)), ``actions`` (Counter)."""
    step_b, mask_b = fns or compiled()
    pre, acts, post, masks, labels = sample_transitions(n_games, seed)
    bad = []
    for lo in range(0, len(pre), batch):
        idx = list(range(lo, min(lo + batch, len(pre))))
        pad = idx + [idx[-1]] * (batch - len(idx))
        out = step_b(stack_states([pre[i] for i in pad]), jnp.asarray([acts[i] for i in pad]))
        m = np.asarray(mask_b(out))
        out = {k: np.asarray(v) for k, v in out.items()}
        for j, i in enumerate(idx):
            d = _diff(_row(out, j), post[i])
            if not np.array_equal(m[j], masks[i]):
                d.append("legal_mask")
            if d:
                bad.append((i, A.describe(acts[i]), d))
    return {"states": len(pre), "mismatches": bad, "actions": Counter(labels)}


def l3(n_games: int, seed: int = 0, fns=None, batch: int = BATCH) -> dict:
    """L3: ``n_games`` full games in lockstep, ``batch`` at a time. Returns a report: ``games``,
    ``actions``, ``mismatches`` (game, action number, fields), ``winners`` and ``turns`` equal."""
    step_b, mask_b = fns or compiled()
    games = pairings(n_games, seed)
    bad, n_actions = [], 0
    for lo in range(0, n_games, batch):
        chunk = list(range(lo, min(lo + batch, n_games)))
        refs = []
        for g in chunk:
            a, b = games[g]
            refs.append(new_game(get_deck(a), get_deck(b), seed=seed * 7919 + g, log_enabled=False))
        choosers = [random.Random(seed * 31 + g) for g in chunk]
        pad = chunk + [chunk[-1]] * (batch - len(chunk))
        js = stack_states([to_arrays(refs[chunk.index(g)]) for g in pad])
        live = [True] * len(chunk)
        t = 0
        while any(live):
            acts = np.zeros(batch, np.int32)
            for j, st in enumerate(refs):
                if live[j]:
                    acts[j] = choosers[j].choice(legal_actions(st))
                    step(st, int(acts[j]))
                    n_actions += 1
            new = step_b(js, jnp.asarray(acts))
            keep = jnp.asarray(np.array(live + [False] * (batch - len(chunk))))
            js = select_rows(keep, new, js)
            out = {k: np.asarray(v) for k, v in js.items()}
            m = np.asarray(mask_b(js))
            t += 1
            for j, st in enumerate(refs):
                if not live[j]:
                    continue
                d = _diff(_row(out, j), to_arrays(st))
                if not np.array_equal(m[j], ref_mask(st)):
                    d.append("legal_mask")
                if d:
                    bad.append((chunk[j], t, d))
                    live[j] = False  # one report per game; the rest would cascade
                elif st.done:
                    live[j] = False
    return {"games": n_games, "actions": n_actions, "mismatches": bad}
