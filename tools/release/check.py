"""What a distribution must satisfy before it is uploaded. Each rule says what is wrong and
how to fix it; a file that breaks one is never uploaded.

Ours (an index accepts some of these, and a user's ``pip install`` then fails):
- no direct reference in ``Requires-Dist`` (``envport @ file:///...`` points into the build
  machine; PyPI refuses it at upload, other indexes do not);
- no ``linux_*`` platform tag (a wheel built for this machine's libc only; PyPI refuses it):
  Linux wheels are manylinux/musllinux, and ``auditwheel show`` must agree with the tag;
- a compiled wheel is ``abi3`` (one wheel for every CPython >= 3.11);
- name and version of the file agree with its metadata; a long description (the README),
  project URLs, a licence and classifiers are there (the page a user sees on the index).
Then ``twine check --strict`` (the README renders).
"""

from __future__ import annotations

import email.parser
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class ReleaseError(Exception):
    """A distribution breaks a release rule, or publishing cannot go on; the message says why
    and what to do."""


@dataclass(frozen=True)
class DistFile:
    path: Path
    kind: str        # "wheel" or "sdist"
    name: str        # normalized distribution name from the file name
    version: str
    tags: tuple[str, ...] = ()  # wheel: (python, abi, platform)


def normalize(name: str) -> str:
    """PEP 503 normalized name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_filename(path: Path) -> DistFile:
    name = path.name
    if name.endswith(".whl"):
        parts = name[:-4].split("-")
        if len(parts) not in (5, 6):
            raise ReleaseError(f"{name}: not a wheel file name (name-version-python-abi-platform)")
        return DistFile(path, "wheel", normalize(parts[0]), parts[1], tuple(parts[-3:]))
    if name.endswith(".tar.gz"):
        stem = name[:-7]
        dist, _, version = stem.rpartition("-")
        if not dist:
            raise ReleaseError(f"{name}: not an sdist file name (name-version.tar.gz)")
        return DistFile(path, "sdist", normalize(dist), version)
    raise ReleaseError(f"{name}: neither a wheel nor an sdist (.tar.gz)")


def read_metadata(dist: DistFile) -> email.message.Message:
    """The core metadata: a wheel's ``*.dist-info/METADATA``, an sdist's top ``PKG-INFO``."""
    if dist.kind == "wheel":
        with zipfile.ZipFile(dist.path) as z:
            names = [n for n in z.namelist()
                     if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if len(names) != 1:
                raise ReleaseError(f"{dist.path.name}: expected one .dist-info/METADATA, "
                                   f"found {names}")
            text = z.read(names[0]).decode()
    else:
        with tarfile.open(dist.path) as t:
            names = [m for m in t.getmembers()
                     if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")]
            if len(names) != 1:
                raise ReleaseError(f"{dist.path.name}: expected one top-level PKG-INFO")
            text = t.extractfile(names[0]).read().decode()
    return email.parser.Parser().parsestr(text)


DIRECT_REFERENCE = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*@")


def direct_references(meta: email.message.Message) -> list[str]:
    """``Requires-Dist`` entries that name a URL or path (PEP 508 ``name @ url``)."""
    return [r for r in meta.get_all("Requires-Dist") or [] if DIRECT_REFERENCE.match(r)]


def metadata_problems(dist: DistFile) -> list[str]:
    """Every rule of ours that ``dist`` breaks (empty: it may be uploaded)."""
    meta = read_metadata(dist)
    problems = []
    for req in direct_references(meta):
        problems.append(
            f"Requires-Dist {req!r} is a direct reference: an index refuses it or a user's pip "
            "cannot resolve it; depend on a version range from the index (e.g. 'envport>=0.1,<0.2')"
            " and keep the local source in [tool.uv.sources]")
    if normalize(meta.get("Name", "")) != dist.name:
        problems.append(f"metadata Name {meta.get('Name')!r} is not the file's {dist.name!r}")
    if meta.get("Version") != dist.version:
        problems.append(f"metadata Version {meta.get('Version')!r} is not the file's "
                        f"{dist.version!r}")
    if dist.kind == "wheel":
        python, abi, platform = dist.tags
        for plat in platform.split("."):
            if plat.startswith("linux_"):
                problems.append(
                    f"platform tag {plat!r}: a wheel for this machine only, which PyPI refuses; "
                    "build a manylinux wheel (maturin --zig --compatibility manylinux_2_28, or "
                    "auditwheel repair)")
        if abi not in ("none", "abi3"):
            problems.append(f"ABI tag {abi!r}: the compiled extension must be abi3 (PyO3's "
                            "abi3-py311 feature), one wheel for every CPython >= 3.11")
    if not (meta.get_payload() or "").strip():
        problems.append("no long description: set readme = \"README.md\" in pyproject.toml")
    if not meta.get_all("Project-URL"):
        problems.append("no project URLs: add [project.urls] (Repository, Changelog, ...)")
    if not meta.get_all("Classifier"):
        problems.append("no classifiers: add classifiers = [...] to [project]")
    if not (meta.get("License-Expression") or meta.get("License")):
        problems.append("no licence: set license = \"<SPDX expression>\" in [project]")
    return problems


def check_metadata(files: list[Path]) -> list[DistFile]:
    """Our rules on every file; raises :class:`ReleaseError` naming every problem."""
    dists = [parse_filename(Path(f)) for f in files]
    report = [f"{d.path.name}: {p}" for d in dists for p in metadata_problems(d)]
    if report:
        raise ReleaseError("refused, nothing uploaded:\n  " + "\n  ".join(report))
    return dists


def twine_check(files: list[Path]) -> None:
    res = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise ReleaseError(f"twine check --strict failed:\n{res.stdout}{res.stderr}")


def auditwheel_check(wheel: DistFile) -> str:
    """``auditwheel show``: the wheel's manylinux tag must be one it is consistent with."""
    platform = wheel.tags[2]
    res = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel.path)],
                         capture_output=True, text=True)
    out = " ".join((res.stdout + res.stderr).split())
    if res.returncode != 0:
        raise ReleaseError(f"auditwheel show {wheel.path.name} failed: {out}")
    tags = platform.split(".")
    if not any(t in out for t in tags):
        raise ReleaseError(f"auditwheel show {wheel.path.name} does not confirm {platform}: {out}")
    return out


def check_all(files: list[Path], log=print) -> list[DistFile]:
    """Every check, in order: ours, twine's, auditwheel's (for platform wheels)."""
    dists = check_metadata(files)
    twine_check(files)
    for d in dists:
        if d.kind == "wheel" and d.tags[2] != "any":
            log(f"auditwheel: {auditwheel_check(d)}")
    log("checked: " + ", ".join(d.path.name for d in dists))
    return dists
