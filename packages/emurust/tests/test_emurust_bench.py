"""``python -m emurust.bench`` with tiny durations: the report's structure, both sides stepped."""

from __future__ import annotations

import json

from emurust import bench


def test_bench_module_tiny(tmp_path, built_roms, pyboy_ref, capsys):
    rc = bench.main(["--seconds", "0.03", "--rounds", "2", "--vec-rounds", "2",
                     "--roms", "game,cpu_alu", "--sizes", "1,2", "--out", str(tmp_path)])
    assert rc == 0
    dest = tmp_path / "emurust"
    rep = json.loads((dest / "bench_single.json").read_text())
    md = (dest / "bench_single.md").read_text()
    assert "| game |" in md and "| cpu_alu |" in md and "PyBoy × N processes" in md
    assert "bench_single.json" in capsys.readouterr().out

    host = rep["host"]
    assert host["cpu_count"] >= 1 and host["cpu_model"] and host["pyboy"] == "2.8.1"
    assert host["emurust"]
    assert rep["targets"] == {"render_off": 3.0, "render_on": 2.0}

    assert [r["rom"] for r in rep["single"]] == ["game", "cpu_alu"]
    for row in rep["single"]:
        # same frames, same inputs, same emulator: both sides end in the same state
        assert row["in_lockstep"] is True
        for mode in ("render_off", "render_on"):
            m = row[mode]
            assert m["frames_per_round"] >= bench.MIN_FRAMES
            assert row["frames_timed_per_side"][mode] == 2 * m["frames_per_round"]
            assert len(m["emurust_fps_rounds"]) == len(m["pyboy_fps_rounds"]) == 2
            assert m["emurust_fps"] > 0 and m["pyboy_fps"] > 0
            assert m["emurust_fps"] == max(m["emurust_fps_rounds"])
            assert abs(m["ratio"] - m["emurust_fps"] / m["pyboy_fps"]) < 1e-9
    for mode in ("render_off", "render_on"):
        s = rep["single_summary"][mode]
        assert s["roms"] == 2 and s["target"] == bench.TARGETS[mode]
        assert s["min_ratio"] <= s["geomean_ratio"] <= s["max_ratio"]
        assert s["game_ratio"] == rep["single"][0][mode]["ratio"]

    assert [r["num_envs"] for r in rep["vec"]] == [1, 2]
    for row in rep["vec"]:
        assert row["emurust_fps"] > 0 and row["pyboy_fps"] > 0
        assert row["emurust_frames_per_round"] > 0 and row["pyboy_frames_per_round"] > 0
        assert len(row["emurust_fps_rounds"]) == len(row["pyboy_fps_rounds"]) == 2
        assert row["pyboy_frames_per_round"] % row["num_envs"] == 0


def test_action_sequence_is_seeded():
    a, b = bench.action_sequence(7, 256, 3), bench.action_sequence(7, 256, 3)
    assert a.shape == (256, 3) and a.dtype.name == "uint8"
    assert (a == b).all() and not (a == bench.action_sequence(8, 256, 3)).all()
    assert len({int(x) for x in a[:, 0]}) > 1
