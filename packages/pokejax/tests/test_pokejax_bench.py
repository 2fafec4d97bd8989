"""The ``envport bench pokejax`` target runs end to end (tiny sizes; the figures live in
docs/benchmarks.md)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.bench import run_bench
from pokejax import bench, install
from pokejax.port import PORT, sample_actions


@pytest.fixture(scope="module", autouse=True)
def _showdown_installed():
    install.install(quiet=True)


def test_reference_stepper_plays_in_node_over_capped_live_battles():
    s = bench._RefStepper(5, max_live=2)
    try:
        rng = np.random.default_rng(1)
        for _ in range(60):
            s.step(sample_actions(rng, 5))
        assert s.decisions == 60 * 5
        with pytest.raises(ValueError, match="5 x 2 actions"):
            s.step(np.zeros((4, 2), np.int32))
    finally:
        s.close()


def test_reference_in_processes_splits_the_batch():
    """Two processes play their shares of five envs per step, each from its own run seed."""
    s = bench._RefStepper(5, processes=2)
    try:
        assert len(s.procs) == 2 and s.bounds.tolist() in ([0, 2, 5], [0, 3, 5])
        rng = np.random.default_rng(1)
        for _ in range(20):
            s.step(sample_actions(rng, 5))
        assert s.decisions == 20 * 5
    finally:
        s.close()
    one = bench._RefStepper(1, processes=4)  # never more processes than envs
    try:
        assert len(one.procs) == 1
    finally:
        one.close()


def test_candidate_rollout_resets_ended_battles():
    pool = bench.start_pool()
    battles = jax.tree.map(lambda x: x[:8], pool)
    carry = (battles, jax.random.PRNGKey(3), jnp.int32(0))
    step = jax.jit(lambda c: bench._batched_step(c, pool))
    resets = 0
    for _ in range(150):
        before = carry[0].turn
        carry = step(carry)
        assert not bool(jnp.any(carry[0].ended))  # ended battles were replaced at once
        resets += int(jnp.sum(carry[0].turn < before))
    assert resets > 0  # 150 decisions of 8 random battles: some ended


def test_bench_targets_run_end_to_end(tmp_path):
    report = run_bench(PORT, tmp_path, batch_sizes=[2], min_seconds=0.05, progress=False)
    for target in PORT.bench:
        (row,) = report["targets"][target.name]["rows"]
        assert row["skipped"] is None
        assert row["reference_sps"] > 0 and row["candidate_sps"] > 0 and row["ratio"] > 0
        assert row["compile_s"] > 0
    if len(PORT.bench) > 1:  # one process per core as the second setup: best of each side
        assert report["best"]["gen1randombattle, random legal play"]["overall"]["ratio_of_bests"] > 0
    assert json.loads((tmp_path / "pokejax" / "bench.json").read_text())["env"] == "pokejax"
    assert (tmp_path / "pokejax" / "bench.md").exists()
