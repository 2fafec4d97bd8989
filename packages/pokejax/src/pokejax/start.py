"""A new battle from two teams: the state Showdown's ``Battle`` has after ``start`` (turn 1).

``new_battle(team1, team2, seed)`` builds both teams' ``duel.Fighter`` records from the sets —
stats by Showdown's ``statModify`` (``stats.compute_stats``), PP = max PP with three PP Ups
(``Battle.calculatePP``: ``pp · 8/5``, and ``61`` for the 40-PP moves in Gens 1-2), types and
base Speed from the species — and advances the battle PRNG by exactly the draws Showdown makes
while starting. Those are (``start(..., trace=True)`` of the driver shows them; the test pins
them): none when the two leads' Speeds differ, and four when they tie — ``BattleQueue.insertChoice``
placing the second lead's ``runSwitch`` among the first's (``random(0, 2)``), then the
``eachEvent('Update')`` speed-tie shuffle after the ``start`` action and after each of the two
``runSwitch`` actions.

Jittable and vmappable, so a JAX reset is ``new_battle(sample_team(k1), sample_team(k2), seed)``
with no Showdown involved.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import battle, data, teams
from pokejax import prng as P
from pokejax.duel import SELF_VOLATILES, Fighter
from pokejax.stats import STAT_ORDER, compute_stats

START_TIE_DRAWS = 4  # insertChoice + three eachEvent('Update') when the leads' Speeds tie


@functools.cache
def _species_tables() -> tuple[np.ndarray, np.ndarray]:
    """(base stats int32[S, 6] in STAT_ORDER, base Speed int32[S]) indexed like ``Team.species``."""
    species = data.load()["species"]
    base = np.array([[species[s]["baseStats"][k] for k in STAT_ORDER] for s in teams.species_ids()],
                    np.int32)
    return base, base[:, 5].copy()


@functools.cache
def max_pp_table() -> np.ndarray:
    """int32[M]: a move's PP at battle start (``Battle.calculatePP`` with three PP Ups)."""
    moves = data.load()["moves"]
    out = []
    for m in teams.move_ids():
        pp = moves[m]["pp"]
        if moves[m].get("noPPBoosts"):
            out.append(pp)
        else:
            out.append(pp * 8 // 5 - (3 if pp == 40 else 0))  # Gens 1-2 cap the 40-PP moves at 61
    return np.array(out, np.int32)


def team_fighters(team: teams.Team) -> Fighter:
    """The ``Fighter`` records (leaves [6, ...]) of one team as Showdown builds its Pokémon:
    full HP, no status, stages or volatiles, slot 0 active (``lastSelectedMoveSlot`` 0 after
    its switch-in, -1 elsewhere like ``showdown_battle.load``)."""
    base, base_spe = (jnp.asarray(x) for x in _species_tables())
    t = teams.tables()
    species = jnp.asarray(team.species, jnp.int32)
    level = jnp.asarray(team.level, jnp.int32)
    moves = jnp.asarray(team.moves, jnp.int32)
    st = compute_stats(base[species], team.ivs, team.evs, level)  # [6, 6]
    stored = st[:, 1:]
    n = species.shape[0]
    zeros = jnp.zeros((n,), jnp.int32)
    no = jnp.zeros((n,), bool)
    pp = jnp.where(moves >= 0, jnp.asarray(max_pp_table())[jnp.maximum(moves, 0)], 0)
    types = jnp.asarray(t.types)[species]
    pp = pp.astype(jnp.int32)
    none = jnp.full((n,), -1, jnp.int32)
    values = dict(
        hp=st[:, 0], maxhp=st[:, 0], status=zeros, boosts=jnp.zeros((n, 7), jnp.int32),
        modified=stored, stored=stored, level=level, types=types,
        base_spe=base_spe[species], confused=no, confusion_time=zeros, flinched=no,
        must_recharge=no, moves=moves, pp=pp, sleep_time=zeros,
        volatiles=jnp.zeros((n, len(SELF_VOLATILES)), bool), speed=stored[:, 4],
        last_slot=jnp.where(jnp.arange(n) == 0, 0, -1).astype(jnp.int32), rest_sleep=no,
        # what Transform / Mimic change and a switch restores: the set's own values at start
        species=species, base_species=species, base_types=types, base_stored=stored,
        base_moves=moves, base_pp=pp,
        spe_set=jnp.asarray(team.ivs, jnp.int32)[:, 5] + jnp.asarray(team.evs, jnp.int32)[:, 5] // 4,
        transformed=no, sub_hp=zeros, twoturn=none, last_move=none,
        sel_move=none, enemy_sel=none, last_used=none)
    unknown = [f for f in Fighter._fields if f not in values]
    if unknown:
        raise NotImplementedError(f"start.team_fighters does not know Fighter fields {unknown}: "
                                  "add their battle-start value")
    return Fighter(**{f: values[f] for f in Fighter._fields})


def start_prng(seed, lead_speeds) -> P.PrngState:
    """The battle PRNG after ``start``: ``seed`` (four uint16 words, Showdown's order) advanced
    ``START_TIE_DRAWS`` times when the two leads' Speeds tie, else untouched."""
    state = P.from_seed(seed)
    drawn = state
    for _ in range(START_TIE_DRAWS):
        drawn = P.advance(drawn)
    return P.select(lead_speeds[0] == lead_speeds[1], drawn, state)


def new_battle(team1: teams.Team, team2: teams.Team, seed) -> battle.Battle:
    """Showdown's battle after ``start`` for ``team1`` (p1) and ``team2`` (p2) and the battle
    seed ``seed`` (uint32[4], each a 16-bit word as in ``"a,b,c,d"``).

    Concrete teams are checked first (``teams.team_array_problems``: indices, empty or repeated
    moves, ranges) and a bad one raises ``TeamError``; under ``jit``/``vmap`` the values are not
    known, and the teams are trusted (``sample_team`` and ``encode_sets`` make sound ones)."""
    for side, team in (("team1", team1), ("team2", team2)):
        try:
            concrete = teams.Team(*(np.asarray(x) for x in team))
        except jax.errors.TracerArrayConversionError:  # traced: values unknown, trusted
            continue
        problems = teams.team_array_problems(concrete)
        if problems:
            raise teams.TeamError([f"{side}: {p}" for p in problems])
    team = jax.tree.map(lambda a, b: jnp.stack([a, b]), team_fighters(team1), team_fighters(team2))
    state = start_prng(jnp.asarray(seed, jnp.uint32), team.speed[:, 0])
    return battle.new_battle(team, state, turn=1)
