"""The one action enumeration shared by the reference and the JAX engine (76 actions).

| range   | action                       | meaning                                                        |
|---------|------------------------------|----------------------------------------------------------------|
| 0       | END                          | end the turn (§7.11); in setup: done placing (§5.4)            |
| 1-10    | PLAY(i)                      | hand slot i: Basic to Bench (§7.1) / setup placement / Item /  |
|         |                              | Supporter (§7.4, §7.5)                                         |
| 11-50   | HAND_ON(i, s) = 11 + 4i + s  | hand slot i onto own board slot s: evolve (§7.2) or Tool (§7.6)|
| 51-54   | ATTACH(s)                    | Energy Zone energy to own board slot s (§7.3)                  |
| 55-58   | ABILITY(s)                   | activated ability of own board slot s (§7.7)                   |
| 59-60   | ATTACK(k)                    | attack k of the Active Pokémon (§7.10)                         |
| 61-63   | RETREAT(b)                   | retreat to bench slot b + 1 (§7.8)                             |
| 64-67   | CHOOSE(s)                    | pending choice: board slot s of the side the choice is about   |
| 68-75   | ENERGY(e)                    | pending retreat discard: one unit of energy type e (§7.8)      |

Board slot 0 is the Active Spot, 1..3 the Bench. Hand slots index the hand in its order.
"""

from __future__ import annotations

END = 0
PLAY = 1
HAND_ON = 11
ATTACH = 51
ABILITY = 55
ATTACK = 59
RETREAT = 61
CHOOSE = 64
ENERGY = 68
N_ACTIONS = 76


def play(i: int) -> int:
    return PLAY + i


def hand_on(i: int, s: int) -> int:
    return HAND_ON + 4 * i + s


def describe(a: int) -> str:
    """A readable name for an action index."""
    if a == END:
        return "END"
    if PLAY <= a < HAND_ON:
        return f"PLAY(hand {a - PLAY})"
    if HAND_ON <= a < ATTACH:
        i, s = divmod(a - HAND_ON, 4)
        return f"HAND_ON(hand {i}, slot {s})"
    if ATTACH <= a < ABILITY:
        return f"ATTACH(slot {a - ATTACH})"
    if ABILITY <= a < ATTACK:
        return f"ABILITY(slot {a - ABILITY})"
    if ATTACK <= a < RETREAT:
        return f"ATTACK({a - ATTACK})"
    if RETREAT <= a < CHOOSE:
        return f"RETREAT(bench slot {a - RETREAT + 1})"
    if CHOOSE <= a < ENERGY:
        return f"CHOOSE(slot {a - CHOOSE})"
    if ENERGY <= a < N_ACTIONS:
        return f"ENERGY(type {a - ENERGY})"
    return f"<invalid {a}>"
