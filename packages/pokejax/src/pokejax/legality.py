"""Is a team legal? Showdown's Gen 1 team validator, offline, plus what the engine can hold.

A team passes when Showdown 0.11.11's validator for ``[Gen 1] Ubers`` (gen1randombattle's own
ruleset, Standard, without tier bans) accepts it with every set judged at level 100, and the
engine can play it. Judging at level 100 is what random battles need: Showdown's own generator
gives Mewtwo level 60 with Recover and Amnesia, learnt at 70 and 81, which the validator refuses
at 60; levels are a handicap in this format, not a claim about how the Pokémon was caught.

The validator's verdicts come from ``data.load()["validation"]``, extracted by running the
validator itself (``js/extract.js``): the moves it accepts alone on each species, its own words
where it refuses one for another reason than "can't learn", and its complex bans (move pairs no
game can give one Pokémon). On 100,000 random sets of legal moves those explain every verdict
of the live validator; ``tests/test_legality.py`` compares the two on mutated teams, and the
reference driver runs the live validator before every battle it starts.

Where Showdown would quietly change a set, this module refuses it instead, so that nothing a
user gives is silently played as something else: level 0 (Showdown reads it as 100), SpA and SpD
IVs that differ (Gen 1 has one Special; Showdown copies SpA over SpD), and aliases such as
"Pikachuu" (Showdown reads Pikachu). The driver refuses the same.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pokejax import data

TEAM_SIZE = 6
MAX_MOVES = 4
STATS = ("hp", "atk", "def", "spa", "spd", "spe")
MAX_EV, MAX_IV, MAX_LEVEL = 255, 31, 100


class TeamError(ValueError):
    """A team the engine or Showdown's validator refuses; ``problems`` lists every reason."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


def to_id(name: str) -> str:
    """Showdown's ``toID``: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.cache
def _rules() -> dict:
    v = data.load()["validation"]
    return {
        "species": data.load()["species"],
        "moves": data.load()["moves"],
        "gen1": v["gen1Species"],
        "legal": {s: frozenset(ms) for s, ms in v["legalMoves"].items()},
        "refusals": v["refusals"],
        "complex": [(s, frozenset(ms)) for s, *ms in v["complexBans"]],
    }


@functools.cache
def engine_moves() -> frozenset[str]:
    from pokejax import duel  # the engine's move list; imported late (it builds JAX tables)

    return frozenset(duel.SUPPORTED_MOVES)


def _name_problem(kind: str, value: Any, known: dict) -> str | None:
    if not isinstance(value, str) or not value:
        return f"{kind} must be a name (a non-empty string), got {value!r}"
    if to_id(value) not in known:
        return f"{value!r} is not a Gen 1 {kind}"
    return None


def _int_problem(what: str, value: Any, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"{what} must be an integer in {low}..{high}, got {value!r}"
    return None


def _spread_problems(name: str, key: str, spread: Any, high: int) -> list[str]:
    if spread is None:
        return []
    if not isinstance(spread, dict):
        return [f"{name}: {key} must be a dict of {', '.join(STATS)}, got {spread!r}"]
    out = [f"{name}: {key} has an unknown stat {k!r} (stats are {', '.join(STATS)})"
           for k in spread if k not in STATS]
    out += [p for k, v in spread.items() if k in STATS
            for p in [_int_problem(f"{name}: {key}[{k!r}]", v, 0, high)] if p]
    return out


def _dv_problems(name: str, ivs: dict) -> list[str]:
    """Gen 1 keeps DVs (IV // 2); the HP DV is made of the others' low bits, and SpA and SpD
    are one Special DV (Showdown's validator, ``gen <= 2``)."""
    iv = {s: ivs.get(s, MAX_IV) for s in STATS}
    out = []
    if iv["spa"] != iv["spd"]:
        out.append(f"{name} has SpA IV {iv['spa']} and SpD IV {iv['spd']}: Gen 1 has one "
                   "Special, so they must be equal")
    dv = {s: v // 2 for s, v in iv.items()}
    expected = dv["atk"] % 2 * 8 + dv["def"] % 2 * 4 + dv["spe"] % 2 * 2 + dv["spa"] % 2
    if dv["hp"] != expected:
        out.append(f"{name} has an HP DV of {dv['hp']}, but its Atk, Def, Spe, and Spc DVs give "
                   f"it an HP DV of {expected}.")
    return out


def _move_problems(name: str, sid: str, moves: list[str], rules: bool) -> list[str]:
    r = _rules()
    out = []
    ids = [to_id(m) for m in moves]
    for m in sorted({m for m in ids if ids.count(m) > 1}):
        out.append(f"{name} has multiple copies of {r['moves'][m]['name']}.")
    for m in dict.fromkeys(ids):
        move = r["moves"][m]["name"]
        if rules and m not in r["legal"][sid]:
            out.append(r["refusals"].get(sid, {}).get(m, f"{name} can't learn {move}."))
        elif m not in engine_moves():
            out.append(f"{name}'s move {move} is legal in Gen 1, but the engine does not have it "
                       f"yet (it has {len(engine_moves())} of the 165 moves)")
    for s, pair in r["complex"] if rules else ():
        if s == sid and pair <= set(ids):
            a, b = (r["moves"][m]["name"] for m in sorted(pair, key=ids.index))
            out.append(f"{name} has the combination of {name} + {a} + {b}, which is impossible "
                       "to obtain legitimately.")
    return out


def set_problems(i: int, s: Any, rules: bool = True) -> list[str]:
    """Every reason set ``i`` (0-based) is refused, each prefixed with where it is; ``rules``
    False keeps only what the engine needs (see ``team_problems``)."""
    if not isinstance(s, dict):
        return [f"set {i + 1}: a set is a dict (Showdown's set format), got {type(s).__name__}"]
    r = _rules()
    where = f"set {i + 1}"
    bad_name = _name_problem("species", s.get("species"), r["gen1"])
    if bad_name:
        return [f"{where}: {bad_name}"]
    sid = to_id(s["species"])
    name = r["gen1"][sid]
    where = f"set {i + 1} ({name})"
    if sid not in r["species"]:
        pool = len(r["species"])
        missing = ", ".join(sorted(r["gen1"][x] for x in r["gen1"] if x not in r["species"]))
        return [f"{where}: {name} is a Gen 1 Pokémon, but not one the engine has: it has the "
                f"{pool} species of gen1randombattle's pool (not {missing})"]
    out = []
    moves = s.get("moves")
    if not isinstance(moves, (list, tuple)) or not 1 <= len(moves) <= MAX_MOVES:
        got = len(moves) if isinstance(moves, (list, tuple)) else repr(moves)
        out.append(f"{where}: a Pokémon has 1 to {MAX_MOVES} moves (a list of names), got {got}")
    else:
        bad = [p for m in moves for p in [_name_problem("move", m, r["moves"])] if p]
        out += [f"{where}: {p}" for p in bad]
        if not bad:
            out += [f"{where}: {p}" for p in _move_problems(name, sid, list(moves), rules)]
    level = MAX_LEVEL if s.get("level") is None else s["level"]  # left out: 100, as Showdown
    bad_level = _int_problem("level", level, 1, MAX_LEVEL)
    if bad_level:
        out.append(f"{where}: {bad_level} (leave it out for {MAX_LEVEL})")
    evs, ivs = s.get("evs"), s.get("ivs")
    spread = _spread_problems(where, "evs", evs, MAX_EV) + _spread_problems(where, "ivs", ivs, MAX_IV)
    out += spread
    if rules and not spread:
        if not any((evs or {}).values()):  # a battle plays missing EVs as 0, as given here
            out.append(f"{where}: {name} has exactly 0 EVs, which Showdown's validator refuses "
                       "(EVs left out are 0; give one stat 1 EV if 0 is what you mean)")
        out += [f"{where}: {p}" for p in _dv_problems(name, ivs or {})]
    if rules and s.get("item"):
        out.append(f"{where}: {name}'s item {s['item']} does not exist in Gen 1.")
    return out


def team_problems(sets: Any, size: int | None = TEAM_SIZE, rules: bool = True) -> list[str]:
    """Every reason the team is refused (empty when it is legal). ``size``: the number of sets
    required (the engine plays six; ``None`` accepts 1 to 6 as Showdown does). ``rules=False``
    keeps only what the engine needs to play the team as given (names it has, 1 to 4 distinct
    moves, ranges): learnsets, clauses, bans, DVs and items are then not judged. That is for
    mechanics tests that give a species any move; the reference driver's ``start`` has the
    same switch, ``unvalidated``."""
    if not isinstance(sets, (list, tuple)):
        return [f"a team is a list of set dicts, got {type(sets).__name__}"]
    out = []
    if size is not None and len(sets) != size:
        out.append(f"a team has {size} sets, got {len(sets)}")
    elif not 1 <= len(sets) <= TEAM_SIZE:
        out.append(f"a team has 1 to {TEAM_SIZE} sets, got {len(sets)}")
    for i, s in enumerate(sets):
        out += set_problems(i, s, rules)
    if not rules:
        return out
    named = [s for s in sets if isinstance(s, dict) and isinstance(s.get("species"), str)]
    species = [to_id(s["species"]) for s in named]
    for sid in sorted({x for x in species if species.count(x) > 1}):
        name = _rules()["gen1"].get(sid, sid)
        out.append(f"You are limited to one of each Pokémon by Species Clause (you have more "
                   f"than one {name}).")
    nicknames = [s.get("name") or _rules()["gen1"].get(to_id(s["species"]), s["species"])
                 for s in named]
    for nick in sorted({n for n in nicknames if nicknames.count(n) > 1 and isinstance(n, str)}):
        out.append(f"Your Pokémon must have different nicknames (by Nickname Clause; you have "
                   f"more than one {nick}).")
    return out


def check_team(sets: Any, size: int | None = TEAM_SIZE, rules: bool = True) -> None:
    """Raise ``TeamError`` listing every problem of the team; return None when it is legal."""
    problems = team_problems(sets, size, rules)
    if problems:
        raise TeamError(problems)
