"""L4 with trained policies on tcgjax (``tcgjax.transfer``): the declared suites, and their power.

Fast: the port declares the issue's budget (5 seeds, 1,000 games a side, both metrics on the
same policies). Slow (``nox -s tests-slow``; a policy is trained and played on three backends,
each a few minutes of XLA:CPU compile): one briefly trained policy is equivalent on the JAX
engine and the Python reference, and a planted sim gap fails L4 on the metric it moves.
"""

from __future__ import annotations

import dataclasses

import pytest

from envport import verify

EPISODES = 1_000  # the margin of 3 decisions is ~4.8 standard errors of the difference
STEPS = 8_192  # a weak policy is enough: the gaps below move the game, not the policy


def run(tmp, transfers):
    from tcgjax.port import PORT

    report = verify.run(
        dataclasses.replace(PORT, transfer=transfers, l4=[]),
        out_dir=tmp,
        levels=["L4"],
        progress=False,
    )
    return report["levels"]["L4"], report["details"]["L4"]


def test_the_declared_transfers_are_the_issue_budget():
    from tcgjax.port import PORT
    from tcgjax.transfer import TRANSFER_STEPS, make_candidate, make_reference

    win, length = PORT.transfer
    for t in (win, length):
        assert t.target == "vs-heuristic" and tuple(t.seeds) == (0, 1, 2, 3, 4)
        assert t.episodes >= 1000 and t.train == {"total_steps": TRANSFER_STEPS}
        assert t.make_reference is make_reference and t.make_candidate_backend is make_candidate
        assert t.reference_train is None  # port-trained only (see transfer.MARGIN_NOTE)
        assert "MEASURED" not in t.margin_note and f"{t.margin:g}" in t.margin_note
    assert win.score is None and length.score is not None  # the target's win; the length


@pytest.fixture(scope="module")
def tiny():
    from tcgjax.transfer import transfers

    # the length only: the metric the planted gap moves (the win rate: the full suites)
    return [transfers(steps=STEPS, episodes=EPISODES, seeds=(0,))[1]]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("tcgjax-transfer")


@pytest.fixture(scope="module")
def honest(out, tiny):
    return run(out, tiny)


@pytest.mark.slow
def test_a_trained_policy_plays_the_same_on_the_engine_and_the_reference(honest, tiny):
    level, details = honest
    assert level["equivalent"] is True, details
    # e.g. "PPO vs-heuristic, game length: policy trained on the port, seed 0"
    assert [d["suite"].split(":")[0] for d in details] == [t.name for t in tiny]
    for d in details:
        assert d["n_reference"] == d["n_candidate"] == EPISODES
        assert d["policy"]["direction"] == "port"


@pytest.mark.slow
def test_a_planted_gap_fails_l4(out, tiny, honest):
    from tcgjax.planted import PlantedSingleAgentEnv
    from tcgjax.transfer import make_candidate

    def planted(num_envs):
        return make_candidate(
            num_envs,
            make_env=lambda: PlantedSingleAgentEnv("heuristic_order", "heuristic", checked=False),
        )

    # the stored policy (nothing trained again), played on an engine whose heuristic opponent
    # attacks before it attaches energy
    bent = [dataclasses.replace(t, make_candidate_backend=planted) for t in tiny]
    level, details = run(out, bent)
    assert level["equivalent"] is False
    (length,) = details
    assert length["policy"]["run_dir"] == honest[1][0]["policy"]["run_dir"]
    # longer games on the planted engine: the difference and its CI past the margin
    assert not length["equivalent"] and length["difference"] > tiny[0].margin, length
