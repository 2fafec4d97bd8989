"""Observations: the "revealed" bookkeeping equals a model built from Showdown's own exported
states (a Pokémon is seen once active, a move once its PP went down), the layout is as
documented, and a player's observation does not depend on anything the opponent has not shown."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import battle, choices, codec, legal, observe, reference, showdown_battle, start, teams
from pokejax.duel import STANDARD_MOVES

FORMAT = reference.FORMAT
_step = jax.jit(battle.step)
_new = jax.jit(start.new_battle)
_update = jax.jit(observe.update)
_observe = jax.jit(observe.observe)
_mask = jax.jit(legal.legal_mask)


def _games(showdown, seed, n):
    i = 0
    while n:
        seeds = reference.derive_seeds(seed, i)
        i += 1
        sets = [showdown.request("team", format=FORMAT, seed=seeds[p])["sets"] for p in ("p1", "p2")]
        if all(m in STANDARD_MOVES for side in sets for s in side for m in s["moves"]):
            n -= 1
            yield seeds["battle"], sets[0], sets[1]


class ShowdownModel:
    """What each side has shown, from consecutive exported states (by species id)."""

    def __init__(self, state):
        self.seen = [set(), set()]
        self.used = [set(), set()]
        self.see(state)

    def see(self, state):
        for s, side in enumerate(state["sides"]):
            self.seen[s] |= {m["species"] for m in side["pokemon"] if m["isActive"]}

    def step(self, before, after):
        for s in (0, 1):
            old = {m["species"]: m for m in before["sides"][s]["pokemon"]}
            for mon in after["sides"][s]["pokemon"]:
                for i, (a, b) in enumerate(zip(old[mon["species"]]["moves"], mon["moves"], strict=True)):
                    if b["pp"] < a["pp"]:
                        self.used[s].add((mon["species"], i))
        self.see(after)


def _check(rev, model, state, ctx):
    rev = jax.device_get(rev)
    for s, side in enumerate(state["sides"]):
        species = [m["species"] for m in side["pokemon"]]
        assert [codec.SPECIES[int(x)] for x in rev.species[s]] == species, ctx
        assert [bool(x) for x in rev.seen[s]] == [sp in model.seen[s] for sp in species], ctx
        want = [[(sp, i) in model.used[s] for i in range(4)] for sp in species]
        assert np.asarray(rev.moves_seen[s]).tolist() == want, ctx


def play(showdown, n, update=_update):
    rng = np.random.default_rng(5)
    totals = dict(decisions=0, seen=0, used=0)
    for seed, s1, s2 in _games(showdown, 41, n):
        started = showdown.request("start", format=FORMAT, seed=seed, p1team=teams.pack_team(s1),
                                   p2team=teams.pack_team(s2))
        handle, state = started["battle"], started["state"]
        t1, t2 = teams.encode_sets(s1), teams.encode_sets(s2)
        b, rev, model = _new(t1, t2, jnp.asarray(seed, jnp.uint32)), observe.initial(t1, t2), ShowdownModel(state)
        while not state["ended"] and state["turn"] <= 150:
            _check(rev, model, state, (seed, state["turn"]))
            seen = np.asarray(rev.seen)
            for p in (0, 1):
                feats = np.asarray(_observe(b, rev, p).features)
                pct = [observe_percent(m) for m in state["sides"][1 - p]["pokemon"]]
                got = feats[6 * observe.MON:12 * observe.MON].reshape(6, observe.MON)[:, 3]
                assert np.allclose(got, [v / 100 if k else 0 for v, k in zip(pct, seen[1 - p], strict=True)])
            mask = np.asarray(_mask(b))
            acts = [int(rng.choice(np.flatnonzero(m))) if m.any() else -1 for m in mask]
            res = showdown.request("choose", battle=handle, **{
                p: choices.choice_string(a) if a >= 0 else None for p, a in zip(("p1", "p2"), acts, strict=True)})
            assert res["accepted"], res
            after = _step(b, np.asarray(acts, np.int32))
            rev, b = update(rev, b, after), after
            model.step(state, res["state"])
            state = res["state"]
            assert showdown_battle.diff(b, state) == []
            totals["decisions"] += 1
        _check(rev, model, state, (seed, "end"))
        totals["seen"] += int(np.asarray(rev.seen).sum())
        totals["used"] += int(np.asarray(rev.moves_seen).sum())
        showdown.request("close", battle=handle)
    return totals


def test_revealed_follows_showdown(showdown):
    totals = play(showdown, 5)
    print(totals)
    assert totals["decisions"] > 200 and totals["seen"] > 30 and totals["used"] > 60, totals


def test_the_comparison_catches_lost_alignment(showdown, monkeypatch):
    """Bookkeeping that ignores the slot swaps of switches is caught."""
    monkeypatch.setattr(observe, "alignment", lambda before, after: jnp.tile(jnp.arange(6), (2, 1)))
    with pytest.raises(AssertionError):
        play(showdown, 1, update=jax.jit(lambda *a: observe.update(*a)))


def observe_percent(mon) -> int:
    """Showdown's shared HP in a gen1randombattle (HP Percentage Mod), from the exact HP."""
    if mon["hp"] == 0:
        return 0
    pct = -(-100 * mon["hp"] // mon["maxhp"])
    return 99 if pct == 100 and mon["hp"] < mon["maxhp"] else pct


def test_layout_and_hidden_information():
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    both = jax.jit(jax.vmap(teams.sample_team))(keys)
    t1, t2 = (jax.tree.map(lambda x, i=i: x[i], both) for i in (0, 1))
    b, rev = _new(t1, t2, jnp.asarray([1, 2, 3, 4], jnp.uint32)), observe.initial(t1, t2)
    obs = _observe(b, rev, 0)
    assert obs.features.shape == (observe.OBS_SIZE,) and obs.features.dtype == jnp.float32
    assert observe.OBS_SIZE == 12 * observe.MON + 2 * observe.ACTIVE + observe.FIELD + observe.MATCHUP
    assert np.asarray(obs.foe_known).tolist() == [True] + [False] * 5
    assert (np.asarray(obs.foe_moves) == -1).all() and (np.asarray(obs.foe_species[1:]) == -1).all()
    # p1's view ignores everything p2 has not shown: its bench, its lead's moves, PP and stats
    team = b.team
    hidden = team._replace(
        moves=team.moves.at[1, 1:].set(team.moves[0, 1:]).at[1, 0, :].set(team.moves[0, 0]),
        pp=team.pp.at[1].set(1), hp=team.hp.at[1, 1:].set(1),
        status=team.status.at[1, 1:].set(2), stored=team.stored.at[1].add(7))
    rev2 = rev._replace(species=rev.species.at[1, 1:].set(rev.species[0, 1:]))
    other = _observe(battle.with_team(b, hidden), rev2, 0)
    assert np.array_equal(np.asarray(other.features), np.asarray(obs.features))
    # ... but it does show p1's own changes, and the foe's once revealed
    assert not np.array_equal(np.asarray(_observe(battle.with_team(b, hidden), rev2, 1).features),
                              np.asarray(_observe(b, rev, 1).features))
    shown = rev._replace(seen=rev.seen.at[1].set(True), moves_seen=rev.moves_seen.at[1].set(True))
    assert not np.array_equal(np.asarray(_observe(battle.with_team(b, hidden), shown, 0).features),
                              np.asarray(_observe(b, shown, 0).features))


def test_matchups_read_the_type_chart_for_the_actives():
    """The matchup block on a crafted position, each value worked out by hand from Gen 1's chart:
    Pikachu (Electric) and Geodude (Rock/Ground) against Charizard (Fire/Flying)."""
    mon = lambda species, moves: {"species": species, "level": 50, "moves": moves}  # noqa: E731
    p1 = [mon("Pikachu", ["thunderbolt", "bodyslam", "thunderwave", "earthquake"]),
          mon("Geodude", ["earthquake", "rockslide"]), mon("Gastly", ["nightshade"]),
          mon("Squirtle", ["surf"]), mon("Bulbasaur", ["growl"]), mon("Diglett", ["scratch"])]
    p2 = [mon("Charizard", ["earthquake", "fireblast"])] + [
        mon(s, ["tackle"]) for s in ("Rattata", "Pidgey", "Spearow", "Ekans", "Sandshrew")]
    t1, t2 = (teams.encode_sets(x, rules=False) for x in (p1, p2))
    b, rev = _new(t1, t2, jnp.asarray([1, 2, 3, 4], jnp.uint32)), observe.initial(t1, t2)

    def block(rev):
        m = np.asarray(_observe(b, rev, 0).features)[-observe.MATCHUP:]
        n = 4 * observe.MATCHUP_MOVE
        return (m[:n].reshape(4, -1), m[n:2 * n].reshape(4, -1),
                m[2 * n:].reshape(6, observe.MATCHUP_MON))

    mine, theirs, team = block(rev)
    # immune, log2(multiplier)/2, same type, deals damage
    np.testing.assert_array_equal(mine, [[0, 0.5, 1, 1],   # Thunderbolt: x1 (Fire) * x2 (Flying)
                                         [0, 0, 0, 1],     # Body Slam: x1
                                         [0, 0.5, 1, 0],   # Thunder Wave: a status move
                                         [1, 0, 0, 1]])    # Earthquake: Flying is immune
    assert (theirs == 0).all()  # Charizard has shown no move yet
    # per own Pokémon: the worst of Fire / Flying against it, its best damaging move
    np.testing.assert_array_equal(team, [[0, 0.5],     # Pikachu: x1 at worst; Thunderbolt x2
                                         [-0.5, 1],    # Geodude: x0.5 at worst; Rock Slide x4
                                         [0, 0],       # Gastly: Night Shade (fixed damage) x1
                                         [0, 0.5],     # Squirtle: Surf x2
                                         [0.5, -1],    # Bulbasaur: Fire x2; no damaging move
                                         [0, 0]])      # Diglett: Scratch x1
    shown = rev._replace(moves_seen=rev.moves_seen.at[1, 0, :2].set(True))
    _, theirs, _ = block(shown)
    np.testing.assert_array_equal(theirs, [[0, 0.5, 0, 1],  # Earthquake on Electric: x2
                                           [0, 0, 1, 1],    # Fire Blast: x1, Charizard's type
                                           [0, 0, 0, 0], [0, 0, 0, 0]])


def test_hp_percent():
    hp = jnp.asarray([0, 1, 150, 299, 300]), jnp.asarray([300] * 5)
    assert np.asarray(observe.hp_percent(*hp)).tolist() == [0, 1, 50, 99, 100]
