"""The benchmark harness, driven by fake ports whose speeds are known in advance."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.bench import candidate_main, measure_candidate, run_bench
from envport.errors import EnvportError
from envport.registry import BenchTarget, EnvPort

MIN_S = 0.05


def _actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 3, size=n).astype(np.int32)


def numpy_reference(log: dict | None = None):
    """A numpy 'reference': the state is a counter per env, step adds the actions."""

    def make(n: int):
        state = np.zeros(n, np.int64)

        def step(actions: np.ndarray) -> np.ndarray:
            assert actions.shape == (n,)
            state[:] += actions
            if log is not None:
                log["steps"] = log.get("steps", 0) + 1
            return state

        def close() -> None:
            if log is not None:
                log["closed"] = log.get("closed", 0) + 1

        return step, close

    return make


def jax_candidate(n: int):
    """A tiny JAX rollout over a trivial state; the step count is traced, so ``run(k)``
    compiles once for every ``k`` (the static-length case is covered by ``sleepy_port``)."""

    def rollout(state, steps):
        return jax.lax.fori_loop(0, steps, lambda i, s: s * 1.0001 + 1.0, state)

    fn = jax.jit(rollout)
    state = jnp.zeros((n,), jnp.float32)
    t0 = time.perf_counter()
    fn(state, 1).block_until_ready()
    compile_s = time.perf_counter() - t0

    def run(steps: int) -> None:
        fn(state, steps).block_until_ready()

    return run, compile_s


def jax_port(names=("tiny",)) -> EnvPort:
    targets = [
        BenchTarget(name=nm, reference_stepper=numpy_reference(), candidate_rollout=jax_candidate,
                    sample_actions=_actions, how_actions=f"uniform in 0..2 ({nm})")
        for nm in names
    ]
    return EnvPort(name="fakeenv", reference="numpy counter 1.0", candidate="jax counter 0.1",
                   install_reference=lambda: None, check_reference=lambda: None, bench=targets)


REF_STEP_S = 2e-3  # seconds per batched reference step
CAND_STEP_S = 1e-4  # seconds per batched candidate step
FAKE_COMPILE_S = 0.12  # first call at each new k (simulated per-length compile)
DECLARED_COMPILE_S = 12.5


def sleepy_port(cand_fail_at: int | None = None, exc: type[BaseException] = MemoryError,
                log: dict | None = None) -> EnvPort:
    """Speeds fixed by sleeping, so steps/s and ratios are predictable."""

    def ref(n: int):
        def step(actions):
            time.sleep(REF_STEP_S)

        def close():
            if log is not None:
                log["closed"] = log.get("closed", 0) + 1

        return step, close

    def cand(n: int):
        if cand_fail_at is not None and n >= cand_fail_at:
            raise exc("RESOURCE_EXHAUSTED: Out of memory allocating 123 bytes.")
        seen: set[int] = set()

        def run(k: int) -> None:
            if k not in seen:  # a new length: pay a fake compile
                seen.add(k)
                time.sleep(FAKE_COMPILE_S)
            time.sleep(k * CAND_STEP_S)

        return run, DECLARED_COMPILE_S

    t = BenchTarget(name="sleepy", reference_stepper=ref, candidate_rollout=cand,
                    sample_actions=_actions, how_actions="uniform in 0..2")
    return EnvPort(name="sleepy", reference="sleep ref", candidate="sleep cand",
                   install_reference=lambda: None, check_reference=lambda: None, bench=[t])


def test_json_schema_md_png(tmp_path: Path) -> None:
    rep = run_bench(jax_port(("a", "b")), tmp_path, batch_sizes=(1, 4), min_seconds=MIN_S,
                    progress=False)
    d = tmp_path / "fakeenv"
    on_disk = json.loads((d / "bench.json").read_text())
    assert on_disk == json.loads(json.dumps(rep))
    assert on_disk["env"] == "fakeenv"
    assert on_disk["reference"] == "numpy counter 1.0"
    assert on_disk["candidate"] == "jax counter 0.1"
    host = on_disk["host"]
    for key in ("processor", "machine", "cpu_count", "jax", "jax_backend", "python"):
        assert host[key], key
    assert host["jax"] == jax.__version__ and host["jax_backend"] == jax.default_backend()
    assert on_disk["date"][:2] == "20"
    assert list(on_disk["targets"]) == ["a", "b"]
    for name, t in on_disk["targets"].items():
        assert t["how_actions"] == f"uniform in 0..2 ({name})"
        assert [r["num_envs"] for r in t["rows"]] == [1, 4]
        for r in t["rows"]:
            for key in ("reference_sps", "candidate_sps", "ratio", "compile_s",
                        "candidate_steps_timed", "reference_steps_timed"):
                assert isinstance(r[key], int | float) and r[key] > 0, (key, r)
            assert r["skipped"] is None
            assert r["ratio"] == pytest.approx(r["candidate_sps"] / r["reference_sps"])
            # steps/s = env-steps timed / seconds, and at least min_seconds were timed
            assert r["reference_seconds"] >= MIN_S and r["candidate_seconds"] >= MIN_S
            assert r["reference_sps"] == pytest.approx(
                r["reference_steps_timed"] / r["reference_seconds"])
            assert r["candidate_sps"] == pytest.approx(
                r["candidate_steps_timed"] / r["candidate_seconds"])
            assert r["reference_steps_timed"] % r["num_envs"] == 0
            assert r["candidate_steps_timed"] % (r["num_envs"] * r["candidate_steps_per_call"]) == 0

    md = (d / "bench.md").read_text()
    assert "| num_envs |" in md and "| ratio |" in md
    assert "## a" in md and "## b" in md
    assert "one run" in md
    assert f"{host['cpu_count']} CPUs" in md and jax.__version__ in md
    ratio_a4 = on_disk["targets"]["a"]["rows"][1]["ratio"]
    assert f"{ratio_a4:,.2f}×" in md
    png = (d / "bench.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_rates_ratio_and_compile_excluded(tmp_path: Path) -> None:
    rep = run_bench(sleepy_port(), tmp_path, batch_sizes=(1, 8), min_seconds=MIN_S,
                    progress=False)
    for r in rep["targets"]["sleepy"]["rows"]:
        n = r["num_envs"]
        # sleep overshoots a little, never undershoots: sps is at most the nominal rate
        assert 0.5 * n / REF_STEP_S <= r["reference_sps"] <= 1.01 * n / REF_STEP_S
        # were the 0.12 s fake compile inside the timing, sps would be < 0.3 of nominal
        assert 0.5 * n / CAND_STEP_S <= r["candidate_sps"] <= 1.01 * n / CAND_STEP_S
        assert r["ratio"] == pytest.approx(r["candidate_sps"] / r["reference_sps"])
        assert 5 < r["ratio"] < 40
        assert r["compile_s"] == DECLARED_COMPILE_S
        assert r["candidate_steps_per_call"] > 1  # k grew past the first probe


def test_measure_candidate_grows_k_and_times_only_repeat_calls() -> None:
    calls: list[int] = []

    def run(k: int) -> None:
        calls.append(k)
        time.sleep(k * 1e-4)

    sps, steps, secs, k = measure_candidate(run, num_envs=3, min_seconds=MIN_S)
    timed = steps // (3 * k)
    assert secs >= MIN_S and steps == 3 * k * timed and timed >= 1
    assert calls[-timed:] == [k] * timed
    assert k * 1e-4 >= MIN_S / 10  # one call lasts at least a tenth of min_seconds
    # every k is called once untimed before it is timed
    for kk in set(calls):
        assert calls.count(kk) >= 2
    assert calls[0] == calls[1] == 1
    assert sps == pytest.approx(steps / secs)


def test_candidate_main_writes_one_row_per_batch_size(tmp_path: Path, capsys) -> None:
    """The accelerator script's entry point: each size's rollout built once and timed, the
    JSON at --out with the backend, the workload text and the shard count per row."""
    built: list[int] = []

    def rollout(n: int):
        built.append(n)
        return (lambda k: time.sleep(k * 1e-4)), 0.25

    out = tmp_path / "x" / "bench.json"
    candidate_main("python -m fake.bench", rollout, "one step, random play",
                   shards=lambda n: 2 if n % 2 == 0 else 1,
                   argv=["--batch-sizes", "3,8", "--min-seconds", str(MIN_S), "--out", str(out)])
    report = json.loads(out.read_text())
    assert built == [3, 8]
    assert report["backend"] == jax.default_backend()
    assert report["how_actions"] == "one step, random play"
    assert [(r["num_envs"], r["devices"], r["compile_s"]) for r in report["rows"]] == [
        (3, 1, 0.25), (8, 2, 0.25)]
    for r in report["rows"]:
        assert r["candidate_sps"] == pytest.approx(r["steps_timed"] / r["seconds"])
        assert r["steps_timed"] % r["num_envs"] == 0
    assert "num_envs 8:" in capsys.readouterr().out


def test_out_of_memory_is_recorded_and_larger_sizes_skipped(tmp_path: Path) -> None:
    log: dict = {}
    rep = run_bench(sleepy_port(cand_fail_at=4, log=log), tmp_path, batch_sizes=(1, 4, 16),
                    min_seconds=MIN_S, progress=False)
    rows = rep["targets"]["sleepy"]["rows"]
    assert rows[0]["skipped"] is None and rows[0]["ratio"] is not None
    for r in rows[1:]:
        assert r["reference_sps"] > 0  # the reference is still measured
        assert r["candidate_sps"] is None and r["ratio"] is None and r["compile_s"] is None
    assert rows[1]["skipped"].startswith("candidate: out of memory (MemoryError")
    assert rows[2]["skipped"] == "candidate: skipped, out of memory at num_envs=4"
    assert log["closed"] == 3  # the reference was closed after each size
    md = (tmp_path / "sleepy" / "bench.md").read_text()
    assert "out of memory" in md and "—" in md


def test_jax_resource_exhausted_counts_as_oom(tmp_path: Path) -> None:
    rep = run_bench(sleepy_port(cand_fail_at=1, exc=jax.errors.JaxRuntimeError), tmp_path,
                    batch_sizes=(2,), min_seconds=MIN_S, progress=False)
    row = rep["targets"]["sleepy"]["rows"][0]
    assert "JaxRuntimeError" in row["skipped"] and row["candidate_sps"] is None
    assert (tmp_path / "sleepy" / "bench.png").exists()


def test_other_errors_propagate_and_reference_is_closed(tmp_path: Path) -> None:
    log: dict = {}
    port = sleepy_port(cand_fail_at=1, exc=ValueError, log=log)
    with pytest.raises(ValueError, match="RESOURCE"):
        run_bench(port, tmp_path, batch_sizes=(1,), min_seconds=MIN_S, progress=False)
    assert log["closed"] == 1


def test_target_filter_and_unknown_target(tmp_path: Path) -> None:
    rep = run_bench(jax_port(("a", "b")), tmp_path, batch_sizes=(2,), min_seconds=MIN_S,
                    progress=False, targets=["b"])
    assert list(rep["targets"]) == ["b"]
    with pytest.raises(EnvportError, match="'zzz'.*Declared targets: a, b"):
        run_bench(jax_port(("a", "b")), tmp_path, batch_sizes=(2,), targets=["zzz"],
                  progress=False)


def test_reference_gets_cached_actions(tmp_path: Path) -> None:
    drawn: list[int] = []
    log: dict = {}

    def sampler(rng, n):
        drawn.append(n)
        return _actions(rng, n)

    t = BenchTarget(name="t", reference_stepper=numpy_reference(log),
                    candidate_rollout=jax_candidate, sample_actions=sampler)
    port = EnvPort(name="cache", reference="r", candidate="c", install_reference=lambda: None,
                   check_reference=lambda: None, bench=[t])
    rep = run_bench(port, tmp_path, batch_sizes=(3,), min_seconds=MIN_S, progress=False)
    assert drawn == [3] * 64  # drawn once up front, not per step
    row = rep["targets"]["t"]["rows"][0]
    assert log["steps"] > 64 and log["closed"] == 1
    assert row["reference_steps_timed"] < 3 * log["steps"]  # warm-up steps are not timed


def test_progress_bar_writes_to_stderr(tmp_path: Path, capsys) -> None:
    run_bench(jax_port(), tmp_path, batch_sizes=(1,), min_seconds=0.01, progress=True)
    cap = capsys.readouterr()
    assert "bench fakeenv" in cap.err and cap.out == ""


def _row(n, ref, cand):
    return {"num_envs": n, "reference_sps": ref, "candidate_sps": cand}


def test_best_of_each_side_pairs_bests_across_targets() -> None:
    """Best against best: at each size the best reference and the best candidate may come from
    different targets; the headline ratio is best candidate over best reference over all sizes,
    never the ratio at the size where one reference run dipped."""
    from envport.bench import best_of_each_side

    report = {"batch_sizes": [1, 8], "targets": {
        "one": {"workload": "w", "rows": [_row(1, 100.0, 50.0), _row(8, 40.0, 800.0)]},
        "many": {"workload": "w", "rows": [_row(1, 150.0, 30.0), _row(8, 180.0, 900.0)]},
        "alone": {"workload": "other", "rows": [_row(1, 1.0, 1.0), _row(8, 1.0, 1.0)]},
        "untagged": {"rows": [_row(1, 1e9, 1e9), _row(8, 1e9, 1e9)]},
    }}
    best = best_of_each_side(report)
    assert list(best) == ["w"]  # a workload of one target has no "best of" table
    g = best["w"]
    assert g["rows"][0] == {"num_envs": 1, "reference_sps": 150.0, "reference_target": "many",
                            "candidate_sps": 50.0, "candidate_target": "one", "ratio": 50 / 150}
    assert g["rows"][1]["ratio"] == 900 / 180  # not 800 / 40, where "one"'s reference dipped
    o = g["overall"]
    assert (o["reference_sps"], o["reference_target"], o["reference_num_envs"]) == (180.0, "many", 8)
    assert (o["candidate_sps"], o["candidate_num_envs"]) == (900.0, 8)
    assert o["ratio_of_bests"] == 5.0


def test_report_has_best_of_each_side_for_a_shared_workload(tmp_path: Path) -> None:
    port = jax_port(("a", "b"))
    for t in port.bench:
        t.workload = "counting"
    report = run_bench(port, tmp_path, batch_sizes=[4], min_seconds=MIN_S, progress=False)
    g = report["best"]["counting"]
    (row,) = g["rows"]
    refs = [report["targets"][n]["rows"][0]["reference_sps"] for n in ("a", "b")]
    assert row["reference_sps"] == max(refs)
    assert g["overall"]["ratio_of_bests"] == pytest.approx(
        max(report["targets"][n]["rows"][0]["candidate_sps"] for n in ("a", "b")) / max(refs))
    md = (tmp_path / "fakeenv" / "bench.md").read_text()
    assert "## Best of each side: counting" in md and "Ratio of bests" in md
    assert json.loads((tmp_path / "fakeenv" / "bench.json").read_text())["best"]["counting"]
