"""The reference driver: starts, answers, reports errors clearly, and never leaves node running."""

import numpy as np
import pytest

from envport import ReferenceNotInstalledError
from pokejax import install
from pokejax.showdown import Showdown, ShowdownError


def test_version_is_pinned(showdown):
    assert showdown.request("version") == install.SHOWDOWN_VERSION


def test_random_team_and_first_turn(showdown):
    p1 = showdown.request("team", format="gen1randombattle", seed=[1, 2, 3, 4])
    p2 = showdown.request("team", format="gen1randombattle", seed=[5, 6, 7, 8])
    assert len(p1["sets"]) == 6 and all(s["level"] > 0 for s in p1["sets"])
    started = showdown.request("start", format="gen1randombattle", seed=[9, 10, 11, 12],
                               p1team=p1["packed"], p2team=p2["packed"])
    state = started["state"]
    assert state["turn"] == 1 and state["seed"] == "9,10,11,12"
    assert [p["isActive"] for p in state["sides"][0]["pokemon"]] == [True] + [False] * 5
    res = showdown.request("choose", battle=started["battle"], p1="move 1", p2="move 1")
    assert res["accepted"] and res["state"]["turn"] == 2
    assert res["state"]["seed"] != state["seed"]  # the turn drew random numbers
    showdown.request("close", battle=started["battle"])


def test_illegal_choice_is_rejected_as_showdown_does(showdown):
    p1 = showdown.request("team", format="gen1randombattle", seed=[1, 1, 1, 1])["packed"]
    started = showdown.request("start", format="gen1randombattle", seed=[2, 2, 2, 2],
                               p1team=p1, p2team=p1)
    res = showdown.request("choose", battle=started["battle"], p1="move 9", p2="move 1")
    assert not res["accepted"] and res["side"] == "p1"
    assert "move 9" in res["error"] or "Invalid" in res["error"] or "not" in res["error"]


def test_unknown_command_raises(showdown):
    with pytest.raises(ShowdownError, match="unknown command"):
        showdown.request("nonsense")


def test_close_ends_the_process():
    with Showdown() as sd:
        proc = sd._proc
        assert sd.request("version")
    assert proc.poll() is not None


def test_missing_node_is_explained(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ReferenceNotInstalledError, match="Node.js"):
        install.check()


def test_missing_package_names_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path))
    with pytest.raises(ReferenceNotInstalledError, match="envport install-reference pokejax"):
        install.check()


def test_selfplay_reports_speed(showdown):
    r = showdown.request("selfplay", format="gen1randombattle", seed=[4, 3, 2, 1], battles=5)
    assert r["battles"] == 5 and r["turns"] >= 5 and r["choices"] >= r["turns"] and r["seconds"] > 0


def test_draw_trace_is_complete(showdown):
    """Replaying the traced draws on our PRNG model reproduces every result and the final seed:
    no draw escapes the trace."""
    from pokejax import choices, prng, reference

    seeds = reference.derive_seeds(8, 0)
    p1 = showdown.request("team", format="gen1randombattle", seed=seeds["p1"])["packed"]
    p2 = showdown.request("team", format="gen1randombattle", seed=seeds["p2"])["packed"]
    started = showdown.request("start", format="gen1randombattle", seed=seeds["battle"],
                               p1team=p1, p2team=p2, trace=True)
    model = prng.Gen5Prng(seeds["battle"])
    state, n = started["state"], 0
    rng = np.random.default_rng(0)
    while not state["ended"] and state["turn"] < 60:
        r1, r2 = reference.sides_requests(state)
        a1, a2 = reference.choose_random(rng, r1), reference.choose_random(rng, r2)
        res = showdown.request("choose", battle=started["battle"],
                               p1=None if a1 is None else choices.choice_string(a1),
                               p2=None if a2 is None else choices.choice_string(a2))
        for d in res["draws"]:
            assert model.random(d["from"], d["to"]) == d["result"], d
            assert d["sites"], d
            n += 1
        state = res["state"]
        assert ",".join(map(str, model.seed())) == state["seed"]
    showdown.request("close", battle=started["battle"])
    assert n > 20
