"""The JAX heuristic opponent (``engine.heuristic.heuristic_action``) against the reference's
``heuristic_chooser``: the same choice on every sampled state (every rule of the chooser
reached, counted), on hand-built states for its tie-breaks, and whole seeded games played to
the end by both engines in lockstep (each engine's own heuristic picking its actions)."""

from __future__ import annotations

import random
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tcgjax_scenarios import cid
from tcgjax_scenarios import scenario as _scenario

from tcgjax.engine import verify
from tcgjax.engine.heuristic import heuristic_action
from tcgjax.engine.state import stack_states
from tcgjax.reference import actions as A
from tcgjax.reference import get_deck, legal_actions, new_game, step
from tcgjax.reference.arrays import to_arrays
from tcgjax.reference.choosers import CARDS, heuristic_chooser, random_chooser
from tcgjax.reference.engine import step_at, target_candidates
from tcgjax.reference.state import CH_EXEC_PROMOTE, CH_TARGET, PH_CHOICE, PH_SETUP

H = heuristic_chooser()
BATCH = verify.BATCH  # one compiled batch size (the engine tests' jit(vmap(step)))


@pytest.fixture(scope="module")
def pick():
    return jax.jit(jax.vmap(heuristic_action))


def jax_picks(pick, states: list[dict]) -> list[int]:
    out = []
    for lo in range(0, len(states), BATCH):
        chunk = states[lo : lo + BATCH]
        chunk = chunk + [chunk[-1]] * (BATCH - len(chunk))
        out += np.asarray(pick(stack_states(chunk))).tolist()
    return out[: len(states)]


def rule(st, legal: list[int], a: int) -> str:
    """Which rule of the chooser made decision ``a`` (for the coverage count)."""
    me = st.players[st.decider]
    if st.phase == PH_SETUP:
        hps = [CARDS[me.hand[x - A.PLAY]].hp for x in legal if x != A.END]
        if me.board[0] is not None:
            return "setup: bench"
        return "setup: active" + (" (HP tie)" if hps.count(max(hps)) > 1 else "")
    if st.phase == PH_CHOICE:
        if not A.CHOOSE <= a < A.ENERGY:
            return "choice: no slot (first legal)"
        if st.choice != CH_TARGET:
            return "choice: Koga promotion" if st.choice == CH_EXEC_PROMOTE else "choice: promotion"
        stp = step_at(st.exec, st.exec.addr)
        side, _ = target_candidates(st, st.exec, stp)
        return f"choice: {stp['op']} on the {'opponent' if side != st.decider else 'own'} side"
    if A.PLAY <= a < A.HAND_ON:
        return "main: basic" if CARDS[me.hand[a - A.PLAY]].is_basic else "main: trainer"
    if A.HAND_ON <= a < A.ATTACH:
        return "main: evolve" if CARDS[me.hand[(a - A.HAND_ON) // 4]].stage > 0 else "main: tool"
    if A.ATTACK <= a < A.RETREAT and sum(A.ATTACK <= x < A.RETREAT for x in legal) == 2:
        return "main: attack, two usable"
    return "main: " + A.describe(a).split("(")[0].lower()


# every rule the sampled games reach (the rest are hand-built below); none may go missing
REACHED = {
    "setup: active", "setup: active (HP tie)", "setup: bench", "choice: no slot (first legal)",
    "choice: promotion", "choice: Koga promotion", "choice: heal on the own side",
    "choice: attach_from_zone on the own side", "choice: damage_other on the opponent side",
    "choice: switch_opponent_active on the own side", "main: evolve", "main: basic",
    "main: attach", "main: trainer", "main: tool", "main: ability", "main: attack",
    "main: attack, two usable", "main: end",
}  # fmt: skip


def sampled_states(n_games: int, seed: int):
    """States of games on every pairing: random mirror, heuristic mirror, heuristic vs random."""
    states, want, rules = [], [], Counter()
    for g in range(n_games):
        st = new_game(
            get_deck((g // 15) % 15), get_deck(g % 15), seed * 7919 + g, log_enabled=False
        )
        mode = g % 3
        rnd = random_chooser(seed * 31 + g)
        choosers = [(rnd, rnd), (H, H), (H, rnd)][mode]
        while not st.done:
            legal = legal_actions(st)
            a = H(st, legal)
            states.append(to_arrays(st))
            want.append(a)
            rules[rule(st, legal, a)] += 1
            step(st, choosers[st.decider](st, legal))
    return states, want, rules


def test_same_choice_as_the_reference_on_every_sampled_state(pick):
    states, want, rules = sampled_states(240, seed=1)
    got = jax_picks(pick, states)
    bad = [(i, got[i], want[i]) for i in range(len(states)) if got[i] != want[i]]
    assert len(states) > 15_000 and bad == []
    assert REACHED <= set(rules), sorted(REACHED - set(rules))
    assert min(rules[r] for r in REACHED) >= 5, rules


def _attacker(names, **energy):
    return {"names": list(names), "energy": energy}


def scenario(**kw):
    """A hand-built state with short decks (each player's 20 cards: the board, hand and deck)."""
    return _scenario(deck=["Ralts"] * 3, opp_deck=["Ralts"] * 3, **kw)


def crafted() -> dict[str, object]:
    """Hand-built states for the rules and tie-breaks the sampled games rarely reach."""
    out = {}
    # Zapdos hits its own Bench: the most remaining HP (printed HP - damage), ties: lowest slot
    st = scenario(
        me=[
            _attacker(["Zapdos"], lightning=3),
            {"names": ["Ralts"], "damage": 10},
            "Mewtwo ex",
            {"names": ["Mewtwo ex"]},
        ],
        opp=["Mewtwo ex"],
    )
    step(st, A.ATTACK)
    assert st.choice == CH_TARGET
    out["own bench damage, tie"] = st
    # Hitmonlee picks among the opponent's Bench: the least remaining HP, ties: lowest slot
    st = scenario(
        me=[_attacker(["Hitmonlee"], fighting=1)],
        opp=["Mewtwo ex", {"names": ["Mewtwo ex"], "damage": 90}, "Ralts", "Ralts"],
    )
    step(st, A.ATTACK)
    out["opponent target, tie"] = st
    # Koga: the most damaged, then the most energy, then the lowest slot
    st = scenario(
        me=[
            {"names": ["Grimer", "Muk"], "energy": {"darkness": 2}},
            {"names": ["Ekans"], "damage": 20, "energy": {"darkness": 1}},
            {"names": ["Koffing"], "damage": 20, "energy": {"darkness": 2}},
            {"names": ["Koffing"], "damage": 20, "energy": {"darkness": 2}},
        ],
        opp=["Mewtwo ex"],
        hand=["Koga"],
    )
    step(st, A.play(0))
    assert st.choice == CH_EXEC_PROMOTE
    out["own slot, damage then energy tie"] = st
    # main phase order: evolve first although a Basic, an Item and the zone energy are there
    st = scenario(me=["Ralts", "Ralts"], opp=["Mewtwo ex"], hand=["Potion", "Kirlia", "Ralts"])
    st.players[st.current].zone_current = 4
    out["evolve before the rest"] = st
    return out


def test_same_choice_as_the_reference_on_hand_built_states(pick):
    states = crafted()
    want = {k: H(st, legal_actions(st)) for k, st in states.items()}
    got = dict(zip(states, jax_picks(pick, [to_arrays(st) for st in states.values()]), strict=True))
    assert got == want
    hp = {n: CARDS[cid(n)].hp for n in ("Ralts", "Mewtwo ex")}
    assert hp["Mewtwo ex"] > hp["Ralts"] and hp["Mewtwo ex"] - 90 == hp["Ralts"]
    # Mewtwo ex undamaged in slots 2 and 3 (the most HP left): the lower slot
    assert want["own bench damage, tie"] == A.CHOOSE + 2
    # Mewtwo ex with 90 damage in slot 1, Ralts in 2 and 3: all as low; the lowest slot
    assert want["opponent target, tie"] == A.CHOOSE + 1
    # equal damage everywhere, most energy in slots 2 and 3: the lower slot
    assert want["own slot, damage then energy tie"] == A.CHOOSE + 2
    assert want["evolve before the rest"] == A.HAND_ON + 4 * 1 + 0  # Kirlia onto the Active


def test_seeded_games_to_the_end_in_lockstep():
    """64 games on both engines, each engine's heuristic choosing its own actions (mirror in
    even games, against the same seeded random player in odd ones): every action and every
    state field equal after every step, to the end."""
    step_b, _ = verify.compiled()
    pick = jax.jit(jax.vmap(heuristic_action))
    refs = [
        new_game(get_deck((3 * g) % 15), get_deck((7 * g + 2) % 15), 1000 + g, log_enabled=False)
        for g in range(BATCH)
    ]
    rnd = [random.Random(g) for g in range(BATCH)]
    heuristic_seat = [
        (True, True) if g % 2 == 0 else (g % 4 == 1, g % 4 == 3) for g in range(BATCH)
    ]
    js = stack_states([to_arrays(st) for st in refs])
    live = np.ones(BATCH, bool)
    n_heuristic = n_steps = 0
    while live.any():
        jax_pick = np.asarray(pick(js))
        acts = np.zeros(BATCH, np.int32)
        for g, st in enumerate(refs):
            if not live[g]:
                continue
            legal = legal_actions(st)
            if heuristic_seat[g][st.decider]:
                acts[g] = H(st, legal)
                assert jax_pick[g] == acts[g], (g, n_steps, jax_pick[g], acts[g])
                n_heuristic += 1
            else:
                acts[g] = rnd[g].choice(legal)
            step(st, int(acts[g]))
        new = step_b(js, jnp.asarray(acts))
        keep = jnp.asarray(live)
        js = jax.tree.map(
            lambda n, o, keep=keep: jnp.where(keep.reshape((-1,) + (1,) * (n.ndim - 1)), n, o),
            new,
            js,
        )
        n_steps += 1
        out = {k: np.asarray(v) for k, v in js.items()}
        for g, st in enumerate(refs):
            if live[g]:
                ref = to_arrays(st)
                diff = [k for k in ref if not np.array_equal(ref[k], out[k][g])]
                assert diff == [], (g, n_steps, diff)
                live[g] = not st.done
    assert all(st.done for st in refs) and n_heuristic > 3_000
    # the heuristic wins against the random player (docs: ~97%)
    vs_random = [
        st.winner == (0 if heuristic_seat[g][0] else 1) for g, st in enumerate(refs) if g % 2 == 1
    ]
    assert sum(vs_random) >= 28
