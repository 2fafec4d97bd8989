"""emurust as a published package: one version (Cargo.toml's, read by maturin, reported by
``emurust.__version__``), the ROM sources inside the Python package, ROMs built into a user cache
folder named by the sources (so an installed wheel verifies without a checkout), and the stage
hooks the generic noxfile calls."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import emurust
from emurust import port
from emurust.tools import build_roms

CRATE = Path(__file__).resolve().parents[1]


def test_one_version_cargo_metadata_and_module():
    cargo = tomllib.loads((CRATE / "Cargo.toml").read_text())["package"]["version"]
    project = tomllib.loads((CRATE / "pyproject.toml").read_text())["project"]
    assert project["dynamic"] == ["version"] and "version" not in project
    assert metadata.version("emurust") == cargo == emurust.__version__


def test_rom_sources_ship_inside_the_python_package():
    package = Path(emurust.__file__).parent
    assert build_roms.ROMS_DIR == package / "roms"
    assert {"game", "cpu_alu", "mbc1"} <= set(build_roms.sources())
    assert (package / "roms" / "include" / "header.inc").is_file()
    assert port.rom_names() == sorted(build_roms.sources())


def test_roms_go_to_a_user_cache_folder_named_by_the_sources(monkeypatch, tmp_path):
    monkeypatch.delenv("EMURUST_ROMS", raising=False)
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path))
    digest = build_roms.sources_digest()
    assert len(digest) == 16 and digest == build_roms.sources_digest()
    assert port.rom_dir() == tmp_path / "emurust" / "roms" / digest
    monkeypatch.setenv("EMURUST_ROMS", str(tmp_path / "mine"))
    assert port.rom_dir() == tmp_path / "mine"


def test_a_changed_source_gets_its_own_folder(monkeypatch, tmp_path):
    import shutil

    copy = tmp_path / "roms"
    shutil.copytree(build_roms.ROMS_DIR, copy)
    monkeypatch.setattr(build_roms, "ROMS_DIR", copy)
    before = build_roms.sources_digest()
    (copy / "game.s").write_text((copy / "game.s").read_text() + "\n; changed\n")
    assert build_roms.sources_digest() != before


def test_the_port_declares_its_stage_hooks():
    p = port.make_port()
    assert p.prepare is port.prepare
    assert [r.apt_package for r in p.system_requirements] == ["binutils-z80"]
    assert tuple(p.bench_batch_sizes) == port.BENCH_BATCH_SIZES
    assert [e.outputs for e in p.extra_benches] == [
        "bench_single.json, bench_single.md, bench_single.png"]
    train = p.session_commands("train", ["--steps", "1000", "--out", "r"])
    assert [c[:5] for c in train[:2]] == [["envport", "train", "emurust", "--target", "game.gb"],
                                         ["envport", "train", "emurust", "--target",
                                          "game.gb on PyBoy"]]
    assert all(c[-4:] == ["--steps", "1000", "--out", "r"] for c in train[:2])
    assert train[2][:4] == ["python", "-m", "emurust.train", "compare"] and train[2][-2:] == [
        "--out", "r"]
    assert p.session_commands("verify", ["--scale", "0.1"]) == [
        ["envport", "verify", "emurust", "--scale", "0.1"]]
    assert p.session_commands("tests", []) == []
