"""The single-agent reference (``single_reference.ShowdownSingleAgent``, live Showdown) against
the JAX ``SingleAgentEnv`` on the same battles, and the planted crit gap (``planted``).

The JAX side of each battle is built the env's own way (``start.new_battle`` and
``observe.initial`` from the teams and battle seed Showdown played, no loader involved) and
stepped by the env alone; both sides get the same agent actions and a deterministic opponent
(the first legal action), so observations, rewards, flags and masks must agree at every step.
One compile of the vmapped env step for the module (and one of the planted one)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.backend import Backend
from pokejax import damage, env, legal, observe, planted, start, teams
from pokejax.backends import FORMAT, battle_setups
from pokejax.legal import IllegalActionError
from pokejax.single_reference import ShowdownSingleAgent

N = 8


def first_legal(key, b, side):
    """A deterministic opponent: the side's first legal action (-1 when it has none)."""
    mask = legal.legal_mask(b)[side]
    return jnp.where(jnp.any(mask), jnp.argmax(mask), -1).astype(jnp.int32)


ENV = env.SingleAgentEnv(first_legal)
_step = jax.jit(jax.vmap(ENV.step))
_new_battle = jax.jit(start.new_battle)


@jax.jit
@jax.vmap
def _view(state):
    return ENV.observation(state), legal.legal_mask(state.inner.battle)[0]


def _jax_state(sd, setup) -> env.SingleState:
    """The env's state at the start of ``setup``'s battle, from its teams and seed."""
    t1, t2 = (teams.encode_sets(sd.request("team", format=FORMAT, seed=setup.seeds[p])["sets"])
              for p in ("p1", "p2"))
    b = _new_battle(t1, t2, np.asarray(setup.seeds["battle"], np.uint32))
    inner = env.BattleState(b, observe.initial(t1, t2), jnp.zeros(2, bool))
    return env.SingleState(inner, jax.random.PRNGKey(0))


def _stack(states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _put(batch, i, one):
    return jax.tree.map(lambda x, y: x.at[i].set(y), batch, one)


def _legal_choice(rng, mask) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in mask], np.int32)


def test_spec_and_interface():
    for opponent in ("random", "greedy", first_legal):
        with ShowdownSingleAgent(1, opponent) as be:
            assert isinstance(be, Backend)
            assert be.spec == env.SingleAgentEnv(opponent).spec
    with pytest.raises(ValueError, match="unknown opponent"):
        ShowdownSingleAgent(1, "nobody")


def test_equals_jax_env_step_by_step(showdown):
    """Battles on Showdown and in the JAX env in lockstep: at every step obs, reward,
    terminated and the legal mask are equal; ended battles are replaced by the run's next
    battle in the same step (compared from its start again), and the ended battle's last
    observation (``final_obs``) is the env's terminal one."""
    rng = np.random.default_rng(0)
    with ShowdownSingleAgent(N, first_legal) as be:
        obs = be.reset(7)
        assert [s.index for s in be.setups] == list(range(N))
        js = _stack([_jax_state(showdown, s) for s in be.setups])
        j_obs, j_mask = (np.asarray(x) for x in _view(js))
        assert obs.dtype == np.float32 and obs.shape == (N, observe.OBS_SIZE)
        np.testing.assert_array_equal(obs, j_obs)
        np.testing.assert_array_equal(be.legal_mask(), j_mask)
        ended, wins, steps = 0, set(), 0
        while ended < 4 and steps < 400:
            a = _legal_choice(rng, be.legal_mask())
            before = be.decisions
            r = be.step(a)
            js, ts = _step(js, jnp.asarray(a))
            steps += 1
            assert be.decisions >= before + N
            term = np.asarray(ts.terminated)
            np.testing.assert_array_equal(r.terminated, term)
            np.testing.assert_array_equal(r.reward, np.asarray(ts.reward))
            assert not r.truncated.any()
            np.testing.assert_array_equal(be.final_obs, np.asarray(ts.obs))
            live = ~term
            np.testing.assert_array_equal(r.obs[live], np.asarray(ts.obs)[live])
            np.testing.assert_array_equal(be.legal_mask()[live], np.asarray(ts.legal_mask)[live])
            for i in np.flatnonzero(term):
                ended += 1
                wins.add(float(r.reward[i]))
                assert be.setups[i].index >= N  # the run's next battle
                js = _put(js, i, _jax_state(showdown, be.setups[i]))
            if term.any():
                j_obs, j_mask = (np.asarray(x) for x in _view(js))
                np.testing.assert_array_equal(r.obs, j_obs)
                np.testing.assert_array_equal(be.legal_mask(), j_mask)
            assert be.legal_mask().any(axis=1).all()  # the agent always has a choice
        assert ended >= 4, f"only {ended} battles ended in {steps} steps"
        assert wins <= {1.0, -1.0, 0.0}
        assert sorted(s.index for s in be.setups) == sorted(set(s.index for s in be.setups))


def test_random_opponent_seeded_and_illegal_action():
    """The random opponent is drawn from reset's seed (same seed, same actions: same battles);
    an illegal action raises before anything reaches Showdown, naming the env and the legal
    actions."""
    rng = np.random.default_rng(1)
    with ShowdownSingleAgent(3, "random") as a, ShowdownSingleAgent(3, "random") as b:
        np.testing.assert_array_equal(a.reset(3), b.reset(3))
        for steps in range(1, 200):
            act = _legal_choice(rng, a.legal_mask())
            ra, rb = a.step(act), b.step(act)
            for x, y in zip(ra, rb, strict=True):
                np.testing.assert_array_equal(x, y)
            assert np.isfinite(ra.obs).all() and (np.abs(ra.obs) <= 1).all()
            bad = np.argwhere(~a.legal_mask())
            if steps >= 20 and len(bad):
                break
        assert len(bad), "no illegal action in 200 steps"
        env_i, action = (int(x) for x in bad[0])
        act = _legal_choice(rng, a.legal_mask())
        act[env_i] = action
        decisions = a.decisions
        with pytest.raises(IllegalActionError, match=f"env {env_i}: p1's action {action} .*legal:"):
            a.step(act)
        assert a.decisions == decisions
        with pytest.raises(Exception, match="out of range"):
            a.step(np.full(3, 9))
        a.step(_legal_choice(rng, a.legal_mask()))  # still usable


def test_greedy_opponent_plays():
    with ShowdownSingleAgent(2, "greedy") as be:
        be.reset(0)
        rng = np.random.default_rng(2)
        for _ in range(5):
            r = be.step(_legal_choice(rng, be.legal_mask()))
            assert r.obs.shape == (2, observe.OBS_SIZE)
        assert be.decisions >= 10


def test_planted_crit_gap(showdown):
    """The planted env crits twice as often: from the same start states and actions (same
    PRNG draws), it deals more damage than the real one, which the patch leaves untouched."""
    x = jax.tree.map(jnp.asarray, damage_inputs())
    real = np.asarray(damage.crit_chance(x))
    with planted.crit_doubled():
        np.testing.assert_array_equal(np.asarray(damage.crit_chance(x)),
                                      np.minimum(real * 2, 256))
    np.testing.assert_array_equal(np.asarray(damage.crit_chance(x)), real)

    gap = planted.crit_doubled_env(first_legal)
    assert gap.spec == ENV.spec
    pstep = jax.jit(jax.vmap(gap.step))
    setups = battle_setups(showdown, 11, 32, False)
    js = _stack([_jax_state(showdown, s) for s in setups])
    hp0 = np.asarray(js.inner.battle.team.hp).sum()
    a = jnp.zeros(32, jnp.int32)  # move 1 (legal at turn 1: every set has a first move)
    assert np.asarray(jax.vmap(lambda s: legal.legal_mask(s.inner.battle)[0, 0])(js)).all()
    s_real, _ = _step(js, a)
    s_gap, _ = pstep(js, a)
    hp_real = np.asarray(s_real.inner.battle.team.hp)
    hp_gap = np.asarray(s_gap.inner.battle.team.hp)
    differ = (hp_real != hp_gap).reshape(32, -1).any(axis=1).sum()
    assert differ >= 3, differ
    assert hp0 - hp_gap.sum() > hp0 - hp_real.sum()
    s_again, _ = _step(js, a)  # the real env is still the real one
    np.testing.assert_array_equal(np.asarray(s_again.inner.battle.team.hp), hp_real)


def damage_inputs():
    """A spread of damage inputs: normal and high crit ratio, Focus Energy, slow and fast."""
    spe = np.array([5, 45, 90, 130, 150, 5, 45, 90, 130, 150], np.int32)
    n = len(spe)
    ratio = np.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 2], np.int32)
    one = np.ones(n, np.int32)
    return damage.DamageInputs(
        level=100 * one, base_power=80 * one, crit_ratio=ratio, will_crit=np.zeros(n, bool),
        attacker_base_spe=spe, focus_energy=np.arange(n) % 3 == 0, attack=200 * one,
        attack_raw=200 * one, defense=200 * one, defense_raw=200 * one, screen=np.zeros(n, bool),
        selfdestruct_vs_def=np.zeros(n, bool), stab=np.zeros(n, bool),
        effectiveness=np.zeros((n, 2), np.int32))
