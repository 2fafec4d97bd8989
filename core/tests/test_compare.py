"""``envport.compare``: the verifier as a library call on any two backends (README example
included, run as written), its result object, reports only when asked, clear errors."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from walk import SPEC, Walk, actions, cases, stay

import envport
from envport import EnvportError, Tolerance, compare
from envport.backend import Backend, StepResult

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    m = re.search(r"<!-- compare-example[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert m, "the compare example is missing from README.md"
    return m.group(1)


def test_the_readme_example_runs_as_written(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # and writes nothing: no report_dir
    code = readme_example()
    assert len(code.strip().splitlines()) <= 22
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert out.startswith("compare: EQUIVALENT") and "L3 50 episodes" in out
    assert list(tmp_path.iterdir()) == []


def test_the_readme_example_catches_a_port_that_differs(capsys):
    """The same example with the port starting one cell further on: not equivalent."""
    code = readme_example().replace("Corridor(5, start=0)", "Corridor(5, start=1)")
    with pytest.raises(AssertionError):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert "NOT EQUIVALENT" in capsys.readouterr().out


def test_public_api():
    for name in ("compare", "Backend", "check_env", "check_backend", "Tolerance", "Comparison"):
        assert name in envport.__all__ and hasattr(envport, name)
    assert envport.Backend is Backend


# -- the result --------------------------------------------------------------------------------
def test_an_equal_pair_is_equivalent_and_the_result_says_what_ran():
    res = compare(partial(Walk, 3), partial(Walk, 3), actions=actions, cases=cases, n_cases=30,
                  episodes=12)
    assert res.equivalent, res.summary()
    assert set(res.levels) == {"L1", "L2", "L3"}
    assert res.levels["L1"]["failed"] == 0 and res.levels["L1"]["passed"] > 0
    assert res.levels["L2"] == {"cases": 30, "mismatches": 0}
    assert res.levels["L3"]["episodes"] >= 12 and res.first_divergence is None
    assert res.shortest_prefix is None and res.divergences == []
    assert res.to_json()["required_levels"] == ["L1", "L2", "L3"]


def test_a_planted_difference_gives_the_first_divergence_and_the_shortest_prefix(tmp_path):
    res = compare(partial(Walk, 3), partial(Walk, 3, bug="third_right"), actions=actions,
                  episodes=12, neutral_action=stay, report_dir=tmp_path, name="walk")
    assert not res.equivalent and res.levels["L3"]["mismatches"] == 1
    fd = res.first_divergence
    assert fd["level"] == "L3" and fd["fields"][0]["field"] == "pos"
    prefix = res.shortest_prefix
    assert len(prefix) == fd["shortest_prefix_len"] == fd["step"] + 1
    envport.testing.assert_shortest_prefix(partial(Walk, 3), partial(Walk, 3, bug="third_right"),
                                           fd["seed"], prefix, first_episode_only=True)
    saved = json.loads((tmp_path / "walk" / "verify.json").read_text())
    assert saved == json.loads(json.dumps(res.to_json()))
    assert (tmp_path / "walk" / "verify.md").exists()
    assert list((tmp_path / "walk" / "regressions").glob("l3-*.json"))


def test_backend_objects_are_used_as_they_are_and_not_closed():
    class Counting(Walk):
        closed = 0

        def close(self):
            Counting.closed += 1

    ref, cand = Counting(2), Counting(2)
    res = compare(ref, cand, actions=actions, episodes=4)
    assert res.equivalent and Counting.closed == 0


def test_a_tolerance_per_field():
    noisy = partial(Walk, 2, bug="score_noise")
    assert not compare(partial(Walk, 2), noisy, episodes=4).equivalent
    res = compare(partial(Walk, 2), noisy, episodes=4, tolerance={"score": Tolerance(atol=1e-6)})
    assert res.equivalent and 0 < res.levels["L3"]["max_abs_err"] < 1e-6
    assert res.to_json()["tolerance"] == {"score": {"atol": 1e-6, "rtol": 0.0}}


# -- bad input ---------------------------------------------------------------------------------
class OtherSpec(Walk):
    spec = envport.EnvSpec("test/Other", "v0", SPEC.observation_space, envport.Discrete(4))


class NoLoad(Walk):
    supports_load = False


@pytest.mark.parametrize("kwargs, message", [
    ({"candidate": partial(OtherSpec, 4)}, r"specs differ: reference action_space Discrete\(n=3"),
    ({"candidate": partial(Walk, 2)}, r"num_envs=4, the candidate num_envs=2"),
    ({"tolerance": {"speed": 1e-3}}, r"'speed'"),
    ({"tolerance": -1.0}, r"-1"),
    ({"workers": 0}, r"workers must be a whole number >= 1"),
    ({"reference": Walk(4), "workers": 2}, r"workers=2 needs the reference as a function"),
    ({"candidate": partial(NoLoad, 4), "cases": cases}, r"cannot load a state"),
    ({"candidate": "walk"}, r"must be an envport Backend"),
])
def test_bad_input_is_a_clear_error(kwargs, message):
    args = {"reference": partial(Walk, 4), "candidate": partial(Walk, 4), "episodes": 2} | kwargs
    with pytest.raises(EnvportError, match=message):
        compare(**args)


def test_a_jax_env_candidate_gets_the_jax_checks_too():
    from envport.toy import Corridor

    class Ref(Backend):  # the corridor in numpy: start 0, right +1, goal at 4
        spec, num_envs, name = Corridor(5).spec, 2, "numpy corridor"

        def reset(self, seed):
            self.pos = np.zeros(2, np.int64)
            self.last = dict(reward=np.zeros(2), terminated=np.zeros(2, bool))
            return self.obs()

        def obs(self):
            return np.eye(5, dtype=np.float32)[self.pos]

        def step(self, a):
            self.pos = np.clip(self.pos + np.asarray(a) - 1, 0, 4)
            done = self.pos == 4
            self.last = dict(obs=self.obs(), reward=done.astype(np.float64), terminated=done)
            self.pos = np.where(done, 0, self.pos)
            return StepResult(self.last["obs"], self.last["reward"], done, np.zeros(2, bool))

        def state(self):
            return {"obs": self.last.get("obs", self.obs()), "reward": self.last["reward"],
                    "terminated": self.last["terminated"], "truncated": np.zeros(2, bool)}

    res = compare(Ref, Corridor(5, start=0), episodes=6)
    names = [d["target"] for d in res.report["details"]["L1"]]
    assert any("JAX env checks" in n for n in names) and any("backend checks" in n for n in names)
    assert res.levels["L3"]["mismatches"] == 0, res.first_divergence


def test_l4_suites_given_are_run_and_required():
    from envport.registry import L4Suite

    def win_rate(p):
        return lambda episodes, seed, progress: (
            np.random.default_rng(seed).random(episodes) < p).astype(np.float64)

    equal = L4Suite("win rate", win_rate(0.5), win_rate(0.5), "win 1, loss 0", episodes=20_000,
                    margin=0.05)
    shifted = L4Suite("win rate", win_rate(0.5), win_rate(0.7), "win 1, loss 0",
                      episodes=20_000, margin=0.05)
    ok = compare(partial(Walk, 2), partial(Walk, 2), episodes=4, l4=[equal])
    assert ok.equivalent and ok.levels["L4"]["equivalent"] is True
    assert "L4" in ok.to_json()["required_levels"]
    bad = compare(partial(Walk, 2), partial(Walk, 2), episodes=4, l4=[shifted])
    assert not bad.equivalent and bad.levels["L4"]["equivalent"] is False
