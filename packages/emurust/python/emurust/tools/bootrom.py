"""Copy PyBoy 2.8.1's DMG boot ROM into the emurust crate (packages/emurust/src/bootrom_dmg.bin).

The 256 bytes are PyBoy's own open boot ROM (LGPL-3.0, like emurust); `bootrom.rs` embeds them with
`include_bytes!`. The copy is refused unless the source has the expected SHA-256, so the committed
file is exactly the one PyBoy runs.

    python -m emurust.tools.bootrom [--pyboy-dir DIR]   # in a checkout (the crate's src/)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

SHA256 = "817b42b6f9b53e760de323b8bc75629c15ad65b04638f5ee0b40b94316f290dd"


def pyboy_dir() -> Path:
    import pyboy  # imported lazily: only this script needs PyBoy installed

    return Path(pyboy.__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pyboy-dir", type=Path, help="the installed pyboy package folder")
    ap.add_argument("--dest", type=Path, default=None,
                    help="default: the crate's src/bootrom_dmg.bin")
    args = ap.parse_args(argv)
    if args.dest is None:
        from emurust.tools import crate_dir

        args.dest = crate_dir() / "src" / "bootrom_dmg.bin"
    src = (args.pyboy_dir or pyboy_dir()) / "core" / "bootrom_dmg.bin"
    data = src.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256 or len(data) != 256:
        print(f"{src}: sha256 {digest}, {len(data)} bytes; expected {SHA256}, 256", file=sys.stderr)
        return 1
    args.dest.write_bytes(data)
    print(f"wrote {args.dest} ({len(data)} bytes, sha256 {digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
