"""Hand-built reference states for the rule and effect tests (a module of its own name, so no
other folder's conftest shadows it)."""

from tcgjax.reference import card_pool, get_deck, new_game, step
from tcgjax.reference.invariants import check
from tcgjax.reference.state import PH_MAIN, Pokemon

CARDS = card_pool()


def cid(name_or_id: str) -> int:
    """Card index by id or by (unique) name."""
    if name_or_id in CARDS.by_id:
        return CARDS.by_id[name_or_id].idx
    hits = [c.idx for c in CARDS.cards if c.name == name_or_id]
    assert len(hits) == 1, name_or_id
    return hits[0]


def mon(st, *names, damage=0, energy=None, tool=None, played_turn=0):
    """A Pokémon in play with the given evolution stack (Basic first)."""
    pk = Pokemon(uid=st.next_uid, stack=[cid(n) for n in names], damage=damage)
    st.next_uid += 1
    pk.played_turn = played_turn
    if energy:
        for t, n in energy.items():
            pk.energy[
                [
                    "grass",
                    "fire",
                    "water",
                    "lightning",
                    "psychic",
                    "fighting",
                    "darkness",
                    "metal",
                ].index(t)
            ] += n
    if tool:
        pk.tool = cid(tool)
    return pk


def scenario(me=(), opp=(), hand=(), opp_hand=(), turn=5, seed=1, deck=None, opp_deck=None):
    """A main-phase state of turn ``turn`` (player 0 to act when turn is odd: P0 goes first).

    ``me``/``opp``: lists of Pokémon specs (tuples of names, or dicts passed to ``mon``); the
    first is the Active. Cards not placed stay conserved: the deck is rebuilt from what is left
    of a real deck list, so the invariants checker still applies to these states.
    """
    st = new_game(get_deck(0), get_deck(1), seed)
    st.first_player = 0
    st.turn = turn
    st.phase = PH_MAIN
    st.decider = st.current
    for p, specs, h, dk in ((0, me, hand, deck), (1, opp, opp_hand, opp_deck)):
        pl = st.players[p]
        pl.board = [None] * 4
        for s, spec in enumerate(specs):
            if spec is None:
                continue
            if isinstance(spec, dict):
                spec = dict(spec)
                names = spec.pop("names")
                pl.board[s] = mon(st, *names, **spec)
            else:
                pl.board[s] = mon(st, *((spec,) if isinstance(spec, str) else spec))
        pl.hand = [cid(c) for c in h]
        pl.deck = [cid(c) for c in dk] if dk is not None else list(pl.deck)
        pl.setup_done = True
        pl.zone_current = -1
        pl.zone_next = pl.energy_types[0]
    reseal(st)
    return st


def reseal(st):
    """Make each player's deck list what this hand-built state really holds, so the invariants
    checker verifies conservation across the next actions."""
    from tcgjax.reference.invariants import cards_of

    for p in (0, 1):
        st.players[p].deck_cards = tuple(sorted(cards_of(st, p)))


def do(st, a):
    """Play action ``a`` for the decider of a hand-built state, then check the invariants."""
    reseal(st)
    step(st, a, st.decider)
    check(st)
    return st
