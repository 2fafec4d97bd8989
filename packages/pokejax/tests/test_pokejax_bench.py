"""The ``envport bench pokejax`` target runs end to end (tiny sizes; the figures live in
docs/benchmarks.md)."""

import json

import numpy as np
import pytest

from envport.bench import run_bench
from pokejax import bench, install
from pokejax.port import PORT, sample_actions


@pytest.fixture(scope="module", autouse=True)
def _showdown_installed():
    install.install(quiet=True)


def test_reference_stepper_caps_live_battles_and_restarts_ended_ones():
    s = bench._RefStepper(5, max_live=2)
    try:
        assert (s.live, s.rounds) == (2, 3)
        rng = np.random.default_rng(1)
        for _ in range(40):
            s.step(sample_actions(rng, 5))
        assert s.decisions == 40 * 3 * 2
        assert s.battles > 2  # 240 decisions over 2 battles: some ended and were replaced
        assert not any(e["ended"] for e in s.ref.exports)
    finally:
        s.close()


def test_bench_target_runs_end_to_end(tmp_path):
    (target,) = PORT.bench
    report = run_bench(PORT, tmp_path, batch_sizes=[2], min_seconds=0.05, progress=False)
    (row,) = report["targets"][target.name]["rows"]
    assert row["skipped"] is None
    assert row["reference_sps"] > 0 and row["candidate_sps"] > 0 and row["ratio"] > 0
    assert row["compile_s"] > 0
    assert json.loads((tmp_path / "pokejax" / "bench.json").read_text())["env"] == "pokejax"
    assert (tmp_path / "pokejax" / "bench.md").exists()
