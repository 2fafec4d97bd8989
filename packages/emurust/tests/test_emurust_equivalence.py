"""Live equivalence against PyBoy 2.8.1: both from power-on with the same seeded random button
events, every frame compared (registers+cycles, FF00-FFFF, OAM, WRAM, VRAM, screen; save-state
bytes at the end), on the repository's test ROMs and on a ROM made here. A failure names the
first differing field (see emurust.verify.first_difference). Long runs are marked slow."""

from __future__ import annotations

import io

import numpy as np
import pytest

from emurust.verify import (
    RomCase,
    StateSampler,
    describe_offset,
    first_difference,
    make_backend,
    make_emurust,
    mask_host_time,
    rtc_block_offset,
    run_side_by_side,
    sample_actions,
    save_state_bytes,
)


def _case(name, path, frames=512):
    return RomCase(name, path, frames)


def test_tiny_rom_side_by_side(tiny_rom, pyboy_ref):
    frames, diff = run_side_by_side(_case("tiny", tiny_rom), 150, seed=0, p=0.1, state_every=25)
    assert diff is None, diff


def test_every_test_rom_side_by_side_short(built_roms, pyboy_ref):
    failures = []
    for name, path in sorted(built_roms.items()):
        _, diff = run_side_by_side(_case(name, path), 160, seed=1, p=0.05)
        if diff:
            failures.append(diff)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["game", "mbc3_rtc"])
def test_l2_sample_pyboy_states_into_fresh_emulators(built_roms, pyboy_ref, name):
    """L2 by hand: PyBoy's save states -> a fresh PyBoy and a fresh emurust -> one frame."""
    rng = np.random.default_rng(5)
    case = _case(name, built_roms[name])
    states, actions = StateSampler(case, max_gap=20)(rng, 8)
    ref = make_backend(case, 8, pyboy_ref, "pyboy")
    cand = make_backend(case, 8, make_emurust, "emurust")
    ref.load(states)
    cand.load(states)
    ref.step(actions)
    cand.step(actions)
    rs, cs = ref.state(), cand.state()
    for i in range(8):
        diff = first_difference({k: v[i] for k, v in rs.items()}, {k: v[i] for k, v in cs.items()})
        assert diff is None, f"case {i}: {diff}"


def test_envport_l3_runs_through_the_core(built_roms, pyboy_ref, tmp_path):
    """The port's L3 suite shape, run by envport's own L3 driver on one short episode."""
    envport = pytest.importorskip("envport")
    from envport.registry import L3Suite
    from envport.verify.l3 import run_l3

    case = _case("game", built_roms["game"], frames=96)
    suite = L3Suite(
        name="game short", episodes=1, max_steps_per_seed=96,
        make_reference=lambda: make_backend(case, 1, pyboy_ref, "pyboy"),
        make_candidate=lambda: make_backend(case, 1, make_emurust, "emurust"),
        sample_actions=lambda rng, n: sample_actions(rng, n, 0.1),
        neutral_action=lambda n: np.zeros(n, np.int32))
    res = run_l3(suite, episodes=1, regressions_dir=tmp_path)
    assert res.mismatches == 0, [d.summary() for d in res.divergences]
    assert res.episodes >= 1
    del envport


def test_port_is_registered_and_cheap_to_load():
    registry = pytest.importorskip("envport.registry")
    if "emurust" not in registry.available():
        pytest.skip("emurust is not installed as an envport entry point in this environment")
    port = registry.get("emurust")
    assert port.name == "emurust" and port.l2 and port.l3 and port.bench


def test_first_difference_names_the_field():
    a = {k: np.zeros(3, np.uint8) for k in ("registers", "io", "hram", "oam", "wram", "vram",
                                             "screen", "frame_count", "terminated", "truncated",
                                             "save_state")}
    b = {k: v.copy() for k, v in a.items()}
    assert first_difference(a, b) is None
    b["wram"][2] = 7
    b["save_state"][1] = 1
    assert first_difference(a, b).startswith("wram[2] (address 0xC002)")
    assert describe_offset(6 + 10, 153524) == "cpu.PC (+10)"
    assert describe_offset(153524 - 10379 - 38 - 1, 153524) == "cartridge (+8195)"
    assert describe_offset(45 + 8357, 153524).startswith("lcd.LY")


def test_state_from_pyboy_loads_and_saves_back_identically(built_roms, pyboy_ref):
    for name, path in sorted(built_roms.items()):
        rtc = rtc_block_offset(path.read_bytes())
        ref = pyboy_ref(path)
        cand = make_emurust(path)
        if rtc is not None:  # see emurust.verify: locked RTC, host-time doubles masked
            ref.rtc_lock_experimental(True)
            cand.rtc_lock_experimental(True)
        ref.tick(100)
        data = mask_host_time(np.frombuffer(save_state_bytes(ref), np.uint8), rtc).tobytes()
        cand.load_state(io.BytesIO(save_state_bytes(ref)))
        got = mask_host_time(np.frombuffer(save_state_bytes(cand), np.uint8), rtc).tobytes()
        if got != data:
            i = next(k for k in range(min(len(got), len(data))) if got[k] != data[k]) \
                if len(got) == len(data) else min(len(got), len(data))
            pytest.fail(f"{name}: byte {i} ({describe_offset(i, len(data))}) differs after load+save")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_test_rom_side_by_side_long(built_roms, pyboy_ref, seed):
    failures = []
    for name, path in sorted(built_roms.items()):
        _, diff = run_side_by_side(_case(name, path), 3000, seed=seed, p=0.03, state_every=500)
        if diff:
            failures.append(diff)
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_game_ten_thousand_frames(built_roms, pyboy_ref):
    _, diff = run_side_by_side(_case("game", built_roms["game"]), 10_000, seed=42, p=0.05,
                               state_every=1000)
    assert diff is None, diff
