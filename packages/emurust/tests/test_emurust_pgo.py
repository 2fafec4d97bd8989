"""emurust.tools.pgo: what decides whether a profile is reused, and what happens when the
toolchain cannot do PGO (the build itself runs in ``./dev bench-emurust`` / ``verify-emurust``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emurust.tools import NoCrateError, crate_dir


@pytest.fixture(scope="module")
def pgo():
    try:
        crate_dir()
    except NoCrateError:
        pytest.skip("emurust installed without its crate sources: PGO builds from a checkout")
    from emurust.tools import pgo

    return pgo


def test_profile_key_follows_the_training_roms(pgo, tmp_path):
    a, b = tmp_path / "a.gb", tmp_path / "b.gb"
    a.write_bytes(b"\x00" * 64)
    b.write_bytes(b"\x01" * 64)
    key = pgo.profile_key([a, b])
    assert len(key) == 16 and key == pgo.profile_key([a, b])
    b.write_bytes(b"\x02" * 64)
    assert pgo.profile_key([a, b]) != key, "a changed ROM must retrain"


def test_without_llvm_profdata_the_plain_build_stays(pgo, monkeypatch, capsys):
    monkeypatch.setattr(pgo, "llvm_profdata", lambda allow_install=True: None)
    calls = []
    monkeypatch.setattr(pgo, "install", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(pgo, "train", lambda *a, **k: calls.append(a))
    assert pgo.main([]) == 0
    assert "PGO unavailable" in capsys.readouterr().out
    assert pgo.main(["--require"]) == 1
    assert calls == [], "nothing may be built or installed without llvm-profdata"


def test_a_current_installed_build_is_left_alone(pgo, monkeypatch, tmp_path, built_roms):
    monkeypatch.setattr(pgo, "llvm_profdata", lambda allow_install=True: Path("/bin/true"))
    monkeypatch.setattr(pgo, "profile_key", lambda roms: "0123456789abcdef")
    monkeypatch.setattr(pgo, "installed_build", lambda python: "pgo 0123456789abcdef")
    calls = []
    monkeypatch.setattr(pgo, "install", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(pgo, "train", lambda *a, **k: calls.append(a))
    assert pgo.main([]) == 0
    assert calls == []
