"""Positions a few decisions from how a gen1randombattle ends, where random play rarely goes.

Each scenario is an edit of a live Showdown battle (the driver's ``edit``: turn counter, and per
Pokémon HP, status, moves, types; Showdown then makes its requests again): the turn limit
(Showdown ties a battle once its turn passes 1000) and each case of Gen 1's Endless Battle
Clause (``Battle.maybeTriggerEndlessBattleClause``: every Pokémon of both sides fainted, frozen,
Transform-only against an all-Transform foe, or out of PP against an all-Ghost foe), with
positions one step short of each as controls. ``tests/test_end_rules.py`` plays each in
Showdown and in the engine with chosen actions; the crafted L2 suite (``port._l2_crafted``,
``CraftedCases``) draws them with random actions, after random decisions of a seeded battle.
"""

from __future__ import annotations

from typing import NamedTuple


class Scenario(NamedTuple):
    edit: dict  # the driver's ``edit`` arguments (``turn``, ``pokemon``)
    ties: bool  # the next decision that ends a turn ties the battle


def fainted_bench(side: str) -> list[dict]:
    return [{"side": side, "slot": i, "hp": 0} for i in range(1, 6)]


def everyone(side: str, **edit) -> list[dict]:
    return [{"side": side, "slot": i, **edit} for i in range(6)]


def _actives(*edits: dict) -> list[dict]:
    """Both benches fainted; ``edits`` for the actives (slot 0)."""
    return fainted_bench("p1") + fainted_bench("p2") + [{"slot": 0, **e} for e in edits]


TRANSFORM_ONLY = [["transform", 10]]
NO_PP = [["tackle", 0]]

SCENARIOS: dict[str, Scenario] = {
    "turn 999: one turn short of the limit": Scenario({"turn": 999}, False),
    "turn 1000: the next turn end passes the limit": Scenario({"turn": 1000}, True),
    "every Pokémon frozen": Scenario(
        {"pokemon": everyone("p1", status="frz") + everyone("p2", status="frz")}, True),
    "one side frozen: the other can still make progress": Scenario(
        {"pokemon": everyone("p1", status="frz")}, False),
    "both sides down to a frozen active": Scenario(
        {"pokemon": _actives({"side": "p1", "status": "frz"}, {"side": "p2", "status": "frz"})},
        True),
    "Transform-only actives, nothing else left": Scenario(
        {"pokemon": _actives({"side": "p1", "moves": TRANSFORM_ONLY},
                             {"side": "p2", "moves": TRANSFORM_ONLY})}, True),
    "Transform-only against a foe that has a real move": Scenario(
        {"pokemon": _actives({"side": "p1", "moves": TRANSFORM_ONLY})}, False),
    "out of PP against Ghosts, both sides": Scenario(
        {"pokemon": _actives({"side": "p1", "types": ["Ghost"], "moves": NO_PP},
                             {"side": "p2", "types": ["Ghost"], "moves": NO_PP})}, True),
    "out of PP, but the foe is no Ghost (Struggle hits it)": Scenario(
        {"pokemon": _actives({"side": "p1", "types": ["Ghost"], "moves": NO_PP},
                             {"side": "p2", "moves": NO_PP})}, False),
}
