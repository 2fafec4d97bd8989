#!/usr/bin/env python3
"""Build emurust's own Game Boy test ROMs from their assembly sources (``emurust/roms/*.s``).

Toolchain (docs/emurust.md §4): Debian ``binutils-z80`` only. There is no working gbz80 linker,
so each ROM is one source file laid out with ``.org`` (file offset == address for bank 0/1, and
``N * 0x4000`` for the data of bank N); shared code comes in through ``.include``. The assembler
output ends at the last emitted byte, so this script pads it to the size in the header and then
fixes the header: title, cartridge type (0x147), ROM size (0x148), RAM size (0x149), header
checksum (0x14D, checked by PyBoy) and global checksum (0x14E-0x14F, big-endian, not checked).

Per-ROM header settings live in the source itself, in a comment line such as::

    ; @header cart=0x01 rom=0x01 ram=0x00 title=MBC1

(a title with spaces is quoted: ``title="MY ROM"``).

The sources ship inside the package (wheel and sdist), so an installed emurust builds its ROMs
itself. They go to a user cache folder named by a digest of every source, include and this
builder's header logic (:func:`default_out`: ``$EMURUST_ROMS``, else
``$ENVPORT_CACHE/emurust/roms/<digest>``, ``~/.cache/envport`` by default): checkouts and installs
with the same sources share it, a changed source gets a folder of its own.
Unchanged ROMs are skipped: a content hash of the source, every include file, this script's
header logic version and the settings is stored next to each ROM.

Usage: ``python -m emurust.tools.build_roms [--out DIR] [--force] [NAME ...]``; importable as
``build_all(out_dir) -> dict[name, Path]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROMS_DIR = Path(__file__).resolve().parents[1] / "roms"  # inside the emurust package
AS = "z80-unknown-coff-as"
OBJCOPY = "z80-unknown-coff-objcopy"
APT_HINT = "install the Debian/Ubuntu package 'binutils-z80' (apt-get install -y binutils-z80)"
# Bumped whenever the padding/header logic below changes, so cached ROMs are rebuilt.
BUILD_LOGIC_VERSION = "1"
# Cartridge types PyBoy 2.8.1 accepts (core/cartridge/cartridge.py: CARTRIDGE_TABLE).
KNOWN_CART_TYPES = {
    0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x08, 0x09, 0x0F, 0x10, 0x11, 0x12, 0x13,
    0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E,
}  # fmt: skip
HEADER_RE = re.compile(r"^\s*;\s*@header\b(.*)$", re.MULTILINE)


class RomBuildError(RuntimeError):
    """A ROM could not be built (missing tool, assembler error, bad @header line)."""


@dataclass(frozen=True)
class HeaderSpec:
    cart: int
    rom: int
    ram: int
    title: str

    @property
    def size(self) -> int:
        return 0x8000 << self.rom


def parse_header(source: str, name: str) -> HeaderSpec:
    """Read the ``; @header key=value ...`` line of a ROM source (defaults: ROM only, 32 KiB)."""
    fields = {"cart": "0", "rom": "0", "ram": "0", "title": name.upper()}
    lines = HEADER_RE.findall(source)
    if len(lines) > 1:
        raise RomBuildError(f"{name}.s: more than one '; @header' line")
    for line in lines:
        for item in shlex.split(line):  # title="TWO WORDS" may be quoted
            key, sep, value = item.partition("=")
            if not sep or key not in fields:
                raise RomBuildError(f"{name}.s: bad @header item {item!r} (keys: {sorted(fields)})")
            fields[key] = value
    try:
        cart, rom, ram = (int(fields[k], 0) for k in ("cart", "rom", "ram"))
    except ValueError as exc:
        raise RomBuildError(f"{name}.s: @header numbers must be ints: {exc}") from None
    title = fields["title"]
    if cart not in KNOWN_CART_TYPES:
        raise RomBuildError(f"{name}.s: cartridge type {cart:#04x} is not one PyBoy knows")
    if not 0 <= rom <= 8:
        raise RomBuildError(f"{name}.s: ROM size code {rom:#x} out of range 0..8")
    if not 0 <= ram <= 5:
        raise RomBuildError(f"{name}.s: RAM size code {ram:#x} out of range 0..5")
    # 15 characters: byte 0x143 stays 0 so the ROM is never taken for a CGB one.
    if not title.isascii() or len(title) > 15:
        raise RomBuildError(f"{name}.s: title must be ASCII, at most 15 characters")
    return HeaderSpec(cart, rom, ram, title)


def fix_header(rom: bytearray, spec: HeaderSpec) -> None:
    """Write the header fields and both checksums in place (as the boot ROM/PyBoy read them)."""
    rom[0x134:0x144] = spec.title.encode("ascii").ljust(16, b"\0")
    rom[0x147] = spec.cart
    rom[0x148] = spec.rom
    rom[0x149] = spec.ram
    x = 0
    for b in rom[0x134:0x14D]:
        x = (x - b - 1) & 0xFF
    rom[0x14D] = x
    g = (sum(rom) - rom[0x14E] - rom[0x14F]) & 0xFFFF
    rom[0x14E], rom[0x14F] = g >> 8, g & 0xFF


def header_checksum_ok(rom: bytes) -> bool:
    """The check PyBoy makes when loading a cartridge (cartridge.validate_checksum)."""
    x = 0
    for b in rom[0x134:0x14D]:
        x = (x - b - 1) & 0xFF
    return rom[0x14D] == x


def _tools() -> tuple[str, str]:
    found = shutil.which(AS), shutil.which(OBJCOPY)
    if None in found:
        raise RomBuildError(f"'{AS}' / '{OBJCOPY}' not found on PATH: {APT_HINT}")
    return found  # type: ignore[return-value]


def _includes() -> list[Path]:
    return sorted((ROMS_DIR / "include").glob("*.inc"))


def _digest(source: bytes, spec: HeaderSpec) -> str:
    h = hashlib.sha256()
    h.update(BUILD_LOGIC_VERSION.encode())
    h.update(repr(spec).encode())
    h.update(source)
    for inc in _includes():  # any include may be used by any ROM: all of them count
        h.update(inc.name.encode())
        h.update(inc.read_bytes())
    return h.hexdigest()


def assemble(src: Path, spec: HeaderSpec) -> bytes:
    """Assemble one source into a padded ROM image with a fixed header."""
    as_bin, objcopy = _tools()
    with tempfile.TemporaryDirectory(prefix="emurust-rom-") as tmp:
        obj, raw = Path(tmp) / "rom.o", Path(tmp) / "rom.bin"
        cmd = [as_bin, "-march=gbz80", "-I", str(ROMS_DIR), "-o", str(obj), str(src)]
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROMS_DIR)
        if res.returncode != 0:
            msg = (res.stderr or res.stdout).strip()
            raise RomBuildError(f"assembling {src.name} failed:\n{msg}")
        res = subprocess.run([objcopy, "-O", "binary", str(obj), str(raw)], capture_output=True,
                             text=True)  # fmt: skip
        if res.returncode != 0:
            raise RomBuildError(f"objcopy for {src.name} failed:\n{res.stderr.strip()}")
        data = raw.read_bytes()
    if len(data) > spec.size:
        raise RomBuildError(
            f"{src.name}: {len(data)} bytes do not fit the declared ROM size {spec.size} "
            f"(rom={spec.rom:#x})"
        )
    if len(data) < 0x150:
        raise RomBuildError(f"{src.name}: image ends before the header ({len(data)} bytes)")
    rom = bytearray(data.ljust(spec.size, b"\0"))
    fix_header(rom, spec)
    return bytes(rom)


def sources() -> dict[str, Path]:
    return {p.stem: p for p in sorted(ROMS_DIR.glob("*.s"))}


def sources_digest() -> str:
    """Every source, include and the header logic version: names the cache folder."""
    h = hashlib.sha256(BUILD_LOGIC_VERSION.encode())
    for path in [*sources().values(), *_includes()]:
        h.update(path.relative_to(ROMS_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def default_out() -> Path:
    """``$EMURUST_ROMS``, else ``<envport cache>/emurust/roms/<digest of the sources>``."""
    env = os.environ.get("EMURUST_ROMS")
    if env:
        return Path(env)
    from envport.cache import cache_root

    return cache_root() / "emurust" / "roms" / sources_digest()


def _write_atomic(path: Path, data: bytes) -> None:
    """Readers (another process building the same folder) see the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def build_all(
    out_dir: Path | str | None = None, names: list[str] | None = None, force: bool = False,
    log=None,
) -> dict[str, Path]:  # fmt: skip
    """Build every ROM (or ``names``) into ``out_dir``; returns ``{name: path to name.gb}``.

    Raises RomBuildError on a missing assembler or any assembler error.
    """
    out = Path(out_dir) if out_dir is not None else default_out()
    out.mkdir(parents=True, exist_ok=True)
    srcs = sources()
    if names:
        unknown = sorted(set(names) - set(srcs))
        if unknown:
            raise RomBuildError(f"no such ROM source(s): {', '.join(unknown)}")
        srcs = {n: srcs[n] for n in names}
    built = {}
    for name, src in srcs.items():
        source = src.read_bytes()
        spec = parse_header(source.decode("utf-8"), name)
        digest = _digest(source, spec)
        rom_path, stamp = out / f"{name}.gb", out / f"{name}.gb.sha256"
        if not force and rom_path.exists() and stamp.exists() and stamp.read_text() == digest:
            if log:
                log(f"{name}: up to date")
        else:
            rom = assemble(src, spec)
            _write_atomic(rom_path, rom)
            _write_atomic(stamp, digest.encode())
            if log:
                log(f"{name}: built {len(rom)} bytes ({spec.title}, cart {spec.cart:#04x})")
        built[name] = rom_path
    return built


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default: $EMURUST_ROMS, else the user cache folder "
                         "of these sources)")
    ap.add_argument("--force", action="store_true", help="rebuild even if unchanged")
    ap.add_argument("names", nargs="*", help="ROM names (default: all roms/*.s)")
    args = ap.parse_args(argv)
    try:
        built = build_all(args.out, args.names or None, args.force, log=print)
    except RomBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if built:
        print(f"ROMs in {next(iter(built.values())).parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
