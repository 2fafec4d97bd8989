"""The envport envs: bad input is refused with a clear error; a game runs to its end."""

import jax
import numpy as np
import pytest

from envport.errors import ActionError
from tcgjax.engine import from_reference
from tcgjax.engine.observe import OBS_SIZE, observe
from tcgjax.env import InputError, SingleAgentEnv, TcgEnv, UnknownOpponentError, check_action
from tcgjax.reference import IllegalActionError, WrongPlayerError, get_deck, legal_actions, new_game
from tcgjax.reference import step as ref_step


@pytest.fixture(scope="module")
def env():
    return TcgEnv()


@pytest.fixture(scope="module")
def started(env):
    return env.reset(jax.random.PRNGKey(3))


def test_reset_gives_both_views_and_the_deciders_mask(started):
    s, ts = started
    assert ts.obs.shape == (2, OBS_SIZE)
    assert int(ts.player) == int(s["decider"])
    assert np.asarray(ts.legal_mask).any() and not bool(ts.terminated)
    assert np.asarray(ts.reward).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "action, err, words",
    [
        (np.float32(1.0), ActionError, "dtype"),
        (np.array([0, 1]), ActionError, "scalar"),
        (True, ActionError, "dtype"),
        ("1", ActionError, "integer"),
        (np.int64(2**40), ActionError, "int32"),
        (76, IllegalActionError, "out of range"),
        (-1, IllegalActionError, "out of range"),
    ],
)
def test_bad_actions_raise(env, started, action, err, words):
    s, _ = started
    with pytest.raises(err, match=words):
        env.step(s, action)


def test_illegal_and_wrong_player_actions_raise(env, started):
    s, ts = started
    illegal = int(np.flatnonzero(~np.asarray(ts.legal_mask))[0])
    with pytest.raises(IllegalActionError, match="not legal"):
        env.step(s, illegal)
    legal = int(np.flatnonzero(np.asarray(ts.legal_mask))[0])
    with pytest.raises(WrongPlayerError):
        env.step(s, legal, player=1 - int(s["decider"]))


def test_bad_state_and_key(env, started):
    s, ts = started
    with pytest.raises(InputError, match="TimeStep"):
        env.step(ts, 0)
    with pytest.raises(InputError, match="PRNG key"):
        env.reset(np.zeros(3, np.int32))
    with pytest.raises(UnknownOpponentError, match="'greedy'.*'random', 'heuristic'"):
        SingleAgentEnv(opponent="greedy")
    with pytest.raises(UnknownOpponentError, match="unknown opponent"):
        SingleAgentEnv(opponent=None)


def test_game_over_refuses_actions():
    st = new_game(get_deck(0), get_deck(1), 5, log_enabled=False)
    while not st.done:
        ref_step(st, legal_actions(st)[-1])
    with pytest.raises(IllegalActionError, match="over"):
        check_action(from_reference(st), 0)


def test_observation_hides_the_opponents_hand_and_deck_order():
    """§18: changing the opponent's hand contents or either deck order leaves my view alone."""
    st = new_game(get_deck(2), get_deck(5), 8, log_enabled=False)
    for _ in range(30):
        ref_step(st, legal_actions(st)[0])
    me = st.decider
    a = from_reference(st)
    st.players[1 - me].hand = list(reversed(st.players[1 - me].hand))
    st.players[1 - me].hand[0] = st.players[me].deck_cards[0]
    for p in (0, 1):
        st.players[p].deck = list(reversed(st.players[p].deck))
    b = from_reference(st)
    assert np.array_equal(np.asarray(observe(a, me)), np.asarray(observe(b, me)))
    assert not np.array_equal(np.asarray(observe(a, 1 - me)), np.asarray(observe(b, 1 - me)))


@pytest.mark.slow
def test_single_agent_game_against_random_runs_to_the_end():
    env = SingleAgentEnv()
    s, ts = env.reset(jax.random.PRNGKey(1))
    for _ in range(2000):
        if bool(ts.terminated):
            break
        s, ts = env.step(s, int(np.flatnonzero(np.asarray(ts.legal_mask))[0]))
    assert bool(ts.terminated)
    assert float(ts.reward) in (-1.0, 0.0, 1.0)


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


@pytest.mark.parametrize("make", [
    # minutes of compile each (four engine programs); the single agent's loop is what
    # training steps, and the two-player step is that loop's inner step (slow suite)
    pytest.param(lambda: TcgEnv(checked=False), marks=pytest.mark.slow),
    lambda: SingleAgentEnv("random", checked=False)],
                         ids=["two players", "single agent vs random"])
def test_batch_step_equals_vmap_step(make):
    """``reset_batch``/``step_batch`` (the engine's batch-level step, the opponent's loop over
    the batch) give ``vmap(reset)``/``vmap(step)``'s states and timesteps bit for bit, until
    every game of the batch ended; games end at different steps (the batch keeps stepping the
    ended ones: a no-op on both paths)."""
    env, n = make(), 12
    keys = jax.random.split(jax.random.PRNGKey(7), n)
    plain = jax.jit(jax.vmap(env.reset))(keys)
    batched = env.reset_batch(keys)
    assert _same(plain, batched)
    vstep, rng = jax.jit(jax.vmap(env.step)), np.random.default_rng(0)
    ended_at = set()
    for t in range(400):
        mask = np.asarray(plain[1].legal_mask)
        mask = mask.reshape(n, -1) if mask.ndim > 1 else mask
        acts = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask], np.int32)
        plain = vstep(plain[0], acts)
        batched = env.step_batch(batched[0], acts)
        assert _same(plain, batched), f"step {t}"
        done = np.asarray(plain[1].terminated)
        ended_at.add(int(done.sum()))
        if done.all():
            break
    assert done.all() and len(ended_at) > 2, ended_at


def test_batch_step_refuses_bad_input(env, started):
    s, ts = started
    batch = jax.tree.map(lambda x: np.stack([x, x]), s)
    legal = int(np.flatnonzero(np.asarray(ts.legal_mask))[0])
    illegal = int(np.flatnonzero(~np.asarray(ts.legal_mask))[0])
    with pytest.raises(ActionError, match=r"of shape \(2,\) \(one per game\), got shape \(\)"):
        env.step_batch(batch, np.int32(legal))
    with pytest.raises(ActionError, match="dtype"):
        env.step_batch(batch, np.array([1.0, 2.0]))
    with pytest.raises(IllegalActionError, match="game 1: .*not legal"):
        env.step_batch(batch, np.array([legal, illegal]))
    with pytest.raises(InputError, match="batch of states"):
        env.step_batch(s, np.array([legal]))
    with pytest.raises(InputError, match="batch of JAX PRNG keys"):
        SingleAgentEnv().reset_batch(jax.random.PRNGKey(0))
