"""Build one package: its sdist, then its wheel from the unpacked sdist alone, offline.

Building the wheel from the sdist (as an index's users and ``pip install --no-binary`` do) is
the test that the sdist is self-contained: the unpacked sdist lies in a temporary folder outside
the repository, and the build runs without a network (a fresh network namespace where
``unshare`` allows it, and in any case ``UV_OFFLINE``, ``PIP_NO_INDEX``, ``CARGO_NET_OFFLINE``):
everything the build reads comes from the sdist, the installed build backend and, for a Rust
crate, the crates cargo already fetched.

- A hatchling package: its PEP 517 ``build_wheel``, in this interpreter (the release tools' venv
  has hatchling), so no build environment is fetched.
- A maturin crate: ``maturin build --release --locked --zig --compatibility manylinux_2_28``:
  zig (the ``ziglang`` package) links against glibc 2.28's symbols, so the wheel is manylinux
  from any Linux host; PyO3's ``abi3-py311`` makes it one wheel for every CPython >= 3.11.

Both files are cached by content (``$ENVPORT_CACHE/dist/<package>-<key>/``; the key hashes the
package's files as git lists them, this module and the tools' versions): an unchanged package
is not rebuilt, which keeps the index test within CI's minutes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

from tools.release.check import ReleaseError

OFFLINE_ENV = {"UV_OFFLINE": "1", "PIP_NO_INDEX": "1", "CARGO_NET_OFFLINE": "true"}
MANYLINUX = "manylinux_2_28"
# bump when the build recipe changes in a way the hashed files do not show
RECIPE = "1"
KEEP = 4  # cached builds kept per package (several checkouts may share the cache)


def log(msg: str) -> None:
    print(f"[release] {msg}", flush=True)


def cache_root() -> Path:
    return Path(os.environ.get("ENVPORT_CACHE", Path.home() / ".cache" / "envport")) / "dist"


def package_files(folder: Path) -> list[Path]:
    """The files that make the package: what git tracks or would track (ignored build outputs
    and caches left out); every file when the folder is not in a git checkout."""
    res = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", "."],
                         cwd=folder, capture_output=True)
    if res.returncode == 0:
        names = [n for n in res.stdout.decode().split("\0") if n]
        return sorted(folder / n for n in names if (folder / n).is_file())
    skip = {"target", "build", "dist", "__pycache__", ".venv"}
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not skip & set(p.relative_to(folder).parts))


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


def content_key(folder: Path) -> str:
    h = hashlib.sha256(f"{RECIPE}\0{sys.version_info[:2]}".encode())
    for tool in ("hatchling", "maturin", "ziglang"):
        h.update(f"{tool}={_version(tool)}\0".encode())
    h.update(Path(__file__).read_bytes())
    for f in package_files(folder):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def backend(project: Path) -> str:
    with open(project / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["build-system"]["build-backend"]


def distribution(project: Path) -> str:
    with open(project / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["name"]


def _offline_prefix() -> list[str]:
    """``unshare --net`` when this process may make a network namespace (root in CI): the build
    then has no network at all; else [] (the offline variables still apply)."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    return ["unshare", "--net"] if probe.returncode == 0 else []


def build_sdist(folder: Path, out: Path) -> Path:
    uv = shutil.which("uv")
    if uv is None:
        raise ReleaseError("uv not found on PATH: run through ./dev (it puts .tools/bin on PATH)")
    subprocess.run([uv, "build", "--sdist", str(folder), "--out-dir", str(out)], check=True)
    [sdist] = out.glob("*.tar.gz")
    return sdist


def unpack(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as t:
        t.extractall(into, filter="data")
    [root] = [p for p in into.iterdir() if p.is_dir()]
    # fresh mtimes: the shared cargo target dir must never take an artifact built from other
    # sources for up to date (cargo compares mtimes; the tarball keeps the files' old ones)
    for f in root.rglob("*"):
        os.utime(f)
    return root


def build_wheel(project: Path, out: Path) -> Path:
    """The wheel of an unpacked sdist, offline."""
    env = {**os.environ, **OFFLINE_ENV}
    prefix = _offline_prefix()
    log("wheel from the unpacked sdist, offline " + ("(in a network namespace without network)" if prefix else "(UV_OFFLINE, PIP_NO_INDEX, CARGO_NET_OFFLINE; no network namespace here)"))
    kind = backend(project)
    if kind == "maturin":
        env["CARGO_TARGET_DIR"] = str(cache_root() / "cargo-target")  # reuses compiled crates
        # maturin finds zig as `python -m ziglang` through the python on PATH: this venv's
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        cmd = [sys.executable, "-m", "maturin", "build", "--release", "--locked", "--zig",
               "--compatibility", MANYLINUX, "--interpreter", sys.executable,
               "--manifest-path", str(project / "Cargo.toml"), "--out", str(out)]
    elif kind == "hatchling.build":
        cmd = [sys.executable, "-c",
               "import sys, hatchling.build as b; b.build_wheel(sys.argv[1])", str(out)]
    else:
        raise ReleaseError(f"{project.name}: build backend {kind!r} is not one this tool builds "
                           "(hatchling.build, maturin)")
    res = subprocess.run([*prefix, *cmd], cwd=project, env=env)
    if res.returncode != 0:
        raise ReleaseError(f"{project.name}: the wheel does not build from the sdist alone, "
                           f"offline (exit {res.returncode}); see the output above")
    [wheel] = out.glob("*.whl")
    return wheel


def _prune(name: str) -> None:
    """Keep the ``KEEP`` most recent cached builds of ``name``."""
    entries = sorted((d for d in cache_root().glob(f"{name}-*")
                      if d.is_dir() and d.name[len(name) + 1:].isalnum()),
                     key=lambda d: d.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def build(folder: Path, out: Path, log=log) -> list[Path]:
    """sdist and wheel of the package in ``folder`` -> ``out`` (from the cache when unchanged)."""
    folder = Path(folder).resolve()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = distribution(folder)
    cached = cache_root() / f"{name}-{content_key(folder)}"
    files = sorted(cached.glob("*.tar.gz")) + sorted(cached.glob("*.whl"))
    if len(files) == 2:
        log(f"{name}: unchanged, from the cache {cached}")
    else:
        with tempfile.TemporaryDirectory(prefix=f"release-{name}-") as tmp:
            tmp = Path(tmp)
            sdist_dir, src, wheel_dir = tmp / "sdist", tmp / "src", tmp / "wheel"
            for d in (sdist_dir, src, wheel_dir):
                d.mkdir()
            sdist = build_sdist(folder, sdist_dir)
            wheel = build_wheel(unpack(sdist, src), wheel_dir)
            staging = cached.with_name(cached.name + f".tmp{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for f in (sdist, wheel):
                shutil.copy2(f, staging / f.name)
            shutil.rmtree(cached, ignore_errors=True)
            os.replace(staging, cached)
        files = sorted(cached.glob("*.tar.gz")) + sorted(cached.glob("*.whl"))
        log(f"{name}: built {', '.join(f.name for f in files)}")
        _prune(name)
    copied = []
    for f in files:
        shutil.copy2(f, out / f.name)
        copied.append(out / f.name)
    return copied
