"""``legal.legal_mask`` == the legal mask of Showdown's requests, at every decision of whole
battles (the JAX battle carried from ``start.new_battle``, stepped by ``battle.step`` and
checked equal to Showdown after every decision), and ``check_actions`` judges a choice as
Showdown's ``choose`` does (``accepts`` probes every choice without committing)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import battle, choices, legal, reference, showdown_battle, start, teams
from pokejax.duel import SUPPORTED_MOVES

FORMAT = reference.FORMAT
ALL_CHOICES = [choices.choice_string(a) for a in range(choices.NUM_ACTIONS)]
_mask = jax.jit(legal.legal_mask)
_step = jax.jit(battle.step)
_new = jax.jit(start.new_battle)


def _supported(sets) -> bool:
    return all(m in SUPPORTED_MOVES for s in sets for m in s["moves"])


def random_sets(showdown, seed: int, n: int):
    """(battle seed, p1 sets, p2 sets) of the first ``n`` seeded battles whose moves the engine has
    (all of the random-battle pool since the engine covers it)."""
    i = 0
    while n:
        seeds = reference.derive_seeds(seed, i)
        i += 1
        sets = [showdown.request("team", format=FORMAT, seed=seeds[p])["sets"] for p in ("p1", "p2")]
        if all(_supported(s) for s in sets):
            n -= 1
            yield seeds["battle"], sets[0], sets[1]


def focused_sets(showdown, seed: int, n: int):
    """Random teams whose every set has Hyper Beam (recharge), Sleep Powder (sleep) and
    Blizzard (freeze; 8 PP, so 0-PP slots come up), plus one random supported move."""
    rng = np.random.default_rng(seed)
    others = sorted(set(SUPPORTED_MOVES) - {"hyperbeam", "sleeppowder", "blizzard", "struggle"})
    for i in range(n):
        seeds = reference.derive_seeds(seed, i)
        sets = [showdown.request("team", format=FORMAT, seed=seeds[p])["sets"] for p in ("p1", "p2")]
        sets = [[{**s, "moves": ["hyperbeam", "sleeppowder", "blizzard", str(rng.choice(others))]}
                 for s in side] for side in sets]
        yield seeds["battle"], sets[0], sets[1]


def showdown_masks(state) -> np.ndarray:
    return np.stack([choices.legal_mask(side["request"]) for side in state["sides"]])


def play(showdown, games, rng, accepts_every: int = 0, max_turns: int = 200,
         stay: bool = False, crafted: bool = False) -> dict:
    """Play each game on both engines with random choices from the JAX mask; compare masks
    at every decision (and Showdown's ``accepts`` with ``check_actions`` every few).
    ``stay``: choose a move whenever one is legal (actives keep using up their PP)."""
    stats = dict(battles=0, decisions=0, forced=0, recharge=0, sleep_frz=0, zero_pp=0, probes=0)
    for seed, s1, s2 in games:
        # crafted teams give species moves they cannot learn: played unvalidated on both sides
        started = showdown.request("start", format=FORMAT, seed=seed, p1team=teams.pack_team(s1),
                                   p2team=teams.pack_team(s2), unvalidated=crafted)
        handle, state = started["battle"], started["state"]
        t1, t2 = (teams.encode_sets(x, rules=not crafted) for x in (s1, s2))
        b = _new(t1, t2, jnp.asarray(seed, jnp.uint32))
        try:
            while True:
                assert showdown_battle.diff(b, state) == [], (seed, state["turn"])
                mine, theirs = np.asarray(_mask(b)), showdown_masks(state)
                ctx = (seed, state["turn"], [side["request"] for side in state["sides"]])
                assert (mine == theirs).all(), (mine.astype(int), theirs.astype(int), ctx)
                if state["ended"] or state["turn"] > max_turns:
                    break
                _count(stats, state)
                if accepts_every and stats["decisions"] % accepts_every == 0:
                    _probe(showdown, handle, b, mine, rng)
                    stats["probes"] += 1
                acts = [int(rng.choice(np.flatnonzero(m[:4] if stay and m[:4].any() else m)))
                        if m.any() else -1 for m in mine]
                res = showdown.request("choose", battle=handle,
                                       **{p: choices.choice_string(a) if a >= 0 else None
                                          for p, a in zip(("p1", "p2"), acts, strict=True)})
                assert res["accepted"], res
                b = _step(b, np.asarray(acts, np.int32))
                state = res["state"]
                stats["decisions"] += 1
        finally:
            showdown.request("close", battle=handle)
        stats["battles"] += 1
    return stats


def _count(stats, state):
    for side in state["sides"]:
        req, mon = side["request"] or {}, side["pokemon"][0]
        stats["forced"] += bool(req.get("forceSwitch"))
        moves = [m["id"] for m in (req.get("active") or [{}])[0].get("moves", [])]
        stats["recharge"] += moves == ["recharge"]
        stats["sleep_frz"] += moves == ["fight"]
        stats["zero_pp"] += any(m["pp"] == 0 for m in mon["moves"]) and not req.get("wait")


def _probe(showdown, handle, b, mine, rng):
    """Every choice string through Showdown's ``accepts`` and through ``check_actions``."""
    acc = showdown.request("accepts", battle=handle, choices=ALL_CHOICES)
    for side, pid in enumerate(("p1", "p2")):
        if not mine[side].any():  # a waiting side: Showdown rejects every choice, we ignore it
            assert not any(acc[pid])
            continue
        assert acc[pid] == mine[side].tolist()
        other = int(rng.choice(np.flatnonzero(mine[1 - side]))) if mine[1 - side].any() else 0
        for a in range(choices.NUM_ACTIONS):
            acts = [other, other]
            acts[side] = a
            if acc[pid][a]:
                legal.check_actions(b, np.asarray(acts))
            else:
                with pytest.raises(legal.IllegalActionError, match=f"p{side + 1}: action {a}"):
                    legal.check_actions(b, np.asarray(acts))


def test_masks_equal_showdown_in_random_battles(showdown):
    stats = play(showdown, random_sets(showdown, 31, 6), np.random.default_rng(0), accepts_every=7)
    print(stats)
    assert stats["battles"] == 6 and stats["forced"] > 10 and stats["probes"] >= 20, stats


def test_masks_equal_showdown_with_recharge_sleep_freeze(showdown):
    stats = play(showdown, focused_sets(showdown, 32, 6), np.random.default_rng(1), accepts_every=5,
                 stay=True, crafted=True)
    print(stats)
    assert stats["recharge"] >= 5 and stats["sleep_frz"] >= 10 and stats["zero_pp"] >= 5, stats


def test_struggle_mask(showdown):
    """All PP gone: Struggle is the single option (action 0); one slot left: only it."""
    seed, s1, s2 = next(random_sets(showdown, 33, 1))
    started = showdown.request("start", format=FORMAT, seed=seed, p1team=teams.pack_team(s1),
                               p2team=teams.pack_team(s2), pp={"p1": [0, 0, 0, 0], "p2": [0, 0, 3, 0]})
    showdown.request("close", battle=started["battle"])
    state = started["state"]
    if [m["pp"] for m in state["sides"][0]["pokemon"][0]["moves"]] != [0] * 4:
        pytest.skip("the driver's start has no pp option")
    theirs = showdown_masks(state)
    assert theirs[0, :4].tolist() == [True, False, False, False]
    assert theirs[1, :4].tolist() == [False, False, True, False]
    assert (np.asarray(_mask(showdown_battle.load(state))) == theirs).all()


def fixed_team() -> teams.Team:
    """Six Pokémon with Tackle and Growl (no Showdown, no sampler compile)."""
    mi = {m: i for i, m in enumerate(teams.move_ids())}
    six = jnp.ones((6, 6), jnp.int32)
    return teams.Team(species=jnp.arange(6, dtype=jnp.int32), level=jnp.full(6, 80, jnp.int32),
                      moves=jnp.asarray([[mi["tackle"], mi["growl"], -1, -1]] * 6, jnp.int32),
                      evs=255 * six, ivs=30 * six)


def test_check_actions_errors():
    t = fixed_team()
    b = _new(t, t, jnp.asarray([1, 2, 3, 4], jnp.uint32))
    assert legal.check_actions(b, [0, 8]).dtype == np.int32
    with pytest.raises(legal.IllegalActionError, match=r"p1: action 2 \(move 3\).*legal: 0 \(move 1\), 1"):
        legal.check_actions(b, [2, 0])  # an empty move slot
    with pytest.raises(legal.IllegalActionError, match="p2: action 9"):
        legal.check_actions(b, np.asarray([0, 9]))
    with pytest.raises(legal.ActionError, match="shape"):
        legal.check_actions(b, np.asarray([0, 1, 2]))
    with pytest.raises(legal.ActionError, match="integers"):
        legal.check_actions(b, np.asarray([0.0, 1.0]))
    # a forced switch: only the forced side's switches; the other side's action is ignored
    hp = b.team.hp.at[0, 0].set(0)
    forced = battle.with_team(b, b.team._replace(hp=hp))._replace(forced=jnp.asarray([True, False]))
    assert np.asarray(_mask(forced)).tolist() == [[False] * 4 + [True] * 5, [False] * 9]
    legal.check_actions(forced, [4, 0])
    with pytest.raises(legal.IllegalActionError, match="forced switch"):
        legal.check_actions(forced, [0, 0])


@pytest.mark.parametrize("broken", ["sleep_can_fight_any", "recharge_can_switch"])
def test_the_comparison_catches_a_wrong_mask(showdown, monkeypatch, broken):
    real = legal._side_mask

    def wrong(b, side):
        row = real(b, side)
        f = jax.tree.map(lambda x: x[side, 0], b.team)
        if broken == "sleep_can_fight_any":
            return row.at[:4].set(jnp.where(f.status > 0, f.pp > 0, row[:4]))
        return row.at[4:].set(jnp.where(f.must_recharge & ~b.forced.any(), b.team.hp[side, 1:] > 0, row[4:]))

    monkeypatch.setattr(legal, "_side_mask", wrong)
    monkeypatch.setattr(__import__(__name__), "_mask", jax.jit(lambda b: legal.legal_mask(b)))
    with pytest.raises(AssertionError):
        play(showdown, focused_sets(showdown, 32, 6), np.random.default_rng(1), stay=True,
             crafted=True)
