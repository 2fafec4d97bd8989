"""Install the pinned Pokémon Showdown from npm into envport's cache (never vendored).

``npm install --omit=optional`` skips sqlite and the other server-only optional packages, so
nothing is compiled. CLI: ``envport install-reference pokejax``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from envport import ReferenceNotInstalledError
from envport.cache import cache_root

SHOWDOWN_VERSION = "0.11.11"
INSTALL_HINT = "envport install-reference pokejax"


def install_dir() -> Path:
    return cache_root() / f"pokemon-showdown-{SHOWDOWN_VERSION}"


def package_dir() -> Path:
    return install_dir() / "node_modules" / "pokemon-showdown"


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ReferenceNotInstalledError(
            f"'{name}' was not found on PATH. The Showdown reference needs Node.js >= 18 with "
            f"npm (Debian/Ubuntu: apt-get install -y nodejs npm), then: {INSTALL_HINT}"
        )
    return path


def installed_version() -> str | None:
    manifest = package_dir() / "package.json"
    if not manifest.exists():
        return None
    import json

    return json.loads(manifest.read_text()).get("version")


def check() -> Path:
    """The installed package's folder, or a clear error naming what is missing."""
    require_tool("node")
    version = installed_version()
    if version != SHOWDOWN_VERSION:
        found = "not installed" if version is None else f"version {version} installed"
        raise ReferenceNotInstalledError(
            f"pokemon-showdown {SHOWDOWN_VERSION} is {found} (looked in {install_dir()}). "
            f"Install it with:\n    {INSTALL_HINT}"
        )
    return package_dir()


def install(force: bool = False, quiet: bool = False) -> Path:
    if installed_version() == SHOWDOWN_VERSION and not force:
        if not quiet:
            print(f"[showdown] up to date: {package_dir()}", file=sys.stderr)
        return package_dir()
    npm = require_tool("npm")
    require_tool("node")
    target = install_dir()
    target.mkdir(parents=True, exist_ok=True)
    (target / "package.json").write_text('{"name": "envport-showdown-reference", "private": true}\n')
    cmd = [npm, "install", "--omit=optional", "--no-audit", "--no-fund", "--no-save",
           f"pokemon-showdown@{SHOWDOWN_VERSION}"]
    if not quiet:
        print(f"[showdown] {' '.join(cmd[1:])} (in {target})", file=sys.stderr)
    proc = subprocess.run(cmd, cwd=target, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReferenceNotInstalledError(
            f"npm failed to install pokemon-showdown {SHOWDOWN_VERSION}:\n{proc.stderr[-2000:]}")
    return check()


if __name__ == "__main__":
    install(force="--force" in sys.argv)
