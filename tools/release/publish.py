"""Upload checked distributions with ``uv publish``, refusing what must not be uploaded.

Refused, before anything is uploaded (every package of the run is checked first):
- no credentials: ``UV_PUBLISH_TOKEN`` (an API token of the index), or ``UV_PUBLISH_USERNAME``
  and ``UV_PUBLISH_PASSWORD``, or ``--trusted-publishing`` inside a GitHub Actions job that may
  request an OIDC token (``permissions: id-token: write``);
- a version the index already has (an index never takes a file twice; a new release needs a
  new version, in pyproject/Cargo.toml and CHANGELOG.md);
- any distribution that breaks a rule of :mod:`tools.release.check`.
The index is a parameter: ``--index-url`` is its upload URL (default PyPI's), ``--simple-url``
its PEP 503 simple API (default: derived, PyPI's or ``<index-url>/simple/``).
"""

from __future__ import annotations

import html.parser
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from tools.release.check import DistFile, ReleaseError, normalize, parse_filename

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"
KNOWN_SIMPLE = {
    PYPI_UPLOAD: "https://pypi.org/simple/",
    "https://test.pypi.org/legacy/": "https://test.pypi.org/simple/",
}


def simple_url_for(index_url: str) -> str:
    """PyPI's and TestPyPI's simple API, else ``<index-url>/simple/`` (pypiserver, devpi)."""
    if index_url in KNOWN_SIMPLE:
        return KNOWN_SIMPLE[index_url]
    base = index_url.rstrip("/")
    return base + "/" if base.endswith("/simple") else base + "/simple/"


def credentials(trusted_publishing: bool, environ=os.environ) -> list[str]:
    """The ``uv publish`` options for the credentials at hand, or a refusal saying how to
    give some (the secrets themselves stay in the environment, never on a command line)."""
    if trusted_publishing:
        if not environ.get("ACTIONS_ID_TOKEN_REQUEST_URL"):
            raise ReleaseError(
                "refused, nothing uploaded: --trusted-publishing needs a GitHub Actions job "
                "allowed to request an OIDC token (permissions: id-token: write) and a trusted "
                "publisher configured on the index for this repository and workflow")
        return ["--trusted-publishing", "always"]
    if environ.get("UV_PUBLISH_TOKEN"):
        return ["--trusted-publishing", "never"]
    if environ.get("UV_PUBLISH_USERNAME") and environ.get("UV_PUBLISH_PASSWORD"):
        return ["--trusted-publishing", "never"]
    raise ReleaseError(
        "refused, nothing uploaded: no credentials for the index. Set UV_PUBLISH_TOKEN to an API "
        "token of the index (PyPI: https://pypi.org/manage/account/token/), or "
        "UV_PUBLISH_USERNAME and UV_PUBLISH_PASSWORD, or publish from the release workflow with "
        "--trusted-publishing")


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.files: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href") or ""
            self.files.append(href.split("#")[0].rstrip("/").rsplit("/", 1)[-1])


def files_on_index(simple_url: str, name: str, timeout: float = 30.0) -> list[str]:
    """File names the index lists for ``name`` (empty when it does not know the project)."""
    url = simple_url.rstrip("/") + f"/{normalize(name)}/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            text = r.read().decode()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise ReleaseError(f"cannot ask {url} which versions exist (HTTP {exc.code}); "
                           "refused, nothing uploaded") from None
    except OSError as exc:
        raise ReleaseError(f"cannot reach {url} to ask which versions exist ({exc}); "
                           "refused, nothing uploaded") from None
    links = _Links()
    links.feed(text)
    return links.files


def _name_version(filename: str) -> tuple[str, str] | None:
    try:
        d = parse_filename(Path(filename))
    except ReleaseError:  # an index may list other kinds of files
        return None
    return d.name, d.version


def check_not_on_index(dists: list[DistFile], simple_url: str) -> None:
    """Refuse when the index already has any version being published."""
    clashes = []
    for name, version in sorted({(d.name, d.version) for d in dists}):
        there = [f for f in files_on_index(simple_url, name)
                 if _name_version(f) == (name, version)]
        if there:
            clashes.append(f"{name} {version} is already on {simple_url} ({', '.join(there)})")
    if clashes:
        raise ReleaseError("refused, nothing uploaded: " + "; ".join(clashes)
                           + ". An index never replaces a file: bump the version (pyproject.toml "
                           "or Cargo.toml) and add its CHANGELOG.md entry")


def upload(files: list[Path], index_url: str, options: list[str]) -> None:
    uv = shutil.which("uv")
    if uv is None:
        raise ReleaseError("uv not found on PATH: run through ./dev (it puts .tools/bin on PATH)")
    subprocess.run([uv, "publish", "--publish-url", index_url, *options, *map(str, files)],
                   check=True)
