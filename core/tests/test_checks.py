"""Every generic L1 check of a JAX env (``envport.verify.checks``) can fail: each test plants
exactly one bug in a small env and sees exactly the matching check fail, with a detail that
says where; the correct envs pass everything."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from check_results import assert_only, detail, failed

from envport.env import Env
from envport.errors import EnvportError
from envport.toy import Corridor
from envport.types import Box, Discrete, EnvSpec, TimeStep
from envport.verify import checks
from envport.verify.checks import CheckResult, run_checks

STEPS = 12  # enough for every planted bug (they fire at step 3), small for the eager replay


def sample(rng: np.random.Generator) -> np.int32:
    return np.int32(rng.integers(0, 3))


def run(env: Env, sampler=sample, steps: int = STEPS) -> list[CheckResult]:
    """All the checks (four functions compiled: the test envs are built to compile fast)."""
    return run_checks(env, sampler, steps=steps, batch=3)


def runner(env: Env, sampler=sample, steps: int = STEPS) -> checks._Runner:
    return checks._Runner(env, sampler, steps, 3, 0)


def rollout(env: Env) -> list[CheckResult]:
    """No NaN, legal mask, terminal flags, retracing: that check alone."""
    return checks.check_rollout_sane(runner(env))


# -- the envs ------------------------------------------------------------------------------------
LENGTH = 5
LANE = EnvSpec("test/Lane", "v0", Box(0.0, 1.0, (LENGTH,)), Discrete(3))


class Lane(NamedTuple):
    pos: jax.Array  # int32, 0 .. LENGTH-1
    t: jax.Array  # int32: steps taken
    score: jax.Array  # float32: rewards so far (a float leaf in the state)
    rng: jax.Array  # uint32: the env's own RNG (an LCG), in the state
    key: jax.Array  # the reset key as a typed PRNG key (jax.random.key), carried along


class Planted(Env):
    """Corridor's game (walk right to the goal; moves slip 20% of the time, drawn from the RNG
    in the state), built to compile fast: an LCG instead of threefry. Subclasses break one
    thing in ``plant`` (what a step returns) or ``timestep`` (every timestep, reset's too).
    The typed key leaf is one the checks must compare by its raw bits."""

    def __init__(self, spec: EnvSpec | None = None):
        self._spec = spec or LANE

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _ts(self, state: Lane, reward, terminated) -> TimeStep:
        mask = jnp.array([True, True, True]).at[0].set(state.pos > 0)
        return TimeStep(jax.nn.one_hot(state.pos, LENGTH, dtype=jnp.float32),
                        jnp.asarray(reward, jnp.float32), jnp.asarray(terminated, bool),
                        jnp.zeros((), bool), mask)

    def reset(self, key):
        rng = key[0] ^ key[1]  # a raw uint32[2] key
        state = Lane((rng % (LENGTH - 1)).astype(jnp.int32), jnp.int32(0), jnp.float32(0.0), rng,
                     jax.random.wrap_key_data(key))
        return state, self.timestep(self._ts(state, 0.0, False), state.t)

    def step(self, state: Lane, action):
        rng = state.rng * jnp.uint32(1664525) + jnp.uint32(1013904223)
        move = jnp.where((rng >> 24) < 51, 0, jnp.asarray(action, jnp.int32) - 1)
        pos = jnp.clip(state.pos + move, 0, LENGTH - 1)
        at_goal = pos == LENGTH - 1
        reward = at_goal.astype(jnp.float32)
        new = Lane(pos, state.t + 1, state.score + reward, rng, state.key)
        new, ts = self.plant(new, self._ts(new, reward, at_goal))
        return new, self.timestep(ts, new.t)

    def plant(self, state: Lane, ts: TimeStep) -> tuple[Lane, TimeStep]:
        return state, ts

    def timestep(self, ts: TimeStep, t) -> TimeStep:
        return ts


def _global_noise(t: np.ndarray) -> np.ndarray:
    return np.asarray(np.random.random(), np.float32)  # numpy's global RNG: not in the state


class NonDeterministic(Planted):
    """Noise from outside the state, late: after the steps that jit and vmap compare, so that
    only the determinism check (which compares the whole rollout) sees it."""

    def plant(self, state, ts):
        noise = jax.pure_callback(_global_noise, jax.ShapeDtypeStruct((), jnp.float32), state.t,
                                  vmap_method="sequential")
        late = state.t > checks.PAIRED_STEPS
        return state._replace(score=jnp.where(late, state.score + noise, state.score)), ts


class NarrowsItsCounter(Planted):
    """The returned state's counter is int16, its input's int32: the jitted step traces again."""

    def plant(self, state, ts):
        return state._replace(t=state.t.astype(jnp.int16)), ts


class WeakScore(Planted):
    """The returned score is weakly typed (built from Python floats): a new jit signature."""

    def plant(self, state, ts):
        return state._replace(score=jnp.where(ts.reward > 0, 1.0, 0.0)), ts


class NanReward(Planted):
    def timestep(self, ts, t):
        return ts._replace(reward=jnp.where(t == 3, jnp.nan, ts.reward))


class InfObs(Planted):
    def timestep(self, ts, t):
        return ts._replace(obs=jnp.where(t == 3, jnp.inf, ts.obs))


class NanScore(Planted):
    def plant(self, state, ts):
        return state._replace(score=jnp.where(state.t == 3, jnp.nan, state.score)), ts


class EmptyMask(Planted):
    def timestep(self, ts, t):
        return ts._replace(legal_mask=jnp.where(t == 3, False, ts.legal_mask))


class TracedDiffers(Planted):
    """Behaves differently when traced: the eager step scores one more."""

    def plant(self, state, ts):
        if not isinstance(state.t, jax.core.Tracer):
            state = state._replace(score=state.score + 1.0)
        return state, ts


class EagerRoundoff(Planted):
    """From step 3 on the eager step's score is 1e-6 higher per step: a float difference of the
    size two differently fused programs give (a physics env's jit vs eager)."""

    def plant(self, state, ts):
        if not isinstance(state.t, jax.core.Tracer):
            state = state._replace(score=jnp.where(state.t >= 3, state.score + 1e-6, state.score))
        return state, ts


class EagerFlipsABit(Planted):
    """At step 3 the eager step flips the low bit of the (uint32) RNG: an integer difference."""

    def plant(self, state, ts):
        if not isinstance(state.t, jax.core.Tracer):
            state = state._replace(rng=jnp.where(state.t == 3, state.rng ^ 1, state.rng))
        return state, ts


def _batch_max(pos: np.ndarray) -> np.ndarray:
    return np.full_like(pos, pos.max())  # under vmap ``pos`` is the whole batch


class MixesTheBatch(Planted):
    """Every env of a vmapped batch moves to the batch's furthest position; a single env is
    its own batch, so only vmap(batch) differs from a loop of singles."""

    def plant(self, state, ts):
        pos = jax.pure_callback(_batch_max, jax.ShapeDtypeStruct((), jnp.int32), state.pos,
                                vmap_method="expand_dims")
        return state._replace(pos=pos), ts


class BatchStepped(Planted):
    """Overrides ``step_batch`` with a batch-level step equal to ``vmap(step)``."""

    def step_batch(self, states, actions):
        return jax.vmap(self.step)(states, actions)


class BatchStepScoresEnvZero(Planted):
    """A batch-level step that scores the batch's first env one more from step 3 on:
    ``vmap(step)`` itself is right, only the override differs from the loop of singles."""

    def step_batch(self, states, actions):
        new, ts = jax.vmap(self.step)(states, actions)
        extra = (jnp.arange(actions.shape[0]) == 0) & (new.t >= 3)
        return new._replace(score=jnp.where(extra, new.score + 1.0, new.score)), ts


class EndsBothWays(Planted):
    def timestep(self, ts, t):
        at_3 = t == 3
        return ts._replace(terminated=ts.terminated | at_3, truncated=ts.truncated | at_3)


class BranchesOnTracedValue(Planted):
    def plant(self, state, ts):
        if state.t > 2:  # Python control flow on a traced value: cannot be traced
            state = state._replace(score=state.score * 2)
        return state, ts


class Drift(Env):
    """A point on a line pushed by a continuous action; truncated after 8 steps."""

    _spec = EnvSpec("test/Drift", "v0", Box(-100.0, 100.0, (1,)), Box(-1.0, 1.0, (1,)))

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def _ts(self, x, t) -> TimeStep:
        return TimeStep(x[None], -jnp.abs(x), jnp.zeros((), bool), t >= 8)

    def reset(self, key):
        x = jax.random.uniform(key, (), jnp.float32, -1.0, 1.0)
        return (x, jnp.int32(0)), self._ts(x, jnp.int32(0))

    def step(self, state, action):
        x, t = state[0] + 0.5 * action[0], state[1] + 1
        return (x, t), self._ts(x, t)


def sample_box(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, (1,)).astype(np.float32)


# -- correct envs pass ---------------------------------------------------------------------------
ALL = {checks.SPEC, checks.DETERMINISM, checks.JIT, checks.VMAP, checks.NO_NAN, checks.LEGAL_MASK,
       checks.TERMINAL, checks.RETRACING, checks.ACTION_SPACE}


@pytest.mark.parametrize("env", [Corridor(5, slip=0.2), Planted()],
                         ids=["Corridor", "nothing planted"])
def test_a_correct_env_passes_every_check(env):
    results = run(env)
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert {r.name for r in results} == ALL and len(results) == len(ALL)


def test_a_continuous_env_passes_every_check():
    results = run(Drift(), sample_box)
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert "0 terminal steps seen" in detail(results, checks.TERMINAL)


# -- each planted bug fails its check ------------------------------------------------------------
def test_non_determinism_fails_determinism():
    results = run(NonDeterministic(), steps=checks.PAIRED_STEPS + 5)
    assert_only(results, checks.DETERMINISM, f"after step {checks.PAIRED_STEPS + 1}",
                "state.score")


def test_a_state_that_changes_dtype_fails_retracing():
    assert_only(run(NarrowsItsCounter()), checks.RETRACING, "traced 1 more time(s)",
                "state.t: int32[] -> int16[]")


def test_a_state_that_changes_weak_type_fails_retracing_when_the_check_runs_alone():
    """The first trace is the compile, not a retrace, whichever check makes it."""
    assert not failed(rollout(Planted()))
    assert_only(rollout(WeakScore()), checks.RETRACING,
                "state.score: float32[] -> float32[] (weak type)")


def test_non_finite_values_fail_no_nan():
    assert_only(run(NanScore()), checks.NO_NAN, "first after step 3: state.score = nan")


@pytest.mark.parametrize("env, where", [
    (NanReward(), "timestep.reward = nan"),
    (InfObs(), "timestep.obs = inf"),
], ids=["NaN reward", "inf obs"])
def test_non_finite_values_in_the_timestep_fail_no_nan(env, where):
    assert_only(run(env), checks.NO_NAN, "after step 3", where)


def off_spec(change):
    class OffSpec(Planted):
        def timestep(self, ts, t):
            return change(ts)

    return OffSpec()


@pytest.mark.parametrize("change, message", [
    (lambda ts: ts._replace(obs=ts.obs.astype(jnp.float16)), "obs dtype float16 != spec float32"),
    (lambda ts: ts._replace(obs=ts.obs[None]), "obs shape (1, 5) != spec (5,)"),
    (lambda ts: ts._replace(reward=ts.reward.astype(jnp.int32)), "reward must be floating"),
    (lambda ts: ts._replace(reward=ts.reward[None]), "reward must be a scalar, got shape (1,)"),
    (lambda ts: ts._replace(terminated=ts.terminated.astype(jnp.int32)),
     "terminated must be a bool scalar, got int32[]"),
    (lambda ts: ts._replace(truncated=ts.truncated[None]),
     "truncated must be a bool scalar, got bool[1]"),
    (lambda ts: ts._replace(legal_mask=ts.legal_mask[:2]), "legal_mask must be bool[..., 3]"),
], ids=["obs dtype", "obs shape", "int reward", "reward not scalar", "int flag", "flag not scalar",
        "mask size"])
def test_a_timestep_off_the_spec_fails_the_spec_check(change, message):
    assert_only(run(off_spec(change)), checks.SPEC, f"reset: {message}",
                f"step: {message}")


def test_a_reward_per_player_matches_a_multi_agent_spec():
    two = dataclasses.replace(LANE, num_agents=2)

    class TwoRewards(Planted):
        def timestep(self, ts, t):
            return ts._replace(reward=jnp.stack([ts.reward, -ts.reward]))

    assert not failed(run(TwoRewards(two)))
    three = dataclasses.replace(two, num_agents=3)
    assert_only(run(TwoRewards(three)), checks.SPEC,
                "reward must have shape (3,) (num_agents) or (), got (2,)")


def test_an_empty_legal_mask_fails():
    assert_only(run(EmptyMask()), checks.LEGAL_MASK, "no legal action after step 3")


def test_behaviour_that_differs_when_traced_fails_jit_equals_eager():
    assert_only(run(TracedDiffers()), checks.JIT, "after step 1", "state.score: 0.0 vs 1.0")


def test_float_roundoff_fails_jit_equals_eager_unless_within_a_declared_tolerance():
    assert_only(run(EagerRoundoff()), checks.JIT, "after step 3", "state.score")

    within = run_checks(EagerRoundoff(), sample, steps=STEPS, batch=3, tolerance=1e-4)
    assert not failed(within), [vars(r) for r in within if not r.passed]
    assert detail(within, checks.JIT) == f"{STEPS} steps, float fields within " \
        "Tolerance(atol=0.0001, rtol=0.0)"
    assert "float fields within" in detail(within, checks.VMAP)

    # the tolerance is a bar, not a pass: roundoff beyond it still fails, and says the bar
    beyond = run_checks(EagerRoundoff(), sample, steps=STEPS, batch=3, tolerance=1e-8)
    assert_only(beyond, checks.JIT, "after step 3", "state.score", "float fields within")


def test_paired_steps_bound_what_jit_equals_eager_compares():
    results = run_checks(EagerRoundoff(), sample, steps=STEPS, batch=3, paired_steps=2)
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert detail(results, checks.JIT) == "2 steps"
    assert detail(results, checks.VMAP) == "2 steps, 3 envs"


def test_a_tolerance_leaves_integers_and_determinism_exact():
    # an integer field differing by one bit fails at any tolerance
    assert_only(run_checks(EagerFlipsABit(), sample, steps=STEPS, batch=3, tolerance=1e9),
                checks.JIT, "after step 3", "state.rng")
    # determinism compares one program with itself: bit for bit whatever the tolerance
    late = checks.PAIRED_STEPS + 5
    assert_only(run_checks(NonDeterministic(), sample, steps=late, batch=3, tolerance=1.0),
                checks.DETERMINISM, f"after step {checks.PAIRED_STEPS + 1}", "state.score")


def test_a_step_that_mixes_the_batch_fails_vmap_equals_loop():
    assert_only(run(MixesTheBatch()), checks.VMAP, "after step 1, env", "state.pos")


def test_an_env_batch_step_is_checked_against_the_loop_of_singles_too():
    results = run(BatchStepped())
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert detail(results, checks.VMAP) == f"{STEPS} steps, 3 envs, vmap and step_batch"
    assert_only(run(BatchStepScoresEnvZero()), checks.VMAP, "after step 3, env 0", "state.score",
                "step_batch vs single")


def test_terminated_and_truncated_together_fail_unless_the_spec_allows_it():
    assert_only(run(EndsBothWays()), checks.TERMINAL,
                "terminated and truncated both True after step 3")

    allowed = dataclasses.replace(LANE, terminated_and_truncated=True)
    results = run(EndsBothWays(allowed))
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert checks.TERMINAL not in {r.name for r in results}
    assert "1 of them also truncated (the spec allows both at once)" in detail(
        results, checks.TERMINAL_BOTH_ALLOWED)


@pytest.mark.parametrize("env, sampler, message", [
    (Corridor(5), lambda rng: np.int32(rng.integers(1, 4)), "outside 0..2"),
    (Corridor(5), lambda rng: np.float32(rng.integers(0, 3)), "dtype float32 for a discrete"),
    (Corridor(5), lambda rng: np.zeros(2, np.int32), "shape (2,) (the space's is ())"),
    (Drift(), lambda rng: rng.uniform(1.5, 2.0, (1,)).astype(np.float32),
     "20 of 20: [1.8184808] outside [-1.0, 1.0]"),
    (Drift(), lambda rng: np.ones(1, np.int32), "dtype int32 for a continuous space"),
], ids=["out of range", "float for discrete", "wrong shape", "beyond the box", "int for a box"])
def test_sampled_actions_outside_the_space_fail(env, sampler, message):
    results = [checks.check_action_space(runner(env, sampler))]
    assert_only(results, checks.ACTION_SPACE, message)


# -- robustness of the checks themselves ---------------------------------------------------------
def test_an_env_that_cannot_be_traced_fails_with_the_exception_instead_of_crashing():
    results = run(BranchesOnTracedValue())
    assert failed(results) == ALL - {checks.ACTION_SPACE}
    assert "raised TracerBoolConversionError" in detail(results, checks.SPEC)


def test_steps_must_be_positive():
    with pytest.raises(ValueError, match="steps, batch and paired_steps must be >= 1"):
        run_checks(Corridor(5), sample, steps=0)
    with pytest.raises(ValueError, match="paired_steps=0"):
        run_checks(Corridor(5), sample, paired_steps=0)


def test_a_bad_tolerance_is_refused_before_anything_runs():
    with pytest.raises(EnvportError, match="a tolerance must be a number >= 0"):
        run_checks(BranchesOnTracedValue(), sample, tolerance="1e-6")
