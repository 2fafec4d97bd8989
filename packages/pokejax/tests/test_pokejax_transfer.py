"""L4 with trained policies on pokejax, small: one policy trained briefly on the port, played
1,000 battles a side against the random opponent on the JAX env and on the live Showdown. The
real port is equivalent in battle length; the planted gap (critical hits twice as likely,
``pokejax.planted``) shortens battles and fails L4: the suite has power."""

import dataclasses

import pytest

from envport import verify
from pokejax import planted
from pokejax.port import PORT, transfers

STEPS = 256 * 64 * 8  # eight updates: a policy that already wins most battles against random


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("pokejax-l4")


def _l4(transfer, out):
    port = dataclasses.replace(PORT, l4=[], transfer=[transfer])
    report = verify.run(port, out_dir=out, levels=["L4"], progress=False)
    return report["levels"]["L4"], report["details"]["L4"]


def test_a_trained_policy_transfers_and_the_planted_crit_gap_fails(out, showdown):
    length = transfers(steps=STEPS, seeds=[0])[1]
    assert length.score is not None and length.margin == 2.0
    level, (d,) = _l4(length, out)
    assert level["equivalent"] is True, d
    assert d["n_reference"] == d["n_candidate"] == 1000
    assert 10 < d["reference_mean"] < 200 and d["policy"]["direction"] == "port"

    gap = dataclasses.replace(length, make_candidate_env=lambda: planted.crit_doubled_env("random"))
    level, (g,) = _l4(gap, out)  # the same stored policy, played on the planted env
    assert g["policy"]["run_dir"] == d["policy"]["run_dir"]
    assert level["equivalent"] is False
    assert g["difference"] < -1.0 and g["candidate_mean"] < d["candidate_mean"]
