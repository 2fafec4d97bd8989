"""Build the Pong reference from the pinned PufferLib sdist, offline after one download.

PufferLib 3.0.0's ``setup.py`` imports torch, downloads raylib from the internet and switches
to CUDA when ``nvcc`` is found. Pong needs none of that: its C extension is one translation
unit (``ocean/pong/binding.c``) plus the raylib headers and static library that the sdist
already ships. This module downloads the sdist from the package index (sha256-pinned),
extracts those files and compiles the extension with setuptools using the very flags of
PufferLib's ``setup.py``.

CLI: ``python -m pong_port.reference_build``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sys
import sysconfig
import tarfile
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from envport.cache import cache_root

PUFFERLIB_VERSION = "3.0.0"
SDIST = f"pufferlib-{PUFFERLIB_VERSION}.tar.gz"
SDIST_SHA256 = "7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9"
MEMBERS = (
    "pufferlib/ocean/pong/binding.c",
    "pufferlib/ocean/pong/pong.h",
    "pufferlib/ocean/pong/pong.py",
    "pufferlib/ocean/env_binding.h",
    "LICENSE",
)
RAYLIB = "raylib-5.5_linux_amd64"
# PufferLib 3.0.0 setup.py, non-debug Linux build
COMPILE_ARGS = [
    "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION", "-DPLATFORM_DESKTOP", "-O2", "-flto",
    "-Wno-alloc-size-larger-than", "-Wno-implicit-function-declaration", "-fmax-errors=3",
]
LINK_ARGS = ["-fwrapv", "-O2", "-Bsymbolic-functions"]
INSTALL_HINT = "envport install-reference pong   (or: python -m pong_port.reference_build)"


def source_dir() -> Path:
    return cache_root() / f"pufferlib-{PUFFERLIB_VERSION}"


def build_dir() -> Path:
    """One build per interpreter and numpy ABI (the extension links against both)."""
    import numpy

    tag = f"{sys.implementation.cache_tag}-np{numpy.__version__.split('.')[0]}"
    return source_dir() / f"build-{tag}"


def extension_path() -> Path:
    return build_dir() / f"binding{sysconfig.get_config_var('EXT_SUFFIX')}"


def _index_url() -> str:
    return os.environ.get("PIP_INDEX_URL") or os.environ.get("UV_INDEX_URL") or "https://pypi.org/simple"


def download_sdist(dest: Path) -> Path:
    target = dest / SDIST
    if target.exists() and _sha256(target) == SDIST_SHA256:
        return target
    page_url = f"{_index_url().rstrip('/')}/pufferlib/"
    with urllib.request.urlopen(page_url, timeout=120) as resp:
        page = resp.read().decode()
    match = re.search(r'href="([^"]*/' + re.escape(SDIST) + r')(#[^"]*)?"', page)
    if not match:
        raise RuntimeError(f"{SDIST} not listed at {page_url}")
    url = urllib.parse.urljoin(page_url, match.group(1))
    tmp = target.with_suffix(".part")
    dest.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=600) as resp, open(tmp, "wb") as out:
        shutil.copyfileobj(resp, out)
    digest = _sha256(tmp)
    if digest != SDIST_SHA256:
        tmp.unlink()
        raise RuntimeError(f"{SDIST}: sha256 {digest} does not match the pinned {SDIST_SHA256}")
    tmp.rename(target)
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def extract(sdist: Path, dest: Path) -> None:
    prefix = f"pufferlib-{PUFFERLIB_VERSION}/"
    wanted = set(MEMBERS)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix(prefix)
            if name in wanted or name.startswith(f"{RAYLIB}/include/") or name == f"{RAYLIB}/lib/libraylib.a":
                if not member.isfile():
                    continue
                out = dest / name
                out.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)


def compile_extension(src: Path, out_dir: Path) -> Path:
    import numpy
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        raise RuntimeError("no C compiler found: install gcc (apt-get install -y gcc)")
    ext = Extension(
        "binding",
        sources=[str(src / "pufferlib/ocean/pong/binding.c")],
        include_dirs=[numpy.get_include(), str(src / RAYLIB / "include")],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
        extra_objects=[str(src / RAYLIB / "lib/libraylib.a")],
    )
    with tempfile.TemporaryDirectory() as tmp:
        dist = Distribution({"name": "pong_reference", "ext_modules": [ext]})
        cmd = build_ext(dist)
        cmd.build_temp = os.path.join(tmp, "temp")
        cmd.build_lib = os.path.join(tmp, "lib")
        cmd.ensure_finalized()
        cmd.run()
        built = Path(cmd.get_ext_fullpath("binding"))
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / built.name
        shutil.copy2(built, target)
    return target


def build(force: bool = False, quiet: bool = False) -> Path:
    """Download, extract and compile if needed; return the extension's path."""
    say = (lambda *_: None) if quiet else (lambda msg: print(f"[pong reference] {msg}", file=sys.stderr))
    if extension_path().exists() and not force:
        say(f"up to date: {extension_path()}")
        return extension_path()
    src = source_dir()
    if force or not (src / MEMBERS[0]).exists():
        say(f"downloading {SDIST} (sha256 pinned)")
        sdist = download_sdist(cache_root() / "downloads")
        say(f"extracting Pong sources and raylib into {src}")
        extract(sdist, src)
    say("compiling ocean/pong/binding.c with PufferLib's setup.py flags")
    path = compile_extension(src, build_dir())
    say(f"built {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="download and rebuild even if present")
    args = parser.parse_args(argv)
    build(force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
