"""Verification must catch planted bugs and name the first divergence with a short prefix."""

import dataclasses
import json

import pytest
from mutants import BUGS, FreshObsAfterPoint, mutant_suite

import envport.verify as verify
from envport.testing import assert_shortest_prefix
from envport.verify.l3 import run_l3
from pong_port.port import PORT


@pytest.mark.parametrize("bug", BUGS)
def test_l3_catches_bug_and_shrinks(reference_built, bug):
    engine_cls, field_hint, suite_index = BUGS[bug]
    suite = mutant_suite(PORT.l3[suite_index], engine_cls)
    res = run_l3(suite, episodes=3)
    assert res.mismatches >= 1
    div = res.divergences[0]
    assert any(field_hint in d.field for d in div.diffs), [str(d) for d in div.diffs]
    assert div.prefix_len is not None and div.prefix_len <= div.step + 1
    # the shrunk prefix reproduces the divergence and nothing shorter does
    assert_shortest_prefix(suite.make_reference, suite.make_candidate, div.seed, div.prefix)


def test_verify_report_names_first_divergence(reference_built, tmp_path):
    port = dataclasses.replace(PORT, l1=[], l2=[],
                               l3=[mutant_suite(PORT.l3[1], FreshObsAfterPoint)])
    report = verify.run(port, out_dir=tmp_path, scale=0.05, progress=False, levels=["L3"])
    saved = json.loads((tmp_path / "pong" / "verify.json").read_text())
    assert report["equivalent"] is False and saved["equivalent"] is False
    first = saved["first_divergence"]
    assert first["level"] == "L3" and first["shortest_prefix_len"] >= 1
    assert "obs" in first["summary"] and first["fields"][0]["field"] == "obs"
    assert list((tmp_path / "pong" / "regressions").glob("l3-*.json"))
    assert "First divergence" in (tmp_path / "pong" / "verify.md").read_text()
