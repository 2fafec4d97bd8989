"""The built-in policies: every action they choose is accepted by Showdown (battles played on
both engines), the greedy one prefers the most damaging move and switches only when forced."""

import jax
import jax.numpy as jnp
import numpy as np

from pokejax import battle, choices, opponents, reference, showdown_battle, start, teams
from pokejax.duel import STANDARD_MOVES

FORMAT = reference.FORMAT
_step = jax.jit(battle.step)
_new = jax.jit(start.new_battle)
_random = jax.jit(opponents.random_policy, static_argnums=2)
_greedy = jax.jit(opponents.greedy_policy, static_argnums=2)


def test_policies_play_legal_battles_in_showdown(showdown):
    key = jax.random.PRNGKey(0)
    decisions = switches = 0
    i = 0
    played = 0
    while played < 4:
        seeds = reference.derive_seeds(51, i)
        i += 1
        sets = [showdown.request("team", format=FORMAT, seed=seeds[p])["sets"] for p in ("p1", "p2")]
        if not all(m in STANDARD_MOVES for side in sets for s in side for m in s["moves"]):
            continue
        played += 1
        started = showdown.request("start", format=FORMAT, seed=seeds["battle"],
                                   p1team=teams.pack_team(sets[0]), p2team=teams.pack_team(sets[1]))
        handle, state = started["battle"], started["state"]
        b = _new(teams.encode_sets(sets[0]), teams.encode_sets(sets[1]), jnp.asarray(seeds["battle"], jnp.uint32))
        while not state["ended"] and state["turn"] <= 150:
            key, k1, k2 = jax.random.split(key, 3)
            acts = [int(_greedy(k1, b, 0)), int(_random(k2, b, 1))]
            for a, side in zip(acts, state["sides"], strict=True):
                assert (a == -1) == (not choices.legal_mask(side["request"]).any())
            res = showdown.request("choose", battle=handle, **{
                p: choices.choice_string(a) if a >= 0 else None for p, a in zip(("p1", "p2"), acts, strict=True)})
            assert res["accepted"], res
            if acts[0] >= 4:  # greedy switches only when forced
                assert state["sides"][0]["request"].get("forceSwitch"), state["sides"][0]["request"]
                switches += 1
            b = _step(b, np.asarray(acts, np.int32))
            state = res["state"]
            assert showdown_battle.diff(b, state) == []
            decisions += 1
        showdown.request("close", battle=handle)
    print(dict(decisions=decisions, greedy_forced_switches=switches))
    assert decisions > 100 and switches > 3


def _battle_with(moves1, species2):
    """p1: a team of Pokémon with ``moves1``; p2: the species ``species2`` (with Tackle)."""
    mi = {m: i for i, m in enumerate(teams.move_ids())}
    si = {s: i for i, s in enumerate(teams.species_ids())}
    six = jnp.ones((6, 6), jnp.int32)

    def team(species, moves):
        return teams.Team(species=jnp.asarray(species, jnp.int32), level=jnp.full(6, 80, jnp.int32),
                          moves=jnp.asarray([[mi[m] for m in moves] + [-1] * (4 - len(moves))] * 6, jnp.int32),
                          evs=255 * six, ivs=30 * six)

    p1 = team([si[s] for s in ("pikachu", "eevee", "rattata", "pidgey", "spearow", "jigglypuff")], moves1)
    p2 = team([si[species2]] + [si[s] for s in ("zubat", "oddish", "paras", "venonat", "diglett")], ["tackle"])
    return _new(p1, p2, jnp.asarray([1, 2, 3, 4], jnp.uint32))


def test_greedy_prefers_the_most_damaging_move():
    key = jax.random.PRNGKey(1)
    # vs Onix (Rock/Ground): Thunderbolt does nothing, Surf is 4x, Tackle resisted
    b = _battle_with(["thunderbolt", "tackle", "surf", "growl"], "onix")
    assert int(_greedy(key, b, 0)) == 2
    scores = np.asarray(opponents.expected_damage(b, 0))
    assert scores[0] == 0 and scores[3] == 0 and scores[2] > scores[1] > 0
    # vs Gyarados (Water/Flying): Thunderbolt 4x
    assert int(_greedy(key, _battle_with(["thunderbolt", "tackle", "surf", "growl"], "gyarados"), 0)) == 0
    # a move without PP is not chosen
    b = _battle_with(["thunderbolt", "tackle", "surf", "growl"], "onix")
    b = battle.with_team(b, b.team._replace(pp=b.team.pp.at[0, 0, 2].set(0)))
    assert int(_greedy(key, b, 0)) == 1


def test_forced_switch_choices():
    b = _battle_with(["tackle"], "onix")
    b = battle.with_team(b, b.team._replace(hp=b.team.hp.at[0, 0].set(0).at[0, 2].set(0)))
    b = b._replace(forced=jnp.asarray([True, False]))
    picks = {int(_greedy(k, b, 0)) for k in jax.random.split(jax.random.PRNGKey(2), 40)}
    assert picks == {4, 6, 7, 8}  # every non-fainted bench slot, never a move or slot 2 (fainted)
    assert {int(_random(k, b, 0)) for k in jax.random.split(jax.random.PRNGKey(3), 40)} == {4, 6, 7, 8}
    assert int(_greedy(jax.random.PRNGKey(0), b, 1)) == -1 == int(_random(jax.random.PRNGKey(0), b, 1))
