"""Gen 1 random teams: the encoding round-trips Showdown's sets, and the JAX sampler is
distributed as Showdown's own generator.

Three samplers meet here: Showdown's (through the driver), the JAX one, and a line-by-line Python
transcription of ``randomTeam``/``randomSet`` that doubles as a source of deliberately wrong
samplers (rules switched off). Per-seed equality is not expected, so the comparisons are two-
sample tests with a declared false-alarm rate ``ALPHA`` each:

* species: Pearson's chi-square homogeneity test on per-species slot counts (2 x 146 table),
  threshold the chi-square ``1 - ALPHA`` quantile (Wilson-Hilferty). Six distinct species per
  team make the counts a little less variable than multinomial ones, so this errs on the safe
  side (simulated JAX-vs-JAX, N=2000 vs 20000: mean 138, sd 16 for df 145).
* moves: for every (species, move) cell, a pooled two-proportion z for "a set of this species
  has this move"; the statistic is the largest |z|, the bound the Bonferroni one at ``ALPHA``,
  which holds however the cells of one set are correlated (four moves out of a few lists are).

Both tests must reject samplers that are wrong in ways a port could plausibly be: species drawn
uniformly, moves drawn uniformly from the species' lists, list duplicates (weights) ignored.
Rules the marginals cannot see (at most two of a type, two weak to a type, one level 100) are
checked team by team on Showdown's teams and on sampled ones.
"""

from __future__ import annotations

import math
import random
import time

import jax
import numpy as np
import pytest

from pokejax import data, teams

ALPHA = 1e-3
N_SHOWDOWN = 2000  # ~3 s through the driver
M_JAX = 20000
T = teams.tables()
D = data.load()
N_SPECIES, N_MOVES = len(T.species_ids), len(T.move_ids)
SPECIES_INDEX = {s: i for i, s in enumerate(T.species_ids)}
MOVE_INDEX = {m: i for i, m in enumerate(T.move_ids)}


# -- statistics (numpy only) ----------------------------------------------------------------------
def normal_quantile(p: float) -> float:
    """Standard normal quantile by bisection on ``erfc`` (no scipy)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def chi2_quantile(df: int, alpha: float) -> float:
    """Upper ``alpha`` point of chi-square(df), Wilson-Hilferty (203.41 vs exact 203.37 at 145)."""
    h = 2 / (9 * df)
    return df * (1 - h + normal_quantile(1 - alpha) * math.sqrt(h)) ** 3


def species_counts(species: np.ndarray) -> np.ndarray:
    return np.bincount(np.asarray(species).ravel(), minlength=N_SPECIES)


def move_counts(species: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """(S, M): how many sets of species s have move m."""
    sp = np.repeat(np.asarray(species).ravel(), moves.shape[-1])
    mv = np.asarray(moves).ravel()
    keep = mv >= 0
    return np.bincount(sp[keep] * N_MOVES + mv[keep],
                       minlength=N_SPECIES * N_MOVES).reshape(N_SPECIES, N_MOVES)


def species_test(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA) -> tuple[float, float]:
    """(chi-square statistic, threshold) for equal species frequencies in samples a and b."""
    ca, cb = species_counts(a), species_counts(b)
    keep = (ca + cb) > 0
    table = np.stack([ca[keep], cb[keep]]).astype(float)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    stat = float(((table - expected) ** 2 / expected).sum())
    return stat, chi2_quantile(int(keep.sum()) - 1, alpha)


def move_test(sp_a, mv_a, sp_b, mv_b, alpha: float = ALPHA) -> tuple[float, float]:
    """(max |z| over (species, move) cells, Bonferroni bound) for equal move frequencies."""
    n_a = species_counts(sp_a)[:, None].astype(float)
    n_b = species_counts(sp_b)[:, None].astype(float)
    o_a, o_b = move_counts(sp_a, mv_a), move_counts(sp_b, mv_b)
    both = (n_a > 0) & (n_b > 0)
    p = (o_a + o_b) / np.maximum(n_a + n_b, 1)
    cells = both & (p > 0) & (p < 1)
    se = np.sqrt(np.where(cells, p * (1 - p) * (1 / np.maximum(n_a, 1) + 1 / np.maximum(n_b, 1)),
                          1.0))
    z = np.where(cells, o_a / np.maximum(n_a, 1) - o_b / np.maximum(n_b, 1), 0.0) / se
    # a move one side never gives a species the other gives it often is caught here too
    n_cells = int(cells.sum())
    return float(np.abs(z).max()), normal_quantile(1 - alpha / (2 * n_cells))


# -- the three samplers -------------------------------------------------------------------------
def showdown_teams(showdown, n: int, seed: int) -> tuple[list, list[str]]:
    rng = np.random.default_rng(seed)
    sets, packed = [], []
    for s in rng.integers(0, 2**16, (n, 4)).tolist():
        r = showdown.request("team", format="gen1randombattle", seed=s)
        sets.append(r["sets"])
        packed.append(r["packed"])
    return sets, packed


def to_arrays(team_sets: list[list[dict]]) -> teams.Team:
    """Many Showdown teams as one batched numpy ``Team`` (via ``encode_sets``)."""
    encoded = [teams.encode_sets(s) for s in team_sets]
    return teams.Team(*(np.stack([np.asarray(getattr(e, f)) for e in encoded])
                        for f in teams.Team._fields))


def jax_teams(m: int, seed: int) -> teams.Team:
    sample = jax.jit(jax.vmap(teams.sample_team))(jax.random.split(jax.random.key(seed), m))
    return teams.Team(*(np.asarray(x) for x in sample))


def reference_team(rng: random.Random, *, type_limit: bool = True, weakness_limit: bool = True,
                   level_limit: bool = True, weights: bool = True) -> list[tuple[int, list[int]]]:
    """``randomTeam`` transcribed from teams.ts; the flags switch rules off (wrong samplers)."""
    pool, team, rejected = list(T.species_ids), [], []
    type_count: dict[str, int] = {}
    weak_count = dict.fromkeys(teams.WEAKNESS_TYPES, 0)
    n_max = 0
    while pool and len(team) < teams.TEAM_SIZE:
        s = pool.pop(rng.randrange(len(pool)))
        i = SPECIES_INDEX[s]
        weak = [w for k, w in enumerate(teams.WEAKNESS_TYPES) if T.weak[i, k]]
        if ((type_limit and any(type_count.get(x, 0) >= 2 for x in D["species"][s]["types"]))
                or (weakness_limit and any(weak_count[w] >= 2 for w in weak))
                or (level_limit and T.level[i] == 100 and n_max >= 1)):
            rejected.append(s)
            continue
        team.append(s)
        for x in D["species"][s]["types"]:
            type_count[x] = type_count.get(x, 0) + 1
        for w in weak:
            weak_count[w] += 1
        n_max += int(T.level[i] == 100)
    while len(team) < teams.TEAM_SIZE and rejected:
        team.append(rejected.pop(rng.randrange(len(rejected))))
    return [(SPECIES_INDEX[s], reference_moves(rng, D["randomSets"][s], weights)) for s in team]


def reference_moves(rng: random.Random, entry: dict, weights: bool = True) -> list[int]:
    """``randomSet``'s moves; ``weights=False`` drops the lists' deliberate duplicates."""
    lists = {k: list(entry.get(k, [])) if weights else list(dict.fromkeys(entry.get(k, [])))
             for k in ("moves", "exclusiveMoves", "essentialMoves", "comboMoves")}
    moves: dict[str, None] = {}  # an insertion-ordered set, like JS's Set
    combo, pool = lists["comboMoves"], lists["moves"]
    if combo and len(combo) <= 4 and rng.random() < 0.5:
        moves.update(dict.fromkeys(combo))
    if len(moves) < 4 and lists["exclusiveMoves"]:
        moves[rng.choice(lists["exclusiveMoves"])] = None
    if len(moves) < 4:
        for m in lists["essentialMoves"]:
            moves[m] = None
            if len(moves) == 4:
                break
    while len(moves) < 4 and pool:
        moves[pool.pop(rng.randrange(len(pool)))] = None
    out = [MOVE_INDEX[m] for m in moves]
    rng.shuffle(out)
    return out + [-1] * (4 - len(out))


def reference_teams(n: int, seed: int, **flags: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = random.Random(seed)
    species = np.zeros((n, 6), np.int64)
    moves = np.zeros((n, 6, 4), np.int64)
    for t in range(n):
        for j, (s, m) in enumerate(reference_team(rng, **flags)):
            species[t, j], moves[t, j] = s, m
    return species, moves


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def showdown_sample(showdown):
    start = time.perf_counter()
    sets, packed = showdown_teams(showdown, N_SHOWDOWN, seed=20240601)
    elapsed = time.perf_counter() - start
    print(f"\n{N_SHOWDOWN} Showdown teams in {elapsed:.1f} s")
    return sets, packed, to_arrays(sets)


@pytest.fixture(scope="module")
def jax_sample():
    return jax_teams(M_JAX, seed=0)


# -- encoding -------------------------------------------------------------------------------------
def test_encode_decode_round_trip_and_pack(showdown_sample):
    sets, packed, _ = showdown_sample
    for team_sets, team_packed in zip(sets[:300], packed[:300], strict=True):
        team = teams.encode_sets(team_sets)
        assert team.moves.shape == (6, 4) and team.evs.shape == (6, 6)
        assert teams.decode_team(team) == team_sets
        assert teams.pack_team(team_sets) == team_packed


# bad teams and their errors: tests/test_legality.py


def check_rules(team: teams.Team) -> None:
    """Everything teams.ts makes certain, for a batch of teams (numpy ``Team``, (n, 6, ...))."""
    species, moves = team.species, team.moves
    assert len(species) > 0
    assert (np.diff(np.sort(species, axis=1), axis=1) > 0).all(), "species clause"
    np.testing.assert_array_equal(team.level, T.level[species])
    valid = moves >= 0
    assert valid[..., 0].all() and (valid[..., :-1] >= valid[..., 1:]).all(), "-1 only at the end"
    assert T.allowed[species[..., None], np.clip(moves, 0, None)][valid].all(), "move not listed"
    same = (moves[..., :, None] == moves[..., None, :]) & valid[..., :, None]
    assert not (same & ~np.eye(4, dtype=bool)).any(), "duplicate move"
    evs, ivs = teams.set_evs_ivs(species, moves)
    np.testing.assert_array_equal(team.evs, evs)
    np.testing.assert_array_equal(team.ivs, ivs)
    type_hot = np.zeros((N_SPECIES, len(T.type_names)), int)
    for k in range(2):
        has = T.types[:, k] >= 0
        type_hot[np.flatnonzero(has), T.types[has, k]] = 1
    assert type_hot[species].sum(1).max() <= teams.TYPE_LIMIT
    assert T.weak[species].sum(1).max() <= teams.WEAKNESS_LIMIT
    assert (T.level[species] == 100).sum(1).max() <= teams.MAX_LEVEL_LIMIT


def test_showdown_teams_follow_the_modelled_rules(showdown_sample):
    """Our reading of teams.ts (levels, EV/IV rules, limits) holds for every Showdown team."""
    check_rules(showdown_sample[2])


def test_sampled_teams_are_legal(jax_sample):
    check_rules(jax_sample)
    assert jax_sample.species.dtype == np.int32 and jax_sample.moves.shape == (M_JAX, 6, 4)


def test_sampled_team_plays_in_showdown(showdown, jax_sample):
    with_sub = int(np.flatnonzero((jax_sample.moves == T.substitute).any(axis=(1, 2)))[0])
    p1, p2 = (teams.decode_team(teams.Team(*(x[i] for x in jax_sample))) for i in (with_sub, 1))
    started = showdown.request("start", format="gen1randombattle", seed=[1, 2, 3, 4],
                               p1team=teams.pack_team(p1), p2team=teams.pack_team(p2))
    for side, sets in zip(started["state"]["sides"], (p1, p2), strict=True):
        for mon, s in zip(side["pokemon"], sets, strict=True):
            assert mon["species"] == teams.to_id(s["species"]) and mon["level"] == s["level"]
            assert [m["id"] for m in mon["moves"]] == s["moves"]
            if "substitute" in s["moves"]:
                assert mon["maxhp"] % 4 != 0  # the lowered HP EVs reached the battle
    res = showdown.request("choose", battle=started["battle"], p1="move 1", p2="move 1")
    assert res["accepted"] and res["state"]["turn"] == 2
    showdown.request("close", battle=started["battle"])


# -- distributions --------------------------------------------------------------------------------
def test_species_frequencies_match_showdown(showdown_sample, jax_sample):
    stat, threshold = species_test(showdown_sample[2].species, jax_sample.species)
    assert stat < threshold, f"species chi-square {stat:.1f} >= {threshold:.1f}"


def test_move_frequencies_match_showdown(showdown_sample, jax_sample):
    sd = showdown_sample[2]
    stat, bound = move_test(sd.species, sd.moves, jax_sample.species, jax_sample.moves)
    assert stat < bound, f"max |z| {stat:.2f} >= {bound:.2f}"


def test_transcription_agrees_with_jax(jax_sample):
    """A third, independent implementation: the Python transcription matches the JAX sampler."""
    species, moves = reference_teams(M_JAX // 2, seed=1)
    stat, threshold = species_test(species, jax_sample.species)
    assert stat < threshold
    stat, bound = move_test(species, moves, jax_sample.species, jax_sample.moves)
    assert stat < bound


def test_wrong_samplers_are_rejected(showdown_sample):
    sd = showdown_sample[2]
    rng = np.random.default_rng(7)
    uniform = np.argsort(rng.random((M_JAX, N_SPECIES)), axis=1)[:, :6]
    stat, threshold = species_test(sd.species, uniform)
    assert stat > threshold, "a uniform-over-species sampler was not rejected"

    species, _ = reference_teams(M_JAX // 2, seed=2)
    prio = np.where(T.allowed[species], rng.random(species.shape + (N_MOVES,)), 2.0)
    pick = np.argsort(prio, axis=-1)[..., :4]
    moves = np.where(np.take_along_axis(prio, pick, -1) < 2, pick, -1)
    stat, bound = move_test(sd.species, sd.moves, species, moves)
    assert stat > bound, "moves uniform over the species' lists were not rejected"

    species, moves = reference_teams(M_JAX, seed=3, weights=False)
    stat, bound = move_test(sd.species, sd.moves, species, moves)
    assert stat > bound, "ignoring the lists' duplicate entries (weights) was not rejected"


@pytest.mark.slow
def test_large_sample_matches_showdown(showdown):
    """N=20000 Showdown teams (~30 s) vs 200000 JAX teams; sees a dropped type limit too."""
    sets, _ = showdown_teams(showdown, 20000, seed=7)
    sd = to_arrays(sets)
    check_rules(sd)
    jx = jax_teams(200000, seed=1)
    check_rules(jx)
    stat, threshold = species_test(sd.species, jx.species)
    assert stat < threshold, f"species chi-square {stat:.1f} >= {threshold:.1f}"
    stat, bound = move_test(sd.species, sd.moves, jx.species, jx.moves)
    assert stat < bound, f"max |z| {stat:.2f} >= {bound:.2f}"
    no_type_limit, _ = reference_teams(50000, seed=4, type_limit=False)
    stat, threshold = species_test(sd.species, no_type_limit)
    assert stat > threshold, "dropping the two-per-type limit was not rejected"
