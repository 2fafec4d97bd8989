"""Team legality: pokejax.legality offline against Showdown's own validator (the driver's
``validate``), each bad input of docs/pokejax.md with its error, and the driver refusing to start
a battle with a team its validator refuses."""

import copy

import numpy as np
import pytest

from pokejax import data, legality, teams
from pokejax.showdown import TeamRefusedError

FORMAT = "gen1randombattle"


@pytest.fixture(scope="module")
def generated(showdown):
    """Teams of Showdown's own gen1randombattle generator (legal by definition here)."""
    return [showdown.request("team", format=FORMAT, seed=[7, 7, 7, i])["sets"] for i in range(150)]


def _edited(team, i, **change):
    team = copy.deepcopy(team)
    team[i].update(change)
    return team


def test_the_generators_own_teams_are_legal_on_both_sides(showdown, generated):
    """Every generated team passes, although Showdown's generator gives levels its validator
    would refuse at face value (Mewtwo 60 with moves learnt at 70 and 81): levels are judged
    at 100 on both sides."""
    for team in generated:
        assert legality.team_problems(team) == []
        assert showdown.request("validate", team=team) == []
        assert showdown.request("validate", team=teams.pack_team(team)) == []


# (what is changed in set 3 of a legal team, the error's words). The docs' table lists these.
BAD_SETS = [
    ({"species": "Pikachuu"}, "'Pikachuu' is not a Gen 1 species"),
    ({"species": "Mewthree"}, "'Mewthree' is not a Gen 1 species"),
    ({"species": "Togepi"}, "'Togepi' is not a Gen 1 species"),
    ({"species": None}, "species must be a name"),
    ({"species": "Magikarp"}, "Magikarp is a Gen 1 Pokémon, but not one the engine has"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "spore"]}, "Pikachu can't learn Spore"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "hyperbeem"]}, "'hyperbeem' is not a Gen 1 move"),
    ({"species": "Pikachu", "moves": ["thunderbolt", None]}, "move must be a name"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "Thunderbolt"]}, "multiple copies of Thunderbolt"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "surf", "thunder", "bodyslam", "agility"]},
     "1 to 4 moves"),
    ({"moves": []}, "1 to 4 moves"),
    ({"moves": "surf"}, "1 to 4 moves"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "doubleteam"]}, "banned by Evasion Moves Clause"),
    ({"species": "Tauros", "moves": ["bodyslam", "fissure"]}, "banned by OHKO Clause"),
    ({"species": "Pidgeot", "moves": ["fly"]}, "banned by Standard"),
    ({"species": "Alakazam", "moves": ["psychic", "firepunch"]}, "can't be transferred from Gen 2 to 1"),
    ({"species": "Exeggutor", "moves": ["stomp", "sleeppowder"]}, "impossible to obtain legitimately"),
    ({"species": "Pikachu", "moves": ["thunderbolt", "toxic"]}, "the engine does not have it yet"),
    ({"level": 0}, r"level must be an integer in 1\.\.100, got 0"),
    ({"level": 101}, r"level must be an integer in 1\.\.100, got 101"),
    ({"level": 50.5}, "level must be an integer"),
    ({"level": True}, "level must be an integer"),
    ({"evs": {"hp": 300}}, r"evs\['hp'\] must be an integer in 0\.\.255"),
    ({"evs": {"speed": 3}}, "unknown stat 'speed'"),
    ({"evs": {k: 0 for k in legality.STATS}}, "exactly 0 EVs"),
    ({"ivs": {"atk": -1}}, r"ivs\['atk'\] must be an integer in 0\.\.31"),
    ({"ivs": {"spa": 20, "spd": 30}}, "Gen 1 has one Special"),
    ({"ivs": {"hp": 10}}, "HP DV of 5, but its Atk, Def, Spe, and Spc DVs give it an HP DV of 15"),
    ({"item": "Leftovers"}, "item Leftovers does not exist in Gen 1"),
]


def _base(generated):
    """A legal team whose set 3 takes the edits (moves reset so an edit of one field alone
    is the only problem)."""
    team = copy.deepcopy(generated[0])
    assert legality.team_problems(team) == []
    return team


@pytest.mark.parametrize(("change", "message"), BAD_SETS, ids=[m for _, m in BAD_SETS])
def test_each_bad_set_is_refused_in_words(showdown, generated, change, message):
    team = _base(generated)
    if isinstance(change.get("species"), str):
        change = {**change, "name": change["species"]}
    team = _edited(team, 2, **change)
    with pytest.raises(teams.TeamError, match=f"set 3.*{message}") as caught:
        teams.encode_sets(team)
    assert caught.value.problems, "TeamError lists its problems"
    engine_only = "engine" in message
    if not engine_only and change.get("species") is not None and not isinstance(change.get("moves"), str):
        # the driver refuses it too: Showdown's validator, or the driver's own stricter checks
        assert showdown.request("validate", team=team), f"Showdown's side accepted {change}"


def test_team_shape_and_clauses(generated):
    team = _base(generated)
    for bad, message in [
        (team[:5], "a team has 6 sets, got 5"),
        ("Pikachu|...", "a team is a list of set dicts"),
        (team[:5] + ["Mew"], "set 6: a set is a dict"),
        ([dict(team[0], name=f"n{i}") for i in range(6)], "one of each Pokémon by Species Clause"),
        ([dict(s, name="Bob") for s in team], "different nicknames"),
    ]:
        with pytest.raises(teams.TeamError, match=message):
            teams.encode_sets(bad)


def test_showdown_itself_refuses_the_clauses(showdown, generated):
    team = _base(generated)
    six = [dict(team[0], name=f"n{i}") for i in range(6)]
    assert any("Species Clause" in p for p in showdown.request("validate", team=six))
    assert any("nicknames" in p for p in showdown.request("validate", team=[dict(s, name="Bob") for s in team]))


def _mutations(generated, n, seed):
    """Teams one random edit away from a generated one, inside what the engine can hold: a
    species of the pool with its moves kept, a move the engine has, a level, an IV or EV."""
    rng = np.random.default_rng(seed)
    species = sorted(data.load()["species"])
    moves = sorted(legality.engine_moves() - {"struggle"})
    for _ in range(n):
        team = copy.deepcopy(generated[rng.integers(len(generated))])
        s = team[rng.integers(6)]
        kind = rng.integers(5)
        if kind == 0:
            s["species"] = s["name"] = data.load()["species"][species[rng.integers(len(species))]]["name"]
        elif kind in (1, 2):
            slot = rng.integers(len(s["moves"]))
            s["moves"][slot] = moves[rng.integers(len(moves))]
        elif kind == 3:
            s["level"] = int(rng.integers(1, 101))
        else:
            stat = legality.STATS[rng.integers(6)]
            s["ivs"] = {**s["ivs"], stat: int(rng.integers(0, 32))}
            if stat in ("spa", "spd"):
                s["ivs"]["spa"] = s["ivs"]["spd"] = s["ivs"][stat]
        yield team


def test_offline_verdicts_equal_showdowns_validator(showdown, generated):
    """The offline judge and the live validator agree on every mutated team: both accept or
    both refuse (about half are refused: a move the species can't learn, an HP DV that no
    longer matches, a species clash)."""
    refused = 0
    for team in _mutations(generated, 600, seed=19):
        offline = legality.team_problems(team)
        live = showdown.request("validate", team=team)
        assert bool(offline) == bool(live), (team, offline, live)
        refused += bool(live)
    assert 100 < refused < 500, refused


def test_driver_refuses_to_start_an_illegal_team(showdown, generated):
    team = _edited(_base(generated), 2, species="Pikachu", name="Pikachu", moves=["spore"])
    packed = teams.pack_team(team)
    legal = teams.pack_team(generated[1])
    with pytest.raises(TeamRefusedError, match="p1 team.*can't learn Spore") as caught:
        showdown.request("start", format=FORMAT, seed=[1, 2, 3, 4], p1team=packed, p2team=legal)
    assert any("Spore" in p for p in caught.value.problems)
    with pytest.raises(TeamRefusedError, match="p2 team"):
        showdown.request("start", format=FORMAT, seed=[1, 2, 3, 4], p1team=legal, p2team=packed)
    # a mechanics test may ask for it explicitly
    started = showdown.request("start", format=FORMAT, seed=[1, 2, 3, 4], p1team=packed,
                               p2team=legal, unvalidated=True)
    showdown.request("close", battle=started["battle"])


@pytest.fixture(scope="module")
def sampled():
    import jax

    return teams.sample_team(jax.random.PRNGKey(3))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t._replace(species=t.species.at[1].set(999)), r"species index outside 0\.\.145 at index \(1,\): 999"),
    (lambda t: t._replace(species=t.species.at[1].set(-1)), "species index outside"),
    (lambda t: t._replace(moves=t.moves.at[2, 1].set(999)), r"move index outside -1\.\.164 at index \(2, 1\)"),
    (lambda t: t._replace(moves=t.moves.at[2].set(-1)), "a Pokémon with no move"),
    (lambda t: t._replace(moves=t.moves.at[2, 1].set(-1)), "a move after an empty slot"),
    (lambda t: t._replace(moves=t.moves.at[0, 1].set(t.moves[0, 0])), "a Pokémon with the same move twice"),
    (lambda t: t._replace(level=t.level.at[0].set(0)), r"level outside 1\.\.100"),
    (lambda t: t._replace(evs=t.evs.at[0, 0].set(256)), r"EV outside 0\.\.255"),
    (lambda t: t._replace(ivs=t.ivs.at[0, 0].set(32)), r"IV outside 0\.\.31"),
])
def test_new_battle_refuses_a_team_it_would_clamp(sampled, edit, message):
    import jax.numpy as jnp

    from pokejax import start

    seed = jnp.zeros(4, jnp.uint32)
    start.new_battle(sampled, sampled, seed)  # the sound team itself starts
    with pytest.raises(teams.TeamError, match=f"team2: {message}"):
        start.new_battle(sampled, edit(sampled), seed)


def test_rules_false_judges_only_what_the_engine_needs(generated):
    """Mechanics tests give a species any move the engine has: ``rules=False`` lets that through
    and still refuses what the engine cannot play."""
    crafted = _edited(_base(generated), 2, species="Pikachu", name="Pikachu", moves=["spore", "hyperbeam"])
    with pytest.raises(teams.TeamError, match="can't learn Spore"):
        teams.encode_sets(crafted)
    teams.encode_sets(crafted, rules=False)
    for change, message in [({"moves": ["spore", "spore"]}, "multiple copies"),
                            ({"moves": ["toxic"]}, "engine does not have it"),
                            ({"species": "Magikarp"}, "not one the engine has"),
                            ({"level": 0}, "level must be")]:
        with pytest.raises(teams.TeamError, match=message):
            teams.encode_sets(_edited(crafted, 2, **change), rules=False)
