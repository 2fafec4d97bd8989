"""``legal_mask(state)``: the reference's ``legal_actions`` (engine.py §7) as one branch-free
jnp expression over the 76 actions (enumeration in ``tcgjax.reference.actions``).

Every per-phase mask is computed and the phase selects among them (select, not Python ``if``),
so the function jits and vmaps. Table lookups at padded -1 indices are clamped and masked.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..reference import actions as A
from ..reference.state import (
    CH_EXEC_PROMOTE,
    CH_PROMOTE,
    CH_RETREAT_ENERGY,
    CH_TARGET,
    EFFECT_KINDS,
    PH_CHOICE,
    PH_MAIN,
    PH_SETUP,
    ST_ASLEEP,
    ST_PARALYZED,
)
from .tables import CAT_ITEM, CAT_POKEMON, CAT_SUPPORTER, CAT_TOOL, COND, MODS, OP, SC, TABLES

T = {k: jnp.asarray(v) for k, v in TABLES.items()}
KIND = {name: i for i, name in enumerate(EFFECT_KINDS)}


def card(table: str, c):
    """``TABLES[table][c]`` with -1 (no card) clamped; callers mask the result."""
    return T[table][jnp.maximum(c, 0)]


def top_cards(s):
    """(2, 4) top card of each slot, -1 where empty."""
    n = s["pk_stack_n"]
    tops = jnp.take_along_axis(s["pk_stack"], jnp.maximum(n - 1, 0)[..., None], axis=-1)[..., 0]
    return jnp.where(s["pk_present"], tops, -1)


def has_kind(rows, kind: str):
    """Effect rows (..., E, 6) -> any row of this kind (empty rows are kind 0)."""
    return jnp.any(rows[..., 0] == KIND[kind], axis=-1)


def kind_sum(rows, kind: str):
    return jnp.sum(jnp.where(rows[..., 0] == KIND[kind], rows[..., 1], 0), axis=-1)


def matches(s, tops, f):
    """(2, 4) PokemonFilter ``f`` (id, -1 = empty filter) on every slot's Pokémon."""
    ok = T["filter_ok"][jnp.maximum(f, 0)][jnp.maximum(tops, 0)]
    ok = jnp.where(f >= 0, ok, True)
    dmg = T["filter_damaged"][jnp.maximum(f, 0)]
    damaged = s["pk_damage"] > 0
    ok = ok & jnp.where((f >= 0) & (dmg >= 0), damaged == (dmg == 1), True)
    return ok & s["pk_present"]


def requires_ok(s, tops, p, c, self_slot):
    """All ``requires`` conditions of card ``c`` for player ``p`` (``self_slot``: the ability
    holder's slot, for self_is_active). Conditions of EFFECTS.md §5 that requires lists use."""
    ok = jnp.asarray(True)
    bench = jnp.arange(4) >= 1
    for r in range(2):
        code = card("requires", c)[r, 0]
        f = card("requires", c)[r, 1]
        m = matches(s, tops, f)
        me, opp = m[p], s["pk_present"][1 - p]
        val = jnp.select(
            [
                code == 0,
                code == COND["self_is_active"],
                code == COND["own_active_matches"],
                code == COND["own_pokemon_exists"],
                code == COND["own_bench_not_empty"],
                code == COND["opponent_bench_not_empty"],
            ],
            [
                True,
                self_slot == 0,
                me[0],
                jnp.any(me),
                jnp.any(s["pk_present"][p] & bench),
                jnp.any(opp & bench),
            ],
            False,
        )
        ok = ok & val
    return ok


def can_pay(energy, cost, colorless):
    """§8.3: typed requirements first, colorless from the remainder."""
    return jnp.all(energy >= cost) & (jnp.sum(energy) - jnp.sum(cost) >= colorless)


def step_row(s):
    """The step row at the resolving Exec's address (see tables: source, slot)."""
    kind, k = s["ex_kind"], s["ex_attack"]
    src = jnp.where(kind == 0, jnp.maximum(k, 0), jnp.where(kind == 1, 2, 3))
    slot = s["ex_addr"][1] + 1  # b = -1 / 0 / 1 -> 0 / 1 / 2
    return T["steps"][jnp.maximum(s["ex_card"], 0), src, slot]


def target_slots(s, tops, row):
    """(side player, (4,) bool) the slots a choice-taking step may pick (reference
    ``target_candidates``)."""
    p = s["ex_player"]
    op = row[SC["op"]]
    present = s["pk_present"]
    bench = jnp.arange(4) >= 1
    m = matches(s, tops, row[SC["filter"]])
    side_q = jnp.where(row[SC["side"]] == 1, p, 1 - p)
    heal = m[p] & (s["pk_damage"][p] > 0)
    dmg_other = present[side_q] & jnp.where(row[SC["zone"]] == 0, bench, True)
    attach = m[p] & jnp.where(row[SC["target"]] == 2, True, bench)
    switch = present[1 - p] & bench
    own_bench = present[p] & bench
    q = jnp.select(
        [op == OP["damage_other"], op == OP["switch_opponent_active"]], [side_q, 1 - p], p
    )
    slots = jnp.select(
        [
            op == OP["heal"],
            op == OP["damage_other"],
            op == OP["attach_from_zone"],
            op == OP["switch_opponent_active"],
            op == OP["return_active_to_hand"],
        ],
        [heal, dmg_other, attach, switch, own_bench],
        jnp.zeros(4, bool),
    )
    return q, slots


def legal_mask(s):
    """(76,) bool: the legal actions of ``s["decider"]`` (all False once the game is over)."""
    p = s["decider"]
    o = 1 - p
    tops = top_cards(s)
    present = s["pk_present"][p]
    bench = jnp.arange(4) >= 1
    hand = s["hand"][p]
    in_hand = jnp.arange(hand.shape[0]) < s["hand_n"][p]
    hc = jnp.maximum(hand, 0)
    basic = T["is_basic"][hc] & in_hand
    mask = jnp.zeros(A.N_ACTIONS, bool)

    # setup (§5.4, D4)
    free = ~present[0] | jnp.any(~present[1:])
    setup = mask.at[A.END].set(present[0])
    setup = setup.at[A.PLAY : A.PLAY + 10].set(basic & free)

    # pending choices (§7.13)
    a_energy = s["pk_energy"][p, 0] > 0
    ch_retreat = mask.at[A.ENERGY : A.ENERGY + 8].set(a_energy)
    ch_promote = mask.at[A.CHOOSE : A.CHOOSE + 4].set(present & bench)
    _, tslots = target_slots(s, tops, step_row(s))
    ch_target = mask.at[A.CHOOSE : A.CHOOSE + 4].set(tslots)
    ch = s["choice"]
    choice = jnp.select(
        [ch == CH_RETREAT_ENERGY, (ch == CH_PROMOTE) | (ch == CH_EXEC_PROMOTE), ch == CH_TARGET],
        [ch_retreat, ch_promote, ch_target],
        mask,
    )

    # main phase (§7)
    main = mask.at[A.END].set(True)
    cat = T["category"][hc]
    bench_free = jnp.any(~present[1:])
    opp_active_top = tops[o, 0]
    blocked = has_kind(s["player_effects"][p], "no_supporters") | (
        s["pk_present"][o, 0]
        & (card("mods", opp_active_top)[MODS.index("block_opponent_supporters")] > 0)
    )
    req = jnp.stack([requires_ok(s, tops, p, hand[i], -1) for i in range(hand.shape[0])])
    play = jnp.where(
        T["is_basic"][hc],
        bench_free,
        jnp.where(
            cat == CAT_ITEM,
            req,
            (cat == CAT_SUPPORTER) & ~s["supporter_played"][p] & ~blocked & req,
        ),
    )
    main = main.at[A.PLAY : A.PLAY + 10].set(play & in_hand)

    my_tops = tops[p]
    tc = jnp.maximum(my_tops, 0)
    tool_ok = present & (s["pk_tool"][p] < 0)  # (4,)
    stage = T["stage"][hc]
    evo_ok = (
        (s["turn"] >= 3)
        & present[None, :]
        & (s["pk_played_turn"][p] != s["turn"])[None, :]
        & (T["name_id"][tc][None, :] == T["evolves_from"][hc][:, None])
        & (T["stage"][tc][None, :] == (stage - 1)[:, None])
        & ((cat == CAT_POKEMON) & (stage > 0))[:, None]
    )
    on = jnp.where((cat == CAT_TOOL)[:, None], tool_ok[None, :], evo_ok) & in_hand[:, None]
    main = main.at[A.HAND_ON : A.HAND_ON + 40].set(on.reshape(-1))

    attach = present & (s["zone_current"][p] >= 0) & ~s["zone_attached"][p]
    main = main.at[A.ATTACH : A.ATTACH + 4].set(attach)

    abil = jnp.stack(
        [
            present[i]
            & ~s["pk_ability_used"][p, i]
            & (T["ability"][tc[i]] == 1)
            & requires_ok(s, tops, p, my_tops[i], i)
            for i in range(4)
        ]
    )
    main = main.at[A.ABILITY : A.ABILITY + 4].set(abil)

    at = tc[0]
    status = s["pk_status"][p, 0]
    can_act = (status != ST_ASLEEP) & (status != ST_PARALYZED)
    energy = s["pk_energy"][p, 0]
    atk = jnp.stack(
        [
            (k < T["n_attacks"][at])
            & can_act
            & ~has_kind(s["pk_effects"][p, 0], "cannot_attack")
            & can_pay(energy, T["atk_cost"][at, k], T["atk_colorless"][at, k])
            for k in range(2)
        ]
    )
    main = main.at[A.ATTACK : A.ATTACK + 2].set(atk & present[0])

    cost = jnp.maximum(
        0, T["retreat_cost"][at] - kind_sum(s["player_effects"][p], "retreat_cost_minus")
    )
    retreat = (
        present[1:]
        & ~s["retreated"][p]
        & can_act
        & ~has_kind(s["pk_effects"][p, 0], "cannot_retreat")
        & (jnp.sum(energy) >= cost)
    )
    main = main.at[A.RETREAT : A.RETREAT + 3].set(retreat & present[0])

    ph = s["phase"]
    return jnp.select([ph == PH_SETUP, ph == PH_CHOICE, ph == PH_MAIN], [setup, choice, main], mask)
