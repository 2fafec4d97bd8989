"""Per-player, partially observable observations of a battle, as fixed-size arrays.

A player sees its own team in full and of the opponent only what Showdown's protocol has shown
it: a Pokémon once it has been active (``switch``/``drag`` lines), a move once it was used
(``move`` lines: Gen 1's ``deductPP`` marks the slot ``used``), the HP of seen Pokémon as
Showdown's *HP Percentage Mod* prints it (``ceil(100·hp/maxhp)``, 99 for a not-quite-full
Pokémon, 0 fainted), their status, and the active Pokémon's stat stages and visible volatiles
(``-boost``/``-unboost``, ``-start confusion``, ``-mustrecharge``, ``-start reflect`` /
``light screen`` / ``focus energy``). Hidden: the opponent's unseen Pokémon and moves, its exact
HP, PP and stats, and both sides' sleep / confusion counters.

The battle state has no "what was revealed" bookkeeping, so it lives next to it:
``Revealed`` (``initial`` at the start, ``update(revealed, before, after)`` after every
``battle.step``). Team slots follow Showdown's current order (a switch swaps slot 0 with the
incoming slot), so ``update`` first re-aligns the bookkeeping with the new order, matching each
Pokémon by a fingerprint that never changes in a battle.

``observe(battle, revealed, player)`` returns an ``Observation`` (structured, int and float
fields); ``flatten`` turns it into the float32 vector the env returns. Layout of the vector
(``LAYOUT`` names every block; ``OBS_SIZE`` floats in all):

* ``me`` 6 × ``MON`` then ``foe`` 6 × ``MON``, slots in current order (slot 0 active), each
  Pokémon (``MON_LAYOUT``): known, active, fainted, hp (own: exact fraction; foe: percent/100),
  status one-hot (none, par, slp, frz, psn, brn, tox), level/100, species one-hot
  (``codec.SPECIES``), current types multi-hot (``codec.TYPES``), base stats/255 (hp, atk, def,
  spa, spd, spe), then 4 move slots × ``MOVE`` (known, type one-hot, base power/200, accuracy
  /100 (always-hit = 1), physical, special, status, priority, PP fraction (own only)); unknown
  Pokémon and moves are all zeros;
* ``me_active`` and ``foe_active``: stages/6 (atk, def, spa, spd, spe, accuracy, evasion),
  confused, must recharge, reflect, light screen, focus energy;
* ``field``: forced switch (me, foe), battle ended, min(turn/1000, 1);
* ``matchups`` (``MATCHUP_LAYOUT``), what a player reads off the type chart for the two active
  Pokémon, from public facts only (the foe active's current types, its revealed moves): for my
  active's 4 moves, then the foe active's 4 moves where revealed, each (``MATCHUP_MOVE``):
  immune (multiplier 0), log2(type multiplier)/2 against the other active (-1 at ×0.25 up to 1
  at ×4; 0 when immune), same-type bonus, deals damage (base power or fixed damage); then for
  each of my 6 Pokémon (``MATCHUP_MON``): the foe active's worst type multiplier against it and
  its own best damaging move's multiplier against the foe active, as log2/2 with ×0 (or no
  damaging move) at -1. A damage-maximising player reads exactly these (``opponents``); as
  one-hots the network would have to learn the 15×15 chart from wins and losses.

Every value lies in [-1, 1] (stages/6 and move priority are the only negative ones).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import data, opponents, teams
from pokejax.battle import Battle
from pokejax.codec import SPECIES, STATUSES, TYPES
from pokejax.duel import SELF_VOLATILES, move_table
from pokejax.start import max_pp_table
from pokejax.stats import STAT_ORDER

N_STATUS = len(STATUSES) - 1  # fnt is its own flag
N_TYPES, N_SPECIES = len(TYPES), len(SPECIES)
MOVE_LAYOUT = (("known", 1), ("type", N_TYPES), ("base_power", 1), ("accuracy", 1),
               ("category", 3), ("priority", 1), ("pp", 1))
MOVE = sum(n for _, n in MOVE_LAYOUT)
MON_LAYOUT = (("known", 1), ("active", 1), ("fainted", 1), ("hp", 1), ("status", N_STATUS),
              ("level", 1), ("species", N_SPECIES), ("types", N_TYPES), ("base_stats", 6),
              ("moves", 4 * MOVE))
MON = sum(n for _, n in MON_LAYOUT)
ACTIVE_LAYOUT = (("boosts", 7), ("confused", 1), ("must_recharge", 1), ("volatiles", len(SELF_VOLATILES)))
ACTIVE = sum(n for _, n in ACTIVE_LAYOUT)
FIELD = 4
MATCHUP_MOVE = 4  # immune, log2 multiplier / 2, same-type bonus, deals damage
MATCHUP_MON = 2  # threatened by the foe active's types, best own damaging move
MATCHUP_LAYOUT = (("my_moves", 4 * MATCHUP_MOVE), ("foe_moves", 4 * MATCHUP_MOVE),
                  ("my_team", 6 * MATCHUP_MON))
MATCHUP = sum(n for _, n in MATCHUP_LAYOUT)
LAYOUT = (("me", 6 * MON), ("foe", 6 * MON), ("me_active", ACTIVE), ("foe_active", ACTIVE),
          ("field", FIELD), ("matchups", MATCHUP))
OBS_SIZE = sum(n for _, n in LAYOUT)
# scaling by constants is written as a multiplication: XLA rewrites x / c as x * (1/c) under
# jit, which can differ in the last bit from the eager division (jit == no-jit is checked)
_CENT, _SIXTH, _MILLI = np.float32(0.01), np.float32(1 / 6), np.float32(0.001)


class Revealed(NamedTuple):
    """What each side has shown its opponent, per [side, current slot]."""

    species: jax.Array  # int32[2, 6]: species index (codec.SPECIES), kept aligned with the slots
    seen: jax.Array  # bool[2, 6]: has been active
    moves_seen: jax.Array  # bool[2, 6, 4]: the move slot has been used


class Observation(NamedTuple):
    """One player's view; ``me``/``foe`` leaves have a leading slot axis of 6."""

    me_known: jax.Array  # bool[6] (all True)
    foe_known: jax.Array  # bool[6]
    me_species: jax.Array  # int32[6]
    foe_species: jax.Array  # int32[6], -1 unknown
    me_moves: jax.Array  # int32[6, 4], -1 empty
    foe_moves: jax.Array  # int32[6, 4], -1 unknown or empty
    features: jax.Array  # float32[OBS_SIZE]: the flat vector (see the module docstring)


def initial(team1: teams.Team, team2: teams.Team) -> Revealed:
    """At the start each side has seen the other's lead and nothing else."""
    species = jnp.stack([jnp.asarray(team1.species, jnp.int32), jnp.asarray(team2.species, jnp.int32)])
    seen = jnp.zeros((2, 6), bool).at[:, 0].set(True)
    return Revealed(species=species, seen=seen, moves_seen=jnp.zeros((2, 6, 4), bool))


def _fingerprint(team) -> jax.Array:
    """int32[2, 6, K]: per Pokémon, values a battle never changes (Transform changes the
    current moves/stats/species, not the set's: those are used where the Fighter has them)."""
    if hasattr(team, "base_species"):
        parts = [team.base_species[..., None], team.maxhp[..., None], team.level[..., None]]
    else:
        parts = [team.maxhp[..., None], team.level[..., None], team.base_spe[..., None],
                 team.stored, team.moves]
    return jnp.concatenate([jnp.asarray(p, jnp.int32) for p in parts], axis=-1)


def alignment(before: Battle, after: Battle) -> jax.Array:
    """int32[2, 6]: for each slot after the step, the slot its Pokémon had before."""
    fa, fb = _fingerprint(after.team), _fingerprint(before.team)
    same = jnp.all(fa[:, :, None, :] == fb[:, None, :, :], axis=-1)  # [side, new, old]
    return jnp.argmax(same, axis=-1).astype(jnp.int32)


def update(rev: Revealed, before: Battle, after: Battle) -> Revealed:
    """The bookkeeping after ``after = battle.step(before, actions)``."""
    perm = alignment(before, after)
    take = jax.vmap(lambda x, p: x[p])
    species, seen, moves_seen = (take(x, perm) for x in rev)
    pp_before = take(before.team.pp, perm)
    used = (after.team.moves >= 0) & (after.team.pp < pp_before)
    return Revealed(species=species, seen=seen.at[:, 0].set(True), moves_seen=moves_seen | used)


def hp_percent(hp, maxhp) -> jax.Array:
    """Showdown's HP Percentage Mod: ``ceil(100·hp/maxhp)``, 99 when not full, 0 fainted."""
    hp, maxhp = jnp.maximum(jnp.asarray(hp, jnp.int32), 0), jnp.maximum(jnp.asarray(maxhp, jnp.int32), 1)
    pct = (100 * hp + maxhp - 1) // maxhp
    return jnp.where((pct == 100) & (hp < maxhp), 99, pct)


@functools.cache
def _tables():
    t = move_table()
    acc = np.where(t.accuracy > 100, 100, t.accuracy) / 100.0  # ALWAYS_HITS -> 1
    category = np.stack([t.physical, ~t.physical & (t.base_power > 0), t.base_power == 0], -1)
    moves = data.load()["moves"]
    category[:, 2] = [moves[m]["category"] == "Status" for m in teams.move_ids()]
    category[:, 1] = [moves[m]["category"] == "Special" for m in teams.move_ids()]
    move_static = np.concatenate([
        np.eye(N_TYPES, dtype=np.float32)[np.maximum(t.type, 0)] * (t.type >= 0)[:, None],
        (t.base_power / 200.0)[:, None], acc[:, None], category.astype(np.float32),
        t.priority[:, None].astype(np.float32)], -1).astype(np.float32)
    species = data.load()["species"]
    base = np.array([[species[s]["baseStats"][k] for k in STAT_ORDER] for s in SPECIES], np.float32)
    return move_static, base / 255.0


def _mon_features(team, side, species, known, moves_known, exact: bool) -> jax.Array:
    """float32[6, MON] for ``side``'s Pokémon; ``known``/``moves_known`` mask what is shown."""
    move_static, base = (jnp.asarray(x) for x in _tables())
    f = jax.tree.map(lambda x: x[side], team)
    hp = jnp.where(exact, f.hp / jnp.maximum(f.maxhp, 1), hp_percent(f.hp, f.maxhp) * _CENT)
    status = jax.nn.one_hot(jnp.where(f.hp > 0, f.status, 0), N_STATUS)
    types = jnp.sum(jax.nn.one_hot(f.types, N_TYPES), axis=-2)  # -1 -> zeros
    mk = moves_known & (f.moves >= 0)
    m = jnp.maximum(f.moves, 0)
    pp_frac = jnp.where(exact, f.pp / jnp.maximum(jnp.asarray(max_pp_table())[m], 1), 0.0)
    per_move = jnp.concatenate([mk[..., None].astype(jnp.float32), move_static[m], pp_frac[..., None]], -1)
    per_move = per_move * mk[..., None]
    slot = jnp.arange(6)
    cols = [known[:, None], (slot == 0)[:, None], (f.hp <= 0)[:, None], hp[:, None], status,
            (f.level * _CENT)[:, None], jax.nn.one_hot(species, N_SPECIES), types,
            base[species], per_move.reshape(6, 4 * MOVE)]
    out = jnp.concatenate([jnp.asarray(c, jnp.float32) for c in cols], -1)
    return out * known[:, None]


def _active_features(team, side) -> jax.Array:
    f = jax.tree.map(lambda x: x[side, 0], team)
    live = f.hp > 0
    cols = [f.boosts * _SIXTH, f.confused[None], f.must_recharge[None], f.volatiles]
    return jnp.concatenate([jnp.asarray(c, jnp.float32).reshape(-1) for c in cols]) * live


def _log_multiplier(mult) -> jax.Array:
    """log2(multiplier)/2 in [-1, 1] (×0.25 .. ×4); ×0 maps to -1, the worst there is."""
    return jnp.where(mult > 0, jnp.log2(jnp.maximum(mult, 0.25)) * 0.5, -1.0)


def _matchups(team, player, foe, foe_moves_known) -> jax.Array:
    """float32[MATCHUP] (``MATCHUP_LAYOUT``) for ``player``'s view."""
    t = jax.tree.map(jnp.asarray, move_table())

    def moves_on(attacker, defender_types, known):  # float32[4, MATCHUP_MOVE]
        moves = team.moves[attacker, 0]
        m = jnp.maximum(moves, 0)
        mult = opponents.type_multiplier(t.type[m], defender_types)
        stab = opponents.same_type_bonus(t.type[m], team.types[attacker, 0])
        damaging = (t.base_power[m] > 0) | (t.fixed_damage[m] != -1)
        cols = [mult == 0, jnp.where(mult > 0, _log_multiplier(mult), 0.0), stab, damaging]
        out = jnp.stack([jnp.asarray(c, jnp.float32) for c in cols], -1)
        return out * (known & (moves >= 0))[:, None]

    mine, theirs = team.types[player, 0], team.types[foe, 0]
    my_moves = moves_on(player, theirs, jnp.ones(4, bool))
    foe_moves = moves_on(foe, mine, foe_moves_known)
    # per own Pokémon: the foe active's worst type against it, its best damaging move on the foe
    threat = jnp.max(jax.vmap(lambda ty: opponents.type_multiplier(ty, team.types[player]))(theirs)
                     * (theirs >= 0)[:, None], axis=0)
    own = jnp.maximum(team.moves[player], 0)
    hits = jnp.where((team.moves[player] >= 0) & ((t.base_power[own] > 0) | (t.fixed_damage[own] != -1)),
                     opponents.type_multiplier(t.type[own], theirs[None, None, :]), 0.0)
    team_cols = jnp.stack([_log_multiplier(threat), _log_multiplier(jnp.max(hits, axis=-1))], -1)
    return jnp.concatenate([my_moves.reshape(-1), foe_moves.reshape(-1), team_cols.reshape(-1)])


def observe(b: Battle, rev: Revealed, player) -> Observation:
    """``player``'s view (0 = p1, 1 = p2); jittable with a traced ``player``."""
    player = jnp.asarray(player, jnp.int32)
    foe = 1 - player
    mine = _mon_features(b.team, player, rev.species[player], jnp.ones(6, bool),
                         jnp.ones((6, 4), bool), True)
    theirs = _mon_features(b.team, foe, rev.species[foe], rev.seen[foe], rev.moves_seen[foe], False)
    field = jnp.stack([b.forced[player], b.forced[foe], b.ended, jnp.minimum(b.turn * _MILLI, 1.0)]).astype(jnp.float32)
    foe_moves_known = rev.moves_seen[foe] & rev.seen[foe][:, None]
    features = jnp.concatenate([mine.reshape(-1), theirs.reshape(-1), _active_features(b.team, player),
                                _active_features(b.team, foe), field,
                                _matchups(b.team, player, foe, foe_moves_known[0])])
    return Observation(
        me_known=jnp.ones(6, bool), foe_known=rev.seen[foe],
        me_species=rev.species[player], foe_species=jnp.where(rev.seen[foe], rev.species[foe], -1),
        me_moves=b.team.moves[player], foe_moves=jnp.where(foe_moves_known, b.team.moves[foe], -1),
        features=features)


def flatten(obs: Observation) -> jax.Array:
    return obs.features
