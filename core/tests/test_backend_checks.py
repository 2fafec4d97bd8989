"""Every backend-level L1 check (``envport.verify.backend_checks``) can fail: a small numpy
backend passes them all, and each variant broken in exactly one way fails exactly the
matching check, with a detail that says where."""

from __future__ import annotations

import dataclasses
import itertools
import types

import numpy as np
import pytest
from check_results import assert_only, detail, failed

from envport.actions import validate_actions
from envport.backend import Backend, StepResult
from envport.types import Box, Discrete, EnvSpec
from envport.verify import backend_checks as bc
from envport.verify.backend_checks import run_backend_checks
from envport.verify.checks import TERMINAL, TERMINAL_BOTH_ALLOWED, CheckResult

SPEC = EnvSpec("test/Counter", "v0", Box(0.0, 10.0, (1,), np.float32), Discrete(3))
GOAL, LIMIT = 5, 8
ALL = {bc.SPEC, bc.SHAPES, bc.STATE, bc.DETERMINISM, TERMINAL, bc.NO_NAN, bc.LOAD, bc.BAD_INPUT}
STEPS = 40


class Counter(Backend):
    """``num_envs`` counters: obs is the counter, the action (0, 1, 2) is added; terminated
    once it reaches ``GOAL``, truncated after ``LIMIT`` steps. An ended env restarts at its next
    step at 0..2, drawn from the backend's generator (seeded by ``reset``, not in the state)."""

    name, spec, supports_load = "counter", SPEC, True

    def __init__(self, num_envs: int = 3):
        self.num_envs = num_envs
        self.rng = np.random.default_rng(0)
        self.closed = False
        self._fields()

    def _fields(self) -> None:
        n = self.num_envs
        self.counter, self.t = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.score = np.zeros(n, np.float64)
        self.term, self.trunc = np.zeros(n, bool), np.zeros(n, bool)

    def seed_rng(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int) -> np.ndarray:
        self.seed_rng(seed)
        self._fields()
        self.counter[:] = self.rng.integers(0, 3, self.num_envs)
        return self.obs()

    def obs(self) -> np.ndarray:
        return self.counter[:, None].astype(np.float32)

    def check(self, actions) -> np.ndarray:
        return validate_actions(self.spec.action_space, actions, self.num_envs)

    def step(self, actions) -> StepResult:
        a = self.check(actions).astype(np.int64)
        done = self.term | self.trunc
        self.counter = np.where(done, self.rng.integers(0, 3, self.num_envs), self.counter)
        self.t = np.where(done, 0, self.t)
        self.score = np.where(done, 0.0, self.score)
        self.counter = self.counter + a
        self.t = self.t + 1
        self.term = self.counter >= GOAL
        self.trunc = self.ends_late()
        reward = self.term.astype(np.float32)
        self.score = self.score + reward
        return StepResult(self.obs(), reward, self.term.copy(), self.trunc.copy())

    def ends_late(self) -> np.ndarray:
        return (self.t >= LIMIT) & ~self.term

    def state(self) -> dict:
        return {"counter": self.counter.copy(), "t": self.t.copy(), "score": self.score.copy(),
                "terminated": self.term.copy(), "truncated": self.trunc.copy()}

    def load(self, state: dict) -> None:
        self.counter = np.array(state["counter"], np.int64)
        self.t = np.array(state["t"], np.int64)
        self.score = np.array(state["score"], np.float64)
        self.term = np.array(state["terminated"], bool)
        self.trunc = np.array(state["truncated"], bool)

    def close(self) -> None:
        self.closed = True


def check(cls=Counter, sample=None, steps: int = STEPS, **kwargs) -> list[CheckResult]:
    return run_backend_checks(lambda: cls(**kwargs), sample, steps=steps)


# -- the correct backend -------------------------------------------------------------------------
def test_a_correct_backend_passes_every_check():
    results = check()
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert [r.name for r in results] == [bc.SPEC, bc.SHAPES, bc.STATE, bc.DETERMINISM, TERMINAL,
                                         bc.NO_NAN, bc.LOAD, bc.BAD_INPUT]
    assert "terminal env-steps seen" in detail(results, TERMINAL)
    assert int(detail(results, TERMINAL).split()[0]) > 0  # the rollout does end episodes
    assert "env-steps matched" in detail(results, bc.LOAD)


def test_the_checks_make_at_most_three_backends_and_close_each():
    made: list[Counter] = []

    def make() -> Counter:
        made.append(Counter())
        return made[-1]

    assert not failed(run_backend_checks(make, steps=STEPS))
    assert 1 <= len(made) <= 3 and all(b.closed for b in made)


def test_a_given_sampler_drives_the_rollout():
    seen = []

    def sample(rng, n):
        seen.append(n)
        return np.ones(n, np.int32)

    assert not failed(check(sample=sample, num_envs=2))
    assert seen == [2] * STEPS


def test_a_reward_per_player_matches_a_multi_agent_spec():
    class TwoPlayers(Counter):
        spec = dataclasses.replace(SPEC, num_agents=2)

        def step(self, actions):
            res = super().step(actions)
            return res._replace(reward=np.stack([res.reward, -res.reward], axis=1))

    assert not failed(check(TwoPlayers))

    class OneReward(Counter):
        spec = dataclasses.replace(SPEC, num_agents=2)

    assert_only(check(OneReward), bc.SHAPES, "step 1: reward shape (3,) != (3, 2)")


# -- 1. spec -------------------------------------------------------------------------------------
def test_a_spec_that_is_not_an_envspec_fails():
    class LooseSpec(Counter):
        spec = types.SimpleNamespace(**{f.name: getattr(SPEC, f.name)
                                        for f in dataclasses.fields(SPEC)})

    assert_only(check(LooseSpec), bc.SPEC, "spec is a SimpleNamespace, not an envport EnvSpec")


def test_num_envs_must_be_a_positive_int():
    results = check(num_envs=0)
    assert bc.SPEC in failed(results)
    assert "num_envs must be a positive int, got 0" in detail(results, bc.SPEC)
    for n in (True, 2.0, "2"):
        result = bc.check_spec(types.SimpleNamespace(spec=SPEC, num_envs=n))
        assert not result.passed and f"got {n!r}" in result.detail
    assert bc.check_spec(types.SimpleNamespace(spec=SPEC, num_envs=np.int64(2))).passed


# -- 2. shapes and dtypes ------------------------------------------------------------------------
class Float64Obs(Counter):
    def obs(self):
        return self.counter[:, None].astype(np.float64)


def _result_change(change):
    class Changed(Counter):
        def step(self, actions):
            return change(super().step(actions))

    return Changed


@pytest.mark.parametrize("cls, message", [
    (Float64Obs, "reset obs dtype float64, expected float32"),
    (_result_change(lambda r: r._replace(obs=r.obs[:, 0])), "step 1: obs shape (3,) != (3, 1)"),
    (_result_change(lambda r: r._replace(reward=r.reward.astype(np.int32))),
     "step 1: reward dtype int32, expected floating"),
    (_result_change(lambda r: r._replace(terminated=r.terminated.astype(np.int8))),
     "step 1: terminated dtype int8, expected bool"),
    (_result_change(lambda r: r._replace(truncated=r.truncated[:, None])),
     "step 1: truncated shape (3, 1) != (3,)"),
    (_result_change(lambda r: r._replace(reward=r.reward.tolist())),
     "step 1: reward is a list, not a numpy array"),
    (_result_change(tuple), ""),  # a plain 4-tuple of the right arrays is fine
], ids=["obs dtype", "obs shape", "int reward", "int flag", "flag shape", "list", "tuple"])
def test_shapes_and_dtypes_off_the_spec_fail(cls, message):
    results = check(cls)
    if message:
        assert_only(results, bc.SHAPES, message)
    else:
        assert not failed(results)


def test_an_obs_buffer_reused_across_steps_fails():
    class ReusedBuffer(Counter):
        def obs(self):
            if not hasattr(self, "buffer"):
                self.buffer = np.zeros((self.num_envs, 1), np.float32)
            self.buffer[:, 0] = self.counter
            return self.buffer

    assert_only(check(ReusedBuffer), bc.SHAPES, "the reset obs changed during later steps")


# -- 3. the canonical state ----------------------------------------------------------------------
class SharedGoal(Counter):
    def state(self):
        return {**super().state(), "goal": np.array(GOAL)}


class StaleFlags(Counter):
    def state(self):
        n = self.num_envs
        return {**super().state(), "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool)}


class NoTruncated(Counter):
    def state(self):
        out = super().state()
        del out["truncated"]
        return out

    def load(self, state):
        super().load({"truncated": np.zeros(self.num_envs, bool), **state})


class IntFlags(Counter):
    def state(self):
        return {**super().state(), "terminated": self.term.astype(np.int8)}


class ListField(Counter):
    def state(self):
        return {**super().state(), "t": self.t.tolist()}


class InternalArrays(Counter):
    """state() hands out one buffer that every later call overwrites."""

    def state(self):
        out = super().state()
        if not hasattr(self, "buffer"):
            self.buffer = out["counter"]
        self.buffer[:] = self.counter
        return {**out, "counter": self.buffer}


class GrowingField(Counter):
    def state(self):
        return {**super().state(), "history": np.zeros((self.num_envs, int(self.t.max())))}


@pytest.mark.parametrize("cls, message", [
    (SharedGoal, "after reset: 'goal' has shape (): not batch-leading (num_envs=3)"),
    (StaleFlags, "is [False, False, False] but the step returned"),
    (NoTruncated, "after reset: no 'truncated' key"),
    (IntFlags, "'terminated' must be bool[3], got int8[3]"),
    (ListField, "'t' is a list, not a numpy array"),
    (InternalArrays, "the state after reset['counter'] changed during later steps"),
    (GrowingField, "'history' changed since reset from float64[3, 0] to float64[3, 1]"),
], ids=["not batch-leading", "flags disagree", "no truncated", "int flags", "list field",
        "internal arrays", "shape changes"])
def test_a_broken_canonical_state_fails(cls, message):
    assert_only(check(cls), bc.STATE, message)


# -- 4. determinism ------------------------------------------------------------------------------
_instances = itertools.count()


class SeededPerInstance(Counter):
    """Each backend draws from its own seed: the same backend repeats, another does not."""

    def __init__(self, num_envs: int = 3):
        super().__init__(num_envs)
        self.offset = next(_instances)

    def seed_rng(self, seed):
        self.rng = np.random.default_rng(seed + 1000 * self.offset)


class SeededPerReset(Counter):
    """Each reset draws from a new seed."""

    def seed_rng(self, seed):
        self.rng = np.random.default_rng(seed + next(_instances))


@pytest.mark.parametrize("cls, where", [
    (SeededPerInstance, "a second backend from make_backend(), after "),
    (SeededPerReset, "the same backend, reset again, after "),
], ids=["across backends", "across resets"])
def test_non_determinism_fails(cls, where):
    assert_only(check(cls), bc.DETERMINISM, where, "(first run = reference)")


def test_hidden_randomness_only_at_restarts_is_still_compared():
    """Drawing restarts from the global numpy RNG is non-determinism too (seen at a restart)."""
    class GlobalRestarts(Counter):
        def step(self, actions):
            self.rng = np.random.default_rng(np.random.randint(2**31))
            return super().step(actions)

    results = check(GlobalRestarts)
    assert failed(results) == {bc.DETERMINISM}
    assert "step" in detail(results, bc.DETERMINISM)


# -- 5. terminal flags ---------------------------------------------------------------------------
class EndsBothWays(Counter):
    def ends_late(self):
        return (self.t >= LIMIT) | self.term  # truncated on every terminal step too


def test_terminated_and_truncated_together_fail_unless_the_spec_allows_it():
    assert_only(check(EndsBothWays), TERMINAL, "terminated and truncated both True at step")

    class Allowed(EndsBothWays):
        spec = dataclasses.replace(SPEC, terminated_and_truncated=True)

    results = check(Allowed)
    assert not failed(results), [vars(r) for r in results if not r.passed]
    assert TERMINAL not in {r.name for r in results}
    assert "of them also truncated (the spec allows both at once)" in detail(
        results, TERMINAL_BOTH_ALLOWED)


# -- 6. NaN --------------------------------------------------------------------------------------
def test_nan_in_the_state_fails():
    class NanScore(Counter):
        def step(self, actions):
            res = super().step(actions)
            self.score = np.where(self.counter == 3, np.nan, self.score)
            return res

    assert_only(check(NanScore), bc.NO_NAN, "state['score'] env", "= nan")


def test_inf_in_the_obs_fails():
    class InfObs(Counter):
        def obs(self):
            return np.where(self.counter[:, None] == 3, np.inf, self.counter[:, None]).astype(
                np.float32)

    assert_only(check(InfObs), bc.NO_NAN, "obs env", "= inf")


# -- 7. load -------------------------------------------------------------------------------------
class DropsT(Counter):
    def load(self, state):
        super().load({**state, "t": np.zeros(self.num_envs, np.int64)})


class EchoesTheLoadedState(Counter):
    """state() echoes what was loaded until the next step, but the counters were not loaded."""

    def load(self, state):
        self.echo = {k: np.array(v) for k, v in state.items()}
        self.t = np.array(state["t"], np.int64)
        self.score = np.array(state["score"], np.float64)
        self.term = np.array(state["terminated"], bool)
        self.trunc = np.array(state["truncated"], bool)

    def step(self, actions):
        self.echo = None
        return super().step(actions)

    def state(self):
        echo = getattr(self, "echo", None)
        return dict(echo) if echo is not None else super().state()


def test_a_load_that_drops_a_field_fails():
    assert_only(check(DropsT), bc.LOAD, "state() right after load(state after step 10)",
                "t[env 0]: reference")


def test_a_load_that_loads_wrongly_fails_once_stepped():
    assert_only(check(EchoesTheLoadedState), bc.LOAD, "loaded the state after step 10; 1 step(s)",
                "(reference = the run without load)")


def test_a_backend_without_load_passes_with_a_note():
    class NoLoad(Counter):
        supports_load = False

    results = check(NoLoad)
    assert not failed(results)
    assert "backend does not support load" in detail(results, bc.LOAD)


# -- 8. bad input --------------------------------------------------------------------------------
class Reshapes(Counter):
    def check(self, actions):
        return np.resize(np.asarray(actions), self.num_envs)  # silently fits any shape


class RawValueError(Counter):
    def check(self, actions):
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError("bad shape")
        return actions


class ChecksLate(Counter):
    """Applies the step, then validates: the error comes, but the state is already changed."""

    def step(self, actions):
        res = super().step(np.resize(np.asarray(actions), self.num_envs))
        validate_actions(self.spec.action_space, actions, self.num_envs)
        return res


@pytest.mark.parametrize("cls, message", [
    (Reshapes, "actions of shape (4,) were accepted (expected (3,))"),
    (RawValueError, "raised ValueError: bad shape, not envport.errors.ActionError"),
    (ChecksLate, "raised ActionError but changed the state"),
], ids=["silent reshape", "ValueError", "validated too late"])
def test_wrong_shape_actions_must_raise_action_error(cls, message):
    assert_only(check(cls), bc.BAD_INPUT, message)


# -- a backend that raises -----------------------------------------------------------------------
def test_a_backend_that_raises_fails_checks_instead_of_crashing():
    class Crashes(Counter):
        calls = 0

        def step(self, actions):
            self.calls += 1
            if self.calls == 4:
                raise RuntimeError("engine crashed")
            return super().step(actions)

    results = check(Crashes)
    assert failed(results) == ALL - {bc.SPEC, bc.BAD_INPUT}
    message = "the rollout stopped: step 4 raised RuntimeError: engine crashed"
    for name in (bc.SHAPES, bc.STATE, bc.DETERMINISM, TERMINAL, bc.NO_NAN, bc.LOAD):
        assert detail(results, name) == message


def test_make_backend_that_raises_fails_every_check():
    def make():
        raise OSError("no ROM")

    results = run_backend_checks(make, steps=STEPS)
    assert failed(results) == ALL
    assert all(r.detail == "make_backend() raised OSError: no ROM" for r in results)


def test_a_close_that_raises_is_reported():
    class BadClose(Counter):
        def close(self):
            raise RuntimeError("process already gone")

    results = check(BadClose)
    # the checks that make a backend of their own close it, and fail with it
    assert failed(results) == {bc.DETERMINISM, bc.LOAD, bc.CLOSE}
    for name in failed(results):
        assert detail(results, name) == "raised RuntimeError: process already gone"


def test_steps_must_leave_room_for_the_load_check():
    with pytest.raises(ValueError, match="steps must be >= 2"):
        check(steps=1)
