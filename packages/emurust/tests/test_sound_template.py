"""The committed sound-state template is what emurust.tools.sound_template makes from PyBoy.

src/sound_template.rs holds the 2,032-byte sound block of a fresh sound-off PyBoy 2.8.1 state; the
Rust side patches its scalar fields. Rerunning the generator into a temporary file must give the
committed file byte for byte, so a PyBoy upgrade (or a hand edit) cannot go unnoticed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# this package's file, next to its tests (a work dir of envport generate has both: the generator
# is the copy's own python/emurust/tools)
COMMITTED = Path(__file__).resolve().parents[1] / "src" / "sound_template.rs"


def test_sound_template_is_regenerated_identically(tmp_path: Path) -> None:
    pytest.importorskip("pyboy", reason="the reference (pyboy==2.8.1) generates the template")
    out = tmp_path / "sound_template.rs"
    subprocess.run([sys.executable, "-m", "emurust.tools.sound_template", "--out", str(out)],
                   check=True, cwd=tmp_path)
    assert out.read_text() == COMMITTED.read_text()


def test_template_has_the_48khz_block_size() -> None:
    # 2,032 bytes (docs/emurust.md section 1): one "0x.." entry per byte in the array body.
    text = COMMITTED.read_text()
    assert "pub const SOUND_TEMPLATE: [u8; 2032]" in text
    assert text.count("0x") == 2032
