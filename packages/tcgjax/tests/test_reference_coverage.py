"""Every card of cards.json is played in at least one test game; every attack and every
activated ability is used at least once (issue 23: "every card of cards.json played")."""

import random

from tcgjax.reference import actions as A
from tcgjax.reference import card_pool, deck_list, legal_actions, make_deck, new_game, step
from tcgjax.reference.cards import ENERGY_TYPES
from tcgjax.reference.choosers import heuristic_chooser
from tcgjax.reference.invariants import check

CARDS = card_pool()
TRAINERS = [c for c in CARDS.cards if c.category != "pokemon"]


def families():
    """Evolution families: a Basic and every card that evolves (transitively) from it."""
    root = {}
    for c in CARDS.cards:
        if c.category != "pokemon":
            continue
        r = c
        while r.evolves_from is not None:
            r = next(x for x in CARDS.cards if x.name == r.evolves_from)
        root.setdefault(r.idx, []).append(c)
    return list(root.values())


def family_deck(i, fam):
    types = []
    for c in fam:
        for a in c.attacks:
            types += [ENERGY_TYPES[t] for t, n in enumerate(a.cost) if n]
        if c.type < len(ENERGY_TYPES):
            types.append(ENERGY_TYPES[c.type])
    types = list(dict.fromkeys(types))[:3] or ["fire"]
    cards = {c.id: 2 for c in fam}
    order = TRAINERS[i % len(TRAINERS) :] + TRAINERS[: i % len(TRAINERS)]
    for t in order:
        left = 20 - sum(cards.values())
        if left <= 0:
            break
        cards[t.id] = min(2, left)
    return make_deck(cards, types, f"family-{fam[0].name}")


def coverage_decks():
    return [family_deck(i, f) for i, f in enumerate(families())] + list(deck_list())


def test_family_decks_are_legal_and_cover_the_pool():
    decks = coverage_decks()
    assert {c for d in decks for c in d.cards} == set(range(len(CARDS)))


def test_every_card_attack_and_ability_is_played():
    played, attacks, abilities = set(), set(), set()
    want_attacks = {(c.idx, k) for c in CARDS.cards for k in range(len(c.attacks))}
    want_abilities = {
        c.idx for c in CARDS.cards if c.ability is not None and c.ability["timing"] == "activated"
    }
    decks = coverage_decks()
    rnd = random.Random(0)
    heur = heuristic_chooser()
    game = 0
    while game < 3000:
        a, b = decks[game % len(decks)], decks[rnd.randrange(len(decks))]
        st = new_game(a, b, 50_000 + game, log_enabled=False)
        game += 1
        eps = rnd.choice((0.1, 0.3, 0.6))
        while not st.done:
            legal = legal_actions(st)
            act = legal[rnd.randrange(len(legal))] if rnd.random() < eps else heur(st, legal)
            me = st.players[st.decider]
            if st.phase == 1 and A.PLAY <= act < A.HAND_ON:
                played.add(me.hand[act - A.PLAY])
            if st.phase == 1 and A.HAND_ON <= act < A.ATTACH:
                played.add(me.hand[(act - A.HAND_ON) // 4])
            if st.phase == 1 and A.ATTACK <= act < A.RETREAT:
                attacks.add((me.active.top, act - A.ATTACK))
            if st.phase == 1 and A.ABILITY <= act < A.ATTACK:
                abilities.add(me.board[act - A.ABILITY].top)
            step(st, act, st.decider)
            for pl in st.players:
                for pk in pl.board:
                    if pk is not None:
                        played.update(pk.stack)
            if game % 10 == 0:
                check(st)
        if (
            len(played) == len(CARDS)
            and attacks >= want_attacks
            and abilities >= want_abilities
            and game >= len(decks)
        ):
            break
    missing = sorted(CARDS[i].id for i in set(range(len(CARDS))) - played)
    assert not missing, f"cards never played: {missing}"
    assert not want_attacks - attacks, sorted(
        f"{CARDS[i].name}/{CARDS[i].attacks[k].name}" for i, k in want_attacks - attacks
    )
    assert not want_abilities - abilities
