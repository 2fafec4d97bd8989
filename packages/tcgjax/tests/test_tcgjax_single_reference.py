"""The single-agent task on the reference (``single_reference.ReferenceSingleAgent``, the
reference side of L4) against the JAX env's: the numpy observation equals the JAX one bit for
bit, the backend's mask, rewards, resets and idling, bad input; and from the same states the
JAX ``SingleAgentEnv("heuristic")`` (through ``transfer.JaxSingleAgentBackend``) and the
reference with its ``heuristic_chooser`` play the same games step for step to the end."""

from __future__ import annotations

import random

import jax
import numpy as np
import pytest

from tcgjax.engine.observe import OBS_SIZE, observe
from tcgjax.engine.state import stack_states
from tcgjax.reference import get_deck, legal_actions, new_game, step
from tcgjax.reference.arrays import FIELDS, to_arrays
from tcgjax.reference.engine import IllegalActionError
from tcgjax.single_reference import ReferenceSingleAgent, UnknownOpponentError, observe_vector
from tcgjax.transfer import JaxSingleAgentBackend


def _states(n_games: int, seed: int) -> list[dict]:
    r = random.Random(seed)
    out = []
    for g in range(n_games):
        st = new_game(get_deck(g % 15), get_deck((4 * g + 1) % 15), seed + g, log_enabled=False)
        while not st.done:
            if r.random() < 0.2:
                out.append(to_arrays(st))
            step(st, r.choice(legal_actions(st)))
        out.append(to_arrays(st))  # the game-over state too
    return out


def test_the_numpy_observation_is_the_jax_one_bit_for_bit():
    states = _states(30, seed=3)
    batch = stack_states(states)
    f = jax.jit(jax.vmap(observe, in_axes=(0, None)))
    phases = {int(s["phase"]) for s in states}
    assert phases == {0, 1, 2, 3} and len(states) > 300  # setup (hidden board), main, choice, over
    for player in (0, 1):
        want = np.asarray(f(batch, player))
        got = np.stack([observe_vector(s, player) for s in states])
        assert got.dtype == np.float32 and got.shape == (len(states), OBS_SIZE)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("opponent", ["random", "heuristic"])
def test_reference_single_agent_plays_whole_games_and_restarts(opponent):
    b = ReferenceSingleAgent(8, opponent)
    obs = b.reset(5)
    assert obs.shape == (8, OBS_SIZE) and obs.dtype == np.float32
    r = np.random.default_rng(0)
    ended = rewards = 0
    for _ in range(300):
        mask = b.legal_mask()
        for i, st in enumerate(b.games):  # the agent's decision, its legal actions
            assert st.decider == 0 and not st.done
            assert np.flatnonzero(mask[i]).tolist() == legal_actions(st)
        before = list(b.games)
        res = b.step(np.array([r.choice(np.flatnonzero(m)) for m in mask]))
        assert set(res.reward[~res.terminated]) <= {0.0}
        for i in np.flatnonzero(res.terminated):
            old = before[i]  # the ended game; the env holds a new one (auto-reset)
            assert old.done and b.games[i] is not old and not b.games[i].done
            assert res.reward[i] == {0: 1.0, 1: -1.0, 2: 0.0}[old.winner]
            assert np.array_equal(res.obs[i], observe_vector(to_arrays(b.games[i]), 0))
            ended += 1
            rewards += old.winner != 2
    # random players mostly reach the turn limit (§15, a tie); the heuristic mostly wins
    assert ended >= 8 and rewards >= (1 if opponent == "random" else ended - 2)
    again = ReferenceSingleAgent(8, opponent)
    assert np.array_equal(again.reset(5), obs)  # seeded


def test_idle_envs_after_their_episodes_and_bad_input():
    b = ReferenceSingleAgent(4, "heuristic", episodes_per_env=1)
    b.reset(1)
    r = np.random.default_rng(1)
    n_end = np.zeros(4, int)
    for _ in range(400):
        mask = b.legal_mask()
        res = b.step(np.array([r.choice(np.flatnonzero(m)) for m in mask]))
        n_end += res.terminated
        if b.idle.all():
            break
    assert b.idle.all() and n_end.tolist() == [1, 1, 1, 1]
    assert b.legal_mask().all()
    res = b.step(np.zeros(4, np.int32))  # ignored
    assert not res.terminated.any() and not res.reward.any()

    b = ReferenceSingleAgent(2, "random")
    b.reset(0)
    illegal = int(np.flatnonzero(~b.legal_mask()[0])[0])
    with pytest.raises(IllegalActionError, match="env 0"):
        b.step(np.array([illegal, 0]))
    with pytest.raises(UnknownOpponentError, match="'greedy'.*'random', 'heuristic'"):
        ReferenceSingleAgent(2, "greedy")
    with pytest.raises(ValueError, match="episodes_per_env"):
        ReferenceSingleAgent(2, "random", episodes_per_env=0)


def test_jax_and_reference_heuristic_opponents_play_the_same_games():
    """40 JAX games against the JAX heuristic, loaded into the reference with its chooser: the
    same random legal agent actions give the same observations, masks, rewards and ends on
    both, every step, until every game has ended once."""
    n = 40
    jx = JaxSingleAgentBackend(n, "heuristic", episodes_per_env=1)
    obs = jx.reset(7)
    ref = ReferenceSingleAgent(n, "heuristic", episodes_per_env=1)
    ref.load({k: v for k, v in jx.state().items() if k in FIELDS})
    assert np.array_equal(ref._obs, obs)  # the loaded games are at the agent's decision
    r = np.random.default_rng(2)
    steps = wins = 0
    while not jx.idle[:n].all():
        mask = jx.legal_mask()
        assert np.array_equal(mask, ref.legal_mask())
        acts = np.array([r.choice(np.flatnonzero(m)) for m in mask])
        a, b = jx.step(acts), ref.step(acts)
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y)), steps
        steps += 1
        wins += int((a.reward > 0).sum())
        assert np.array_equal(jx.idle[:n], ref.idle)
        live = ~ref.idle
        s = jx.state()
        for i in np.flatnonzero(live):
            ra = to_arrays(ref.games[i])
            assert all(np.array_equal(ra[k], s[k][i]) for k in FIELDS), (steps, i)
    assert steps > 20 and wins <= 10  # random play rarely beats the heuristic
