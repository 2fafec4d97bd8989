"""The envs: the generic L1 checks on the single-agent env, the two-player env played side by
side with Showdown from its own JAX reset (sampled teams, no Showdown in the reset), bad input
and illegal actions, and the greedy opponent beating a random agent."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport import ActionError
from envport.testing import check_env
from envport.wrappers import AutoResetWrapper
from pokejax import choices, env, legal, observe, reference, showdown_battle, teams

FORMAT = reference.FORMAT
TWO = env.BattleEnv()
_reset2 = jax.jit(TWO.reset)
_step2 = jax.jit(TWO.step)


def _sampler(rng):
    return np.int32(rng.integers(0, choices.NUM_ACTIONS))


@pytest.mark.slow
def test_single_agent_env_passes_generic_checks():
    """Slow: XLA compiles the auto-reset single-agent step (sampler + battle + opponent +
    observation) twice (jit, vmap) for minutes each on a 2-vCPU VM, and the jit == no-jit check
    runs the battle op by op."""
    check_env(AutoResetWrapper(env.SingleAgentEnv("random")), _sampler, steps=20, batch=2)


def _showdown_start(showdown, key):
    """Showdown started with the teams and seed ``env.new_state(key)`` drew."""
    k1, k2, k3 = jax.random.split(key, 3)
    t1, t2 = teams.sample_team(k1), teams.sample_team(k2)
    seed = jax.random.randint(k3, (4,), 0, 0x10000, dtype=jnp.int32)
    return showdown.request("start", format=FORMAT, seed=np.asarray(seed).tolist(),
                            p1team=teams.pack_team(teams.decode_team(t1)),
                            p2team=teams.pack_team(teams.decode_team(t2)))


def test_two_player_env_equals_showdown(showdown):
    """Reset in JAX, then Showdown started from the same teams and seed; random legal actions
    from the env's mask; after every step the env's battle equals Showdown's and its mask
    equals Showdown's requests. Rewards at the end follow the winner."""
    rng = np.random.default_rng(0)
    ended = decisions = 0
    for i in range(4):
        key = jax.random.PRNGKey(100 + i)
        state, ts = _reset2(key)
        started = _showdown_start(showdown, key)
        handle, sd = started["battle"], started["state"]
        try:
            while True:
                assert showdown_battle.diff(state.battle, sd) == [], (i, sd["turn"])
                mask = np.asarray(ts.legal_mask)
                assert (mask == np.stack([choices.legal_mask(s["request"]) for s in sd["sides"]])).all()
                if sd["ended"] or sd["turn"] > 120:
                    break
                acts = [int(rng.choice(np.flatnonzero(m))) if m.any() else 0 for m in mask]
                res = showdown.request("choose", battle=handle, **{
                    p: choices.choice_string(a) if m.any() else None
                    for p, a, m in zip(("p1", "p2"), acts, mask, strict=True)})
                assert res["accepted"], res
                state, ts = _step2(state, np.asarray(acts, np.int32))
                assert not np.asarray(state.illegal).any()
                sd = res["state"]
                decisions += 1
        finally:
            showdown.request("close", battle=handle)
        if sd["ended"]:
            ended += 1
            want = {"p1": [1.0, -1.0], "p2": [-1.0, 1.0], "": [0.0, 0.0]}[sd["winner"]]
            assert np.asarray(ts.reward).tolist() == want and bool(ts.terminated)
        else:
            assert np.asarray(ts.reward).tolist() == [0.0, 0.0] and not bool(ts.terminated)
    assert decisions > 50 and ended >= 1


def test_bad_and_illegal_actions():
    state, ts = _reset2(jax.random.PRNGKey(0))
    assert ts.obs.shape == (2, observe.OBS_SIZE) and ts.legal_mask.shape == (2, 9)
    with pytest.raises(ActionError, match="shape"):
        TWO.step(state, np.zeros(3, np.int32))
    with pytest.raises(ActionError, match="integers"):
        TWO.step(state, np.zeros(2, np.float32))
    with pytest.raises(ActionError, match="shape"):
        jax.jit(TWO.step)(state, jnp.zeros((2, 1), jnp.int32))  # static: caught under jit too
    mask = np.asarray(ts.legal_mask)
    bad = int(np.flatnonzero(~mask[0])[0]) if (~mask[0]).any() else 9
    with pytest.raises(legal.IllegalActionError, match=f"p1: action {bad}"):
        TWO.step(state, np.asarray([bad, 0], np.int32))
    # under jit: replaced by the first legal action and flagged
    s2, _ = _step2(state, np.asarray([bad, 0], np.int32))
    s3, _ = _step2(state, np.asarray([int(np.argmax(mask[0])), 0], np.int32))
    assert np.asarray(s2.illegal).tolist() == [True, False]
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), s2.battle, s3.battle))
    with pytest.raises(ValueError, match="unknown opponent"):
        env.SingleAgentEnv("nobody")


BAD_ACTIONS = [  # (action for BattleEnv.step, error, message): checked before any cast
    (np.array([2**32 + 3, 0], np.int64), ActionError, r"action 4294967299 \(dtype int64\) does not fit int32"),
    (np.array([2**32 - 1, 0], np.uint32), ActionError, r"action 4294967295 \(dtype uint32\) does not fit"),
    (np.array([-2**31 - 1, 0], np.int64), ActionError, "does not fit int32"),
    ("move 1", ActionError, "actions must be an array of integers"),
    (["a", "b"], ActionError, "actions must be an array of integers"),
    ([None, 1], ActionError, "actions must be an array of integers"),
    (np.array([True, False]), ActionError, "must be integers"),
    (np.array([0.0, 1.0]), ActionError, "must be integers"),
    (np.zeros(3, np.int32), ActionError, "shape"),
]


@pytest.mark.parametrize("action, error, message", BAD_ACTIONS)
def test_bad_actions_are_refused_before_any_cast(action, error, message):
    state, _ = _reset2(jax.random.PRNGKey(0))
    with pytest.raises(error, match=message):
        TWO.step(state, action)


def test_a_state_or_key_that_is_not_one_is_refused():
    state, ts = _reset2(jax.random.PRNGKey(0))
    with pytest.raises(env.InputError, match=r"takes the state .* got TimeStep \(the TimeStep"):
        TWO.step(ts, np.zeros(2, np.int32))
    single = env.SingleAgentEnv("random")
    with pytest.raises(env.InputError, match="SingleAgentEnv.step takes the state"):
        single.step(state, np.int32(0))
    for key, got in ((0, "int"), (np.zeros(3, np.uint32), r"uint32\[3\]"),
                     (np.zeros(2, np.int32), r"int32\[2\]")):
        with pytest.raises(env.InputError, match=f"reset takes a JAX PRNG key.*got {got}"):
            TWO.reset(key)
    with pytest.raises(env.InputError, match="one key, got a batch"):
        TWO.reset(jax.random.split(jax.random.key(0), 3))
    env._check_key(jax.random.key(0))  # a typed key is fine


def test_greedy_opponent_beats_a_random_agent():
    """A sanity check of the heuristic and of the single-agent loop: a uniformly random agent
    loses most battles against it."""
    n, steps = 48, 250

    def rate(opponent):
        e = env.SingleAgentEnv(opponent)

        def run(key):
            k0, k1 = jax.random.split(key)
            s, ts = e.reset(k0)

            def body(carry, k):
                s, ts, done, reward = carry
                a = jax.random.categorical(k, jnp.where(ts.legal_mask, 0.0, -jnp.inf)).astype(jnp.int32)
                s, ts = e.step(s, a)
                reward = jnp.where(done, reward, ts.reward)
                return (s, ts, done | ts.terminated, reward), None

            (_, _, done, reward), _ = jax.lax.scan(body, (s, ts, jnp.bool_(False), jnp.float32(0)),
                                                   jax.random.split(k1, steps))
            return done, reward

        done, reward = jax.jit(jax.vmap(run))(jax.random.split(jax.random.PRNGKey(7), n))
        done, reward = np.asarray(done), np.asarray(reward)
        return done.mean(), (reward > 0).mean()

    done_g, win_vs_greedy = rate("greedy")
    print(dict(done=done_g, random_agent_win_rate_vs_greedy=win_vs_greedy))
    assert done_g > 0.9 and win_vs_greedy < 0.3


def test_hp_shaping_adds_the_change_of_the_hp_balance():
    """``hp_weight``: each step's reward is the win's plus hp_weight times the change of (own
    summed HP fractions minus the foe's), computed here from the states in numpy; the battle
    itself is the same as without shaping."""
    n, steps, w = 8, 120, 1 / 6
    for bad in (-0.1, 0.2):
        with pytest.raises(ValueError, match="hp_weight"):
            env.SingleAgentEnv("random", hp_weight=bad)
    e = env.SingleAgentEnv("greedy", hp_weight=w)

    def run(key):
        k0, k1 = jax.random.split(key)
        s, ts = e.reset(k0)

        def body(s, k):
            mask = legal.legal_mask(s.inner.battle)[0]
            a = jax.random.categorical(k, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)
            s2, ts = e.step(s, a)
            return s2, (ts.reward, ts.terminated, s.inner.battle.team, s2.inner.battle.team,
                        s2.inner.battle.winner)

        return jax.lax.scan(body, s, jax.random.split(k1, steps))[1]

    reward, ended, before, after, winner = jax.device_get(
        jax.jit(jax.vmap(run))(jax.random.split(jax.random.PRNGKey(3), n)))

    def balance(team):
        frac = np.maximum(team.hp, 0) / np.maximum(team.maxhp, 1)
        return frac[..., 0, :].sum(-1) - frac[..., 1, :].sum(-1)

    # an ended battle stays as it ended (its reward repeats, its balance no longer moves)
    win = np.where(ended, (winner == 1).astype(np.float32) - (winner == 2), 0.0)
    shaping = w * (balance(after) - balance(before))
    np.testing.assert_allclose(reward, win + shaping, atol=1e-6)
    assert ended[:, -1].all() and (shaping != 0).sum() > 5 * n  # damage was dealt, often
    assert (np.abs(shaping) < 0.5).all()
