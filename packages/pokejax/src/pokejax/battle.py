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


# During a turn the two active records live apart from the teams (``actives``: leaves with a
# leading [side] axis) so that every action touches two records, not twelve; a switch swaps
# one team slot with its side's active record, and ``_merge`` writes the actives back.

def _split(team: Fighter) -> Fighter:
    return jax.tree.map(lambda x: x[:, 0], team)


def _merge(team: Fighter, actives: Fighter) -> Fighter:
    return jax.tree.map(lambda x, a: x.at[:, 0].set(a), team, actives)


def _get(actives: Fighter, side) -> Fighter:
    return jax.tree.map(lambda x: x[side], actives)


def _put(actives: Fighter, side, f: Fighter) -> Fighter:
    return jax.tree.map(lambda x, v: x.at[side].set(v), actives, f)


def _tie_draw(state: P.PrngState, actives: Fighter, go) -> P.PrngState:
    """``eachEvent('Update')``: ``speedSort`` of the non-fainted actives by ``pokemon.speed``
    — one ``random(0, 2)`` when there are two and their speeds are equal."""
    drawn, _ = P.random_below(state, 2)
    tie = (actives.hp[0] > 0) & (actives.hp[1] > 0) & (actives.speed[0] == actives.speed[1])
    return P.select(go & tie, drawn, state)


def _locked(f: Fighter) -> jax.Array:
    return (f.status == FRZ) | (f.status == SLP)


def _switch(team: Fighter, actives: Fighter, side, slot, go) -> tuple[Fighter, Fighter]:
    """``switchIn``: the old active is cleared (a fainted one loses its status) and takes team
    slot ``slot`` (Showdown swaps the two positions), the incoming Pokémon's ``pokemon.speed``
    refreshes (``insertChoice`` of its ``runSwitch``) and its side's ``lastSelectedMoveSlot``
    becomes 0 (Gen 1 ``runSwitch``). Nothing changes unless ``go``."""
    old = _get(actives, side)
    cleared = switched_out(old)
    cleared = cleared._replace(status=jnp.where(old.hp <= 0, 0, cleared.status))
    new = jax.tree.map(lambda x: x[side, slot], team)
    new = new._replace(speed=new.modified[4], last_slot=jnp.int32(0))
    team = jax.tree.map(lambda x, c: x.at[side, slot].set(jnp.where(go, c, x[side, slot])), team, cleared)
    actives = _put(actives, side, P.select(go, new, old))
    if "last_move" in Fighter._fields:  # Gen 1 runSwitch: lastMove = null for every active
        actives = actives._replace(last_move=jnp.where(go, -1, actives.last_move))
    return team, actives


def _after_switch_in_self(actives: Fighter, side, go) -> Fighter:
    """Gen 1 ``AfterSwitchInSelf``: a burned or poisoned Pokémon switched in (not to replace a
    fainted one) loses max(maxhp / 16, 1) HP."""
    f = _get(actives, side)
    hurt = go & ((f.status == BRN) | (f.status == PSN)) & (f.hp > 0)
    dmg = jnp.minimum(jnp.maximum(f.maxhp // 16, 1), f.hp)
    return _put(actives, side, f._replace(hp=jnp.where(hurt, f.hp - dmg, f.hp)))


def _faints(b: Battle, team: Fighter, actives: Fighter, go) -> tuple[Battle, Fighter, jax.Array]:
    """``faintMessages`` + ``checkFainted`` + ``checkWin`` after an action: fainted actives are
    cleared and marked ``fnt``, the turn stops, sides with Pokémon left must switch.
    Returns (battle without its team, actives, whether anything fainted)."""
    fainted = (actives.hp <= 0) & go
    gone = jax.vmap(switched_out)(actives)._replace(status=jnp.full((2,), FNT, jnp.int32))
    actives = jax.tree.map(
        lambda g, a: jnp.where(fainted.reshape((2,) + (1,) * (a.ndim - 1)), g, a), gone, actives)
    left = (actives.hp > 0) | jnp.any(team.hp[:, 1:] > 0, axis=1)  # bool[2]: pokemonLeft
    any_faint = jnp.any(fainted)
    ended = any_faint & ~jnp.all(left)
    winner = jnp.where(left[0] & ~left[1], 1, jnp.where(left[1] & ~left[0], 2, 0))
    b = b._replace(forced=jnp.where(any_faint, fainted & left, b.forced),
                   ended=b.ended | ended, winner=jnp.where(ended, winner, b.winner))
    return b, actives, any_faint


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


def _clauses(team: Fighter, actives: Fighter, side) -> tuple[jax.Array, jax.Array]:
    """(Sleep Clause Mod, Freeze Clause Mod) block a new sleep / freeze on ``side``: one of its
    Pokémon is asleep by a foe's move (not its own Rest) / frozen."""
    a = _get(actives, side)
    status = team.status[side].at[0].set(a.status)
    hp = team.hp[side].at[0].set(a.hp)
    rest = team.rest_sleep[side].at[0].set(a.rest_sleep)
    return (jnp.any((hp > 0) & (status == SLP) & ~rest), jnp.any(status == FRZ))


def _normal_turn(b: Battle, actions) -> Battle:
    t = jax.tree.map(jnp.asarray, move_table())
    team, actives = b.team, _split(b.team)
    switching = actions >= FIRST_SWITCH  # bool[2]
    slots, prios = [], []
    for s in (0, 1):
        f = _get(actives, s)
        # Gen 1: a frozen or sleeping Pokémon can only "Fight": its queued move is its last
        # selected one (keeping that move's priority); a recharging one's action is
        # "recharge" (priority 0); neither updates the side's selection
        slot = jnp.where(_locked(f), f.last_slot, actions[s])
        recharging = f.must_recharge & ~_locked(f)
        f = f._replace(
            last_slot=jnp.where(recharging | switching[s], f.last_slot, slot),
            speed=f.modified[4])  # commitChoices: updateSpeed
        actives = _put(actives, s, f)
        move = f.moves[jnp.clip(slot, 0, 3)]
        prios.append(jnp.where(switching[s] | recharging | (slot < 0), 0, t.priority[move]))
        slots.append(jnp.clip(slot, 0, 3))
    state, first = _queue_first(b.prng, switching.astype(jnp.int32), actives.speed, jnp.stack(prios))
    slots = jnp.stack(slots)

    live = ~b.ended
    state = _tie_draw(state, actives, live)  # beforeTurn: eachEvent('BeforeTurn')
    state = _tie_draw(state, actives, live)  # Update after the beforeTurn action
    b = b._replace(prng=state)

    def action(i, carry):
        b, team, actives, live = carry
        side = jnp.where(i == 0, first, 1 - first)
        go_switch = live & switching[side]
        # switch action, its Update, runSwitch (AfterSwitchInSelf), its Update
        team, actives = _switch(team, actives, side, actions[side] - FIRST_SWITCH + 1, go_switch)
        state = _tie_draw(b.prng, actives, go_switch)
        actives = _after_switch_in_self(actives, side, go_switch)
        b, actives, fainted = _faints(b._replace(prng=state), team, actives, go_switch)
        live_after_switch = live & ~fainted
        state = _tie_draw(b.prng, actives, go_switch & live_after_switch)
        # move action, then its Update
        go_move = live & ~switching[side]
        me, foe = _get(actives, side), _get(actives, 1 - side)
        state, me, foe, fld = use_move(state, me, foe, slots[side], go_move, b.field,
                                       _clauses(team, actives, 1 - side))
        actives = _put(_put(actives, side, me), 1 - side, foe)
        b, actives, fainted_m = _faints(b._replace(prng=state, field=fld), team, actives, go_move)
        live_after_move = live & ~fainted_m
        state = _tie_draw(b.prng, actives, go_move & live_after_move)
        live = jnp.where(switching[side], live_after_switch, live_after_move)
        return b._replace(prng=state), team, actives, live

    b, team, actives, live = jax.lax.fori_loop(0, 2, action, (b, team, actives, live))
    # residual (only when nothing fainted): flinch ends, speeds refresh, then its Update
    actives = actives._replace(flinched=actives.flinched & ~live,
                               speed=jnp.where(live, actives.modified[:, 4], actives.speed))
    state = _tie_draw(b.prng, actives, live)
    return b._replace(team=_merge(team, actives), prng=state, turn=b.turn + jnp.where(live, 1, 0))


def _forced_switch(b: Battle, actions) -> Battle:
    """Both or one side replaces a fainted active; then the turn ends."""
    team, actives, forced = b.team, _split(b.team), b.forced
    # commitChoices: updateSpeed of the (non-fainted) actives
    actives = actives._replace(speed=jnp.where(actives.hp > 0, actives.modified[:, 4], actives.speed))
    # two switches sort by the outgoing Pokémon's speed; a tie draws
    state, first = _queue_first(b.prng, jnp.ones(2, jnp.int32), actives.modified[:, 4],
                                jnp.zeros(2, jnp.int32))
    first = jnp.where(forced[0] & forced[1], first, jnp.where(forced[0], 0, 1))
    state = P.select(forced[0] & forced[1], state, b.prng)

    def action(i, carry):
        state, team, actives = carry
        side = jnp.where(i == 0, first, 1 - first)
        go = forced[side]
        team, actives = _switch(team, actives, side, actions[side] - FIRST_SWITCH + 1, go)
        state = _tie_draw(state, actives, go)  # Update after the switch
        state = _tie_draw(state, actives, go)  # Update after runSwitch (no AfterSwitchInSelf)
        return state, team, actives

    state, team, actives = jax.lax.fori_loop(0, 2, action, (state, team, actives))
    return b._replace(team=_merge(team, actives), prng=state, forced=jnp.zeros(2, bool),
                      turn=b.turn + 1)


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
