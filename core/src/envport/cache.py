"""Where envport keeps what it downloads or builds for references (sdists, npm installs,
compiled extensions): ``$ENVPORT_CACHE``, else ``~/.cache/envport``. Shared by every env
package so that one variable relocates all of it (tests point it at a temp dir)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("ENVPORT_CACHE", Path.home() / ".cache" / "envport"))
