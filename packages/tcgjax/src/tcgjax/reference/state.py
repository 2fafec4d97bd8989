"""Game state as plain dataclasses (RULES §4), plus the constants of §20 and the enumerations.

A board is 4 slots: slot 0 is the Active Spot, slots 1..3 the Bench (§4.4). Cards are integer
indices into cards.json; types are indices into ``cards.POKEMON_TYPES``; -1 means "none".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# RULES §20
OPENING_HAND = 5
BENCH_SIZE = 3
N_SLOTS = 1 + BENCH_SIZE
HAND_LIMIT = 10
POINTS_TO_WIN = 3
EX_POINTS = 2
WEAKNESS_BONUS = 20
POISON_DAMAGE = 10
BURN_DAMAGE = 20
TURN_LIMIT = 30
UNTIL_TAILS_CAP = 16
OPENING_SHUFFLE_TRIES = 128  # §5.2's optional fallback bound

# Exclusive Special Conditions (§12.1); Poisoned and Burned are separate flags.
ST_NONE, ST_ASLEEP, ST_PARALYZED, ST_CONFUSED = 0, 1, 2, 3
STATUS_NAMES = ("none", "asleep", "paralyzed", "confused")

# Temporary effect kinds (EFFECTS.md §4); 0 = empty slot in the array layout.
EFFECT_KINDS = (
    "",
    "cannot_attack",
    "cannot_retreat",
    "attack_damage_minus",
    "damage_taken_minus",
    "prevent_attack_damage_and_effects",
    "no_supporters",
    "attack_damage_plus",
    "retreat_cost_minus",
)
MAX_NAMES = 3  # attack_damage_plus `names` (Blaine has 3)

# Game phases
PH_SETUP, PH_MAIN, PH_CHOICE, PH_OVER = 0, 1, 2, 3
PHASE_NAMES = ("setup", "main", "choice", "over")

# Pending choices (PH_CHOICE)
CH_NONE, CH_RETREAT_ENERGY, CH_PROMOTE, CH_TARGET, CH_EXEC_PROMOTE = 0, 1, 2, 3, 4

# What happens once the Knock-Out promotions are done (§13.4 "before the game continues")
AFTER_MAIN, AFTER_ATTACK, AFTER_CHECKUP = 0, 1, 2

# Effect executions
EX_ATTACK, EX_ABILITY, EX_TRAINER = 0, 1, 2

# Result
NO_RESULT, TIE = -1, 2


@dataclass
class Effect:
    """A temporary effect (EFFECTS.md §4); active through the end of turn ``until``."""

    kind: int
    amount: int = 0
    until: int = 0
    names: tuple[int, ...] = ()  # name ids for attack_damage_plus; () = every Pokémon


@dataclass
class Pokemon:
    """A Pokémon in play (§4.2)."""

    uid: int  # unique per game; identifies "the same Pokémon" across moves
    stack: list[int]  # card indices, Basic first, top card last (§2.4)
    damage: int = 0
    energy: list[int] = field(default_factory=lambda: [0] * 8)  # units per energy type
    tool: int = -1
    poisoned: bool = False
    burned: bool = False
    status: int = ST_NONE
    effects: list[Effect] = field(default_factory=list)
    played_turn: int = 0  # turn put into play or last evolved (setup = 0)
    ability_used: bool = False

    @property
    def top(self) -> int:
        return self.stack[-1]


@dataclass
class Player:
    """Per-player state (§4.1)."""

    deck_cards: tuple[int, ...]  # the 20-card deck list (sorted), for the conservation check
    energy_types: tuple[int, ...]  # declared Energy Zone types (§3.4)
    deck: list[int] = field(default_factory=list)  # index 0 = top
    hand: list[int] = field(default_factory=list)
    discard: list[int] = field(default_factory=list)  # in the order cards arrived
    discarded_energy: list[int] = field(default_factory=lambda: [0] * 8)
    board: list[Pokemon | None] = field(default_factory=lambda: [None] * 4)
    zone_current: int = -1
    zone_next: int = -1
    points: int = 0
    supporter_played: bool = False
    retreated: bool = False
    zone_attached: bool = False
    effects: list[Effect] = field(default_factory=list)  # player-level effects
    setup_done: bool = False

    @property
    def active(self) -> Pokemon | None:
        return self.board[0]

    def bench_slots(self) -> list[int]:
        return [s for s in range(1, 4) if self.board[s] is not None]

    def in_play(self) -> list[int]:
        return [s for s in range(4) if self.board[s] is not None]


@dataclass
class Exec:
    """An attack, ability or trainer being resolved, resumable across pending choices.

    Steps are addressed by ``(i, b, j)``: top-level step ``i``; ``b = -1`` for the step itself,
    0/1 for the heads/tails branch of a ``coin_flip_then`` and ``j`` the index in that branch.
    """

    kind: int
    player: int
    card: int  # trainer card (held here while it resolves), or the attacker / holder top card
    attack: int = -1
    holder_uid: int = -1  # attacker or ability holder
    defending_uid: int = -1  # the Defending Pokémon (attacks)
    phase: int = 0  # attacks: 0 = Phase A walk, 1 = Phase D queue; others: 0
    addr: tuple[int, int, int] = (0, -1, 0)  # step waiting for a choice
    raw: int = 0
    dmg: list[list[int]] = field(default_factory=lambda: [[0] * 4, [0] * 4])
    hit: list[list[bool]] = field(default_factory=lambda: [[False] * 4, [False] * 4])
    self_damage: int = 0
    queue: list[tuple[int, int, int]] = field(default_factory=list)  # Phase D steps
    qpos: int = 0
    units_left: int = 0  # distribute_own_bench units still to place


@dataclass
class GameState:
    seed: int
    counter: int
    players: list[Player]
    turn: int = 0  # 0 during setup (§6.1)
    first_player: int = 0
    phase: int = PH_SETUP
    decider: int = 0  # the player whose decision is awaited
    choice: int = CH_NONE
    retreat_target: int = -1  # bench slot chosen for the retreat in progress
    retreat_left: int = 0  # energy units still to discard for it
    promote_queue: list[int] = field(default_factory=list)
    after_promo: int = AFTER_MAIN
    exec: Exec | None = None
    winner: int = NO_RESULT  # 0 / 1 / TIE
    next_uid: int = 0
    log: list[str] | None = field(default_factory=list)  # None disables logging

    @property
    def current(self) -> int:
        """The turn player (first player on odd turns, §6.1); the first player during setup."""
        if self.turn == 0:
            return self.first_player
        return self.first_player if self.turn % 2 == 1 else 1 - self.first_player

    @property
    def done(self) -> bool:
        return self.phase == PH_OVER
