"""Card data (cards.json) and deck construction (RULES §2, §3).

Cards are referred to by their integer index in cards.json (``Card.idx``) everywhere in the
state, so the state maps onto fixed-size integer arrays. Types are indices into
``POKEMON_TYPES``; the first 8 are the energy types of §3.4.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

ENERGY_TYPES = ("grass", "fire", "water", "lightning", "psychic", "fighting", "darkness", "metal")
POKEMON_TYPES = ENERGY_TYPES + ("dragon", "colorless")
N_ENERGY = len(ENERGY_TYPES)
COLORLESS = POKEMON_TYPES.index("colorless")
STAGES = ("basic", "stage1", "stage2")

# RULES §20
DECK_SIZE = 20
MAX_COPIES = 2
MAX_ENERGY_TYPES = 3


class DeckError(ValueError):
    """An illegal deck (RULES §3); the message names the rule broken."""


@dataclass(frozen=True)
class Attack:
    name: str
    cost: tuple[int, ...]  # typed counts, one per energy type (§8.3)
    colorless: int  # colorless symbols
    damage: int
    effect: tuple | None  # steps of EFFECTS.md, or None


@dataclass(frozen=True)
class Card:
    idx: int
    id: str
    name: str
    name_id: int  # index into Cards.names (names matter, §2.3)
    category: str  # pokemon | item | supporter | tool
    stage: int = -1  # index into STAGES
    evolves_from: str | None = None
    hp: int = 0
    type: int = -1
    weakness: int = -1
    retreat_cost: int = 0
    is_ex: bool = False
    ability: dict | None = None  # the "effect" object of the ability
    ability_name: str | None = None
    attacks: tuple[Attack, ...] = ()
    effect: dict | None = None  # trainer / tool effect

    @property
    def is_basic(self) -> bool:
        return self.category == "pokemon" and self.stage == 0


def _freeze(x):
    if isinstance(x, dict):
        return {k: _freeze(v) for k, v in x.items()}
    if isinstance(x, list):
        return tuple(_freeze(v) for v in x)
    return x


class Cards:
    """The card pool: ``cards[idx]``, lookup by id, name ids."""

    def __init__(self, raw: dict):
        rows = raw["cards"]
        self.names = sorted({c["name"] for c in rows})
        name_id = {n: i for i, n in enumerate(self.names)}
        cards = []
        for idx, c in enumerate(rows):
            kw = dict(idx=idx, id=c["id"], name=c["name"], name_id=name_id[c["name"]])
            kw["category"] = c["category"]
            if c["category"] == "pokemon":
                attacks = []
                for a in c["attacks"]:
                    cost = [0] * N_ENERGY
                    for t, n in a["cost"].items():
                        if t != "colorless":
                            cost[ENERGY_TYPES.index(t)] += n
                    attacks.append(
                        Attack(
                            a["name"],
                            tuple(cost),
                            a["cost"].get("colorless", 0),
                            a["damage"],
                            _freeze(a["effect"]) if a["effect"] else None,
                        )
                    )
                kw.update(
                    stage=STAGES.index(c["stage"]),
                    evolves_from=c["evolves_from"],
                    hp=c["hp"],
                    type=POKEMON_TYPES.index(c["type"]),
                    weakness=POKEMON_TYPES.index(c["weakness"]) if c["weakness"] else -1,
                    retreat_cost=c["retreat_cost"],
                    is_ex=c["is_ex"],
                    ability=_freeze(c["ability"]["effect"]) if c["ability"] else None,
                    ability_name=c["ability"]["name"] if c["ability"] else None,
                    attacks=tuple(attacks),
                )
            else:
                kw["effect"] = _freeze(c["effect"])
            cards.append(Card(**kw))
        self.cards: tuple[Card, ...] = tuple(cards)
        self.by_id = {c.id: c for c in cards}

    def __getitem__(self, idx: int) -> Card:
        return self.cards[idx]

    def __len__(self) -> int:
        return len(self.cards)

    def get(self, card_id: str) -> Card:
        try:
            return self.by_id[card_id]
        except KeyError:
            raise DeckError(f"§3: unknown card id {card_id!r} (not in cards.json)") from None


@lru_cache(maxsize=1)
def card_pool() -> Cards:
    text = resources.files("tcgjax").joinpath("spec/cards.json").read_text(encoding="utf-8")
    return Cards(json.loads(text))


@dataclass(frozen=True)
class Deck:
    """A legal deck: 20 card indices in ascending order (the pre-shuffle order, see the docs)."""

    id: str
    name: str
    energy_types: tuple[int, ...]  # declared Energy Zone types, in declaration order (§3.4)
    cards: tuple[int, ...]


def make_deck(cards: dict[str, int], energy_types, deck_id: str = "custom", name: str = "") -> Deck:
    """Validate a deck list (card id -> count) per RULES §3 and build a ``Deck``.

    Raises ``DeckError`` naming the rule: §3.1 size, §3.2 copies, §3.3 Basic, §3.4 energy types,
    or an unknown card id.
    """
    pool = card_pool()
    if not isinstance(cards, dict):
        raise DeckError(
            f"deck cards must be a mapping card id -> count, got {type(cards).__name__}"
        )
    idxs: list[int] = []
    per_name: dict[str, int] = {}
    for cid, n in cards.items():
        card = pool.get(cid)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise DeckError(f"§3: count of {cid!r} must be a positive integer, got {n!r}")
        per_name[card.name] = per_name.get(card.name, 0) + n
        idxs += [card.idx] * n
    if len(idxs) != DECK_SIZE:
        raise DeckError(f"§3.1: a deck has exactly {DECK_SIZE} cards, this one has {len(idxs)}")
    for nm, n in sorted(per_name.items()):
        if n > MAX_COPIES:
            raise DeckError(f"§3.2: at most {MAX_COPIES} cards named {nm!r}, this deck has {n}")
    if not any(pool[i].is_basic for i in idxs):
        raise DeckError("§3.3: a deck needs at least one Basic Pokémon")
    if isinstance(energy_types, str) or not hasattr(energy_types, "__iter__"):
        raise DeckError(f"§3.4: energy_types must be a list of type names, got {energy_types!r}")
    types = list(energy_types)
    if not 1 <= len(types) <= MAX_ENERGY_TYPES:
        raise DeckError(
            f"§3.4: a deck declares 1 to {MAX_ENERGY_TYPES} energy types, got {len(types)}"
        )
    for t in types:
        if t not in ENERGY_TYPES:
            raise DeckError(
                f"§3.4: energy type {t!r} is not one of {', '.join(ENERGY_TYPES)}"
                " (never dragon or colorless)"
            )
    if len(set(types)) != len(types):
        raise DeckError(f"§3.4: energy types must be distinct, got {types}")
    return Deck(deck_id, name, tuple(ENERGY_TYPES.index(t) for t in types), tuple(sorted(idxs)))


@lru_cache(maxsize=1)
def deck_list() -> tuple[Deck, ...]:
    """The 15 decks of decks.json, validated."""
    text = resources.files("tcgjax").joinpath("spec/decks.json").read_text(encoding="utf-8")
    return tuple(
        make_deck(d["cards"], d["energy_types"], d["id"], d["name"])
        for d in json.loads(text)["decks"]
    )


def get_deck(key: int | str) -> Deck:
    """A deck of decks.json by index (0..14) or id."""
    decks = deck_list()
    if isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(decks):
            raise DeckError(f"deck index {key} out of range 0..{len(decks) - 1}")
        return decks[key]
    for d in decks:
        if d.id == key:
            return d
    raise DeckError(f"unknown deck {key!r}; known: {', '.join(d.id for d in decks)}")
