"""L2/L3 against the live C reference, on a sample (the full budget is `nox -s verify-pong`)."""

import json

import pytest

import envport.verify as verify
from envport.verify.l2 import run_l2
from envport.verify.l3 import run_l3
from pong_port.port import PORT


@pytest.mark.parametrize("suite", PORT.l2, ids=lambda s: s.name)
def test_l2_sample_matches_reference(reference_built, suite):
    res = run_l2(suite, cases=1000)
    assert res.cases == 1000
    assert res.mismatches == 0, res.examples[:1]


@pytest.mark.parametrize("suite", PORT.l3, ids=lambda s: s.name)
def test_l3_sample_matches_reference(reference_built, suite):
    res = run_l3(suite, episodes=2)
    assert res.episodes >= 2
    assert res.mismatches == 0, [d.summary() for d in res.divergences]


def test_verify_writes_report(reference_built, tmp_path, monkeypatch):
    # L1-L3 at a small scale; the trained-policy L4 suites (10 trainings) are
    # test_pong_transfer.py's and nox -s verify-pong's
    monkeypatch.setattr(PORT, "transfer", [])
    report = verify.run(PORT, out_dir=tmp_path, scale=0.02, progress=False)
    on_disk = json.loads((tmp_path / "pong" / "verify.json").read_text())
    assert on_disk["equivalent"] is True and report["equivalent"] is True
    assert on_disk["levels"]["L1"]["failed"] == 0 and on_disk["levels"]["L1"]["passed"] > 0
    assert on_disk["levels"]["L2"]["mismatches"] == 0 and on_disk["levels"]["L2"]["cases"] >= 400
    assert on_disk["levels"]["L3"]["mismatches"] == 0
    assert on_disk["first_divergence"] is None
    assert "| L2 interaction |" in (tmp_path / "pong" / "verify.md").read_text()


@pytest.mark.slow
def test_full_verification(reference_built, tmp_path):
    report = verify.run(PORT, out_dir=tmp_path, progress=False)
    assert report["equivalent"], report["first_divergence"]
    assert report["levels"]["L2"]["cases"] >= 10_000


def test_cli_verify_end_to_end(reference_built, tmp_path, capsys, monkeypatch):
    from envport.cli import main

    monkeypatch.setattr(PORT, "transfer", [])  # as above: no policy training here
    assert main(["verify", "pong", "--scale", "0.01", "--no-progress", "--out", str(tmp_path)]) == 0
    assert "pong: EQUIVALENT" in capsys.readouterr().out
    assert json.loads((tmp_path / "pong" / "verify.json").read_text())["equivalent"] is True
