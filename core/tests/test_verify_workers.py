"""Verification spread over workers: the same report for 1 worker, 2 worker processes and a
local Ray; a worker that dies is retried once, twice is an error naming the shard."""

from __future__ import annotations

from functools import partial

import pytest
from walk import Tally, Walk, actions, cases, stay

from envport.errors import EnvportError
from envport.registry import L2Suite, L3Suite
from envport.verify.engine import run_suites
from envport.verify.workers import WorkerError

# how a run went, not what it found: the only keys allowed to differ between worker counts
RUN_KEYS = ("wall_s", "execution")


def suites(tally_l2: Tally, tally_l3: Tally, bug=None, **walk):
    """An L2 suite and two L3 suites, one of them diverging at seed 0 when ``bug`` is set;
    counters shown in the notes (read after the run, so merged counts show)."""
    l2 = L2Suite("walk l2", partial(Walk, tally=tally_l2), Walk, cases, cases=120, batch=30,
                 counters=tally_l2, note=lambda: f"{tally_l2.steps} reference steps")
    # short chunks: a seed ends soon after every walker's first episode, so there are many
    clean = L3Suite("walk l3", partial(Walk, 3, tally=tally_l3, **walk), partial(Walk, 3),
                    actions, episodes=30, neutral_action=stay, counters=tally_l3, chunk=8,
                    note=lambda: f"{tally_l3.resets} resets, {tally_l3.steps} steps")
    buggy = L3Suite("walk l3 planted", partial(Walk, 3), partial(Walk, 3, bug=bug or "none"),
                    actions, episodes=30, neutral_action=stay, chunk=8)
    return [l2], [clean, buggy]


def report(workers=1, ray=None, bug=None, tmp_path=None, **walk):
    l2, l3 = suites(Tally(), Tally(), bug, **walk)
    out = run_suites("walk", "walk", "walk (copy)", l2=l2, l3=l3, levels=["L2", "L3"],
                     workers=workers, ray=ray, regressions_dir=tmp_path)
    return out.report


def without_run_keys(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in RUN_KEYS}


def test_two_worker_processes_write_the_report_one_process_writes():
    one, two = report(1), report(2)
    assert one["execution"] == {"workers": 1, "executor": "in-process"}
    assert two["execution"] == {"workers": 2, "executor": "processes"}
    assert without_run_keys(one) == without_run_keys(two)
    assert one["levels"]["L3"]["mismatches"] == 0 and one["equivalent"] is False  # no L1 ran
    notes = [d["note"] for d in two["details"]["L2"] + two["details"]["L3"]]
    assert notes[0] == "4 reference steps"  # 4 batches, merged from the workers
    seeds = two["details"]["L3"][0]["seeds"]
    assert seeds >= 5 and notes[1].startswith(f"{seeds} resets")  # one per seed


def test_a_divergence_is_found_and_shrunk_the_same_with_workers(tmp_path):
    one = report(1, bug="third_right", tmp_path=tmp_path / "one")
    two = report(2, bug="third_right", tmp_path=tmp_path / "two")
    assert one["levels"]["L3"]["mismatches"] == 1
    assert without_run_keys(one) == without_run_keys(two)
    assert one["first_divergence"]["shortest_prefix_len"] >= 1
    names = lambda d: sorted(p.name for p in d.glob("*.json"))  # noqa: E731
    assert names(tmp_path / "one") == names(tmp_path / "two") != []


def test_local_ray_writes_the_same_report():
    """``ray=True`` starts a local Ray for the run and shuts it down after."""
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    assert without_run_keys(report(1)) == without_run_keys(report(2, ray=True))
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def running_ray():
    """A Ray the tests below join instead of starting their own (starting one takes ~15 s)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_a_worker_that_dies_once_is_retried(tmp_path):
    marker = tmp_path / "killed-once"
    r = report(2, kill_on_seed=3, marker=str(marker))
    assert marker.exists()  # the worker really died
    assert without_run_keys(r) == without_run_keys(report(1))


def test_a_worker_that_dies_twice_is_an_error_naming_the_shard():
    with pytest.raises(WorkerError, match=r"L3 suite 'walk l3', seed 3: its worker died 2 times"):
        report(2, kill_on_seed=3)


def test_a_ray_actor_that_dies_once_is_retried(running_ray, tmp_path):
    marker = tmp_path / "killed-once"
    r = report(2, ray=True, kill_on_seed=3, marker=str(marker))
    assert marker.exists() and without_run_keys(r) == without_run_keys(report(1))


def test_a_ray_actor_that_dies_twice_is_an_error_naming_the_shard(running_ray):
    with pytest.raises(WorkerError, match=r"L3 suite 'walk l3', seed 3: its Ray actor died"):
        report(2, ray=True, kill_on_seed=3)


def test_an_error_in_the_suite_code_names_the_shard_and_is_not_retried():
    def broken(_n):
        raise ValueError("no reference today")

    l3 = [L3Suite("walk l3", partial(Walk, 2), partial(Walk, 2), actions, episodes=4)]
    l2 = [L2Suite("broken", broken, Walk, cases, cases=10, batch=10)]
    with pytest.raises(WorkerError, match=r"L2 suite 'broken', batch 0: raised in a worker"):
        run_suites("walk", "r", "c", l2=l2, l3=l3, levels=["L2"], workers=2)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(workers):
    with pytest.raises(EnvportError, match="workers must be a whole number >= 1"):
        run_suites("walk", "r", "c", levels=["L3"], workers=workers)


def test_an_unreachable_ray_address_is_a_clear_error():
    pytest.importorskip("ray")
    # port 9 (discard) on loopback: nothing listens, the connection is refused at once
    with pytest.raises(EnvportError, match=r"cannot reach a Ray cluster at '127.0.0.1:9'"):
        report(2, ray="127.0.0.1:9")
    with pytest.raises(EnvportError, match="not of the form HOST:PORT"):
        report(2, ray="nowhere")
