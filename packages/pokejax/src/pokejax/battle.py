"""A whole Gen 1 singles battle: two teams of up to six, switching, faints and forced switches.

State (``Battle``): both teams as one ``duel.Fighter`` whose leaves have leading axes
``[side, slot]``, slots in Showdown's *current* order — slot 0 is the active Pokémon and a
switch swaps slot 0 with the incoming slot, exactly as ``BattleActions.switchIn`` reorders
``side.pokemon``, so "switch k" means the same slot on both engines and L2 can load an
exported state slot for slot.

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

from pokejax import prng as P
from pokejax.codec import STATUSES
from pokejax.duel import (
    BRN,
    FRZ,
    PSN,
    SLP,
    Field,
    Fighter,
    move_table,
    new_field,
    switched_out,
    use_move,
)

FNT = STATUSES.index("fnt")
FIRST_SWITCH = 4  # action 4 = "switch 2" (team slot 1)
ORDER_SWITCH, ORDER_MOVE = 103, 200  # BattleQueue action orders


class Battle(NamedTuple):
    team: Fighter  # leaves [2, 6, ...]: slot 0 is the active Pokémon
    prng: P.PrngState
    field: Field
    turn: jax.Array  # Showdown's battle.turn
    forced: jax.Array  # bool[2]: the side must switch in for a fainted active
    ended: jax.Array
    winner: jax.Array  # 0 none / tie, 1 p1, 2 p2


def active(team: Fighter, side) -> Fighter:
    return jax.tree.map(lambda x: x[side, 0], team)


def _set_active(team: Fighter, side, f: Fighter) -> Fighter:
    return jax.tree.map(lambda x, v: x.at[side, 0].set(v), team, f)


def _swap(team: Fighter, side, slot) -> Fighter:
    """Slot 0 <-> ``slot`` of ``side`` (a no-op for slot 0)."""
    def swap(x):
        a, b = x[side, 0], x[side, slot]
        return x.at[side, 0].set(b).at[side, slot].set(a)
    return jax.tree.map(swap, team)


def _tie_draw(state: P.PrngState, team: Fighter, go) -> P.PrngState:
    """``eachEvent('Update')``: ``speedSort`` of the non-fainted actives by ``pokemon.speed``
    — one ``random(0, 2)`` when there are two and their speeds are equal."""
    a, b = active(team, 0), active(team, 1)
    drawn, _ = P.random_below(state, 2)
    return P.select(go & (a.hp > 0) & (b.hp > 0) & (a.speed == b.speed), drawn, state)


def _locked(f: Fighter) -> jax.Array:
    return (f.status == FRZ) | (f.status == SLP)


def _switch_out_in(team: Fighter, side, slot, go) -> Fighter:
    """``switchIn``: the old active is cleared (a fainted one loses its status), the teams'
    order swaps, the incoming Pokémon's ``pokemon.speed`` refreshes (``insertChoice`` of its
    ``runSwitch``) and its side's ``lastSelectedMoveSlot`` becomes 0 (Gen 1 ``runSwitch``)."""
    old = active(team, side)
    cleared = switched_out(old)
    cleared = cleared._replace(status=jnp.where(old.hp <= 0, 0, cleared.status))
    swapped = _swap(_set_active(team, side, cleared), side, slot)
    new = active(swapped, side)
    new = new._replace(speed=new.modified[4], last_slot=jnp.int32(0))
    swapped = _set_active(swapped, side, new)
    return jax.tree.map(lambda a, b: jnp.where(go, a, b), swapped, team)


def _after_switch_in_self(team: Fighter, side, go) -> Fighter:
    """Gen 1 ``AfterSwitchInSelf``: a burned or poisoned Pokémon switched in (not to replace a
    fainted one) loses max(maxhp / 16, 1) HP."""
    f = active(team, side)
    hurt = go & ((f.status == BRN) | (f.status == PSN)) & (f.hp > 0)
    dmg = jnp.minimum(jnp.maximum(f.maxhp // 16, 1), f.hp)
    return _set_active(team, side, f._replace(hp=jnp.where(hurt, f.hp - dmg, f.hp)))


def _faints(b: Battle, go) -> tuple[Battle, jax.Array]:
    """``faintMessages`` + ``checkFainted`` + ``checkWin`` after an action: fainted actives are
    cleared and marked ``fnt``, the turn stops, sides with Pokémon left must switch."""
    team = b.team
    fainted = jnp.stack([active(team, s).hp <= 0 for s in (0, 1)]) & go
    for s in (0, 1):
        f = active(team, s)
        gone = switched_out(f)._replace(status=jnp.int32(FNT))
        team = _set_active(team, s, P.select(fainted[s], gone, f))
    left = jnp.any(team.hp > 0, axis=1)  # bool[2]: pokemonLeft
    any_faint = jnp.any(fainted)
    ended = any_faint & ~jnp.all(left)
    winner = jnp.where(left[0] & ~left[1], 1, jnp.where(left[1] & ~left[0], 2, 0))
    return b._replace(
        team=team, forced=jnp.where(any_faint, fainted & left, b.forced),
        ended=b.ended | ended, winner=jnp.where(ended, winner, b.winner)), any_faint


def _queue_first(state, team, kind, speed, priority):
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


def _clauses(team: Fighter, side) -> tuple[jax.Array, jax.Array]:
    """(Sleep Clause Mod, Freeze Clause Mod) block a new sleep / freeze on ``side``: one of its
    Pokémon is asleep by a foe's move (not its own Rest) / frozen."""
    status, hp, rest = team.status[side], team.hp[side], team.rest_sleep[side]
    return (jnp.any((hp > 0) & (status == SLP) & ~rest), jnp.any(status == FRZ))


def _normal_turn(b: Battle, actions) -> Battle:
    t = jax.tree.map(jnp.asarray, move_table())
    team = b.team
    switching = actions >= FIRST_SWITCH  # bool[2]
    slots, prios = [], []
    for s in (0, 1):
        f = active(team, s)
        # Gen 1: a frozen or sleeping Pokémon can only "Fight": its queued move is its last
        # selected one (keeping that move's priority); a recharging one's action is
        # "recharge" (priority 0); neither updates the side's selection
        slot = jnp.where(_locked(f), f.last_slot, actions[s])
        recharging = f.must_recharge & ~_locked(f)
        f = f._replace(
            last_slot=jnp.where(recharging | switching[s], f.last_slot, slot),
            speed=f.modified[4])  # commitChoices: updateSpeed
        team = _set_active(team, s, f)
        move = f.moves[jnp.clip(slot, 0, 3)]
        prios.append(jnp.where(switching[s] | recharging | (slot < 0), 0, t.priority[move]))
        slots.append(jnp.clip(slot, 0, 3))
    speeds = jnp.stack([active(team, s).speed for s in (0, 1)])
    state, first = _queue_first(b.prng, team, switching.astype(jnp.int32), speeds, jnp.stack(prios))
    slots = jnp.stack(slots)

    live = ~b.ended
    state = _tie_draw(state, team, live)  # beforeTurn: eachEvent('BeforeTurn')
    state = _tie_draw(state, team, live)  # Update after the beforeTurn action
    b = b._replace(team=team, prng=state)

    def action(i, carry):
        b, live = carry
        side = jnp.where(i == 0, first, 1 - first)
        go_switch = live & switching[side]
        # switch action, then its Update, then runSwitch (AfterSwitchInSelf), then its Update
        team = _switch_out_in(b.team, side, actions[side] - FIRST_SWITCH + 1, go_switch)
        state = _tie_draw(b.prng, team, go_switch)
        team = _after_switch_in_self(team, side, go_switch)
        b, fainted = _faints(b._replace(team=team, prng=state), go_switch)
        live_after_switch = live & ~fainted
        state = _tie_draw(b.prng, b.team, go_switch & live_after_switch)
        # move action
        go_move = live & ~switching[side]
        me, foe = active(b.team, side), active(b.team, 1 - side)
        state, me, foe, fld = use_move(state, me, foe, slots[side], go_move, b.field,
                                       _clauses(b.team, 1 - side))
        team = _set_active(_set_active(b.team, side, me), 1 - side, foe)
        b, fainted_m = _faints(b._replace(team=team, prng=state, field=fld), go_move)
        live_after_move = live & ~fainted_m
        state = _tie_draw(b.prng, b.team, go_move & live_after_move)
        return b._replace(prng=state), jnp.where(switching[side], live_after_switch, live_after_move)

    b, live = jax.lax.fori_loop(0, 2, action, (b, live))
    # residual (only when nothing fainted): flinch ends, speeds refresh, then its Update
    team = b.team
    for s in (0, 1):
        f = active(team, s)
        team = _set_active(team, s, f._replace(
            flinched=f.flinched & ~live, speed=jnp.where(live, f.modified[4], f.speed)))
    state = _tie_draw(b.prng, team, live)
    return b._replace(team=team, prng=state, turn=b.turn + jnp.where(live, 1, 0))


def _forced_switch(b: Battle, actions) -> Battle:
    """Both or one side replaces a fainted active; then the turn ends."""
    team, forced = b.team, b.forced
    for s in (0, 1):  # commitChoices: updateSpeed of the (non-fainted) actives
        f = active(team, s)
        team = _set_active(team, s, f._replace(speed=jnp.where(f.hp > 0, f.modified[4], f.speed)))
    # two switches sort by the outgoing Pokémon's speed; a tie draws
    speeds = jnp.stack([active(team, s).modified[4] for s in (0, 1)])
    state, first = _queue_first(b.prng, team, jnp.ones(2, jnp.int32), speeds, jnp.zeros(2, jnp.int32))
    first = jnp.where(forced[0] & forced[1], first, jnp.where(forced[0], 0, 1))
    b = b._replace(team=team, prng=P.select(forced[0] & forced[1], state, b.prng))

    def action(i, b):
        side = jnp.where(i == 0, first, 1 - first)
        go = forced[side]
        team = _switch_out_in(b.team, side, actions[side] - FIRST_SWITCH + 1, go)
        state = _tie_draw(b.prng, team, go)  # Update after the switch
        state = _tie_draw(state, team, go)  # Update after runSwitch (no AfterSwitchInSelf)
        return b._replace(team=team, prng=state)

    b = jax.lax.fori_loop(0, 2, action, b)
    return b._replace(forced=jnp.zeros(2, bool), turn=b.turn + 1)


def step(b: Battle, actions: jax.Array) -> Battle:
    """One decision point: ``actions`` int32[2] (0-3 move slot, 4-8 switch to slot 1-5)."""
    actions = jnp.asarray(actions, jnp.int32)
    normal = _normal_turn(b, actions)
    forced = _forced_switch(b, actions)
    nxt = P.select(jnp.any(b.forced), forced, normal)
    return P.select(b.ended, b, nxt)


def new_battle(team: Fighter, state: P.PrngState, turn=1) -> Battle:
    return Battle(team=team, prng=state, field=new_field(), turn=jnp.int32(turn),
                  forced=jnp.zeros(2, bool), ended=jnp.bool_(False), winner=jnp.int32(0))
