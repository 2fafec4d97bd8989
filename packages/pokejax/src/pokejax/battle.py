"""A whole Gen 1 singles battle: two teams of up to six, switching, faints and forced switches.

State (``Battle``): both teams in Showdown's *current* order — slot 0 is the active Pokémon and
a switch swaps slot 0 with the incoming slot, exactly as ``BattleActions.switchIn`` reorders
``side.pokemon``, so "switch k" means the same slot on both engines and L2 can load an
exported state slot for slot. Stored as two ``duel.Fighter`` records: ``actives`` (leaves
``[side, ...]``, slot 0) and ``bench`` (leaves ``[side, 5, ...]``, slots 1-5); ``Battle.team``
is the joined ``[side, 6, ...]`` view. The split is for speed: a turn reads and writes the
two actives, and touches the bench only through a switch's one-hot select, so a step no
longer rewrites all twelve records (on XLA:CPU that rewrite was a large part of the step).

A step (``step``) is one decision point of Showdown's request loop:
- normal turn (no side is forced): both sides' actions (0-3 move slot, 4-8 "switch 2..6")
  go through the queue as ``Battle.turnLoop`` runs them for Gen 1 — ``beforeTurn``, switches
  (order 103, each followed by its ``runSwitch``), moves by priority then Speed (ties drawn),
  ``residual`` — with ``eachEvent('Update')``'s speed-tie draw after every action;
- forced switch (an active fainted and its side has Pokémon left): only the forced sides act,
  with a switch; the turn then ends.
A faint skips the rest of the turn (Gen 1 ``faintMessages`` clears the queue): no residual,
so e.g. a flinch inflicted that turn stays.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import prng as P
from pokejax.codec import STATUSES, TYPES
from pokejax.duel import (
    BRN,
    FRZ,
    PSN,
    SLP,
    TRANSFORM,
    Field,
    Fighter,
    commit,
    new_field,
    switched_out,
    use_move,
)

FNT = STATUSES.index("fnt")
# Fighter fields that Showdown keeps on the side (a switch hands them to the incoming record)
SIDE_FIELDS = ("sel_move", "enemy_sel", "last_used")
FIRST_SWITCH = 4  # action 4 = "switch 2" (team slot 1)
ORDER_SWITCH, ORDER_MOVE = 103, 200  # BattleQueue action orders
TURN_LIMIT = 1000  # Battle.maybeTriggerEndlessBattleClause: a tie once turn > 1000
GHOST = TYPES.index("Ghost")


class Battle(NamedTuple):
    actives: Fighter  # leaves [2, ...]: each side's slot 0, the active Pokémon
    bench: Fighter  # leaves [2, 5, ...]: slots 1-5
    prng: P.PrngState
    field: Field
    turn: jax.Array  # Showdown's battle.turn
    forced: jax.Array  # bool[2]: the side must switch in for a fainted active
    ended: jax.Array
    winner: jax.Array  # 0 none / tie, 1 p1, 2 p2

    @property
    def team(self) -> Fighter:
        """Both teams as one record, leaves [..., 2, 6, ...] (slot 0 active) — for the readers
        outside the turn loop (observations, L2 diffs); batched or not."""
        return join(self.actives, self.bench, axis=jnp.ndim(self.turn) + 1)

    def view(self) -> dict:
        """The battle's fields with the two teams joined (``team`` first): the layout the
        canonical state, L2 loading and the diffs name ("team.hp", "prng.hi", "turn", ...)."""
        rest = {k: getattr(self, k) for k in self._fields if k not in ("actives", "bench")}
        return {"team": self.team, **rest}

    @classmethod
    def from_view(cls, view: dict) -> Battle:
        axis = jnp.ndim(view["turn"]) + 1
        actives, bench = split(view["team"], axis)
        return cls(actives=actives, bench=bench,
                   **{k: v for k, v in view.items() if k != "team"})


def with_team(b: Battle, team: Fighter) -> Battle:
    """``b`` with both teams replaced by ``team`` (the joined [..., 2, 6, ...] layout)."""
    actives, bench = split(team, jnp.ndim(b.turn) + 1)
    return b._replace(actives=actives, bench=bench)


def join(actives: Fighter, bench: Fighter, axis: int = 1) -> Fighter:
    """[..., 2, ...] actives + [..., 2, 5, ...] bench -> [..., 2, 6, ...] (slot axis ``axis``)."""
    xp = lambda x: np if isinstance(x, np.ndarray | np.generic) else jnp  # noqa: E731
    return jax.tree.map(
        lambda a, b: xp(b).concatenate([xp(a).expand_dims(a, axis), b], axis=axis), actives, bench)


def split(team: Fighter, axis: int = 1) -> tuple[Fighter, Fighter]:
    """The inverse of ``join``: (slot 0, slots 1-5) along the slot axis ``axis``; the bench's
    integer leaves stored as ``BENCH_INT``."""
    first = jax.tree.map(lambda x: x.take(0, axis=axis), team)
    rest = jax.tree.map(lambda x: _narrow(x[(slice(None),) * axis + (slice(1, None),)]), team)
    return first, rest


#: The bench's integer leaves are stored as int16 (every field of a benched record is below
#: 1,000): a switch rewrites the bench and an auto-reset selects it, so half the bytes there
#: (the step's bytes accessed: 29.7 -> 25.5 MB per 1,024 battles). The turn computes in int32
#: (``_incoming`` widens what it takes).
BENCH_INT = np.int16


def _narrow(x):
    if x.dtype == np.int32:
        return x.astype(BENCH_INT)
    return x


def active(team: Fighter, side) -> Fighter:
    return jax.tree.map(lambda x: x[side, 0], team)


# Reads and writes at traced indices go through one-hot masks: under vmap, XLA:CPU turns
# x[i] / x.at[i].set(v) with per-battle i into gathers and scatters that cost far more than
# the elementwise select over the two (or twelve) records.

def _onehot(shape, *index) -> jax.Array:
    mask = jnp.bool_(True)
    for axis, (n, i) in enumerate(zip(shape, index, strict=True)):
        line = jnp.arange(n) == i
        mask = mask & line.reshape((1,) * axis + (n,) + (1,) * (len(shape) - axis - 1))
    return mask


def _pick(x: jax.Array, mask: jax.Array, axes=None) -> jax.Array:
    """The entries of ``x`` where the one-hot ``mask`` (over ``x``'s leading axes) is set,
    summed over ``axes`` (default: every mask axis)."""
    m = mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    axes = tuple(range(mask.ndim)) if axes is None else axes
    return jnp.any(x & m, axis=axes) if x.dtype == bool else jnp.sum(jnp.where(m, x, 0), axis=axes)


def _place(x: jax.Array, mask: jax.Array, v) -> jax.Array:
    return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim)), v, x)


def _get(actives: Fighter, side) -> Fighter:
    mask = _onehot((2,), side)
    return jax.tree.map(lambda x: _pick(x, mask), actives)


def _put(actives: Fighter, side, f: Fighter, read: Fighter | None = None) -> Fighter:
    """``f`` written as ``side``'s active. With ``read`` (the record ``_get`` gave), a leaf of
    ``f`` that is still ``read``'s very value is left as it is: writing it back would be a
    select per leaf that XLA cannot see is a no-op."""
    mask = _onehot((2,), side)
    keep = (lambda k: getattr(f, k) is getattr(read, k)) if read is not None else (lambda k: False)
    return actives._replace(**{k: _place(getattr(actives, k), mask, getattr(f, k))
                               for k in Fighter._fields if not keep(k)})


def _tie_draw(state: P.PrngState, actives: Fighter, go) -> P.PrngState:
    """``eachEvent('Update')``: ``speedSort`` of the non-fainted actives by ``pokemon.speed``
    — one ``random(0, 2)`` when there are two and their speeds are equal."""
    drawn, _ = P.random_below(state, 2)
    tie = (actives.hp[0] > 0) & (actives.hp[1] > 0) & (actives.speed[0] == actives.speed[1])
    return P.select(go & tie, drawn, state)


#: Fields a benched record always holds at their cleared value (``duel.switched_out``: stages,
#: volatiles, Transform, Substitute, a charged move, lastMove): every record is cleared as it
#: leaves the field or faints, and starts cleared. The switch neither reads nor writes them in
#: the bench (equal values; ``tests/test_battle.py`` checks the invariant along battles).
BENCH_CLEARED = ("boosts", "confused", "confusion_time", "flinched", "must_recharge", "volatiles",
                 "transformed", "sub_hp", "twoturn", "last_move")


def _incoming(bench: Fighter, actives: Fighter, slots) -> Fighter:
    """The records each side would switch in from team slot ``slots[side]``: ``pokemon.speed``
    refreshed (``insertChoice`` of its ``runSwitch``), the side's ``lastSelectedMoveSlot`` 0
    (Gen 1 ``runSwitch``) and the side's selections handed over (they belong to the side)."""
    mask = jnp.arange(1, 6)[None, :] == slots[:, None]  # bool[2, 5]: both sides at once
    new = Fighter(**{k: None if k in BENCH_CLEARED
                     else _pick(getattr(bench, k), mask, axes=1).astype(getattr(actives, k).dtype)
                     for k in Fighter._fields})
    cleared = jax.vmap(switched_out)(actives)  # constants there (zeros, -1): folded by XLA
    return new._replace(speed=new.modified[:, 4], last_slot=jnp.zeros(2, jnp.int32),
                        **{k: getattr(cleared, k) for k in BENCH_CLEARED},
                        **{k: getattr(actives, k) for k in SIDE_FIELDS})


def _swap_out(bench: Fighter, outgoing: Fighter, slots, switched) -> Fighter:
    """``switchIn``'s effect on the teams: each side that ``switched`` puts its old active,
    cleared (a fainted one also loses its status), in team slot ``slots[side]`` (Showdown
    swaps the two positions; the incoming record is the new active)."""
    # a fainted one was cleared when it fainted and is not cleared again (Showdown's switchIn
    # only clears an unfainted active): it keeps those stats and loses its 'fnt' status
    fainted = outgoing.hp <= 0
    cleared = jax.tree.map(lambda o, c: jnp.where(fainted.reshape((2,) + (1,) * (o.ndim - 1)), o, c),
                           outgoing, jax.vmap(switched_out)(outgoing))
    cleared = cleared._replace(status=jnp.where(fainted, 0, cleared.status))
    # both sides in one select per leaf (slicing per side and stacking back cost ~1/3 of the
    # whole step on XLA:CPU)
    mask = (jnp.arange(1, 6)[None, :] == slots[:, None]) & switched[:, None]  # bool[2, 5]
    # the outgoing records (in the bench's dtypes) and the mask computed once: each leaf's
    # select over the five slots otherwise recomputed the clearing and the mask per element
    written = [k for k in Fighter._fields if k not in BENCH_CLEARED]
    mask, leaves = P.pin((mask, {k: getattr(cleared, k).astype(getattr(bench, k).dtype)
                                 for k in written}))
    return bench._replace(**{k: _place(getattr(bench, k), mask, leaves[k][:, None]) for k in written})


#: What the switch phase reads of the actives between the two switch-ins (Update's speed
#: tie, AfterSwitchInSelf, the faint check); the other leaves take the incoming records once,
#: after both switches (``_settle_switches``).
SWITCH_PHASE_READS = ("hp", "status", "maxhp", "speed")


def _switch_in(actives: Fighter, incoming: Fighter, side, go) -> Fighter:
    """The incoming record becomes ``side``'s active — its ``SWITCH_PHASE_READS`` leaves only;
    ``_settle_switches`` writes the rest."""
    mask = _onehot((2,), side) & go
    return actives._replace(**{k: _place(getattr(actives, k), mask, getattr(incoming, k))
                               for k in SWITCH_PHASE_READS})


def _settle_switches(actives: Fighter, incoming: Fighter, switched) -> Fighter:
    """The rest of each switched-in record, one select per leaf for both sides; Gen 1
    ``runSwitch`` clears every active's ``lastMove``."""
    rest = {k: _place(getattr(actives, k), switched, getattr(incoming, k))
            for k in Fighter._fields if k not in SWITCH_PHASE_READS}
    rest["last_move"] = jnp.where(jnp.any(switched), -1, rest["last_move"])
    return actives._replace(**rest)


def _after_switch_in_self(actives: Fighter, side, go) -> Fighter:
    """Gen 1 ``AfterSwitchInSelf``: a burned or poisoned Pokémon switched in (not to replace a
    fainted one) loses max(maxhp / 16, 1) HP."""
    # only HP changes: writing the whole record back (``_put``) re-selected every leaf of
    # both actives, ~5% of the step's memory traffic
    mask = _onehot((2,), side)
    hp, status = _pick(actives.hp, mask), _pick(actives.status, mask)
    hurt = go & ((status == BRN) | (status == PSN)) & (hp > 0)
    dmg = jnp.minimum(jnp.maximum(_pick(actives.maxhp, mask) // 16, 1), hp)
    return actives._replace(hp=_place(actives.hp, mask & hurt, hp - dmg))


def _bench_left(bench_hp: jax.Array) -> jax.Array:
    """bool[2]: the side has a non-fainted Pokémon besides its active (``bench_hp`` [2, 5])."""
    return jnp.any(bench_hp > 0, axis=1)


def _faints(b: Battle, bench_left, actives: Fighter, go) -> tuple[Battle, jax.Array]:
    """``faintMessages`` + ``checkFainted`` + ``checkWin`` after an action: the turn stops,
    sides with Pokémon left must switch, the battle may end. Returns (battle, bool[2] the
    actives that fainted now). Their records are cleared later, once per step
    (``_clear_fainted``): a faint stops the step, so nothing reads them before."""
    fainted = (actives.hp <= 0) & (actives.status != FNT) & go  # newly fainted
    left = (actives.hp > 0) | bench_left  # bool[2]: pokemonLeft
    any_faint = jnp.any(fainted)
    ended = any_faint & ~jnp.all(left)
    # computed once: they select the battle's scalars and (``_clear_fainted``) every leaf of
    # both records, and XLA:CPU otherwise fused their chain (both records' HP and status
    # after the move) into each of those selects (measured: ~0.82x the step at 1,024
    # battles, ~0.90x at 4,096)
    fainted, left, any_faint, ended = P.pin((fainted, left, any_faint, ended))
    winner = jnp.where(left[0] & ~left[1], 1, jnp.where(left[1] & ~left[0], 2, 0))
    b = b._replace(forced=jnp.where(any_faint, fainted & left & ~ended, b.forced),
                   ended=b.ended | ended, winner=jnp.where(ended, winner, b.winner))
    return b, fainted


def _clear_fainted(actives: Fighter, fainted, ended) -> Fighter:
    """The records of the actives that fainted this step, cleared (``switched_out``) and
    marked ``fnt`` — unless the faint ended the battle: ``checkWin`` returns before
    ``checkFainted``, so that one keeps its status. One select per leaf for the whole step
    (clearing after each action re-selected both records up to four times)."""
    gone = jax.vmap(switched_out)(actives)
    gone = gone._replace(status=jnp.where(ended, actives.status, FNT))
    return jax.tree.map(lambda a, g: _place(a, fainted, g), actives, gone)


def _queue_first(state, kind, speed, priority):
    """``BattleQueue.sort`` of the two sides' actions (order, priority, speed; a tie draws).
    Returns (prng, index of the side that acts first)."""
    order = jnp.where(kind == 1, ORDER_SWITCH, ORDER_MOVE)
    key0 = (order[0], -priority[0], -speed[0])
    key1 = (order[1], -priority[1], -speed[1])
    tie = (key0[0] == key1[0]) & (key0[1] == key1[1]) & (key0[2] == key1[2])
    one_first = (key1[0] < key0[0]) | ((key1[0] == key0[0]) & (
        (key1[1] < key0[1]) | ((key1[1] == key0[1]) & (key1[2] < key0[2]))))
    drawn, r = P.random_below(state, 2)
    state = P.select(tie, drawn, state)
    return state, jnp.where(tie, r == 1, one_first).astype(jnp.int32)


def _bench_clauses(bench: Fighter) -> jax.Array:
    """bool[2, 2]: per side, whether a benched Pokémon is asleep by a foe's move (not its own
    Rest) / frozen — what Sleep / Freeze Clause Mod look for besides the active."""
    asleep = (bench.hp > 0) & (bench.status == SLP) & ~bench.rest_sleep
    return jnp.stack([jnp.any(asleep, axis=1), jnp.any(bench.status == FRZ, axis=1)], axis=1)


def _clauses(bench_clauses, actives: Fighter, side) -> tuple[jax.Array, jax.Array]:
    """(Sleep Clause Mod, Freeze Clause Mod) block a new sleep / freeze on ``side``."""
    a = _get(actives, side)
    asleep = (a.hp > 0) & (a.status == SLP) & ~a.rest_sleep
    return bench_clauses[side, 0] | asleep, bench_clauses[side, 1] | (a.status == FRZ)


def _turn(b: Battle, actions) -> Battle:
    """One decision point: a normal turn, or (when a side is ``forced``) the forced switches
    that finish the current one. Both are the same queue walk with parts switched off."""
    bench, actives = b.bench, b.actives
    live = ~b.ended
    forced_mode = jnp.any(b.forced)
    normal = live & ~forced_mode
    switching = jnp.where(forced_mode, b.forced, actions >= FIRST_SWITCH) & live  # bool[2]
    # commitChoices: updateSpeed (non-fainted actives); Gen 1's locked selections
    # both sides in one vmap: the records stay [side, ...] under the battle's batch axis
    # (committing per side and stacking the two back laid them out side-major, [2, batch,
    # ...], and every later kernel that read them transposed them)
    committed, move_slots, prios = jax.vmap(commit)(actives, actions)  # Gen 1 locked selections, Struggle
    moving = normal & ~switching  # bool[2]
    actives = jax.tree.map(lambda c, f: f if c is f else _place(f, moving, c), committed, actives)
    prios = jnp.where(moving, prios, 0)
    # updateSpeed of the (non-fainted) actives
    actives = actives._replace(
        speed=jnp.where(live & (actives.hp > 0), actives.modified[:, 4], actives.speed))
    # BattleQueue.sort: switches (order 103) by the outgoing Pokémon's speed, then moves
    # (order 200) by priority and speed; a tie draws. A forced single switch sorts alone.
    state, first = _queue_first(b.prng, switching.astype(jnp.int32), actives.modified[:, 4],
                                prios)
    sorting = normal | (switching[0] & switching[1])
    state = P.select(sorting, state, b.prng)
    first = jnp.where(sorting, first, jnp.where(switching[0], 0, 1))
    state = _tie_draw(state, actives, normal)  # beforeTurn: eachEvent('BeforeTurn')
    state = _tie_draw(state, actives, normal)  # Update after the beforeTurn action
    state, first, switching, move_slots = P.pinned(state, first, switching, move_slots)
    b = b._replace(prng=state)

    # switches run before every move: first the switch phase, then the moves, so the team
    # slots are not carried through the move loop
    switch_slots = jnp.clip(actions - FIRST_SWITCH + 1, 1, 5)
    incoming, outgoing = _incoming(bench, actives, switch_slots), actives
    switched = jnp.zeros(2, bool)
    gone = jnp.zeros(2, bool)  # the actives that fainted this step (``_clear_fainted``)
    # A forced switch is an ``instaswitch`` (order 3): when both sides replace a fainted
    # Pokémon, both switch in before either ``runSwitch`` (order 101) runs, the first one
    # without an Update (the queue's next action is an instaswitch); inserting the second
    # ``runSwitch`` next to the first draws on a speed tie; each ``runSwitch`` then has its
    # Update. Otherwise: switch, its Update, runSwitch (AfterSwitchInSelf unless it replaces
    # a fainted Pokémon), its Update.
    both = forced_mode & switching[0] & switching[1]
    for i in (0, 1):
        side = first if i == 0 else 1 - first
        go = live & jnp.where(i == 0, switching[first], switching[1 - first])
        quiet = both & (i == 0)
        actives = _switch_in(actives, incoming, side, go)
        switched = switched | (_onehot((2,), side) & go)
        state = _tie_draw(b.prng, actives, go & both & (i == 1))  # insertChoice(runSwitch)
        state = _tie_draw(state, actives, go & ~quiet)
        actives = _after_switch_in_self(actives, side, go & ~forced_mode)
        # pokemonLeft: the bench as it is once the switches so far are done
        swapped = (jnp.arange(1, 6) == switch_slots[:, None]) & switched[:, None]
        bench_left = _bench_left(jnp.where(swapped, outgoing.hp[:, None], bench.hp))
        b, fainted = _faints(b._replace(prng=state), bench_left, actives, go)
        gone = gone | fainted
        live = live & ~jnp.any(fainted)
        state = _tie_draw(b.prng, actives, go & live & ~quiet)
        state = _tie_draw(state, actives, go & both & (i == 1))  # the other runSwitch's Update
        state, live, switched, gone = P.pinned(state, live, switched, gone)
        b = b._replace(prng=state)
    # a faint in the switch phase (AfterSwitchInSelf) cancels the rest of the queue, so the
    # teams change only for the sides that did switch
    actives = _settle_switches(actives, incoming, switched)
    bench = _swap_out(bench, outgoing, switch_slots, switched)
    bench_left, bench_clauses = _bench_left(bench.hp), _bench_clauses(bench)
    live = live & ~forced_mode  # a forced switch ends the turn: no moves, no residual

    def action(i, carry):
        b, actives, live, gone = carry
        side = jnp.where(i == 0, first, 1 - first)
        go = live & ~jnp.where(i == 0, switching[first], switching[1 - first])
        me, foe = _get(actives, side), _get(actives, 1 - side)
        slot = jnp.where(i == 0, move_slots[first], move_slots[1 - first])
        state, me2, foe2, fld = use_move(b.prng, me, foe, slot, go, b.field,
                                         _clauses(bench_clauses, actives, 1 - side))
        actives = _put(_put(actives, side, me2, me), 1 - side, foe2, foe)
        b, fainted = _faints(b._replace(prng=state, field=fld), bench_left, actives, go)
        fainted_any = jnp.any(fainted)
        state, live = P.pinned(_tie_draw(b.prng, actives, go & live & ~fainted_any),
                               live & ~fainted_any)
        return b._replace(prng=state), actives, live, gone | fainted

    # the loop carries the battle's scalars only: the teams are ``actives`` and ``bench``
    b, actives, live, gone = jax.lax.fori_loop(
        0, 2, action, (b._replace(actives=None, bench=None), actives, live, gone))
    # residual (only when nothing fainted): flinch ends, speeds refresh, then its Update
    actives = actives._replace(flinched=actives.flinched & ~live,
                               speed=jnp.where(live, actives.modified[:, 4], actives.speed))
    actives = _clear_fainted(actives, gone, b.ended)
    state = _tie_draw(b.prng, actives, live)
    ends_turn = live | (forced_mode & ~b.ended)
    b = b._replace(actives=actives, bench=bench, prng=state, turn=b.turn + ends_turn,
                   forced=b.forced & ~forced_mode)
    return _end_turn(b, ends_turn)


def _no_progress(parts: tuple[Fighter, ...]) -> jax.Array:
    """Gen 1's Endless Battle Clause (``maybeTriggerEndlessBattleClause``): no side can make
    progress when every Pokémon of both sides is fainted, frozen (nothing thaws it in Gen 1
    but an outside Fire move), Transform-only against a foe team that is all Transform-only,
    or out of PP (Struggle) against a foe team of Ghosts (Struggle cannot touch them, so no
    recoil either). ``parts``: the teams as records with leaves [2, n, ...] (the actives and
    the bench, read where they are: joining them first cost a copy of both teams per step);
    types and moves are the current ones."""
    def judge(team):
        fainted = team.hp <= 0
        known = team.moves >= 0
        transform_only = jnp.all((team.moves == TRANSFORM) | ~known, axis=-1)
        no_pp = jnp.all((team.pp == 0) | ~known, axis=-1)
        ghost = jnp.any(team.types == GHOST, axis=-1)
        return fainted, transform_only, no_pp, ghost, team.status == FRZ

    def side_all(per_part):  # bool[2]: over every Pokémon of each side
        return jnp.all(jnp.stack([jnp.all(p, axis=-1) for p in per_part]), axis=0)

    judged = [judge(t) for t in parts]
    all_transform = side_all([f | t for f, t, *_ in judged])  # bool[2] per side
    all_ghosts = side_all([f | g for f, _, _, g, _ in judged])
    foe = jnp.array([1, 0])
    stuck = [fainted | frozen | (transform_only & all_transform[foe][:, None])
             | (no_pp & all_ghosts[foe][:, None])
             for fainted, transform_only, no_pp, _, frozen in judged]
    return jnp.all(jnp.stack([jnp.all(x) for x in stuck]))


def _end_turn(b: Battle, ends_turn) -> Battle:
    """What ``endTurn`` decides after the turn counter moved on (Gen 1, both checks in
    ``maybeTriggerEndlessBattleClause``): a tie when no progress is possible, or when the
    turn passed :data:`TURN_LIMIT`."""
    parts = (jax.tree.map(lambda x: jnp.expand_dims(x, 1), b.actives), b.bench)
    tie = ends_turn & ~b.ended & (_no_progress(parts) | (b.turn > TURN_LIMIT))
    return b._replace(ended=b.ended | tie, winner=jnp.where(tie, 0, b.winner))


def step(b: Battle, actions: jax.Array) -> Battle:
    """One decision point: ``actions`` int32[2] (0-3 move slot, 4-8 switch to slot 1-5; the
    action of a side with nothing to choose is ignored). An ended battle stays as it is."""
    return _turn(b, jnp.asarray(actions, jnp.int32))


def new_battle(team: Fighter, state: P.PrngState, turn=1) -> Battle:
    actives, bench = split(team)
    return Battle(actives=actives, bench=bench, prng=state, field=new_field(), turn=jnp.int32(turn),
                  forced=jnp.zeros(2, bool), ended=jnp.bool_(False), winner=jnp.int32(0))
