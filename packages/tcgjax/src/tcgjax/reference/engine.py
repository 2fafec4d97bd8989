"""The rules of RULES.md and the effect ops of EFFECTS.md, one function per section / op.

Entry points: ``new_game``, ``legal_actions``, ``step`` (see ``actions`` for the enumeration).
``step`` mutates the state in place. All randomness goes through ``rng.Rng`` in the draw order
documented in docs/tcgjax.md; the comments below name each draw where it happens.
"""

from __future__ import annotations

from . import actions as A
from .cards import ENERGY_TYPES, N_ENERGY, POKEMON_TYPES, STAGES, Deck, card_pool
from .rng import Rng
from .state import (
    AFTER_ATTACK,
    AFTER_CHECKUP,
    AFTER_MAIN,
    BURN_DAMAGE,
    CH_EXEC_PROMOTE,
    CH_NONE,
    CH_PROMOTE,
    CH_RETREAT_ENERGY,
    CH_TARGET,
    EFFECT_KINDS,
    EX_ABILITY,
    EX_ATTACK,
    EX_POINTS,
    EX_TRAINER,
    HAND_LIMIT,
    OPENING_HAND,
    OPENING_SHUFFLE_TRIES,
    PH_CHOICE,
    PH_MAIN,
    PH_OVER,
    PH_SETUP,
    POINTS_TO_WIN,
    POISON_DAMAGE,
    ST_ASLEEP,
    ST_CONFUSED,
    ST_NONE,
    ST_PARALYZED,
    STATUS_NAMES,
    TIE,
    TURN_LIMIT,
    UNTIL_TAILS_CAP,
    WEAKNESS_BONUS,
    Effect,
    Exec,
    GameState,
    Player,
    Pokemon,
)

CARDS = card_pool()
K = {name: i for i, name in enumerate(EFFECT_KINDS)}
DAMAGE_PHASE_OPS = frozenset(
    {
        "damage_per_heads",
        "extra_damage",
        "extra_damage_if",
        "damage_per_count",
        "extra_damage_per_count",
        "damage_other",
        "damage_random_opponent",
        "self_damage",
    }
)


class IllegalActionError(ValueError):
    """An action index that is not legal in this state."""


class WrongPlayerError(ValueError):
    """An action submitted by a player who is not the one to decide."""


# ---------------------------------------------------------------- small helpers ----------
def log(st: GameState, msg: str) -> None:
    if st.log is not None:
        st.log.append(f"[t{st.turn}] {msg}")


def pname(p: int) -> str:
    return f"P{p}"


def top(pk: Pokemon):
    return CARDS[pk.top]


def cname(idx: int) -> str:
    return CARDS[idx].name


def max_hp(pk: Pokemon) -> int:
    """§4.2: top card HP plus hp_bonus modifiers (Giant Cape)."""
    return top(pk).hp + sum(m.get("amount", 0) for m in passive_mods(pk, "hp_bonus"))


def passive_mods(pk: Pokemon, op: str) -> list[dict]:
    """Passive modifiers of the holder (EFFECTS.md §8): its passive ability and its Tool."""
    out = []
    ab = top(pk).ability
    if ab is not None and ab["timing"] == "passive":
        out += [m for m in ab["modifiers"] if m["op"] == op]
    if pk.tool >= 0:
        out += [m for m in CARDS[pk.tool].effect["modifiers"] if m["op"] == op]
    return out


def effect_sum(effects: list[Effect], kind: str, name_id: int | None = None) -> int:
    k = K[kind]
    return sum(
        e.amount
        for e in effects
        if e.kind == k and (not e.names or name_id is None or name_id in e.names)
    )


def has_effect(effects: list[Effect], kind: str) -> bool:
    return any(e.kind == K[kind] for e in effects)


def find_uid(st: GameState, uid: int) -> tuple[int, int] | None:
    for p in (0, 1):
        for s, pk in enumerate(st.players[p].board):
            if pk is not None and pk.uid == uid:
                return p, s
    return None


def clear_on_move(pk: Pokemon) -> None:
    """§12.7 / §19.18: moving to the Bench or evolving removes conditions and attached effects."""
    pk.poisoned = pk.burned = False
    pk.status = ST_NONE
    pk.effects = []


# ---------------------------------------------------------------- §5 setup ---------------
def new_game(deck_a: Deck, deck_b: Deck, seed: int, log_enabled: bool = True) -> GameState:
    """§5 Setup up to the placement decisions (§5.4), which are actions of the first player then
    the second. Draw order: first-player coin; player 0's opening shuffles; player 1's; player
    0's Energy Zone ``next``; player 1's."""
    for d in (deck_a, deck_b):
        if not isinstance(d, Deck):
            raise TypeError(f"decks must be tcgjax.reference.Deck (use make_deck), got {d!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2^32), got {seed!r}")
    players = [Player(deck_cards=d.cards, energy_types=d.energy_types) for d in (deck_a, deck_b)]
    st = GameState(seed=seed, counter=0, players=players, log=[] if log_enabled else None)
    rng = Rng(st)
    # §5.1: heads -> player 0 goes first.
    st.first_player = 0 if rng.coin() else 1
    log(st, f"setup: {pname(st.first_player)} goes first")
    for p in (0, 1):
        opening_hand(st, p)
    for p in (0, 1):
        players[p].zone_next = generate_energy(st, p)  # §5.3
    st.phase = PH_SETUP
    st.decider = st.first_player
    return st


def opening_hand(st: GameState, p: int) -> None:
    """§5.2: reshuffle until a Basic is in the top 5 (at most 128 shuffles, then the swap)."""
    rng = Rng(st)
    pl = st.players[p]
    deck = list(pl.deck_cards)
    for _ in range(OPENING_SHUFFLE_TRIES):
        rng.shuffle(deck)
        if any(CARDS[c].is_basic for c in deck[:OPENING_HAND]):
            break
    else:
        # §5.2 fallback: a uniformly random Basic of the bottom 15 swaps with a random top-5 card.
        basics = [i for i in range(OPENING_HAND, len(deck)) if CARDS[deck[i]].is_basic]
        b = basics[rng.uniform(len(basics))]
        t = rng.uniform(OPENING_HAND)
        deck[b], deck[t] = deck[t], deck[b]
    pl.hand = deck[:OPENING_HAND]
    pl.deck = deck[OPENING_HAND:]


def generate_energy(st: GameState, p: int) -> int:
    """§8.2: uniform among the declared types (one draw even for a one-type deck)."""
    types = st.players[p].energy_types
    return types[Rng(st).uniform(len(types))]


def setup_place(st: GameState, p: int, hand_slot: int) -> None:
    """§5.4: the first Basic placed becomes Active, later ones go to the Bench."""
    pl = st.players[p]
    card = pl.hand.pop(hand_slot)
    slot = 0 if pl.board[0] is None else pl.board.index(None, 1)
    pl.board[slot] = new_pokemon(st, card, played_turn=0)
    log(st, f"setup: {pname(p)} places {cname(card)} ({'active' if slot == 0 else 'bench'})")


def setup_done(st: GameState, p: int) -> None:
    st.players[p].setup_done = True
    if not st.players[1 - p].setup_done:
        st.decider = 1 - p
        return
    # §5.5: both boards revealed, turn 1 begins.
    st.turn = 1
    start_turn(st)


def new_pokemon(st: GameState, card: int, played_turn: int) -> Pokemon:
    pk = Pokemon(uid=st.next_uid, stack=[card], played_turn=played_turn)
    st.next_uid += 1
    return pk


# ---------------------------------------------------------------- §6 turns ---------------
def start_turn(st: GameState) -> None:
    """§6.2: draw, Energy Zone update (not on turn 1), reset per-turn flags."""
    p = st.current
    pl = st.players[p]
    draw_cards(st, p, 1)
    if st.turn != 1:
        pl.zone_current = pl.zone_next
        pl.zone_next = generate_energy(st, p)
    pl.supporter_played = pl.retreated = pl.zone_attached = False
    for pk in pl.board:
        if pk is not None:
            pk.ability_used = False
    st.phase = PH_MAIN
    st.decider = p
    log(
        st,
        f"turn {st.turn}: {pname(p)} (zone {_etype(pl.zone_current)}, next {_etype(pl.zone_next)})",
    )


def _etype(t: int) -> str:
    return "-" if t < 0 else ENERGY_TYPES[t]


def draw_cards(st: GameState, p: int, n: int) -> None:
    """§16.2/§16.5: each draw does nothing at 10 cards in hand or from an empty deck."""
    pl = st.players[p]
    for _ in range(n):
        if not pl.deck or len(pl.hand) >= HAND_LIMIT:
            continue
        pl.hand.append(pl.deck.pop(0))


def end_turn(st: GameState) -> None:
    """§14 steps 1-6, then (after promotions) ``after_checkup``."""
    p = st.current
    order = (p, 1 - p)
    rng = Rng(st)
    # 1. effects ending with this turn expire; unattached zone energy is lost.
    for q in (0, 1):
        pl = st.players[q]
        pl.effects = [e for e in pl.effects if e.until > st.turn]
        for pk in pl.board:
            if pk is not None:
                pk.effects = [e for e in pk.effects if e.until > st.turn]
    st.players[p].zone_current = -1
    # 2. Poison, 3. Burn, 4. Sleep: the player whose turn ended first.
    for q in order:
        a = st.players[q].active
        if a is not None and a.poisoned:
            a.damage += POISON_DAMAGE
            log(st, f"checkup: {pname(q)}'s {cname(a.top)} takes {POISON_DAMAGE} poison damage")
    for q in order:
        a = st.players[q].active
        if a is not None and a.burned:
            a.damage += BURN_DAMAGE
            heads = rng.coin()
            if heads:
                a.burned = False
            log(st, f"checkup: {pname(q)}'s {cname(a.top)} burn {BURN_DAMAGE}, coin {_hc(heads)}")
    for q in order:
        a = st.players[q].active
        if a is not None and a.status == ST_ASLEEP:
            heads = rng.coin()
            if heads:
                a.status = ST_NONE
            log(st, f"checkup: {pname(q)}'s {cname(a.top)} asleep, coin {_hc(heads)}")
    # 5. Paralysis of the turn player's Active ends.
    a = st.players[p].active
    if a is not None and a.status == ST_PARALYZED:
        a.status = ST_NONE
    # 6. Knock Outs, points, end-of-game check, promotions.
    knock_outs(st, AFTER_CHECKUP)


def _hc(heads: bool) -> str:
    return "heads" if heads else "tails"


def after_checkup(st: GameState) -> None:
    """§14 steps 7-8: the turn limit, else the next turn."""
    if st.turn >= TURN_LIMIT:
        finish(st, TIE, "turn limit")
        return
    st.turn += 1
    start_turn(st)


def continue_after_promotions(st: GameState) -> None:
    st.choice = CH_NONE
    if st.after_promo == AFTER_ATTACK:
        end_turn(st)
    elif st.after_promo == AFTER_CHECKUP:
        after_checkup(st)
    else:
        st.phase = PH_MAIN
        st.decider = st.current


# ---------------------------------------------------------------- §13 Knock Outs ---------
def knock_outs(st: GameState, after: int) -> None:
    """§13.2-13.4: everything at 0 HP leaves play at once; points; §15 check; promotions."""
    knocked = []
    for q in (0, 1):
        for s, pk in enumerate(st.players[q].board):
            if pk is not None and pk.damage >= max_hp(pk):
                knocked.append((q, s))
    for q, s in knocked:
        pl = st.players[q]
        pk = pl.board[s]
        pl.board[s] = None
        pl.discard += pk.stack  # Basic first, then the evolutions, then the Tool (D6)
        if pk.tool >= 0:
            pl.discard.append(pk.tool)
        for t in range(N_ENERGY):
            pl.discarded_energy[t] += pk.energy[t]
        gain = EX_POINTS if top(pk).is_ex else 1
        st.players[1 - q].points += gain
        log(st, f"{pname(q)}'s {cname(pk.top)} is Knocked Out; {pname(1 - q)} +{gain} point(s)")
    if knocked and check_game_end(st):
        return
    st.after_promo = after
    # §13.4: the player whose turn it is not chooses first.
    st.promote_queue = [q for q in (1 - st.current, st.current) if st.players[q].board[0] is None]
    next_promotion(st)


def next_promotion(st: GameState) -> None:
    while st.promote_queue:
        q = st.promote_queue[0]
        bench = st.players[q].bench_slots()
        if len(bench) == 1:  # §7.13: a single option is taken automatically
            promote(st, q, bench[0])
            st.promote_queue.pop(0)
            continue
        st.phase = PH_CHOICE
        st.choice = CH_PROMOTE
        st.decider = q
        return
    continue_after_promotions(st)


def promote(st: GameState, q: int, slot: int) -> None:
    """§13.4 / §4.4: the Benched Pokémon moves to the empty Active Spot, keeping everything."""
    pl = st.players[q]
    pl.board[0], pl.board[slot] = pl.board[slot], None
    log(st, f"{pname(q)} promotes {cname(pl.board[0].top)}")


def check_game_end(st: GameState) -> bool:
    """§15.1 in its order: board wipes before points (§19.7)."""
    empty = [not st.players[q].in_play() for q in (0, 1)]
    won = [st.players[q].points >= POINTS_TO_WIN for q in (0, 1)]
    if empty[0] and empty[1]:
        return finish(st, TIE, "both boards empty")
    if empty[0] or empty[1]:
        w = 1 if empty[0] else 0
        return finish(st, w, f"{pname(1 - w)} has no Pokémon in play")
    if won[0] and won[1]:
        return finish(st, TIE, "both players reached 3 points")
    if won[0] or won[1]:
        w = 0 if won[0] else 1
        return finish(st, w, f"{pname(w)} reached {POINTS_TO_WIN} points")
    return False


def finish(st: GameState, result: int, why: str) -> bool:
    st.winner = result
    st.phase = PH_OVER
    st.choice = CH_NONE
    st.exec = None
    st.promote_queue = []
    log(st, f"game over: {'tie' if result == TIE else pname(result) + ' wins'} ({why})")
    return True


# ---------------------------------------------------------------- §12 conditions ---------
def apply_condition_to(pk: Pokemon, cond: str) -> None:
    """§12.1: Poisoned/Burned are flags; Asleep/Paralyzed/Confused replace each other."""
    if cond == "poisoned":
        pk.poisoned = True
    elif cond == "burned":
        pk.burned = True
    else:
        pk.status = STATUS_NAMES.index(cond)


def has_condition(pk: Pokemon, cond: str) -> bool:
    if cond == "poisoned":
        return pk.poisoned
    if cond == "burned":
        return pk.burned
    return pk.status == STATUS_NAMES.index(cond)


# ---------------------------------------------------------------- §8 energy --------------
def can_pay(energy: list[int], cost: tuple[int, ...], colorless: int) -> bool:
    """§8.3: typed requirements first, colorless from the remainder."""
    if any(energy[t] < cost[t] for t in range(N_ENERGY)):
        return False
    return sum(energy) - sum(cost) >= colorless


def retreat_cost(st: GameState, p: int) -> int:
    """§7.8: C = max(0, retreat_cost - Σ retreat_cost_minus)."""
    pl = st.players[p]
    return max(0, top(pl.active).retreat_cost - effect_sum(pl.effects, "retreat_cost_minus"))


# ---------------------------------------------------------------- EFFECTS.md §5-7 --------
def matches(pk: Pokemon, flt: dict) -> bool:
    """PokemonFilter (EFFECTS.md §7) on a Pokémon in play."""
    c = top(pk)
    if "type" in flt and c.type != POKEMON_TYPES.index(flt["type"]):
        return False
    if "stage" in flt and c.stage != STAGES.index(flt["stage"]):
        return False
    if "names" in flt and c.name not in flt["names"]:
        return False
    if "is_ex" in flt and c.is_ex != flt["is_ex"]:
        return False
    if "damaged" in flt and (pk.damage > 0) != flt["damaged"]:
        return False
    return True


def card_matches(idx: int, flt: dict) -> bool:
    """CardFilter (EFFECTS.md §7) on a card in the deck."""
    c = CARDS[idx]
    if c.category != flt["category"]:
        return False
    if "type" in flt and c.type != POKEMON_TYPES.index(flt["type"]):
        return False
    if "stage" in flt and c.stage != STAGES.index(flt["stage"]):
        return False
    if "names" in flt and c.name not in flt["names"]:
        return False
    if "is_ex" in flt and c.is_ex != flt["is_ex"]:
        return False
    return True


def holder(st: GameState, ex: Exec | None) -> Pokemon | None:
    if ex is None or ex.holder_uid < 0:
        return None
    at = find_uid(st, ex.holder_uid)
    return None if at is None else st.players[at[0]].board[at[1]]


def cond_true(st: GameState, p: int, cond: dict, ex: Exec | None = None, self_pk=None) -> bool:
    """Cond (EFFECTS.md §5), from the acting player's point of view."""
    me, opp = st.players[p], st.players[1 - p]
    name = cond["cond"]
    if self_pk is None:
        self_pk = holder(st, ex)
    if name == "self_damaged":
        return self_pk is not None and self_pk.damage > 0
    if name == "self_is_active":
        return self_pk is not None and me.board[0] is self_pk
    if name == "self_extra_energy":
        atk = top(self_pk).attacks[ex.attack]
        cost = list(atk.cost)
        cost[ENERGY_TYPES.index(cond["energy"])] += cond["count"]
        return can_pay(self_pk.energy, tuple(cost), atk.colorless)
    if name == "opponent_active_has_condition":
        return opp.active is not None and has_condition(opp.active, cond["condition"])
    if name == "own_active_matches":
        return me.active is not None and matches(me.active, cond["filter"])
    if name == "own_pokemon_exists":
        return any(matches(me.board[s], cond["filter"]) for s in me.in_play())
    if name == "own_bench_not_empty":
        return bool(me.bench_slots())
    if name == "opponent_bench_not_empty":
        return bool(opp.bench_slots())
    raise ValueError(f"unknown condition {name!r}")


def count_value(st: GameState, p: int, count: dict, self_pk: Pokemon) -> int:
    """Count (EFFECTS.md §6)."""
    if count["of"] == "benched_pokemon":
        pl = st.players[p if count["side"] == "own" else 1 - p]
        flt = count.get("filter", {})
        return sum(1 for s in pl.bench_slots() if matches(pl.board[s], flt))
    if count["of"] == "energy_attached":
        pk = self_pk if count["target"] == "self" else st.players[1 - p].active
        return 0 if pk is None else sum(pk.energy)
    raise ValueError(f"unknown count {count!r}")


def flip_until_tails(st: GameState) -> int:
    """§17.2: heads until the first tails, at most 16 heads (no 17th flip)."""
    rng = Rng(st)
    h = 0
    while h < UNTIL_TAILS_CAP and rng.coin():
        h += 1
    return h


def coin_count(st: GameState, amount) -> int:
    """CoinCount (EFFECTS.md §6) or a plain int."""
    if isinstance(amount, int):
        return amount
    n = amount["coins"]
    if n == "until_tails":
        return flip_until_tails(st)
    rng = Rng(st)
    return sum(1 for _ in range(n) if rng.coin())


def add_temp_effect(st: GameState, effects: list[Effect], step: dict) -> None:
    """add_effect (EFFECTS.md §4): lasts through turn t or t+1."""
    until = st.turn if step["duration"] == "this_turn" else st.turn + 1
    names = tuple(CARDS.names.index(n) for n in step.get("names", ()))
    effects.append(Effect(K[step["kind"]], step.get("amount", 0), until, names))


# ---------------------------------------------------------------- §7 legal actions -------
def supporter_blocked(st: GameState, p: int) -> bool:
    """§7.5: a no_supporters effect on the player or block_opponent_supporters on the opponent's
    Active Pokémon (Gengar ex)."""
    if has_effect(st.players[p].effects, "no_supporters"):
        return True
    opp_active = st.players[1 - p].active
    return opp_active is not None and bool(passive_mods(opp_active, "block_opponent_supporters"))


def can_play_hand_card(st: GameState, p: int, i: int) -> bool:
    """PLAY(i): §7.1 Basic to Bench, §7.4 Item, §7.5 Supporter."""
    pl = st.players[p]
    c = CARDS[pl.hand[i]]
    if c.is_basic:
        return any(pl.board[s] is None for s in range(1, 4))
    if c.category == "item":
        return all(cond_true(st, p, r) for r in c.effect["requires"])
    if c.category == "supporter":
        if pl.supporter_played or supporter_blocked(st, p):
            return False
        return all(cond_true(st, p, r) for r in c.effect["requires"])
    return False


def can_play_on(st: GameState, p: int, i: int, s: int) -> bool:
    """HAND_ON(i, s): §7.2 evolve or §7.6 attach a Tool."""
    pl = st.players[p]
    pk = pl.board[s]
    if pk is None:
        return False
    c = CARDS[pl.hand[i]]
    if c.category == "tool":
        return pk.tool < 0
    if c.category == "pokemon" and c.stage > 0:
        return (
            st.turn >= 3
            and pk.played_turn != st.turn
            and top(pk).name == c.evolves_from
            and top(pk).stage == c.stage - 1
        )
    return False


def can_use_ability(st: GameState, p: int, s: int) -> bool:
    """§7.7: activated, unused this turn, requires hold (conditions do not block it, §19.20)."""
    pk = st.players[p].board[s]
    if pk is None or pk.ability_used:
        return False
    ab = top(pk).ability
    if ab is None or ab["timing"] != "activated":
        return False
    return all(cond_true(st, p, r, self_pk=pk) for r in ab["requires"])


def can_attack(st: GameState, p: int, k: int) -> bool:
    """§7.10: cost payable (§8.3), not Asleep/Paralyzed, no cannot_attack."""
    a = st.players[p].active
    atks = top(a).attacks
    if k >= len(atks) or a.status in (ST_ASLEEP, ST_PARALYZED):
        return False
    if has_effect(a.effects, "cannot_attack"):
        return False
    return can_pay(a.energy, atks[k].cost, atks[k].colorless)


def can_retreat(st: GameState, p: int, bench: int) -> bool:
    """§7.8: once per turn, not Asleep/Paralyzed, no cannot_retreat, energy >= C."""
    pl = st.players[p]
    a = pl.active
    if pl.retreated or pl.board[bench] is None:
        return False
    if a.status in (ST_ASLEEP, ST_PARALYZED) or has_effect(a.effects, "cannot_retreat"):
        return False
    return sum(a.energy) >= retreat_cost(st, p)


def legal_actions(st: GameState) -> list[int]:
    """Every legal action of ``st.decider``, ascending. Empty only when the game is over."""
    if st.phase == PH_OVER:
        return []
    p = st.decider
    pl = st.players[p]
    out: list[int] = []
    if st.phase == PH_SETUP:
        free = pl.board[0] is None or any(pl.board[s] is None for s in range(1, 4))
        if pl.board[0] is not None:
            out.append(A.END)
        if free:
            out += [A.play(i) for i, c in enumerate(pl.hand) if CARDS[c].is_basic]
        return out
    if st.phase == PH_CHOICE:
        if st.choice == CH_RETREAT_ENERGY:
            return [A.ENERGY + t for t in range(N_ENERGY) if pl.active.energy[t] > 0]
        if st.choice in (CH_PROMOTE, CH_EXEC_PROMOTE):
            return [A.CHOOSE + s for s in pl.bench_slots()]
        if st.choice == CH_TARGET:
            _, slots = target_candidates(st, st.exec, step_at(st.exec, st.exec.addr))
            return [A.CHOOSE + s for s in slots]
        raise AssertionError(f"bad choice kind {st.choice}")
    out.append(A.END)
    for i in range(len(pl.hand)):
        if can_play_hand_card(st, p, i):
            out.append(A.play(i))
    for i in range(len(pl.hand)):
        for s in range(4):
            if can_play_on(st, p, i, s):
                out.append(A.hand_on(i, s))
    if pl.zone_current >= 0 and not pl.zone_attached:
        out += [A.ATTACH + s for s in pl.in_play()]
    out += [A.ABILITY + s for s in range(4) if can_use_ability(st, p, s)]
    out += [A.ATTACK + k for k in range(2) if can_attack(st, p, k)]
    out += [A.RETREAT + b - 1 for b in range(1, 4) if can_retreat(st, p, b)]
    return out


def legal_mask(st: GameState) -> list[bool]:
    legal = set(legal_actions(st))
    return [a in legal for a in range(A.N_ACTIONS)]


# ---------------------------------------------------------------- step -------------------
def step(st: GameState, action, player: int | None = None) -> GameState:
    """Apply one action of ``st.decider`` (in place) and run everything automatic after it
    until the next decision. Raises ``WrongPlayerError`` if ``player`` is given and is not
    the decider, ``IllegalActionError`` for an action not in ``legal_actions``."""
    if isinstance(action, bool) or not hasattr(action, "__index__"):
        raise TypeError(f"action must be an integer index, got {type(action).__name__}")
    a = action.__index__()
    if st.phase == PH_OVER:
        raise IllegalActionError("the game is over; no action is legal")
    if player is not None and player != st.decider:
        raise WrongPlayerError(f"it is {pname(st.decider)}'s decision, not {pname(player)}'s")
    if not 0 <= a < A.N_ACTIONS:
        raise IllegalActionError(f"action {a} out of range 0..{A.N_ACTIONS - 1}")
    if a not in legal_actions(st):
        raise IllegalActionError(
            f"action {a} ({A.describe(a)}) is not legal for {pname(st.decider)} now;"
            f" legal: {legal_actions(st)}"
        )
    p = st.decider
    if st.phase == PH_SETUP:
        if a == A.END:
            setup_done(st, p)
        else:
            setup_place(st, p, a - A.PLAY)
            pl = st.players[p]
            # nothing more can be placed: placement is complete (§5.4)
            if all(x is not None for x in pl.board) or not any(CARDS[c].is_basic for c in pl.hand):
                setup_done(st, p)
        return st
    if st.phase == PH_CHOICE:
        resolve_choice(st, a)
        return st
    main_action(st, p, a)
    return st


def main_action(st: GameState, p: int, a: int) -> None:
    pl = st.players[p]
    if a == A.END:
        log(st, f"{pname(p)} ends the turn")  # §7.11
        end_turn(st)
    elif a < A.HAND_ON:
        i = a - A.PLAY
        c = CARDS[pl.hand[i]]
        if c.is_basic:
            play_basic(st, p, i)
        else:
            play_trainer(st, p, i)
    elif a < A.ATTACH:
        i, s = divmod(a - A.HAND_ON, 4)
        if CARDS[pl.hand[i]].category == "tool":
            attach_tool(st, p, i, s)
        else:
            evolve(st, p, i, s)
    elif a < A.ABILITY:
        attach_zone_energy(st, p, a - A.ATTACH)
    elif a < A.ATTACK:
        use_ability(st, p, a - A.ABILITY)
    elif a < A.RETREAT:
        declare_attack(st, p, a - A.ATTACK)
    else:
        start_retreat(st, p, a - A.RETREAT + 1)


# ---------------------------------------------------------------- §7 main actions --------
def play_basic(st: GameState, p: int, i: int) -> None:
    """§7.1: to the lowest empty Bench slot (§4.4); put into play this turn."""
    pl = st.players[p]
    card = pl.hand.pop(i)
    s = pl.board.index(None, 1)
    pl.board[s] = new_pokemon(st, card, played_turn=st.turn)
    log(st, f"{pname(p)} plays {cname(card)} to bench slot {s}")


def evolve(st: GameState, p: int, i: int, s: int) -> None:
    """§7.2: keeps damage, energy, Tool; removes conditions and effects; fresh ability."""
    pl = st.players[p]
    card = pl.hand.pop(i)
    pk = pl.board[s]
    log(st, f"{pname(p)} evolves {cname(pk.top)} into {cname(card)}")
    pk.stack.append(card)
    pk.played_turn = st.turn
    pk.ability_used = False
    clear_on_move(pk)


def attach_tool(st: GameState, p: int, i: int, s: int) -> None:
    """§7.6."""
    pl = st.players[p]
    card = pl.hand.pop(i)
    pl.board[s].tool = card
    log(st, f"{pname(p)} attaches {cname(card)} to {cname(pl.board[s].top)}")


def attach_zone_energy(st: GameState, p: int, s: int) -> None:
    """§7.3: once per turn; ``current`` becomes empty."""
    pl = st.players[p]
    pk = pl.board[s]
    pk.energy[pl.zone_current] += 1
    log(st, f"{pname(p)} attaches {ENERGY_TYPES[pl.zone_current]} energy to {cname(pk.top)}")
    pl.zone_current = -1
    pl.zone_attached = True


def start_retreat(st: GameState, p: int, bench: int) -> None:
    """§7.8: choose the Benched Pokémon, discard C units (one at a time), swap."""
    pl = st.players[p]
    pl.retreated = True
    st.retreat_target = bench
    st.retreat_left = retreat_cost(st, p)
    continue_retreat(st)


def continue_retreat(st: GameState) -> None:
    p = st.current
    pl = st.players[p]
    a = pl.active
    while st.retreat_left > 0:
        types = [t for t in range(N_ENERGY) if a.energy[t] > 0]
        # §7.13: a real choice only with several types and more units than must go (D5)
        if len(types) > 1 and sum(a.energy) > st.retreat_left:
            st.phase = PH_CHOICE
            st.choice = CH_RETREAT_ENERGY
            st.decider = p
            return
        discard_energy_unit(pl, a, types[0])
        st.retreat_left -= 1
    b = st.retreat_target
    pl.board[0], pl.board[b] = pl.board[b], pl.board[0]
    clear_on_move(pl.board[b])
    st.retreat_target = -1
    log(st, f"{pname(p)} retreats {cname(pl.board[b].top)} for {cname(pl.board[0].top)}")
    st.phase = PH_MAIN
    st.choice = CH_NONE
    st.decider = p


def discard_energy_unit(pl: Player, pk: Pokemon, t: int) -> None:
    pk.energy[t] -= 1
    pl.discarded_energy[t] += 1


def play_trainer(st: GameState, p: int, i: int) -> None:
    """§7.4 / §7.5 / §11.3: the card leaves the hand, resolves, then goes to the discard (D3)."""
    pl = st.players[p]
    card = pl.hand.pop(i)
    c = CARDS[card]
    if c.category == "supporter":
        pl.supporter_played = True
    log(st, f"{pname(p)} plays {c.name}")
    ex = Exec(EX_TRAINER, p, card)
    st.exec = ex
    if walk(st, ex, c.effect["steps"], (0, -1, 0), leaf_effect):
        finish_exec(st)


def use_ability(st: GameState, p: int, s: int) -> None:
    """§7.7 / §10.1."""
    pk = st.players[p].board[s]
    pk.ability_used = True
    log(st, f"{pname(p)} uses {top(pk).ability_name} of {cname(pk.top)}")
    ex = Exec(EX_ABILITY, p, pk.top, holder_uid=pk.uid)
    st.exec = ex
    if walk(st, ex, top(pk).ability["steps"], (0, -1, 0), leaf_effect):
        finish_exec(st)


def finish_exec(st: GameState) -> None:
    """§10.1 / §11.3: after an ability or a Trainer, Knock Outs are checked."""
    ex = st.exec
    st.exec = None
    if ex.kind == EX_TRAINER:
        st.players[ex.player].discard.append(ex.card)
    st.phase = PH_MAIN
    st.choice = CH_NONE
    st.decider = st.current
    knock_outs(st, AFTER_MAIN)


# ---------------------------------------------------------------- §9 attacks -------------
def declare_attack(st: GameState, p: int, k: int) -> None:
    """§9.2: Confusion coin first; then Phases A-E (EFFECTS.md §2)."""
    pl, opp = st.players[p], st.players[1 - p]
    a = pl.active
    atk = top(a).attacks[k]
    log(st, f"{pname(p)}'s {cname(a.top)} uses {atk.name}")
    if a.status == ST_CONFUSED:
        heads = Rng(st).coin()
        log(st, f"confusion coin: {_hc(heads)}")
        if not heads:  # §12.6 / §19.10: nothing happens and the turn ends
            end_turn(st)
            return
    ex = Exec(EX_ATTACK, p, a.top, attack=k, holder_uid=a.uid, defending_uid=opp.active.uid)
    ex.raw = atk.damage
    st.exec = ex
    if walk(st, ex, atk.effect or (), (0, -1, 0), leaf_phase_a):
        attack_after_phase_a(st)


def attack_after_phase_a(st: GameState) -> None:
    ex = st.exec
    phase_b_damage(st, ex)
    ex.phase = 1
    run_queue(st)


def run_queue(st: GameState) -> None:
    """Phase D: the queued steps in order; then Phase E (Knock Outs), then the turn ends."""
    ex = st.exec
    steps = CARDS[ex.card].attacks[ex.attack].effect or ()
    while ex.qpos < len(ex.queue):
        addr = ex.queue[ex.qpos]
        if not leaf_effect(st, ex, step_at_list(steps, addr), addr, None):
            return
        ex.qpos += 1
    st.exec = None
    st.phase = PH_MAIN
    st.choice = CH_NONE
    st.decider = st.current
    knock_outs(st, AFTER_ATTACK)


def phase_b_damage(st: GameState, ex: Exec) -> None:
    """§9.4 (Phase B) then §9.5 (Phase C, counter damage)."""
    p, o = ex.player, 1 - ex.player
    attacker = holder(st, ex)
    ex.hit[o][0] = True
    ex.dmg[o][0] += ex.raw
    taken = [[0] * 4, [0] * 4]
    for q in (0, 1):
        for s in range(4):
            pk = st.players[q].board[s]
            if not ex.hit[q][s] or pk is None:
                continue
            r = ex.dmg[q][s]
            if r == 0:  # 1. zero stays zero
                continue
            if q == o and has_effect(pk.effects, "prevent_attack_damage_and_effects"):
                continue  # 2.
            opp_active = q == o and s == 0
            if opp_active:  # 3. attacker-side
                r += effect_sum(st.players[p].effects, "attack_damage_plus", top(attacker).name_id)
                r -= effect_sum(attacker.effects, "attack_damage_minus")
                if r <= 0:
                    continue
                if top(pk).weakness == top(attacker).type and top(pk).weakness >= 0:  # 4.
                    r += WEAKNESS_BONUS
            # 5. defender-side
            r -= sum(m["amount"] for m in passive_mods(pk, "reduce_damage_taken"))
            r -= effect_sum(pk.effects, "damage_taken_minus")
            if q == o:
                r -= effect_sum(st.players[q].effects, "damage_taken_minus")
            taken[q][s] = max(0, r)  # 6.
    for q in (0, 1):
        for s in range(4):
            if taken[q][s]:
                pk = st.players[q].board[s]
                pk.damage += taken[q][s]
                log(st, f"{pname(q)}'s {cname(pk.top)} takes {taken[q][s]} damage")
    if ex.self_damage:
        attacker.damage += ex.self_damage
        log(st, f"{cname(attacker.top)} takes {ex.self_damage} self damage")
    # §9.5 Phase C
    defender = st.players[o].board[0]
    if taken[o][0] > 0:
        counter = sum(m["amount"] for m in passive_mods(defender, "counter_damage"))
        if counter:
            attacker.damage += counter
            log(st, f"{cname(attacker.top)} takes {counter} counter damage")


# ---------------------------------------------------------------- step walking -----------
def steps_of(ex: Exec):
    c = CARDS[ex.card]
    if ex.kind == EX_ATTACK:
        return c.attacks[ex.attack].effect or ()
    if ex.kind == EX_ABILITY:
        return c.ability["steps"]
    return c.effect["steps"]


def step_at_list(steps, addr):
    i, b, j = addr
    if b < 0:
        return steps[i]
    return steps[i]["heads" if b == 0 else "tails"][j]


def step_at(ex: Exec, addr):
    return step_at_list(steps_of(ex), addr)


def next_addr(addr):
    i, b, j = addr
    return (i, b, j + 1) if b >= 0 else (i + 1, -1, 0)


def walk(st: GameState, ex: Exec, steps, start, leaf) -> bool:
    """Walk the steps from ``start``; ``coin_flip_then`` flips when reached and walks the chosen
    branch (EFFECTS.md §3.2). Returns False when a leaf paused for a choice."""
    i0, b0, j0 = start
    for i in range(i0, len(steps)):
        s = steps[i]
        if s["op"] == "coin_flip_then":
            if i == i0 and b0 >= 0:
                br, j_start = b0, j0
            else:
                heads = Rng(st).coin()
                log(st, f"coin: {_hc(heads)}")
                br, j_start = (0 if heads else 1), 0
            branch = s["heads"] if br == 0 else s["tails"]
            for j in range(j_start, len(branch)):
                if not leaf(st, ex, branch[j], (i, br, j), None):
                    return False
        elif not leaf(st, ex, s, (i, -1, 0), None):
            return False
    return True


def pause(st: GameState, ex: Exec, addr, decider: int, kind: int = CH_TARGET) -> bool:
    ex.addr = addr
    st.phase = PH_CHOICE
    st.choice = kind
    st.decider = decider
    return False


def resolve_choice(st: GameState, a: int) -> None:
    """Apply a pending choice (§7.13) and resume what was waiting for it."""
    ch = st.choice
    if ch == CH_RETREAT_ENERGY:
        pl = st.players[st.current]
        discard_energy_unit(pl, pl.active, a - A.ENERGY)
        st.retreat_left -= 1
        continue_retreat(st)
        return
    s = a - A.CHOOSE
    if ch == CH_PROMOTE:
        q = st.promote_queue.pop(0)
        promote(st, q, s)
        st.choice = CH_NONE
        next_promotion(st)
        return
    ex = st.exec
    st.phase = PH_MAIN
    st.choice = CH_NONE
    st.decider = st.current
    is_a = ex.kind == EX_ATTACK and ex.phase == 0
    leaf = leaf_phase_a if is_a else leaf_effect
    if not leaf(st, ex, step_at(ex, ex.addr), ex.addr, s):
        return
    if ex.kind == EX_ATTACK and ex.phase == 1:
        ex.qpos += 1
        run_queue(st)
    elif walk(st, ex, steps_of(ex), next_addr(ex.addr), leaf):
        if is_a:
            attack_after_phase_a(st)
        else:
            finish_exec(st)


def target_candidates(st: GameState, ex: Exec, step: dict) -> tuple[int, list[int]]:
    """(side player, board slots) a choice-taking step may pick from (EFFECTS.md §3)."""
    p = ex.player
    op = step["op"]
    me = st.players[p]
    if op == "heal":  # choose_own: matching and damaged
        return p, [
            s for s in me.in_play() if matches(me.board[s], step["filter"]) and me.board[s].damage
        ]
    if op == "damage_other":
        q = p if step["side"] == "own" else 1 - p
        pl = st.players[q]
        slots = pl.bench_slots() if step["zone"] == "bench" else pl.in_play()
        return q, slots
    if op == "attach_from_zone":
        slots = me.in_play() if step["to"] == "choose_own" else me.bench_slots()
        return p, [s for s in slots if matches(me.board[s], step["filter"])]
    if op == "switch_opponent_active":
        return 1 - p, st.players[1 - p].bench_slots()
    if op == "return_active_to_hand":
        return p, me.bench_slots()
    raise AssertionError(f"{op} takes no choice")


def choose(st: GameState, ex: Exec, step: dict, addr, choice):
    """Shared choice protocol: returns ("done", None) when there is no candidate, ("slot", s)
    once a slot is known (given, or the only candidate), ("paused", None) after pausing."""
    if choice is not None:
        return "slot", choice
    q, slots = target_candidates(st, ex, step)
    if not slots:
        return "done", None
    if len(slots) == 1:
        return "slot", slots[0]
    decider = 1 - ex.player if step["op"] == "switch_opponent_active" else ex.player
    pause(st, ex, addr, decider)
    return "paused", None


# ---------------------------------------------------------------- EFFECTS.md §3.1 --------
def leaf_phase_a(st: GameState, ex: Exec, step: dict, addr, choice) -> bool:
    """Phase A: damage-phase steps are evaluated now, every other step is queued (§2)."""
    op = step["op"]
    if op not in DAMAGE_PHASE_OPS:
        ex.queue.append(addr)
        return True
    return DAMAGE_OPS[op](st, ex, step, addr, choice)


def op_damage_per_heads(st, ex, step, addr, choice) -> bool:
    coins = step["coins"]
    if coins == "until_tails":
        h = flip_until_tails(st)
    else:
        rng = Rng(st)
        h = sum(1 for _ in range(coins) if rng.coin())
    ex.raw = step["per"] * h
    log(st, f"{h} heads -> {ex.raw} damage")
    return True


def op_extra_damage(st, ex, step, addr, choice) -> bool:
    ex.raw += step["amount"]
    return True


def op_extra_damage_if(st, ex, step, addr, choice) -> bool:
    if cond_true(st, ex.player, step["condition"], ex):
        ex.raw += step["amount"]
    return True


def op_damage_per_count(st, ex, step, addr, choice) -> bool:
    ex.raw = step["per"] * count_value(st, ex.player, step["count"], holder(st, ex))
    return True


def op_extra_damage_per_count(st, ex, step, addr, choice) -> bool:
    ex.raw += step["per"] * count_value(st, ex.player, step["count"], holder(st, ex))
    return True


def op_damage_other(st, ex, step, addr, choice) -> bool:
    """Attack: extra damage instances (Phase B pipeline). Ability: placed unmodified (§19.19)."""
    q, slots = target_candidates(st, ex, step)
    if step["select"] == "choose_one":
        how, s = choose(st, ex, step, addr, choice)
        if how != "slot":
            return how == "done"
        slots = [s]
    for s in slots:
        if ex.kind == EX_ATTACK:
            ex.hit[q][s] = True
            ex.dmg[q][s] += step["amount"]
        else:
            pk = st.players[q].board[s]
            pk.damage += step["amount"]
            log(st, f"{pname(q)}'s {cname(pk.top)} takes {step['amount']} damage")
    return True


def op_damage_random_opponent(st, ex, step, addr, choice) -> bool:
    q = 1 - ex.player
    slots = st.players[q].in_play()
    rng = Rng(st)
    for _ in range(step["times"]):
        s = slots[rng.uniform(len(slots))]
        ex.hit[q][s] = True
        ex.dmg[q][s] += step["amount"]
    return True


def op_self_damage(st, ex, step, addr, choice) -> bool:
    ex.self_damage += step["amount"]
    return True


DAMAGE_OPS = {
    "damage_per_heads": op_damage_per_heads,
    "extra_damage": op_extra_damage,
    "extra_damage_if": op_extra_damage_if,
    "damage_per_count": op_damage_per_count,
    "extra_damage_per_count": op_extra_damage_per_count,
    "damage_other": op_damage_other,
    "damage_random_opponent": op_damage_random_opponent,
    "self_damage": op_self_damage,
}


# ---------------------------------------------------------------- EFFECTS.md §3.3 --------
def leaf_effect(st: GameState, ex: Exec, step: dict, addr, choice) -> bool:
    return EFFECT_OPS[step["op"]](st, ex, step, addr, choice)


def _prevented(ex: Exec, pk: Pokemon) -> bool:
    """EFFECTS.md §4: attack effects on a Pokémon with prevent_attack_damage_and_effects."""
    return ex.kind == EX_ATTACK and has_effect(pk.effects, "prevent_attack_damage_and_effects")


def op_heal(st, ex, step, addr, choice) -> bool:
    me = st.players[ex.player]
    if step["target"] == "self":
        targets = [holder(st, ex)]
    elif step["target"] == "each_own":
        targets = [me.board[s] for s in me.in_play()]
    else:
        how, s = choose(st, ex, step, addr, choice)
        if how != "slot":
            return how == "done"
        targets = [me.board[s]]
    for pk in targets:
        if pk is not None:
            healed = min(pk.damage, step["amount"])
            pk.damage -= healed
            if healed:
                log(st, f"{cname(pk.top)} heals {healed}")
    return True


def op_apply_condition(st, ex, step, addr, choice) -> bool:
    pk = st.players[1 - ex.player].active
    if pk is not None and not _prevented(ex, pk):
        apply_condition_to(pk, step["condition"])
        log(st, f"{cname(pk.top)} is now {step['condition']}")
    return True


def op_discard_energy(st, ex, step, addr, choice) -> bool:
    pk = holder(st, ex)
    pl = st.players[ex.player]
    types = range(N_ENERGY) if step["energy"] == "any" else [ENERGY_TYPES.index(step["energy"])]
    left = 10**9 if step["count"] == "all" else step["count"]
    for t in types:  # "any" with a number: lowest type index first (D7)
        while left and pk.energy[t]:
            discard_energy_unit(pl, pk, t)
            left -= 1
    return True


def op_draw(st, ex, step, addr, choice) -> bool:
    draw_cards(st, ex.player, step["count"])
    return True


def op_search_deck(st, ex, step, addr, choice) -> bool:
    """Random picks among matching deck cards, stop at 10 in hand (§16.3), then shuffle (§19.13)."""
    pl = st.players[ex.player]
    rng = Rng(st)
    for _ in range(step["count"]):
        cands = [i for i, c in enumerate(pl.deck) if card_matches(c, step["filter"])]
        if not cands or len(pl.hand) >= HAND_LIMIT:
            break
        card = pl.deck.pop(cands[rng.uniform(len(cands))])
        pl.hand.append(card)
        log(st, f"{pname(ex.player)} searches a card into the hand")
    rng.shuffle(pl.deck)
    return True


def op_switch_opponent_active(st, ex, step, addr, choice) -> bool:
    """§7.9 switch, the opponent choosing the new Active."""
    how, s = choose(st, ex, step, addr, choice)
    if how != "slot":
        return how == "done"
    q = 1 - ex.player
    pl = st.players[q]
    pl.board[0], pl.board[s] = pl.board[s], pl.board[0]
    clear_on_move(pl.board[s])
    log(st, f"{pname(q)} switches in {cname(pl.board[0].top)}")
    return True


def _attach(st, pk: Pokemon, t: int, n: int) -> None:
    pk.energy[t] += n
    if n:
        log(st, f"{n} {ENERGY_TYPES[t]} energy attached to {cname(pk.top)}")


def op_attach_from_zone(st, ex, step, addr, choice) -> bool:
    me = st.players[ex.player]
    t = ENERGY_TYPES.index(step["energy"])
    to = step["to"]
    if to == "self":
        _attach(st, holder(st, ex), t, coin_count(st, step["amount"]))
    elif to == "own_active":
        n = coin_count(st, step["amount"])
        if me.active is not None:
            _attach(st, me.active, t, n)
    elif to == "choose_own":  # choose first, then the coins
        how, s = choose(st, ex, step, addr, choice)
        if how != "slot":
            return how == "done"
        _attach(st, me.board[s], t, coin_count(st, step["amount"]))
    else:  # distribute_own_bench: amount first, then one unit at a time
        if choice is None:
            ex.units_left = coin_count(st, step["amount"])
        else:
            _attach(st, me.board[choice], t, 1)
            ex.units_left -= 1
        while ex.units_left > 0:
            _, slots = target_candidates(st, ex, step)
            if not slots:
                ex.units_left = 0  # nobody to receive it: lost
                break
            if len(slots) > 1:
                return pause(st, ex, addr, ex.player)
            _attach(st, me.board[slots[0]], t, 1)
            ex.units_left -= 1
    return True


def op_move_energy(st, ex, step, addr, choice) -> bool:
    me = st.players[ex.player]
    t = ENERGY_TYPES.index(step["energy"])
    for s in me.bench_slots():
        n = me.board[s].energy[t]
        me.board[s].energy[t] = 0
        me.active.energy[t] += n
    return True


def op_return_active_to_hand(st, ex, step, addr, choice) -> bool:
    """Koga: top card first into the hand (discard when full, §16.4), then promote now."""
    me = st.players[ex.player]
    if choice is None:
        pk = me.board[0]
        me.board[0] = None
        for c in reversed(pk.stack):
            (me.hand if len(me.hand) < HAND_LIMIT else me.discard).append(c)
        if pk.tool >= 0:
            me.discard.append(pk.tool)
        for t in range(N_ENERGY):
            me.discarded_energy[t] += pk.energy[t]
        log(st, f"{pname(ex.player)} returns {cname(pk.top)} to the hand")
        bench = me.bench_slots()
        if len(bench) != 1:
            return pause(st, ex, addr, ex.player, CH_EXEC_PROMOTE)
        choice = bench[0]
    promote(st, ex.player, choice)
    return True


def op_shuffle_hand_draw(st, ex, step, addr, choice) -> bool:
    """Hand to the bottom of the deck in hand order, shuffle, draw (D8)."""
    q = 1 - ex.player if step["player"] == "opponent" else ex.player
    pl = st.players[q]
    pl.deck += pl.hand
    pl.hand = []
    Rng(st).shuffle(pl.deck)
    draw_cards(st, q, step["count"])
    log(st, f"{pname(q)} shuffles the hand into the deck and draws {len(pl.hand)}")
    return True


def op_reveal_hand(st, ex, step, addr, choice) -> bool:
    q = 1 - ex.player
    log(st, f"{pname(ex.player)} sees {pname(q)}'s hand: {[cname(c) for c in st.players[q].hand]}")
    return True


def op_look_at_deck_top(st, ex, step, addr, choice) -> bool:
    top_cards = st.players[ex.player].deck[: step["count"]]
    log(st, f"{pname(ex.player)} looks at the deck top: {[cname(c) for c in top_cards]}")
    return True


def op_discard_random_from_hand(st, ex, step, addr, choice) -> bool:
    pl = st.players[1 - ex.player]
    rng = Rng(st)
    for _ in range(step["count"]):
        if not pl.hand:
            break
        card = pl.hand.pop(rng.uniform(len(pl.hand)))
        pl.discard.append(card)
        log(st, f"{pname(1 - ex.player)} discards {cname(card)} at random")
    return True


def op_add_effect(st, ex, step, addr, choice) -> bool:
    target = step["target"]
    if target == "defending":
        at = find_uid(st, ex.defending_uid)
        if at is None or at[1] != 0:
            return True  # it left the Active Spot: its effects would end at once (D9)
        pk = st.players[at[0]].board[0]
        if _prevented(ex, pk):
            return True
        add_temp_effect(st, pk.effects, step)
    elif target == "self":
        add_temp_effect(st, holder(st, ex).effects, step)
    elif target == "own_side":
        add_temp_effect(st, st.players[ex.player].effects, step)
    else:
        add_temp_effect(st, st.players[1 - ex.player].effects, step)
    log(st, f"effect {step['kind']} ({target})")
    return True


EFFECT_OPS = {
    "damage_other": op_damage_other,
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
    "reveal_hand": op_reveal_hand,
    "look_at_deck_top": op_look_at_deck_top,
    "discard_random_from_hand": op_discard_random_from_hand,
    "add_effect": op_add_effect,
}
