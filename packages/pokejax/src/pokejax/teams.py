"""Gen 1 random-battle teams: a fixed-size encoding and a JAX sampler of Showdown's generator.

The sampler reproduces the *distribution* of ``RandomGen1Teams.randomTeam`` in Showdown
0.11.11 (``data/random-battles/gen1/teams.ts``), not its per-seed output: Showdown draws from its
own PRNG in an order that a fixed-shape, branch-free program cannot follow cheaply, and the
battle engine only needs teams that are distributed like the real ones. What it reproduces:

* **Species.** Showdown draws species uniformly without replacement from the 146 entries of
  ``data.json`` (``getPokemonPool`` gives every Gen 1 species weight 1) and accepts a draw unless
  the team already holds two of one of its types, two Pokémon weak to one of Electric, Psychic,
  Water, Ice, Ground or Fire that it is weak to (immunities excepted), or a level-100 Pokémon
  while this is one too. Rejects go to a reserve that refills the team, uniformly without
  replacement, only if the pool runs dry. Drawing without replacement until a stop is the same
  as walking a uniformly random permutation, so the sampler scans a permutation of all 146
  species with the same counters: this is exact in distribution, slot order included.
* **Moves** (``randomSet``): with probability 1/2 all of ``comboMoves``; then, if there is room,
  one uniform draw from ``exclusiveMoves``; then ``essentialMoves`` in order; then uniform draws
  without replacement from ``moves`` until four distinct moves are held or the list is empty.
  The lists contain duplicates on purpose (weights), so they are kept as lists. The final order
  is a uniform shuffle. Also exact in distribution.
* **Levels, EVs, IVs** are functions of the species and the moves: the level from the table
  (default 80), EVs 255 and IVs 30 except HP EVs lowered in steps of 4 for Substitute users
  until max HP is not a multiple of 4, and Attack EV 0 / IV 2 when no move uses the Attack stat
  (fixed-damage moves, Counter and Super Fang don't; Mimic and Transform keep Attack).

``Team`` holds one team (leading batch axes allowed, e.g. after ``vmap``); ``encode_sets`` and
``decode_team`` convert to and from Showdown's set dicts, and ``pack_team`` is ``Teams.pack`` so
that a sampled team can be played in the real Showdown.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import data, legality
from pokejax.legality import (  # noqa: F401  (TeamError, to_id: part of this module's API)
    MAX_MOVES,
    STATS,
    TEAM_SIZE,
    TeamError,
    to_id,
)

#: The types whose "spammable" attacks Showdown counts weaknesses to (``weaknessCount``).
WEAKNESS_TYPES = ("Electric", "Psychic", "Water", "Ice", "Ground", "Fire")
#: Gen 1 moves with a ``damageCallback`` in Showdown: not in the extracted tables, and they do
#: not count as using the Attack stat (``move.damageCallback || move.damage``).
DAMAGE_CALLBACK_MOVES = frozenset({"bide", "counter", "psywave", "superfang"})
#: Moves that copy the foe's moveset and so keep the Attack stat whatever the rest is.
KEEPS_ATTACK_MOVES = frozenset({"mimic", "transform"})
MAX_EV, DEFAULT_IV, NO_ATTACK_IV = 255, 30, 2
TYPE_LIMIT, WEAKNESS_LIMIT, MAX_LEVEL_LIMIT = 2, 2, 1
DEFAULT_LEVEL = 80


class Team(NamedTuple):
    """One gen1randombattle team as int32 arrays (leading batch axes allowed).

    ``species`` indexes ``species_ids()`` (sorted Showdown ids), ``moves`` indexes ``move_ids()``
    with -1 for an empty slot, ``evs``/``ivs`` are in ``STATS`` order (Showdown's 0-255 EVs and
    0-31 IVs; Gen 1 DVs are ``iv // 2``).
    """

    species: jax.Array  # (6,)
    level: jax.Array  # (6,)
    moves: jax.Array  # (6, 4)
    evs: jax.Array  # (6, 6)
    ivs: jax.Array  # (6, 6)


class Tables(NamedTuple):
    """Per-species and per-move tables the sampler reads, built once from ``data.load()``."""

    species_ids: tuple[str, ...]
    move_ids: tuple[str, ...]
    type_names: tuple[str, ...]
    types: np.ndarray  # (S, 2) type index, -1 for none
    weak: np.ndarray  # (S, len(WEAKNESS_TYPES)) bool
    level: np.ndarray  # (S,)
    pool: np.ndarray  # (S, P) "moves", -1 padded
    pool_len: np.ndarray
    exclusive: np.ndarray  # (S, X) "exclusiveMoves"
    exclusive_len: np.ndarray
    essential: np.ndarray  # (S, E) "essentialMoves"
    combo: np.ndarray  # (S, C) "comboMoves"
    combo_len: np.ndarray
    substitute_hp_ev: np.ndarray  # (S,) HP EV when the set has Substitute
    allowed: np.ndarray  # (S, M) bool: the move is in one of the species' lists
    uses_attack: np.ndarray  # (M,) bool
    keeps_attack: np.ndarray  # (M,) bool
    substitute: int


def _padded(lists: list[list[int]], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    width = max(1, max(map(len, lists)) if width is None else width)
    out = np.full((len(lists), width), -1, np.int32)
    for i, row in enumerate(lists):
        out[i, : len(row)] = row
    return out, np.array([len(r) for r in lists], np.int32)


def _substitute_hp_ev(base_hp: int, level: int) -> int:
    """``randomSet``: lower HP EVs until max HP is not a multiple of 4 (four Substitutes)."""
    ev = MAX_EV
    while ev > 3:
        hp = (2 * base_hp + DEFAULT_IV + ev // 4 + 100) * level // 100 + 10
        if hp % 4 != 0:
            break
        ev -= 4
    return ev


@functools.cache
def tables() -> Tables:
    """Index the extracted Showdown data; cached, since every sampler call site needs it."""
    d = data.load()
    species_ids = tuple(sorted(d["species"]))
    move_ids = tuple(sorted(d["moves"]))
    mi = {m: i for i, m in enumerate(move_ids)}
    type_names = tuple(sorted(t["name"] for t in d["typechart"].values()))
    ti = {t: i for i, t in enumerate(type_names)}
    damage_taken = {t["name"]: t["damageTaken"] for t in d["typechart"].values()}

    types = np.full((len(species_ids), 2), -1, np.int32)
    weak = np.zeros((len(species_ids), len(WEAKNESS_TYPES)), bool)
    level = np.zeros(len(species_ids), np.int32)
    sub_ev = np.zeros(len(species_ids), np.int32)
    lists: dict[str, list[list[int]]] = {k: [] for k in ("moves", "exclusiveMoves",
                                                         "essentialMoves", "comboMoves")}
    allowed = np.zeros((len(species_ids), len(move_ids)), bool)
    for s, sid in enumerate(species_ids):
        sp, entry = d["species"][sid], d["randomSets"][sid]
        types[s, : len(sp["types"])] = [ti[t] for t in sp["types"]]
        for w, attack in enumerate(WEAKNESS_TYPES):
            # dex.getImmunity(type, species) && dex.getEffectiveness(type, species) > 0
            taken = [damage_taken[t][attack] for t in sp["types"]]
            weak[s, w] = 3 not in taken and sum({1: 1, 2: -1}.get(x, 0) for x in taken) > 0
        level[s] = entry.get("level") or DEFAULT_LEVEL
        sub_ev[s] = _substitute_hp_ev(sp["baseStats"]["hp"], int(level[s]))
        for key, rows in lists.items():
            rows.append([mi[m] for m in entry.get(key, [])])
            allowed[s, rows[-1]] = True

    uses_attack = np.array([
        d["moves"][m]["category"] == "Physical" and "damage" not in d["moves"][m]
        and m not in DAMAGE_CALLBACK_MOVES for m in move_ids])
    pool, pool_len = _padded(lists["moves"])
    exclusive, exclusive_len = _padded(lists["exclusiveMoves"])
    essential, _ = _padded(lists["essentialMoves"])
    combo, combo_len = _padded(lists["comboMoves"])
    return Tables(
        species_ids=species_ids, move_ids=move_ids, type_names=type_names, types=types,
        weak=weak, level=level, pool=pool, pool_len=pool_len, exclusive=exclusive,
        exclusive_len=exclusive_len, essential=essential, combo=combo, combo_len=combo_len,
        substitute_hp_ev=sub_ev, allowed=allowed, uses_attack=uses_attack,
        keeps_attack=np.array([m in KEEPS_ATTACK_MOVES for m in move_ids]),
        substitute=mi["substitute"],
    )


def species_ids() -> tuple[str, ...]:
    """What ``Team.species`` indexes: ``sorted(data.load()["species"])``."""
    return tables().species_ids


def move_ids() -> tuple[str, ...]:
    """What ``Team.moves`` indexes: ``sorted(data.load()["moves"])``."""
    return tables().move_ids


# -- JAX sampler --------------------------------------------------------------------------------
def _add_move(moves: jax.Array, n: jax.Array, move: jax.Array, ok: jax.Array | bool = True):
    """``Set.add`` on a fixed (4,) array holding ``n`` moves; no-op for -1, a repeat, or full."""
    do = ok & (move >= 0) & ~jnp.any(moves == move) & (n < MAX_MOVES)
    moves = jnp.where(do & (jnp.arange(MAX_MOVES) == n), move, moves)
    return moves, n + do.astype(jnp.int32)


def set_evs_ivs(species: jax.Array, moves: jax.Array) -> tuple[jax.Array, jax.Array]:
    """EVs and IVs that ``randomSet`` gives ``species`` with ``moves`` (-1 padded, (..., 4)).

    Deterministic given the moves, so it also checks Showdown's own sets (see the tests).
    """
    t = tables()
    valid = moves >= 0
    m = jnp.clip(moves, 0)
    has_sub = jnp.any(moves == t.substitute, axis=-1)
    uses_atk = jnp.any(valid & jnp.asarray(t.uses_attack)[m], axis=-1)
    keeps_atk = jnp.any(valid & jnp.asarray(t.keeps_attack)[m], axis=-1)
    drop_atk = ~uses_atk & ~keeps_atk
    full = jnp.full(species.shape, MAX_EV, jnp.int32)
    hp_ev = jnp.where(has_sub, jnp.asarray(t.substitute_hp_ev)[species], full)
    atk_ev = jnp.where(drop_atk, 0, full)
    evs = jnp.stack([hp_ev, atk_ev] + [full] * 4, axis=-1)
    iv = jnp.full(species.shape, DEFAULT_IV, jnp.int32)
    ivs = jnp.stack([iv, jnp.where(drop_atk, NO_ATTACK_IV, iv)] + [iv] * 4, axis=-1)
    return evs, ivs


def sample_moves(key: jax.Array, species: jax.Array) -> jax.Array:
    """``randomSet``'s moves for one species index: (4,) int32, -1 padded, uniformly ordered."""
    t = tables()
    k_combo, k_excl, k_pool, k_shuffle = jax.random.split(key, 4)
    moves = jnp.full((MAX_MOVES,), -1, jnp.int32)
    n = jnp.int32(0)

    combo_len = jnp.asarray(t.combo_len)[species]
    use_combo = (combo_len > 0) & (combo_len <= MAX_MOVES) & jax.random.bernoulli(k_combo)
    combo = jnp.asarray(t.combo)[species]
    for i in range(combo.shape[0]):
        moves, n = _add_move(moves, n, combo[i], use_combo)

    excl_len = jnp.asarray(t.exclusive_len)[species]
    pick = jax.random.randint(k_excl, (), 0, jnp.maximum(excl_len, 1))
    moves, n = _add_move(moves, n, jnp.asarray(t.exclusive)[species, pick], excl_len > 0)

    essential = jnp.asarray(t.essential)[species]
    for i in range(essential.shape[0]):
        moves, n = _add_move(moves, n, essential[i])

    # sampleNoReplace until full == walking a uniform permutation of the list
    pool = jnp.asarray(t.pool)[species]
    width = pool.shape[0]
    prio = jnp.where(jnp.arange(width) < jnp.asarray(t.pool_len)[species],
                     jax.random.uniform(k_pool, (width,)), 2.0)
    pool = pool[jnp.argsort(prio)]
    for i in range(width):
        moves, n = _add_move(moves, n, pool[i])

    prio = jnp.where(jnp.arange(MAX_MOVES) < n, jax.random.uniform(k_shuffle, (MAX_MOVES,)), 2.0)
    return moves[jnp.argsort(prio)]


def species_sets(key: jax.Array, species: jax.Array) -> Team:
    """Sets for given (6,) species indices, as ``randomSet`` builds them."""
    moves = jax.vmap(sample_moves)(jax.random.split(key, TEAM_SIZE), species)
    evs, ivs = set_evs_ivs(species, moves)
    level = jnp.asarray(tables().level)[species]
    return Team(species=species.astype(jnp.int32), level=level, moves=moves, evs=evs, ivs=ivs)


def sample_species(key: jax.Array) -> jax.Array:
    """``randomTeam``'s species choice: (6,) int32 in team order (see the module docstring)."""
    t = tables()
    n_species = len(t.species_ids)
    k_perm, k_fill = jax.random.split(key)
    types, weak = jnp.asarray(t.types), jnp.asarray(t.weak)
    is_max_level = jnp.asarray(t.level == 100)
    slots = jnp.arange(TEAM_SIZE)

    def step(carry, s):
        type_count, weak_count, n_max, n, team, rejected = carry
        sp_types = types[s]
        has_type = sp_types >= 0
        skip = jnp.any(has_type & (type_count[jnp.clip(sp_types, 0)] >= TYPE_LIMIT))
        skip |= jnp.any(weak[s] & (weak_count >= WEAKNESS_LIMIT))
        skip |= is_max_level[s] & (n_max >= MAX_LEVEL_LIMIT)
        room = n < TEAM_SIZE
        accept, reject = room & ~skip, room & skip
        type_count = type_count.at[jnp.clip(sp_types, 0)].add((has_type & accept).astype(jnp.int32))
        weak_count = weak_count + (weak[s] & accept).astype(jnp.int32)
        n_max = n_max + (is_max_level[s] & accept).astype(jnp.int32)
        team = jnp.where(accept & (slots == n), s, team)
        rejected = rejected.at[s].set(reject)
        return (type_count, weak_count, n_max, n + accept.astype(jnp.int32), team, rejected), None

    init = (jnp.zeros(len(t.type_names), jnp.int32), jnp.zeros(len(WEAKNESS_TYPES), jnp.int32),
            jnp.int32(0), jnp.int32(0), jnp.zeros(TEAM_SIZE, jnp.int32),
            jnp.zeros(n_species, bool))
    order = jax.random.permutation(k_perm, n_species).astype(jnp.int32)
    (_, _, _, n, team, rejected), _ = jax.lax.scan(step, init, order)
    # refill from the rejects, uniformly without replacement (never needed with 146 species)
    fill = jnp.argsort(jnp.where(rejected, jax.random.uniform(k_fill, (n_species,)), 2.0))
    return jnp.where(slots < n, team, fill[jnp.clip(slots - n, 0)].astype(jnp.int32))


def sample_team(key: jax.Array) -> Team:
    """A team distributed as Showdown's ``gen1randombattle`` generator; jittable, vmappable."""
    k_species, k_sets = jax.random.split(key)
    return species_sets(k_sets, sample_species(k_species))


# -- Showdown set dicts ---------------------------------------------------------------------------
def encode_sets(sets: list[dict[str, Any]], *, rules: bool = True) -> Team:
    """Showdown's set dicts (the ``team`` driver command's ``sets``) as a ``Team``. A team that
    Showdown's validator or the engine refuses raises ``TeamError`` listing every problem
    (``legality.check_team``; ``rules=False`` judges only what the engine needs, for mechanics
    tests). Missing EVs are 0 and missing IVs 31, as in a Showdown battle."""
    t = tables()
    si = {s: i for i, s in enumerate(t.species_ids)}
    mi = {m: i for i, m in enumerate(t.move_ids)}
    legality.check_team(sets, rules=rules)
    moves = np.full((TEAM_SIZE, MAX_MOVES), -1, np.int32)
    for i, s in enumerate(sets):
        moves[i, : len(s["moves"])] = [mi[to_id(m)] for m in s["moves"]]
    return Team(
        species=jnp.asarray([si[to_id(s["species"])] for s in sets], jnp.int32),
        level=jnp.asarray([s.get("level") or 100 for s in sets], jnp.int32),
        moves=jnp.asarray(moves),
        evs=jnp.asarray([[(s.get("evs") or {}).get(k, 0) for k in STATS] for s in sets], jnp.int32),
        ivs=jnp.asarray([[(s.get("ivs") or {}).get(k, 31) for k in STATS] for s in sets], jnp.int32),
    )


def team_array_problems(team: Team) -> list[str]:
    """What is wrong with a concrete ``Team`` (leading batch axes allowed) that the engine would
    otherwise clamp or misread: indices out of the tables, a Pokémon with no move, a gap or a
    duplicate among its moves, levels, EVs or IVs out of range. Empty when it is sound."""
    t = tables()
    a = Team(*(np.asarray(x) for x in team))
    if a.species.shape[-1:] != (TEAM_SIZE,) or a.moves.shape[-2:] != (TEAM_SIZE, MAX_MOVES):
        return [f"a Team has species (..., {TEAM_SIZE}) and moves (..., {TEAM_SIZE}, {MAX_MOVES}), "
                f"got {a.species.shape} and {a.moves.shape}"]
    out = []

    def where(mask: np.ndarray, what: str, values: np.ndarray) -> None:
        if mask.any():
            at = tuple(int(i) for i in np.argwhere(mask)[0])
            out.append(f"{what} at index {at}: {values[at]}")

    n_species, n_moves = len(t.species_ids), len(t.move_ids)
    where((a.species < 0) | (a.species >= n_species),
          f"species index outside 0..{n_species - 1}", a.species)
    where((a.moves < -1) | (a.moves >= n_moves), f"move index outside -1..{n_moves - 1}", a.moves)
    where(a.moves[..., 0] < 0, "a Pokémon with no move (slot 0 is -1)", a.moves)
    gap = (a.moves[..., :-1] < 0) & (a.moves[..., 1:] >= 0)
    where(gap.any(-1), "a move after an empty slot (-1 slots come last)", a.moves)
    same = (a.moves[..., :, None] == a.moves[..., None, :]) & (a.moves[..., :, None] >= 0)
    dup = (same.sum(-1) > 1).any(-1)
    where(dup, "a Pokémon with the same move twice", a.moves)
    where((a.level < 1) | (a.level > 100), "level outside 1..100", a.level)
    where((a.evs < 0) | (a.evs > 255), "EV outside 0..255", a.evs)
    where((a.ivs < 0) | (a.ivs > 31), "IV outside 0..31", a.ivs)
    return out


def decode_team(team: Team) -> list[dict[str, Any]]:
    """One ``Team`` (no batch axis) as the set dicts Showdown's generator returns."""
    t = tables()
    d = data.load()
    arrays = Team(*(np.asarray(x) for x in team))
    if arrays.species.shape != (TEAM_SIZE,):
        raise ValueError(f"decode_team takes one team, got species shape {arrays.species.shape}")
    out = []
    for i in range(TEAM_SIZE):
        name = d["species"][t.species_ids[arrays.species[i]]]["name"]
        out.append({
            "name": name,
            "species": name,
            "moves": [t.move_ids[m] for m in arrays.moves[i] if m >= 0],
            "ability": "No Ability",
            "evs": {k: int(v) for k, v in zip(STATS, arrays.evs[i], strict=True)},
            "ivs": {k: int(v) for k, v in zip(STATS, arrays.ivs[i], strict=True)},
            "item": "",
            "level": int(arrays.level[i]),
            "shiny": False,
            "gender": False,
        })
    return out


def _pack_name(name: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "", name) if name else ""


def pack_team(sets: list[dict[str, Any]]) -> str:
    """``Teams.pack`` (``sim/teams.ts``) in Python, for the ``start`` driver command."""

    def js_or(x: Any) -> str:  # `${x || ''}`
        return str(x) if x else ""

    def iv(ivs: dict, s: str) -> str:
        v = ivs.get(s)
        return "" if v is None or v == 31 else str(v)

    packed = []
    for s in sets:
        name = s.get("name") or s.get("species")
        sid = _pack_name(s.get("species") or s.get("name"))
        fields = [name, "" if _pack_name(name) == sid else sid, _pack_name(s.get("item")),
                  _pack_name(s.get("ability")), ",".join(_pack_name(m) for m in s["moves"]),
                  s.get("nature") or ""]
        evs = ",".join(js_or(s["evs"].get(k)) for k in STATS) if s.get("evs") else ""
        fields.append("" if evs == ",,,,," else evs)
        fields.append(js_or(s.get("gender")))
        ivs = ",".join(iv(s["ivs"], k) for k in STATS) if s.get("ivs") else ""
        fields.append("" if ivs == ",,,,," else ivs)
        fields.append("S" if s.get("shiny") else "")
        level = s.get("level")
        fields.append(str(level) if level and level != 100 else "")
        happiness = s.get("happiness")
        last = "" if happiness is None or happiness == 255 else str(happiness)
        dmax = s.get("dynamaxLevel")
        dmax = "" if dmax is None or dmax == 10 else str(dmax)
        extras = [s.get("hpType") or "", _pack_name(s.get("pokeball")),
                  "G" if s.get("gigantamax") else "", dmax, s.get("teraType") or ""]
        if any(extras):
            last += "," + ",".join(extras)
        fields.append(last)
        packed.append("|".join(fields))
    return "]".join(packed)
