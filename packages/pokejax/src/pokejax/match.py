"""Greedy vs random on both engines: the evaluators of the heuristic-vs-random L4 suite.

One battle: ``opponents.greedy_policy``'s heuristic against a player choosing uniformly among
its legal actions; greedy plays p1 in even-numbered battles and p2 in odd ones. It is played
until it ends by the game's rules (Showdown ties it at the latest after turn 1000, and so does
the engine, ``battle.TURN_LIMIT``). Its score: win 1, tie 0.5, loss 0. A battle that has not
ended after ``MAX_DECISIONS`` decisions is no tie: it is an error (:class:`UnfinishedBattle`),
never half a point, on either side.

* Reference (``showdown_match``): pokemon-showdown itself, every battle played inside Node by
  the driver's ``match`` command (no round trip per turn). The greedy player there is a
  transliteration of ``opponents.expected_damage`` (driver.js ``greedyScores``) fed with the
  same numbers (``greedy_table``: the move table, the float32 type-multiplier matrix) and
  reproducing its float32 arithmetic with ``Math.fround``; it reads the live battle (its
  active's move slots, ``getTypes()``, ``modifiedStats`` and level, the foe's active's), the
  legal actions from Showdown's own request. ``tests/test_match.py`` checks that it makes the
  JAX policy's choice at every decision of whole battles. Teams come from Showdown's
  ``gen1randombattle`` generator; a chooser PRNG (Showdown's) draws the generator's seed, every
  battle seed and every random choice. Played in chunks of ``chunk`` battles, chunk ``c``
  seeded ``chunk_seed(seed, c)``.
* Candidate (``jax_match``): the JAX engine alone. Battle ``i`` of run ``seed`` starts from
  ``env.new_state`` (two ``teams.sample_team`` teams, a random battle seed,
  ``start.new_battle``) keyed ``fold_in(PRNGKey(seed), i)``; ``opponents.greedy_policy`` and
  ``opponents.random_policy`` choose, ``battle.step`` plays, all under one
  ``jit(while_loop(vmap(...)))`` per batch of ``batch`` battles that runs until every battle
  of the batch ended (or ``MAX_DECISIONS`` loops passed). A battle's play does not depend on the batch
  it ran in (its keys depend on its index and decision number only).

``LAST`` keeps the last run of each backend (scores, turn counts, seconds) for the suite's
note.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.errors import EnvportError
from pokejax import battle, codec, env, opponents, reference
from pokejax.duel import move_table
from pokejax.showdown import Showdown

FORMAT = reference.FORMAT
# a safety bound, not a rule: every battle ends by turn TURN_LIMIT + 1, each turn is at most
# three decisions (a move, then forced switches on each side in turn)
MAX_DECISIONS = 3 * (battle.TURN_LIMIT + 1)
CHUNK = 500  # battles per `match` request
BATCH = 1000  # battles per JAX batch (one compile per batch size)

Progress = Callable[[int], None]


class MatchResult(NamedTuple):
    scores: np.ndarray  # float64[battles]: greedy's result (1 win, 0.5 tie, 0 loss)
    turns: np.ndarray  # int64[battles]: the battle's turn when it ended
    seconds: float  # wall time, compile included for JAX


class UnfinishedBattle(EnvportError, RuntimeError):
    """A battle that did not end within the decisions every battle ends in."""


def check_finished(backend: str, ended: np.ndarray, turns: np.ndarray, first: int = 0,
                   bound: int = MAX_DECISIONS) -> None:
    """Raise :class:`UnfinishedBattle` naming the first battle that did not end."""
    open_ = np.flatnonzero(~np.asarray(ended, bool))
    if open_.size:
        i = int(open_[0])
        raise UnfinishedBattle(
            f"{backend}: {open_.size} battle(s) did not end within {bound} decisions "
            f"(first: battle {first + i}, at turn {int(turns[i])}); an unfinished battle is not "
            "a tie: every battle ends by the game's rules")


LAST: dict[str, MatchResult] = {}


def _noop(_: int) -> None:
    pass


# -- reference: Showdown ---------------------------------------------------------------------------
@functools.cache
def greedy_table() -> dict:
    """The numbers the JAX heuristic uses, for the driver's ``greedytable`` command."""
    t = move_table()
    # the accuracy factor as JAX computes it in expected_damage (XLA turns the division by the
    # constant 100 into a multiplication by float32(0.01): 85 -> 0.84999996, not 0.85)
    acc = np.asarray(jax.jit(lambda a: jnp.minimum(a, 100) / 100.0)(jnp.asarray(t.accuracy)))
    moves = {mid: [int(t.type[i]), bool(t.physical[i]), int(t.base_power[i]), float(acc[i]),
                   int(t.fixed_damage[i])] for i, mid in enumerate(codec.MOVES)}
    return {"types": list(codec.TYPES), "mult": opponents.type_multipliers().tolist(), "moves": moves}


def load_greedy(sd: Showdown) -> None:
    sd.request("greedytable", **greedy_table())


def chunk_seed(seed: int, chunk: int) -> list[int]:
    """The chooser seed (four 16-bit words) of chunk ``chunk`` of run ``seed``."""
    return np.random.default_rng([seed, chunk, 4]).integers(0, 0x10000, size=4).tolist()


def showdown_match(battles: int, seed: int, progress: Progress | None = None,
                   chunk: int = CHUNK, max_decisions: int = MAX_DECISIONS,
                   sd: Showdown | None = None) -> MatchResult:
    """``battles`` greedy-vs-random battles in Showdown (one Node process, see the module doc)."""
    progress = progress or _noop
    if chunk % 2:
        raise ValueError(f"chunk must be even (greedy alternates sides), got {chunk}")
    own = sd is None
    sd = sd or Showdown()
    scores, turns = [], []
    t0 = time.perf_counter()
    try:
        load_greedy(sd)
        for c, first in enumerate(range(0, battles, chunk)):
            n = min(chunk, battles - first)
            res = sd.request("match", format=FORMAT, seed=chunk_seed(seed, c), battles=n,
                             maxDecisions=max_decisions, first=first)
            check_finished("showdown", res["ended"], res["turns"], first, max_decisions)
            scores += res["scores"]
            turns += res["turns"]
            progress(n)
    finally:
        if own:
            sd.close()
    out = MatchResult(np.asarray(scores, np.float64), np.asarray(turns, np.int64),
                      time.perf_counter() - t0)
    LAST["showdown"] = out
    return out


def showdown_scores(battles: int, seed: int, progress: Progress | None = None,
                    chunk: int = CHUNK) -> np.ndarray:
    """The reference evaluator: float64[battles] (see ``showdown_match``)."""
    return showdown_match(battles, seed, progress, chunk=chunk).scores


# -- candidate: JAX --------------------------------------------------------------------------------
def _choose(b: battle.Battle, key: jax.Array, greedy_side: jax.Array) -> jax.Array:
    """int32[2]: greedy for side ``greedy_side`` (-1: nobody), random for the other(s)."""
    k = jax.random.split(key, 4)
    g = jnp.stack([opponents.greedy_policy(k[0], b, 0), opponents.greedy_policy(k[1], b, 1)])
    r = jnp.stack([opponents.random_policy(k[2], b, 0), opponents.random_policy(k[3], b, 1)])
    return jnp.where(jnp.arange(2) == greedy_side, g, r).astype(jnp.int32)


@functools.cache
def _runner(batch: int, max_decisions: int):
    """jit(while_loop(vmap(policies + battle.step))) over ``batch`` battles: (battle keys
    [batch, 2], greedy side [batch] (-1: none), valid [batch]) -> (turn, ended, winner, loops),
    until every battle ended or ``max_decisions`` loops ran."""

    def live(b: battle.Battle) -> jax.Array:
        return ~b.ended

    def run(keys, greedy_side, valid):
        pairs = jax.vmap(jax.random.split)(keys)
        k_start, k_play = pairs[:, 0], pairs[:, 1]
        b = jax.vmap(lambda k: env.new_state(k).battle)(k_start)
        b = b._replace(ended=b.ended | ~valid)  # padding: already over

        def body(carry):
            b, i = carry
            step_keys = jax.vmap(jax.random.fold_in, (0, None))(k_play, i)
            acts = jax.vmap(_choose)(b, step_keys, greedy_side)
            nb = jax.vmap(battle.step)(b, acts)
            go = live(b)
            b = jax.tree.map(lambda x, y: jnp.where(go.reshape(go.shape + (1,) * (x.ndim - 1)), x, y),
                             nb, b)
            return b, i + 1

        b, loops = jax.lax.while_loop(
            lambda c: jnp.any(live(c[0])) & (c[1] < max_decisions), body, (b, jnp.int32(0)))
        return b.turn, b.ended, b.winner, loops

    return jax.jit(run)


def battle_keys(seed: int, first: int, n: int) -> jax.Array:
    """The keys of battles ``first .. first + n - 1`` of run ``seed``."""
    base = jax.random.PRNGKey(seed)
    return jax.vmap(jax.random.fold_in, (None, 0))(base, jnp.arange(first, first + n, dtype=jnp.uint32))


def jax_match(battles: int, seed: int, progress: Progress | None = None, batch: int = BATCH,
              max_decisions: int = MAX_DECISIONS, policy: str = "greedy") -> MatchResult:
    """``battles`` greedy-vs-random battles in JAX (see the module doc). ``policy="random"``
    replaces greedy by the random player (both sides random; the score is still that of the
    side greedy would have played): a planted difference for tests."""
    if policy not in ("greedy", "random"):
        raise ValueError(f"policy must be 'greedy' or 'random', got {policy!r}")
    progress = progress or _noop
    batch = max(1, min(batch, battles))
    run = _runner(batch, max_decisions)
    scores, turns = [], []
    t0 = time.perf_counter()
    for first in range(0, battles, batch):
        n = min(batch, battles - first)
        idx = np.arange(first, first + batch)
        side = (idx % 2).astype(np.int32)  # the side whose result is scored
        valid = np.arange(batch) < n
        keys = battle_keys(seed, first, batch)
        gside = side if policy == "greedy" else np.full(batch, -1, np.int32)
        turn, ended, winner, _ = jax.device_get(run(keys, jnp.asarray(gside), jnp.asarray(valid)))
        check_finished("jax", ended[:n], turn[:n], first, max_decisions)
        won = ended & (winner == side + 1)
        lost = ended & (winner == 2 - side)
        scores.append(np.where(won, 1.0, np.where(lost, 0.0, 0.5))[:n])
        turns.append(np.asarray(turn, np.int64)[:n])
        progress(n)
    out = MatchResult(np.concatenate(scores).astype(np.float64), np.concatenate(turns),
                      time.perf_counter() - t0)
    LAST["jax"] = out
    return out


def jax_scores(battles: int, seed: int, progress: Progress | None = None,
               batch: int = BATCH) -> np.ndarray:
    """The candidate evaluator: float64[battles] (see ``jax_match``)."""
    return jax_match(battles, seed, progress, batch=batch).scores


def summary() -> str:
    """Win rates, mean turns and wall times of the last run of each backend."""
    parts = []
    for name, r in LAST.items():
        parts.append(f"{name}: {len(r.scores)} battles, greedy score {r.scores.mean():.4f}, "
                     f"mean turns {r.turns.mean():.2f}, {r.seconds:.1f} s")
    return "; ".join(parts)
