"""``step(state, action)`` in JAX: the reference's ``engine.step`` (after its legality checks) as
a branch-free state machine.

The action is applied, then everything automatic runs in a ``lax.while_loop`` over a program
counter (``PC_*``) that mirrors the reference's call chain (end of turn -> Checkup -> Knock Outs ->
promotions -> next turn; attack Phase A walk -> Phases B/C -> Phase D queue -> Knock Outs), until a
decision is awaited or the game is over. Effect steps are table rows (``tables.STEP_COLS``)
interpreted by ``lax.switch`` on their op code. The caller checks legality (``legal_mask``);
``step`` on an illegal action is undefined (the env wrappers refuse such actions).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..reference import actions as A
from ..reference.state import (
    AFTER_ATTACK,
    AFTER_CHECKUP,
    AFTER_MAIN,
    BURN_DAMAGE,
    CH_EXEC_PROMOTE,
    CH_NONE,
    CH_PROMOTE,
    CH_RETREAT_ENERGY,
    CH_TARGET,
    EX_ABILITY,
    EX_ATTACK,
    EX_POINTS,
    EX_TRAINER,
    HAND_LIMIT,
    PH_CHOICE,
    PH_MAIN,
    PH_OVER,
    PH_SETUP,
    POINTS_TO_WIN,
    POISON_DAMAGE,
    ST_ASLEEP,
    ST_CONFUSED,
    ST_PARALYZED,
    TIE,
    TURN_LIMIT,
    UNTIL_TAILS_CAP,
    WEAKNESS_BONUS,
)
from . import rng
from .legal import KIND, T, can_pay, card, has_kind, matches, step_row, target_slots, top_cards
from .setup import _BLANK
from .tables import COND, DAMAGE_PHASE, MODS, OP, OPS, SC

I32 = jnp.int32
PK_FIELDS = [k for k in _BLANK if k.startswith("pk_")]
EX_FIELDS = [k for k in _BLANK if k.startswith("ex_")]
BLANK_EFFECT = jnp.array([0, 0, 0, -1, -1, -1], I32)

(
    PC_DONE,
    PC_END_TURN,
    PC_KO,
    PC_NEXT_PROMO,
    PC_CONT,
    PC_AFTER_CHECKUP,
    PC_WALK,
    PC_AFTER_A,
    PC_RUN_QUEUE,
    PC_FINISH_EXEC,
    PC_RETREAT,
) = range(11)

HP_BONUS, REDUCE, COUNTER, BLOCK = (MODS.index(m) for m in MODS)


# ---------------------------------------------------------------- list helpers ----------
def pop_at(arr, n, i):
    """Remove ``arr[i]`` from a packed list of length ``n`` (padding -1)."""
    idx = jnp.arange(arr.shape[0])
    shifted = jnp.concatenate([arr[1:], jnp.full((1,), -1, arr.dtype)])
    return jnp.where(idx < i, arr, shifted), n - 1


def append(arr, n, x, on=True):
    """Append ``x`` when ``on`` (dropped past the end: the reference's to_arrays would raise)."""
    return jnp.where(on, arr.at[n].set(x, mode="drop"), arr), n + jnp.where(on, 1, 0)


def put(s, key, idx, value, on=True):
    """``s[key][idx] = value`` when ``on``."""
    old = s[key]
    s[key] = jnp.where(on, old.at[idx].set(value), old)
    return s


def current(s):
    t, f = s["turn"], s["first_player"]
    return jnp.where((t == 0) | (t % 2 == 1), f, 1 - f).astype(I32)


def kth_true(mask, k):
    """Index of the k-th (0-based) True of ``mask``."""
    return jnp.argmax(mask & (jnp.cumsum(mask) == k + 1)).astype(I32)


def draw_rng(s, fn, *args, active=True):
    v, ctr = fn(s["seed"], s["counter"], *args, active)
    s["counter"] = ctr
    return s, v


def coin(s, active=True):
    heads, ctr = rng.coin(s["seed"], s["counter"])
    s["counter"] = jnp.where(active, ctr, s["counter"])
    return s, heads & active


def uniform(s, n, active=True):
    v, ctr = rng.uniform(s["seed"], s["counter"], n, active)
    s["counter"] = ctr
    return s, v


def flip_coins(s, n, until_tails):
    """Heads among ``n`` coins, or heads until the first tails (at most 16, §17.2)."""

    def cond(c):
        _, i, h, stop = c
        return jnp.where(until_tails, ~stop & (h < UNTIL_TAILS_CAP), i < n)

    def body(c):
        ctr, i, h, _ = c
        heads, ctr = rng.coin(s["seed"], ctr)
        return ctr, i + 1, h + heads.astype(I32), ~heads

    ctr, _, h, _ = jax.lax.while_loop(cond, body, (s["counter"], I32(0), I32(0), False))
    s["counter"] = ctr
    return s, h


# ---------------------------------------------------------------- Pokémon slots ---------
def blank_slot(s, q, slot, on=True):
    for f in PK_FIELDS:
        s = put(s, f, (q, slot), _BLANK[f][0, 0] if f != "pk_present" else False, on)
    return s


def swap_slots(s, q, a, b, on=True):
    for f in PK_FIELDS:
        old = s[f]
        new = old.at[q, a].set(old[q, b]).at[q, b].set(old[q, a])
        s[f] = jnp.where(on, new, old)
    return s


def clear_on_move(s, q, slot, on=True):
    """§12.7 / §19.18: conditions and attached effects go."""
    s = put(s, "pk_poisoned", (q, slot), False, on)
    s = put(s, "pk_burned", (q, slot), False, on)
    s = put(s, "pk_status", (q, slot), 0, on)
    s = put(s, "pk_effects", (q, slot), _BLANK["pk_effects"][0, 0], on)
    return put(s, "pk_effects_n", (q, slot), 0, on)


def new_pokemon(s, q, slot, c, played_turn, on=True):
    s = blank_slot(s, q, slot, on)
    s = put(s, "pk_present", (q, slot), True, on)
    s = put(s, "pk_uid", (q, slot), s["next_uid"], on)
    s = put(s, "pk_stack", (q, slot, 0), c, on)
    s = put(s, "pk_stack_n", (q, slot), 1, on)
    s = put(s, "pk_played_turn", (q, slot), played_turn, on)
    s["next_uid"] = s["next_uid"] + jnp.where(on, 1, 0)
    return s


def mod_of(s, tops, m):
    """(2, 4) passive modifier ``m`` of each slot: its top card's passive ability + its Tool."""
    tool = s["pk_tool"]
    v = card("mods", tops)[..., m] + jnp.where(tool >= 0, card("mods", tool)[..., m], 0)
    return jnp.where(s["pk_present"], v, 0)


def find_uid(s, uid):
    hit = s["pk_present"] & (s["pk_uid"] == uid) & (uid >= 0)
    flat = jnp.argmax(hit.reshape(-1)).astype(I32)
    return jnp.any(hit), flat // 4, flat % 4


def draw_cards(s, p, n):
    """§16.2 / §16.5: each draw does nothing at 10 cards or from an empty deck."""

    def body(i, s):
        on = (i < n) & (s["deck_n"][p] > 0) & (s["hand_n"][p] < HAND_LIMIT)
        c = s["deck"][p, 0]
        deck, dn = pop_at(s["deck"][p], s["deck_n"][p], 0)
        s = put(s, "deck", p, deck, on)
        s = put(s, "deck_n", p, dn, on)
        hand, hn = append(s["hand"][p], s["hand_n"][p], c, on)
        s["hand"] = s["hand"].at[p].set(hand)
        s["hand_n"] = s["hand_n"].at[p].set(hn)
        return s

    return jax.lax.fori_loop(0, HAND_LIMIT, body, s)


def discard_card(s, q, c, on=True):
    d, n = append(s["discard"][q], s["discard_n"][q], c, on)
    s["discard"] = s["discard"].at[q].set(d)
    s["discard_n"] = s["discard_n"].at[q].set(n)
    return s


def add_effect_row(s, key, idx, row, on=True):
    n = s[key + "_n"][idx]
    s = put(s, key, idx + (n,), row, on & (n < s[key].shape[len(idx)]))
    return put(s, key + "_n", idx, n + 1, on)


def compact_effects(rows, keep):
    """Keep the rows of ``keep`` in order, packed from 0, blank after (last axis = row)."""
    order = jnp.argsort(~keep, axis=-1, stable=True)
    got = jnp.take_along_axis(rows, order[..., None], axis=-2)
    n = jnp.sum(keep, axis=-1)
    idx = jnp.arange(keep.shape[-1])
    return jnp.where((idx < n[..., None])[..., None], got, BLANK_EFFECT), n.astype(I32)


# ---------------------------------------------------------------- §6 / §14 --------------
def start_turn(s):
    p = current(s)
    s = draw_cards(s, p, 1)
    later = s["turn"] != 1
    s = put(s, "zone_current", p, s["zone_next"][p], later)
    types = s["energy_types"][p]
    s, v = uniform(s, jnp.sum(types >= 0), later)
    s = put(s, "zone_next", p, types[v], later)
    for k in ("supporter_played", "retreated", "zone_attached"):
        s = put(s, k, p, False)
    s["pk_ability_used"] = s["pk_ability_used"].at[p].set(False)
    s["phase"] = I32(PH_MAIN)
    s["decider"] = p
    return s


def finish(s, result, on=True):
    s["winner"] = jnp.where(on, result, s["winner"]).astype(I32)
    s["phase"] = jnp.where(on, PH_OVER, s["phase"]).astype(I32)
    s["choice"] = jnp.where(on, CH_NONE, s["choice"]).astype(I32)
    s["promote_queue"] = jnp.where(on, -1, s["promote_queue"]).astype(I32)
    for f in EX_FIELDS:
        s[f] = jnp.where(on, _BLANK[f], s[f])
    return s


def end_turn(s):
    """§14 steps 1-5 (step 6 is PC_KO)."""
    p = current(s)
    t = s["turn"]
    pe, pen = compact_effects(s["player_effects"], s["player_effects"][..., 2] > t)
    ke, ken = compact_effects(s["pk_effects"], s["pk_effects"][..., 2] > t)
    s["player_effects"], s["player_effects_n"] = pe, pen
    s["pk_effects"], s["pk_effects_n"] = ke, ken
    s = put(s, "zone_current", p, -1)
    for q in (p, 1 - p):
        on = s["pk_present"][q, 0] & s["pk_poisoned"][q, 0]
        s = put(s, "pk_damage", (q, 0), s["pk_damage"][q, 0] + POISON_DAMAGE, on)
    for q in (p, 1 - p):
        on = s["pk_present"][q, 0] & s["pk_burned"][q, 0]
        s = put(s, "pk_damage", (q, 0), s["pk_damage"][q, 0] + BURN_DAMAGE, on)
        s, heads = coin(s, on)
        s = put(s, "pk_burned", (q, 0), False, heads)
    for q in (p, 1 - p):
        on = s["pk_present"][q, 0] & (s["pk_status"][q, 0] == ST_ASLEEP)
        s, heads = coin(s, on)
        s = put(s, "pk_status", (q, 0), 0, heads)
    on = s["pk_present"][p, 0] & (s["pk_status"][p, 0] == ST_PARALYZED)
    return put(s, "pk_status", (p, 0), 0, on)


def knock_outs(s, after):
    """§13.2-13.4. Returns (state, next pc)."""
    tops = top_cards(s)
    max_hp = card("hp", tops) + mod_of(s, tops, HP_BONUS)
    knocked = s["pk_present"] & (s["pk_damage"] >= max_hp)
    for q in (0, 1):
        for sl in range(4):
            on = knocked[q, sl]
            for k in range(3):  # Basic first, then the evolutions, then the Tool (D6)
                c = s["pk_stack"][q, sl, k]
                s = discard_card(s, q, c, on & (k < s["pk_stack_n"][q, sl]))
            tool = s["pk_tool"][q, sl]
            s = discard_card(s, q, tool, on & (tool >= 0))
            de = s["discarded_energy"][q] + s["pk_energy"][q, sl]
            s = put(s, "discarded_energy", q, de, on)
            gain = jnp.where(card("is_ex", tops[q, sl]), EX_POINTS, 1)
            s = put(s, "points", 1 - q, s["points"][1 - q] + gain, on)
            s = blank_slot(s, q, sl, on)
    # §15.1: board wipes before points (§19.7)
    empty = ~jnp.any(s["pk_present"], axis=1)
    won = s["points"] >= POINTS_TO_WIN
    result = jnp.select(
        [empty[0] & empty[1], empty[0], empty[1], won[0] & won[1], won[0], won[1]],
        [TIE, 1, 0, TIE, 0, 1],
        -1,
    )
    ended = jnp.any(knocked) & (result >= 0)
    s = finish(s, result, ended)
    cur = current(s)
    need = ~s["pk_present"][:, 0]
    first, second = 1 - cur, cur
    q0 = jnp.where(need[first], first, jnp.where(need[second], second, -1))
    q1 = jnp.where(need[first] & need[second], second, -1)
    s["after_promo"] = jnp.where(ended, s["after_promo"], after).astype(I32)
    queue = jnp.stack([q0, q1]).astype(I32)
    s["promote_queue"] = jnp.where(ended, s["promote_queue"], queue)
    return s, jnp.where(ended, PC_DONE, PC_NEXT_PROMO)


def next_promotion(s):
    q = s["promote_queue"][0]
    qq = jnp.maximum(q, 0)
    bench = s["pk_present"][qq] & (jnp.arange(4) >= 1)
    one = jnp.sum(bench) == 1
    empty = q < 0
    auto = ~empty & one
    s = swap_slots(s, qq, 0, kth_true(bench, 0), auto)
    popped = jnp.array([s["promote_queue"][1], -1], I32)
    s["promote_queue"] = jnp.where(auto, popped, s["promote_queue"])
    wait = ~empty & ~one
    s["phase"] = jnp.where(wait, PH_CHOICE, s["phase"]).astype(I32)
    s["choice"] = jnp.where(wait, CH_PROMOTE, s["choice"]).astype(I32)
    s["decider"] = jnp.where(wait, qq, s["decider"]).astype(I32)
    return s, jnp.select([empty, auto], [PC_CONT, PC_NEXT_PROMO], PC_DONE)


def continue_after_promotions(s):
    s["choice"] = I32(CH_NONE)
    ap = s["after_promo"]
    main = ap == AFTER_MAIN
    s["phase"] = jnp.where(main, PH_MAIN, s["phase"]).astype(I32)
    s["decider"] = jnp.where(main, current(s), s["decider"]).astype(I32)
    return s, jnp.select(
        [ap == AFTER_ATTACK, ap == AFTER_CHECKUP], [PC_END_TURN, PC_AFTER_CHECKUP], PC_DONE
    )


def after_checkup(s):
    limit = s["turn"] >= TURN_LIMIT
    s2 = dict(s)
    s2["turn"] = s["turn"] + 1
    s2 = start_turn(s2)
    s = finish(s, TIE, limit)
    s = {k: jnp.where(limit, s[k], s2[k]) for k in s}
    return s, I32(PC_DONE)


# ---------------------------------------------------------------- §7.8 retreat ----------
def retreat_cost(s, p):
    at = top_cards(s)[p, 0]
    minus = jnp.sum(
        jnp.where(
            s["player_effects"][p, :, 0] == KIND["retreat_cost_minus"],
            s["player_effects"][p, :, 1],
            0,
        )
    )
    return jnp.maximum(0, card("retreat_cost", at) - minus)


def discard_unit(s, p, slot, t, on=True):
    s = put(s, "pk_energy", (p, slot, t), s["pk_energy"][p, slot, t] - 1, on)
    return put(s, "discarded_energy", (p, t), s["discarded_energy"][p, t] + 1, on)


def continue_retreat(s):
    p = current(s)

    def cond(c):
        s, stop = c
        return ~stop & (s["retreat_left"] > 0)

    def body(c):
        s, _ = c
        e = s["pk_energy"][p, 0]
        has = e > 0
        choice = (jnp.sum(has) > 1) & (jnp.sum(e) > s["retreat_left"])
        t = jnp.argmax(has)
        s = discard_unit(s, p, 0, t, ~choice)
        s["retreat_left"] = s["retreat_left"] - jnp.where(choice, 0, 1)
        return s, choice

    s, paused = jax.lax.while_loop(cond, body, (s, jnp.asarray(False)))
    b = s["retreat_target"]
    done = ~paused
    s = swap_slots(s, p, 0, b, done)
    s = clear_on_move(s, p, b, done)
    s["retreat_target"] = jnp.where(done, -1, s["retreat_target"]).astype(I32)
    s["phase"] = jnp.where(paused, PH_CHOICE, PH_MAIN).astype(I32)
    s["choice"] = jnp.where(paused, CH_RETREAT_ENERGY, CH_NONE).astype(I32)
    s["decider"] = p
    return s, I32(PC_DONE)


# ---------------------------------------------------------------- effect ops ------------
def _ctx(s):
    p = s["ex_player"]
    found, hq, hs = find_uid(s, s["ex_holder_uid"])
    return p, found, hq, hs


def choose(s, row, addr, choice):
    """Reference ``choose``: (state, slot, status) with status 0 done (no candidate), 1 slot
    known, 2 paused."""
    tops = top_cards(s)
    _, slots = target_slots(s, tops, row)
    n = jnp.sum(slots)
    given = choice >= 0
    slot = jnp.where(given, choice, kth_true(slots, 0))
    status = jnp.where(given | (n == 1), 1, jnp.where(n == 0, 0, 2))
    decider = jnp.where(
        row[SC["op"]] == OP["switch_opponent_active"], 1 - s["ex_player"], s["ex_player"]
    )
    s = pause(s, addr, decider, CH_TARGET, status == 2)
    return s, slot, status


def pause(s, addr, decider, kind, on):
    s["ex_addr"] = jnp.where(on, addr, s["ex_addr"])
    s["phase"] = jnp.where(on, PH_CHOICE, s["phase"]).astype(I32)
    s["choice"] = jnp.where(on, kind, s["choice"]).astype(I32)
    s["decider"] = jnp.where(on, decider, s["decider"]).astype(I32)
    return s


def count_value(s, row):
    tops = top_cards(s)
    p = s["ex_player"]
    m = matches(s, tops, row[SC["filter"]])[p] & (jnp.arange(4) >= 1)
    opp_energy = jnp.where(s["pk_present"][1 - p, 0], jnp.sum(s["pk_energy"][1 - p, 0]), 0)
    return jnp.where(row[SC["count_of"]] == 0, jnp.sum(m), opp_energy)


def cond_true(s, row):
    p, found, hq, hs = _ctx(s)
    code, param = row[SC["cond"]], row[SC["cond_param"]]
    dmg = found & (s["pk_damage"][hq, hs] > 0)
    o = 1 - p
    has = (
        jnp.select(
            [param == 10, param == 11],
            [s["pk_poisoned"][o, 0], s["pk_burned"][o, 0]],
            s["pk_status"][o, 0] == param,
        )
        & s["pk_present"][o, 0]
    )
    at = top_cards(s)[hq, hs]
    k = jnp.maximum(s["ex_attack"], 0)
    cost = card("atk_cost", at)[k].at[jnp.maximum(param, 0)].add(row[SC["cond_count"]])
    extra = can_pay(s["pk_energy"][hq, hs], cost, card("atk_colorless", at)[k]) & found
    return jnp.select(
        [
            code == COND["self_damaged"],
            code == COND["opponent_active_has_condition"],
            code == COND["self_extra_energy"],
        ],
        [dmg, has, extra],
        False,
    )


def coin_count(s, row):
    coins = row[SC["coins"]]
    s2, h = flip_coins(dict(s), jnp.maximum(coins, 0), coins < 0)
    fixed = coins == 0
    s["counter"] = jnp.where(fixed, s["counter"], s2["counter"])
    return s, jnp.where(fixed, row[SC["amount"]], h)


def op_none(s, row, addr, choice):
    return s, jnp.asarray(False)


def op_damage_per_heads(s, row, addr, choice):
    coins = row[SC["coins"]]
    s, h = flip_coins(s, jnp.maximum(coins, 0), coins < 0)
    s["ex_raw"] = row[SC["amount"]] * h
    return s, jnp.asarray(False)


def op_extra_damage(s, row, addr, choice):
    s["ex_raw"] = s["ex_raw"] + row[SC["amount"]]
    return s, jnp.asarray(False)


def op_extra_damage_if(s, row, addr, choice):
    s["ex_raw"] = s["ex_raw"] + jnp.where(cond_true(s, row), row[SC["amount"]], 0)
    return s, jnp.asarray(False)


def op_damage_per_count(s, row, addr, choice):
    s["ex_raw"] = row[SC["amount"]] * count_value(s, row)
    return s, jnp.asarray(False)


def op_extra_damage_per_count(s, row, addr, choice):
    s["ex_raw"] = s["ex_raw"] + row[SC["amount"]] * count_value(s, row)
    return s, jnp.asarray(False)


def op_damage_other(s, row, addr, choice):
    p = s["ex_player"]
    tops = top_cards(s)
    q, slots = target_slots(s, tops, row)
    one = row[SC["select"]] == 1
    s2, slot, status = choose(dict(s), row, addr, choice)
    s = {k: jnp.where(one, s2[k], s[k]) for k in s}
    hit = jnp.where(one, (jnp.arange(4) == slot) & (status == 1), slots)
    amt = row[SC["amount"]]
    attack = s["ex_kind"] == EX_ATTACK
    s = put(s, "ex_hit", q, s["ex_hit"][q] | hit, attack)
    s = put(s, "ex_dmg", q, s["ex_dmg"][q] + jnp.where(hit, amt, 0), attack)
    s = put(s, "pk_damage", q, s["pk_damage"][q] + jnp.where(hit, amt, 0), ~attack)
    del p
    return s, one & (status == 2)


def op_damage_random_opponent(s, row, addr, choice):
    q = 1 - s["ex_player"]
    slots = s["pk_present"][q]

    def body(i, s):
        on = i < row[SC["times"]]
        s, k = uniform(s, jnp.sum(slots), on)
        sl = kth_true(slots, k)
        s = put(s, "ex_hit", (q, sl), True, on)
        return put(s, "ex_dmg", (q, sl), s["ex_dmg"][q, sl] + row[SC["amount"]], on)

    return jax.lax.fori_loop(0, 8, body, s), jnp.asarray(False)


def op_self_damage(s, row, addr, choice):
    s["ex_self_damage"] = s["ex_self_damage"] + row[SC["amount"]]
    return s, jnp.asarray(False)


def op_heal(s, row, addr, choice):
    p, found, hq, hs = _ctx(s)
    tgt = row[SC["target"]]
    s2, slot, status = choose(dict(s), row, addr, choice)
    chosen = tgt == 2
    s = {k: jnp.where(chosen, s2[k], s[k]) for k in s}
    idx = jnp.arange(4)
    self_mask = jnp.where(found & (hq == p), idx == hs, False)
    each = s["pk_present"][p]
    pick = (idx == slot) & (status == 1)
    mask = jnp.select([tgt == 0, tgt == 1], [self_mask, each], pick)
    d = s["pk_damage"][p]
    s["pk_damage"] = (
        s["pk_damage"].at[p].set(jnp.where(mask, d - jnp.minimum(d, row[SC["amount"]]), d))
    )
    return s, chosen & (status == 2)


def _prevented(s, q, sl):
    return (s["ex_kind"] == EX_ATTACK) & has_kind(
        s["pk_effects"][q, sl], "prevent_attack_damage_and_effects"
    )


def op_apply_condition(s, row, addr, choice):
    o = 1 - s["ex_player"]
    on = s["pk_present"][o, 0] & ~_prevented(s, o, 0)
    c = row[SC["condition"]]
    s = put(s, "pk_poisoned", (o, 0), True, on & (c == 10))
    s = put(s, "pk_burned", (o, 0), True, on & (c == 11))
    return put(s, "pk_status", (o, 0), c, on & (c < 10)), jnp.asarray(False)


def op_discard_energy(s, row, addr, choice):
    p, found, hq, hs = _ctx(s)
    e = row[SC["energy"]]
    left = jnp.where(row[SC["count"]] < 0, 10**6, row[SC["count"]])
    for t in range(8):
        on = found & ((e < 0) | (e == t))
        have = s["pk_energy"][hq, hs, t]
        n = jnp.where(on, jnp.minimum(left, have), 0)
        s = put(s, "pk_energy", (hq, hs, t), have - n)
        s = put(s, "discarded_energy", (p, t), s["discarded_energy"][p, t] + n)
        left = left - n
    return s, jnp.asarray(False)


def op_draw(s, row, addr, choice):
    return draw_cards(s, s["ex_player"], row[SC["count"]]), jnp.asarray(False)


def shuffle_deck(s, q):
    d, ctr = rng.shuffle(s["seed"], s["counter"], s["deck"][q], s["deck_n"][q])
    s["deck"] = s["deck"].at[q].set(d)
    s["counter"] = ctr
    return s


def op_search_deck(s, row, addr, choice):
    p = s["ex_player"]
    f = jnp.maximum(row[SC["filter"]], 0)

    def body(i, c):
        s, stop = c
        deck = s["deck"][p]
        cands = T["filter_ok"][f][jnp.maximum(deck, 0)] & (
            jnp.arange(deck.shape[0]) < s["deck_n"][p]
        )
        stop = stop | (i >= row[SC["count"]]) | ~jnp.any(cands) | (s["hand_n"][p] >= HAND_LIMIT)
        s, k = uniform(s, jnp.sum(cands), ~stop)
        pos = kth_true(cands, k)
        c = deck[pos]
        nd, nn = pop_at(deck, s["deck_n"][p], pos)
        s = put(s, "deck", p, nd, ~stop)
        s = put(s, "deck_n", p, nn, ~stop)
        h, hn = append(s["hand"][p], s["hand_n"][p], c, ~stop)
        s["hand"] = s["hand"].at[p].set(h)
        s["hand_n"] = s["hand_n"].at[p].set(hn)
        return s, stop

    s, _ = jax.lax.fori_loop(0, HAND_LIMIT, body, (s, jnp.asarray(False)))
    return shuffle_deck(s, p), jnp.asarray(False)


def op_switch_opponent_active(s, row, addr, choice):
    s, slot, status = choose(s, row, addr, choice)
    q = 1 - s["ex_player"]
    on = status == 1
    s = swap_slots(s, q, 0, slot, on)
    s = clear_on_move(s, q, slot, on)
    return s, status == 2


def attach_units(s, q, slot, t, n, on=True):
    return put(s, "pk_energy", (q, slot, t), s["pk_energy"][q, slot, t] + n, on)


def op_attach_from_zone(s, row, addr, choice):
    p, found, hq, hs = _ctx(s)
    t = jnp.maximum(row[SC["energy"]], 0)
    to = row[SC["target"]]
    # self / own_active: the coins, then attach
    s_a, n = coin_count(dict(s), row)
    s_a = attach_units(s_a, hq, hs, t, n, (to == 0) & found)
    s_a = attach_units(s_a, p, 0, t, n, (to == 1) & s_a["pk_present"][p, 0])
    # choose_own: the choice first, then the coins
    s_c, slot, status = choose(dict(s), row, addr, choice)
    s_c2, n = coin_count(dict(s_c), row)
    s_c = {k: jnp.where(status == 1, s_c2[k], s_c[k]) for k in s_c}
    s_c = attach_units(s_c, p, slot, t, n, status == 1)
    # distribute_own_bench: the coins first, then one unit at a time
    s_d = dict(s)
    s_d2, n = coin_count(dict(s_d), row)
    first = choice < 0
    s_d = {k: jnp.where(first, s_d2[k], s_d[k]) for k in s_d}
    s_d["ex_units_left"] = jnp.where(first, n, s_d["ex_units_left"] - 1).astype(I32)
    s_d = attach_units(s_d, p, jnp.maximum(choice, 0), t, 1, ~first)

    def cond(c):
        s, stop = c
        return ~stop & (s["ex_units_left"] > 0)

    def body(c):
        s, _ = c
        _, slots = target_slots(s, top_cards(s), row)
        n = jnp.sum(slots)
        s["ex_units_left"] = jnp.where(
            n == 0, 0, s["ex_units_left"] - jnp.where(n == 1, 1, 0)
        ).astype(I32)
        s = attach_units(s, p, kth_true(slots, 0), t, 1, n == 1)
        return s, n > 1

    s_d, paused_d = jax.lax.while_loop(cond, body, (s_d, jnp.asarray(False)))
    s_d = pause(s_d, addr, p, CH_TARGET, paused_d)
    out = jnp.select([to <= 1, to == 2], [0, 1], 2)
    s = jax.tree.map(lambda a, c, d: jnp.select([out == 0, out == 1], [a, c], d), s_a, s_c, s_d)
    paused = jnp.select([out == 0, out == 1], [False, status == 2], paused_d)
    return s, paused


def op_move_energy(s, row, addr, choice):
    p = s["ex_player"]
    t = jnp.maximum(row[SC["energy"]], 0)
    bench = s["pk_present"][p] & (jnp.arange(4) >= 1)
    moved = jnp.sum(jnp.where(bench, s["pk_energy"][p, :, t], 0))
    e = s["pk_energy"][p, :, t]
    e = jnp.where(bench, 0, e).at[0].add(moved)
    s["pk_energy"] = s["pk_energy"].at[p, :, t].set(e)
    return s, jnp.asarray(False)


def op_return_active_to_hand(s, row, addr, choice):
    """Koga: top card first into the hand (discard when full, §16.4), then promote now."""
    p = s["ex_player"]
    first = choice < 0
    for k in (2, 1, 0):
        on = first & (k < s["pk_stack_n"][p, 0])
        c = s["pk_stack"][p, 0, k]
        full = s["hand_n"][p] >= HAND_LIMIT
        h, hn = append(s["hand"][p], s["hand_n"][p], c, on & ~full)
        s["hand"] = s["hand"].at[p].set(h)
        s["hand_n"] = s["hand_n"].at[p].set(hn)
        s = discard_card(s, p, c, on & full)
    tool = s["pk_tool"][p, 0]
    s = discard_card(s, p, tool, first & (tool >= 0))
    s = put(s, "discarded_energy", p, s["discarded_energy"][p] + s["pk_energy"][p, 0], first)
    s = blank_slot(s, p, 0, first)
    bench = s["pk_present"][p] & (jnp.arange(4) >= 1)
    wait = first & (jnp.sum(bench) != 1)
    s = pause(s, addr, p, CH_EXEC_PROMOTE, wait)
    slot = jnp.where(first, kth_true(bench, 0), choice)
    s = swap_slots(s, p, 0, slot, ~wait)
    return s, wait


def op_shuffle_hand_draw(s, row, addr, choice):
    q = jnp.where(row[SC["target"]] == 1, 1 - s["ex_player"], s["ex_player"])
    deck, dn, hand, hn = s["deck"][q], s["deck_n"][q], s["hand"][q], s["hand_n"][q]
    idx = jnp.arange(deck.shape[0])
    moved = hand[jnp.clip(idx - dn, 0, hand.shape[0] - 1)]
    deck = jnp.where((idx >= dn) & (idx < dn + hn), moved, deck)
    s["deck"] = s["deck"].at[q].set(deck)
    s["deck_n"] = s["deck_n"].at[q].set(dn + hn)
    s["hand"] = s["hand"].at[q].set(-1)
    s["hand_n"] = s["hand_n"].at[q].set(0)
    s = shuffle_deck(s, q)
    return draw_cards(s, q, row[SC["count"]]), jnp.asarray(False)


def op_discard_random_from_hand(s, row, addr, choice):
    q = 1 - s["ex_player"]

    def body(i, s):
        on = (i < row[SC["count"]]) & (s["hand_n"][q] > 0)
        s, k = uniform(s, s["hand_n"][q], on)
        c = s["hand"][q, k]
        h, hn = pop_at(s["hand"][q], s["hand_n"][q], k)
        s = put(s, "hand", q, h, on)
        s = put(s, "hand_n", q, hn, on)
        return discard_card(s, q, c, on)

    return jax.lax.fori_loop(0, HAND_LIMIT, body, s), jnp.asarray(False)


def op_add_effect(s, row, addr, choice):
    p, found, hq, hs = _ctx(s)
    until = s["turn"] + row[SC["duration"]]
    ni = row[SC["names"]]
    names = jnp.where(ni >= 0, T["effect_names"][jnp.maximum(ni, 0)], -1)
    eff = jnp.concatenate([jnp.stack([row[SC["kind"]], row[SC["amount"]], until]), names]).astype(
        I32
    )
    tgt = row[SC["target"]]
    dfound, dq, ds = find_uid(s, s["ex_defending_uid"])
    d_on = (tgt == 0) & dfound & (ds == 0) & ~_prevented(s, dq, 0)
    s = add_effect_row(s, "pk_effects", (dq, I32(0)), eff, d_on)
    s = add_effect_row(s, "pk_effects", (hq, hs), eff, (tgt == 1) & found)
    s = add_effect_row(s, "player_effects", (p,), eff, tgt == 2)
    s = add_effect_row(s, "player_effects", (1 - p,), eff, tgt == 3)
    return s, jnp.asarray(False)


def op_queue(s, row, addr, choice):
    """Phase A: a non-damage step is queued for Phase D."""
    n = s["ex_queue_n"]
    s["ex_queue"] = s["ex_queue"].at[n].set(addr, mode="drop")
    s["ex_queue_n"] = n + 1
    return s, jnp.asarray(False)


_OP_FUNCS = {
    "damage_per_heads": op_damage_per_heads,
    "extra_damage": op_extra_damage,
    "extra_damage_if": op_extra_damage_if,
    "damage_per_count": op_damage_per_count,
    "extra_damage_per_count": op_extra_damage_per_count,
    "damage_other": op_damage_other,
    "damage_random_opponent": op_damage_random_opponent,
    "self_damage": op_self_damage,
    "heal": op_heal,
    "apply_condition": op_apply_condition,
    "discard_energy": op_discard_energy,
    "draw": op_draw,
    "search_deck": op_search_deck,
    "switch_opponent_active": op_switch_opponent_active,
    "attach_from_zone": op_attach_from_zone,
    "move_energy": op_move_energy,
    "return_active_to_hand": op_return_active_to_hand,
    "shuffle_hand_draw": op_shuffle_hand_draw,
    "reveal_hand": op_none,
    "look_at_deck_top": op_none,
    "discard_random_from_hand": op_discard_random_from_hand,
    "add_effect": op_add_effect,
}
BRANCHES = [op_none] + [_OP_FUNCS.get(name, op_none) for name in OPS[1:]]
DAMAGE_PHASE_J = jnp.asarray(DAMAGE_PHASE)


def leaf(s, row, addr, choice, phase_a):
    """One step: Phase A queues non-damage steps; otherwise the op runs. -> (state, paused)."""
    op = row[SC["op"]]
    queue = phase_a & ~DAMAGE_PHASE_J[op] & (op != 0)
    idx = jnp.where(queue, len(BRANCHES), op)
    branches = [lambda s, r, a, c, f=f: f(dict(s), r, a, c) for f in BRANCHES + [op_queue]]
    return jax.lax.switch(idx, branches, s, row, addr, choice)


def _src_steps(s):
    kind, k = s["ex_kind"], s["ex_attack"]
    src = jnp.where(kind == EX_ATTACK, jnp.maximum(k, 0), jnp.where(kind == EX_ABILITY, 2, 3))
    return T["steps"][jnp.maximum(s["ex_card"], 0), src]


def walk(s):
    """Walk the (one) top-level step from its start; ``coin_flip_then`` flips now."""
    rows = _src_steps(s)
    is_coin = rows[0, SC["op"]] == OP["coin_flip_then"]
    s, heads = coin(s, is_coin)
    br = jnp.where(heads, 0, 1)
    row = jnp.where(is_coin, rows[1 + br], rows[0])
    addr = jnp.where(is_coin, jnp.stack([I32(0), br, I32(0)]), jnp.array([0, -1, 0], I32)).astype(
        I32
    )
    phase_a = (s["ex_kind"] == EX_ATTACK) & (s["ex_phase"] == 0)
    s, paused = leaf(s, row, addr, I32(-1), phase_a)
    after = jnp.where(phase_a, PC_AFTER_A, PC_FINISH_EXEC)
    return s, jnp.where(paused, PC_DONE, after)


def phase_b(s):
    """§9.4 Phase B then §9.5 Phase C."""
    p = s["ex_player"]
    o = 1 - p
    _, aq, asl = find_uid(s, s["ex_holder_uid"])
    tops = top_cards(s)
    at = tops[aq, asl]
    s = put(s, "ex_hit", (o, 0), True)
    s = put(s, "ex_dmg", (o, 0), s["ex_dmg"][o, 0] + s["ex_raw"])
    pe = s["player_effects"][p]
    names = pe[:, 3:]
    name_ok = jnp.all(names < 0, axis=1) | jnp.any(names == card("name_id", at), axis=1)
    plus = jnp.sum(jnp.where((pe[:, 0] == KIND["attack_damage_plus"]) & name_ok, pe[:, 1], 0))
    minus = jnp.sum(
        jnp.where(
            s["pk_effects"][aq, asl, :, 0] == KIND["attack_damage_minus"],
            s["pk_effects"][aq, asl, :, 1],
            0,
        )
    )
    reduce = mod_of(s, tops, REDUCE)
    taken = jnp.zeros((2, 4), I32)
    for q in (0, 1):
        for sl in range(4):
            r = s["ex_dmg"][q, sl]
            live = s["ex_hit"][q, sl] & s["pk_present"][q, sl] & (r != 0)
            if q == 1:
                pass
            is_o = q == o
            live = live & ~(
                is_o & has_kind(s["pk_effects"][q, sl], "prevent_attack_damage_and_effects")
            )
            opp_active = is_o & (sl == 0)
            r2 = r + plus - minus
            weak = card("weakness", tops[q, sl])
            r2 = r2 + jnp.where((weak == card("type", at)) & (weak >= 0), WEAKNESS_BONUS, 0)
            live = live & ~(opp_active & (r + plus - minus <= 0))
            r = jnp.where(opp_active, r2, r)
            r = r - reduce[q, sl]
            r = r - jnp.sum(
                jnp.where(
                    s["pk_effects"][q, sl, :, 0] == KIND["damage_taken_minus"],
                    s["pk_effects"][q, sl, :, 1],
                    0,
                )
            )
            pq = s["player_effects"][q]
            r = r - jnp.where(
                is_o, jnp.sum(jnp.where(pq[:, 0] == KIND["damage_taken_minus"], pq[:, 1], 0)), 0
            )
            taken = taken.at[q, sl].set(jnp.where(live, jnp.maximum(0, r), 0))
    s["pk_damage"] = s["pk_damage"] + taken
    s = put(s, "pk_damage", (aq, asl), s["pk_damage"][aq, asl] + s["ex_self_damage"])
    counter = jnp.where(taken[o, 0] > 0, mod_of(s, tops, COUNTER)[o, 0], 0)
    s = put(s, "pk_damage", (aq, asl), s["pk_damage"][aq, asl] + counter)
    s["ex_phase"] = I32(1)
    return s, I32(PC_RUN_QUEUE)


def run_queue(s, choice):
    """Phase D (at most one queued step in this pool); then Phase E."""
    rows = _src_steps(s)
    pending = s["ex_qpos"] < s["ex_queue_n"]
    addr = s["ex_queue"][jnp.minimum(s["ex_qpos"], s["ex_queue"].shape[0] - 1)]
    row = rows[addr[1] + 1]
    s2, paused = leaf(dict(s), row, addr, choice, jnp.asarray(False))
    s2["ex_qpos"] = s2["ex_qpos"] + jnp.where(paused, 0, 1)
    s = {k: jnp.where(pending, s2[k], s[k]) for k in s}
    paused = pending & paused
    more = pending & ~paused
    done = ~pending
    s = clear_exec(s, done)
    s["phase"] = jnp.where(done, PH_MAIN, s["phase"]).astype(I32)
    s["choice"] = jnp.where(done, CH_NONE, s["choice"]).astype(I32)
    s["decider"] = jnp.where(done, current(s), s["decider"]).astype(I32)
    return s, jnp.select([paused, more], [PC_DONE, PC_RUN_QUEUE], PC_KO)


def clear_exec(s, on=True):
    for f in EX_FIELDS:
        s[f] = jnp.where(on, _BLANK[f], s[f])
    return s


def finish_exec(s):
    """§10.1 / §11.3: the trainer goes to the discard; Knock Outs are checked."""
    s = discard_card(s, s["ex_player"], s["ex_card"], s["ex_kind"] == EX_TRAINER)
    s = clear_exec(s)
    s["phase"] = I32(PH_MAIN)
    s["choice"] = I32(CH_NONE)
    s["decider"] = current(s)
    return s, I32(PC_KO)


def new_exec(s, kind, p, c, attack=-1, holder_uid=-1, defending_uid=-1, raw=0, on=True):
    vals = {
        "ex_present": True,
        "ex_kind": kind,
        "ex_player": p,
        "ex_card": c,
        "ex_attack": attack,
        "ex_holder_uid": holder_uid,
        "ex_defending_uid": defending_uid,
        "ex_raw": raw,
    }
    for f in EX_FIELDS:
        v = jnp.asarray(vals[f], _BLANK[f].dtype) if f in vals else _BLANK[f]
        s[f] = jnp.where(on, v, s[f])
    return s


# ---------------------------------------------------------------- actions ---------------
def action_part(s):
    """Which part of ``apply_action`` a state's decision belongs to: 0 setup, 1 a pending
    choice, 2 the main phase."""
    ph = s["phase"]
    return jnp.select([ph == PH_SETUP, ph == PH_CHOICE], [0, 1], 2)


def apply_action(s, a, part: int | None = None):
    """The action itself; returns (state, pc). With ``part`` (``action_part``'s value, static)
    only that part is computed and returned, the state in its own dtypes (``step_batch``)."""
    p = s["decider"]
    o = 1 - p
    tops = top_cards(s)
    hand = s["hand"][p]
    i_play = jnp.clip(a - A.PLAY, 0, 9)
    i_on, slot_on = jnp.clip((a - A.HAND_ON) // 4, 0, 9), (a - A.HAND_ON) % 4
    c_play, c_on = hand[i_play], hand[i_on]
    outs = []

    if part in (None, 0):
        # setup: PLAY places, END finishes (§5.4, D4)
        def setup_done(s, on):
            s = put(s, "setup_done", p, True, on)
            other = s["setup_done"][o]
            s["decider"] = jnp.where(on & ~other, o, s["decider"]).astype(I32)
            s2 = dict(s)
            s2["turn"] = I32(1)
            s2 = start_turn(s2)
            go = on & other
            return {k: jnp.where(go, s2[k], s[k]) for k in s}

        su = dict(s)
        place = a != A.END
        h, hn = pop_at(hand, s["hand_n"][p], i_play)
        su = put(su, "hand", p, h, place)
        su = put(su, "hand_n", p, hn, place)
        free = ~su["pk_present"][p]
        slot = jnp.where(free[0], 0, kth_true(free & (jnp.arange(4) >= 1), 0))
        su = new_pokemon(su, p, slot, c_play, 0, place)
        full = jnp.all(su["pk_present"][p])
        basic_left = jnp.any(
            T["is_basic"][jnp.maximum(su["hand"][p], 0)] & (jnp.arange(10) < su["hand_n"][p])
        )
        su = setup_done(su, ~place | full | ~basic_left)
        outs.append((su, PC_DONE))

    else:
        outs.append(None)

    if part in (None, 1):
        # choices (§7.13)
        ch = s["choice"]
        sc = dict(s)
        cur = current(s)
        sc_r = discard_unit(dict(s), cur, 0, jnp.clip(a - A.ENERGY, 0, 7))
        sc_r["retreat_left"] = sc_r["retreat_left"] - 1
        sel = a - A.CHOOSE
        sc_p = dict(s)
        q = s["promote_queue"][0]
        sc_p["promote_queue"] = jnp.array([s["promote_queue"][1], -1], I32)
        sc_p = swap_slots(sc_p, jnp.maximum(q, 0), 0, jnp.clip(sel, 0, 3))
        sc_p["choice"] = I32(CH_NONE)
        sc_t = dict(s)
        sc_t["phase"] = I32(PH_MAIN)
        sc_t["choice"] = I32(CH_NONE)
        sc_t["decider"] = cur
        is_a = (s["ex_kind"] == EX_ATTACK) & (s["ex_phase"] == 0)
        sc_t, paused = leaf(sc_t, step_row(s), s["ex_addr"], sel, is_a)
        in_queue = (s["ex_kind"] == EX_ATTACK) & (s["ex_phase"] == 1)
        sc_t["ex_qpos"] = sc_t["ex_qpos"] + jnp.where(in_queue & ~paused, 1, 0)
        t_pc = jnp.select([paused, in_queue, is_a], [PC_DONE, PC_RUN_QUEUE, PC_AFTER_A], PC_FINISH_EXEC)
        sc = jax.tree.map(
            lambda r, pr, t: jnp.select([ch == CH_RETREAT_ENERGY, ch == CH_PROMOTE], [r, pr], t),
            sc_r,
            sc_p,
            sc_t,
        )
        c_pc = jnp.select(
            [ch == CH_RETREAT_ENERGY, ch == CH_PROMOTE], [PC_RETREAT, PC_NEXT_PROMO], t_pc
        )
        outs.append((sc, c_pc))

    else:
        outs.append(None)

    if part in (None, 2):
        # main phase (§7)
        kind = jnp.select(
            [a == A.END, a < A.HAND_ON, a < A.ATTACH, a < A.ABILITY, a < A.ATTACK, a < A.RETREAT],
            [0, 1, 2, 3, 4, 5],
            6,
        )
        m = dict(s)
        # PLAY: Basic to the Bench or a trainer
        basic = T["is_basic"][jnp.maximum(c_play, 0)]
        on = kind == 1
        h, hn = pop_at(hand, s["hand_n"][p], i_play)
        m = put(m, "hand", p, h, on)
        m = put(m, "hand_n", p, hn, on)
        bslot = kth_true(~m["pk_present"][p] & (jnp.arange(4) >= 1), 0)
        m = new_pokemon(m, p, bslot, c_play, s["turn"], on & basic)
        sup = card("category", c_play) == 2
        m = put(m, "supporter_played", p, True, on & ~basic & sup)
        m = new_exec(m, EX_TRAINER, p, c_play, on=on & ~basic)
        # HAND_ON: Tool or evolution
        on = kind == 2
        h, hn = pop_at(hand, s["hand_n"][p], i_on)
        m = put(m, "hand", p, h, on)
        m = put(m, "hand_n", p, hn, on)
        tool = card("category", c_on) == 3
        m = put(m, "pk_tool", (p, slot_on), c_on, on & tool)
        evo = on & ~tool
        m = put(m, "pk_stack", (p, slot_on, jnp.minimum(s["pk_stack_n"][p, slot_on], 2)), c_on, evo)
        m = put(m, "pk_stack_n", (p, slot_on), s["pk_stack_n"][p, slot_on] + 1, evo)
        m = put(m, "pk_played_turn", (p, slot_on), s["turn"], evo)
        m = put(m, "pk_ability_used", (p, slot_on), False, evo)
        m = clear_on_move(m, p, slot_on, evo)
        # ATTACH (§7.3)
        on = kind == 3
        sl = jnp.clip(a - A.ATTACH, 0, 3)
        m = attach_units(m, p, sl, jnp.maximum(s["zone_current"][p], 0), 1, on)
        m = put(m, "zone_current", p, -1, on)
        m = put(m, "zone_attached", p, True, on)
        # ABILITY (§7.7)
        on = kind == 4
        sl = jnp.clip(a - A.ABILITY, 0, 3)
        m = put(m, "pk_ability_used", (p, sl), True, on)
        m = new_exec(m, EX_ABILITY, p, tops[p, sl], holder_uid=s["pk_uid"][p, sl], on=on)
        # ATTACK (§9.2): the Confusion coin first
        on = kind == 5
        k = jnp.clip(a - A.ATTACK, 0, 1)
        confused = on & (s["pk_status"][p, 0] == ST_CONFUSED)
        m, heads = coin(m, confused)
        fizzle = confused & ~heads
        go = on & ~fizzle
        raw = card("atk_damage", tops[p, 0])[k]
        m = new_exec(m, EX_ATTACK, p, tops[p, 0], k, s["pk_uid"][p, 0], s["pk_uid"][o, 0], raw, go)
        # RETREAT (§7.8)
        on = kind == 6
        m = put(m, "retreated", p, True, on)
        m["retreat_target"] = jnp.where(on, a - A.RETREAT + 1, m["retreat_target"]).astype(I32)
        m["retreat_left"] = jnp.where(on, retreat_cost(s, p), m["retreat_left"]).astype(I32)
        m_pc = jnp.select(
            [
                kind == 0,
                (kind == 1) & basic,
                kind == 1,
                kind == 2,
                kind == 3,
                kind == 4,
                fizzle,
                kind == 5,
            ],
            [PC_END_TURN, PC_DONE, PC_WALK, PC_DONE, PC_DONE, PC_WALK, PC_END_TURN, PC_WALK],
            PC_RETREAT,
        )
        outs.append((m, m_pc))

    else:
        outs.append(None)

    if part is not None:
        out, out_pc = outs[part]
        return {k: jnp.asarray(v, s[k].dtype) for k, v in out.items()}, jnp.asarray(out_pc, I32)
    idx = action_part(s)
    s = jax.tree.map(
        lambda a0, a1, a2: jnp.select([idx == 0, idx == 1], [a0, a1], a2), *[o_[0] for o_ in outs]
    )
    pc = jnp.select([idx == 0, idx == 1], [outs[0][1], outs[1][1]], outs[2][1])
    return s, pc.astype(I32)


def _phases():
    """The automatic phases by program counter: ``phase[pc](s, ko_after) -> (s, pc, ko_after)``
    with the state's dtypes kept (``PC_DONE``'s entry does nothing; the loops stop there)."""
    branches = [
        lambda s, ka: (s, I32(PC_DONE), ka),
        lambda s, ka: (end_turn(dict(s)), I32(PC_KO), I32(AFTER_CHECKUP)),
        lambda s, ka: (*knock_outs(dict(s), ka), ka),
        lambda s, ka: (*next_promotion(dict(s)), ka),
        lambda s, ka: (*continue_after_promotions(dict(s)), ka),
        lambda s, ka: (*after_checkup(dict(s)), ka),
        lambda s, ka: (*walk(dict(s)), ka),
        lambda s, ka: (*phase_b(dict(s)), ka),
        lambda s, ka: (*run_queue(dict(s), I32(-1)), I32(AFTER_ATTACK)),
        lambda s, ka: (*finish_exec(dict(s)), I32(AFTER_MAIN)),
        lambda s, ka: (*continue_retreat(dict(s)), ka),
    ]

    def fix(f):
        def g(s, ka):
            s2, pc2, ka2 = f(s, ka)
            s2 = {k: jnp.asarray(v, s[k].dtype) for k, v in s2.items()}
            return s2, jnp.asarray(pc2, I32), jnp.asarray(ka2, I32)

        return g

    return [fix(f) for f in branches]


def step(s, a):
    """Apply legal action ``a`` of ``s["decider"]`` and run to the next decision."""
    a = jnp.asarray(a, I32)
    s, pc = apply_action(dict(s), a)
    phases = _phases()

    def cond(c):
        return c[1] != PC_DONE

    def body(c):
        s, pc, ko_after = c
        return jax.lax.switch(pc, phases, s, ko_after)

    s = {k: jnp.asarray(v, _BLANK[k].dtype) for k, v in s.items()}
    s, _, _ = jax.lax.while_loop(cond, body, (s, pc, I32(AFTER_MAIN)))
    return s


def select_rows(on, new, old):
    """Per game (the leading axis of every leaf): ``new``'s row where ``on``, else ``old``'s."""
    return jax.tree.map(lambda n, o: jnp.where(on.reshape((-1,) + (1,) * (n.ndim - 1)), n, o),
                        new, old)


def _on_rows(f, at, c, m: int):
    """``c`` (a pytree with a batch axis) with ``f`` applied to its rows where ``at``, gathered
    ``m`` at a time (``f`` maps a pytree of ``m`` rows to one of the same structure)."""
    n = at.shape[0]
    rank = jnp.cumsum(at) - 1  # a row's place among the rows at ``at``

    def one_chunk(j, c):
        rows = jnp.nonzero(at & (rank >= j * m) & (rank < (j + 1) * m), size=m, fill_value=n)[0]
        part = jax.tree.map(lambda x: jnp.take(x, rows, axis=0, mode="clip"), c)
        # rows == n (past the end) fill a short chunk: computed, then dropped when written back
        return jax.tree.map(lambda x, y: x.at[rows].set(y, mode="drop"), c, f(part))

    return jax.lax.fori_loop(0, (jnp.sum(at) + m - 1) // m, one_chunk, c)


def step_batch(s, a, chunk: int | None = None):
    """``jax.vmap(step)(s, a)``, bit for bit, for a batch of games, with each part of the action
    and each automatic phase run only on the games it applies to.

    Under ``vmap`` a branch becomes a select that computes every branch for every game: the
    action's three parts (setup, a pending choice, the main phase), and in the per-game loop,
    which runs until the batch's slowest game is done, all ten phases at every iteration. Here
    the games are gathered by the part or phase they are at, ``chunk`` at a time (default: an
    eighth of the batch); each part or phase runs vmapped on those alone and their rows are
    written back, so one no game is at costs nothing. One pass of the loop takes the phases in
    program-counter order, and a game can move through several phases in one pass. Each game
    still applies exactly the part and phases its state names, in its own order, so the result
    equals ``vmap(step)``'s (tested)."""
    s = {k: jnp.asarray(v, _BLANK[k].dtype) for k, v in s.items()}
    a = jnp.asarray(a, I32)
    n = a.shape[0]
    m = min(n, chunk or max(1, n // 8))
    part = jax.vmap(action_part)(s)
    c = (s, jnp.zeros(n, I32), a)
    for k in range(3):
        def act(c, k=k):
            new, pc = jax.vmap(lambda s, a: apply_action(s, a, k))(c[0], c[2])
            return new, pc, c[2]

        c = _on_rows(act, part == k, c, m)
    phases = _phases()

    def one_pass(c):
        for i in range(1, len(phases)):
            c = _on_rows(lambda c, i=i: jax.vmap(phases[i])(c[0], c[2]), c[1] == i, c, m)
        return c

    c = (c[0], c[1], jnp.full(n, AFTER_MAIN, I32))
    s, _, _ = jax.lax.while_loop(lambda c: jnp.any(c[1] != PC_DONE), one_pass, c)
    return s
