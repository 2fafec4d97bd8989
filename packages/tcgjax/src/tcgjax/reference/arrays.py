"""``to_arrays`` / ``from_arrays``: the reference state as a fixed-size flat dict of numpy arrays,
the layout the JAX engine loads for L2 (docs/tcgjax.md lists every field).

Padding is -1 for card/type/slot lists and 0 for effect rows (kind 0 = no effect). Lists are
packed from index 0 in state order, with a ``*_n`` length. The game log is not part of it.
"""

from __future__ import annotations

import numpy as np

from .state import MAX_NAMES, N_SLOTS, Effect, Exec, GameState, Player, Pokemon

DECK = 20
HAND = 10
DISCARD = 20
STACK = 3
TYPES = 3
PLAYER_EFFECTS = 8
POKEMON_EFFECTS = 4
EFFECT_WIDTH = 3 + MAX_NAMES  # kind, amount, until, name ids
QUEUE = 4

I32, U32, B = np.int32, np.uint32, np.bool_

# name: (shape, dtype)
FIELDS: dict[str, tuple[tuple[int, ...], type]] = {
    "seed": ((), U32),
    "counter": ((), U32),
    "turn": ((), I32),
    "first_player": ((), I32),
    "phase": ((), I32),
    "decider": ((), I32),
    "choice": ((), I32),
    "retreat_target": ((), I32),
    "retreat_left": ((), I32),
    "after_promo": ((), I32),
    "winner": ((), I32),
    "next_uid": ((), I32),
    "promote_queue": ((2,), I32),
    # players
    "deck_cards": ((2, DECK), I32),
    "energy_types": ((2, TYPES), I32),
    "deck": ((2, DECK), I32),
    "deck_n": ((2,), I32),
    "hand": ((2, HAND), I32),
    "hand_n": ((2,), I32),
    "discard": ((2, DISCARD), I32),
    "discard_n": ((2,), I32),
    "discarded_energy": ((2, 8), I32),
    "zone_current": ((2,), I32),
    "zone_next": ((2,), I32),
    "points": ((2,), I32),
    "supporter_played": ((2,), B),
    "retreated": ((2,), B),
    "zone_attached": ((2,), B),
    "setup_done": ((2,), B),
    "player_effects": ((2, PLAYER_EFFECTS, EFFECT_WIDTH), I32),
    "player_effects_n": ((2,), I32),
    # Pokémon in play, [player, slot]
    "pk_present": ((2, N_SLOTS), B),
    "pk_uid": ((2, N_SLOTS), I32),
    "pk_stack": ((2, N_SLOTS, STACK), I32),
    "pk_stack_n": ((2, N_SLOTS), I32),
    "pk_damage": ((2, N_SLOTS), I32),
    "pk_energy": ((2, N_SLOTS, 8), I32),
    "pk_tool": ((2, N_SLOTS), I32),
    "pk_poisoned": ((2, N_SLOTS), B),
    "pk_burned": ((2, N_SLOTS), B),
    "pk_status": ((2, N_SLOTS), I32),
    "pk_played_turn": ((2, N_SLOTS), I32),
    "pk_ability_used": ((2, N_SLOTS), B),
    "pk_effects": ((2, N_SLOTS, POKEMON_EFFECTS, EFFECT_WIDTH), I32),
    "pk_effects_n": ((2, N_SLOTS), I32),
    # the attack / ability / trainer being resolved
    "ex_present": ((), B),
    "ex_kind": ((), I32),
    "ex_player": ((), I32),
    "ex_card": ((), I32),
    "ex_attack": ((), I32),
    "ex_holder_uid": ((), I32),
    "ex_defending_uid": ((), I32),
    "ex_phase": ((), I32),
    "ex_addr": ((3,), I32),
    "ex_raw": ((), I32),
    "ex_dmg": ((2, N_SLOTS), I32),
    "ex_hit": ((2, N_SLOTS), B),
    "ex_self_damage": ((), I32),
    "ex_queue": ((QUEUE, 3), I32),
    "ex_queue_n": ((), I32),
    "ex_qpos": ((), I32),
    "ex_units_left": ((), I32),
}


def _pack(xs, n: int, what: str) -> tuple[list[int], int]:
    if len(xs) > n:
        raise ValueError(f"{what} holds {len(xs)} entries, the array layout has room for {n}")
    return list(xs) + [-1] * (n - len(xs)), len(xs)


def _effect_rows(effects: list[Effect], n: int, what: str) -> tuple[list[list[int]], int]:
    if len(effects) > n:
        raise ValueError(f"{what} holds {len(effects)} effects, the layout has room for {n}")
    rows = []
    for e in effects:
        names = list(e.names) + [-1] * (MAX_NAMES - len(e.names))
        rows.append([e.kind, e.amount, e.until, *names])
    rows += [[0, 0, 0] + [-1] * MAX_NAMES] * (n - len(effects))
    return rows, len(effects)


def to_arrays(st: GameState) -> dict[str, np.ndarray]:
    """The state as the fixed-size arrays of ``FIELDS``."""
    v: dict[str, object] = {}
    for k in ("seed", "counter", "turn", "first_player", "phase", "decider", "choice"):
        v[k] = getattr(st, k)
    for k in ("retreat_target", "retreat_left", "after_promo", "winner", "next_uid"):
        v[k] = getattr(st, k)
    v["promote_queue"] = _pack(st.promote_queue, 2, "promote_queue")[0]
    per: dict[str, list] = {k: [] for k in FIELDS if not k.startswith(("ex_",)) and k not in v}
    for p, pl in enumerate(st.players):
        per["deck_cards"].append(_pack(pl.deck_cards, DECK, "deck list")[0])
        per["energy_types"].append(_pack(pl.energy_types, TYPES, "energy types")[0])
        for name, xs, n in (("deck", pl.deck, DECK), ("hand", pl.hand, HAND)):
            a, m = _pack(xs, n, f"P{p} {name}")
            per[name].append(a)
            per[name + "_n"].append(m)
        a, m = _pack(pl.discard, DISCARD, f"P{p} discard")
        per["discard"].append(a)
        per["discard_n"].append(m)
        per["discarded_energy"].append(list(pl.discarded_energy))
        for k in ("zone_current", "zone_next", "points", "supporter_played", "retreated"):
            per[k].append(getattr(pl, k))
        per["zone_attached"].append(pl.zone_attached)
        per["setup_done"].append(pl.setup_done)
        rows, m = _effect_rows(pl.effects, PLAYER_EFFECTS, f"P{p}")
        per["player_effects"].append(rows)
        per["player_effects_n"].append(m)
        cols: dict[str, list] = {k: [] for k in FIELDS if k.startswith("pk_")}
        for s, pk in enumerate(pl.board):
            cols["pk_present"].append(pk is not None)
            pk = pk if pk is not None else Pokemon(uid=-1, stack=[], tool=-1)
            cols["pk_uid"].append(pk.uid)
            a, m = _pack(pk.stack, STACK, f"P{p} slot {s} stack")
            cols["pk_stack"].append(a)
            cols["pk_stack_n"].append(m)
            cols["pk_damage"].append(pk.damage)
            cols["pk_energy"].append(list(pk.energy))
            cols["pk_tool"].append(pk.tool)
            cols["pk_poisoned"].append(pk.poisoned)
            cols["pk_burned"].append(pk.burned)
            cols["pk_status"].append(pk.status)
            cols["pk_played_turn"].append(pk.played_turn)
            cols["pk_ability_used"].append(pk.ability_used)
            rows, m = _effect_rows(pk.effects, POKEMON_EFFECTS, f"P{p} slot {s}")
            cols["pk_effects"].append(rows)
            cols["pk_effects_n"].append(m)
        for k, col in cols.items():
            per[k].append(col)
    v.update(per)
    ex = st.exec
    v["ex_present"] = ex is not None
    ex = ex if ex is not None else Exec(kind=-1, player=-1, card=-1)
    for k in ("kind", "player", "card", "attack", "holder_uid", "defending_uid", "phase"):
        v["ex_" + k] = getattr(ex, k)
    for k in ("raw", "self_damage", "qpos", "units_left"):
        v["ex_" + k] = getattr(ex, k)
    v["ex_addr"] = list(ex.addr)
    v["ex_dmg"] = [list(r) for r in ex.dmg]
    v["ex_hit"] = [list(r) for r in ex.hit]
    if len(ex.queue) > QUEUE:
        raise ValueError(f"attack queue holds {len(ex.queue)} steps, the layout has {QUEUE}")
    v["ex_queue"] = [list(a) for a in ex.queue] + [[-1, -1, -1]] * (QUEUE - len(ex.queue))
    v["ex_queue_n"] = len(ex.queue)
    out = {}
    for k, (shape, dtype) in FIELDS.items():
        arr = np.asarray(v[k], dtype=dtype)
        assert arr.shape == shape, (k, arr.shape, shape)
        out[k] = arr
    return out


def _check(arrays: dict) -> None:
    if not isinstance(arrays, dict):
        raise TypeError(f"from_arrays needs a dict of arrays, got {type(arrays).__name__}")
    missing = sorted(set(FIELDS) - set(arrays))
    extra = sorted(set(arrays) - set(FIELDS))
    if missing or extra:
        raise ValueError(f"array fields differ from the layout: missing {missing}, unknown {extra}")
    for k, (shape, dtype) in FIELDS.items():
        a = np.asarray(arrays[k])
        if a.shape != shape:
            raise ValueError(f"field {k!r}: shape {a.shape}, expected {shape}")
        if a.dtype != np.dtype(dtype):
            raise ValueError(f"field {k!r}: dtype {a.dtype}, expected {np.dtype(dtype)}")


def _effects(rows, n) -> list[Effect]:
    out = []
    for r in rows[:n]:
        names = tuple(int(x) for x in r[3:] if x >= 0)
        out.append(Effect(int(r[0]), int(r[1]), int(r[2]), names))
    return out


def from_arrays(arrays: dict[str, np.ndarray]) -> GameState:
    """Rebuild the reference state (with an empty log) from ``to_arrays`` output."""
    _check(arrays)
    a = {k: np.asarray(x).tolist() for k, x in arrays.items()}
    players = []
    for p in range(2):
        pl = Player(
            deck_cards=tuple(x for x in a["deck_cards"][p] if x >= 0),
            energy_types=tuple(x for x in a["energy_types"][p] if x >= 0),
        )
        pl.deck = a["deck"][p][: a["deck_n"][p]]
        pl.hand = a["hand"][p][: a["hand_n"][p]]
        pl.discard = a["discard"][p][: a["discard_n"][p]]
        pl.discarded_energy = a["discarded_energy"][p]
        for k in ("zone_current", "zone_next", "points", "supporter_played", "retreated"):
            setattr(pl, k, a[k][p])
        pl.zone_attached = a["zone_attached"][p]
        pl.setup_done = a["setup_done"][p]
        pl.effects = _effects(a["player_effects"][p], a["player_effects_n"][p])
        for s in range(N_SLOTS):
            if not a["pk_present"][p][s]:
                continue
            pk = Pokemon(
                uid=a["pk_uid"][p][s],
                stack=a["pk_stack"][p][s][: a["pk_stack_n"][p][s]],
                damage=a["pk_damage"][p][s],
                energy=a["pk_energy"][p][s],
                tool=a["pk_tool"][p][s],
                poisoned=a["pk_poisoned"][p][s],
                burned=a["pk_burned"][p][s],
                status=a["pk_status"][p][s],
                effects=_effects(a["pk_effects"][p][s], a["pk_effects_n"][p][s]),
                played_turn=a["pk_played_turn"][p][s],
                ability_used=a["pk_ability_used"][p][s],
            )
            pl.board[s] = pk
        players.append(pl)
    st = GameState(seed=a["seed"], counter=a["counter"], players=players, log=[])
    for k in ("turn", "first_player", "phase", "decider", "choice", "retreat_target"):
        setattr(st, k, a[k])
    for k in ("retreat_left", "after_promo", "winner", "next_uid"):
        setattr(st, k, a[k])
    st.promote_queue = [x for x in a["promote_queue"] if x >= 0]
    if a["ex_present"]:
        ex = Exec(kind=a["ex_kind"], player=a["ex_player"], card=a["ex_card"])
        for k in ("attack", "holder_uid", "defending_uid", "phase", "raw", "self_damage"):
            setattr(ex, k, a["ex_" + k])
        ex.qpos, ex.units_left = a["ex_qpos"], a["ex_units_left"]
        ex.addr = tuple(a["ex_addr"])
        ex.dmg, ex.hit = a["ex_dmg"], a["ex_hit"]
        ex.queue = [tuple(q) for q in a["ex_queue"][: a["ex_queue_n"]]]
        st.exec = ex
    return st
