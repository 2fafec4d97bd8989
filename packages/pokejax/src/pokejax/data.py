"""Gen 1 tables extracted from the installed Showdown (never typed by hand).

``python -m pokejax.data`` regenerates
``pokejax/data/gen1.json`` from the pinned Showdown; a test checks the committed file equals a
fresh extraction.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

from pokejax import install

DATA_FILE = "gen1.json"


def extract() -> dict:
    """Run the extractor against the installed reference."""
    package = install.check()
    node = install.require_tool("node")
    script = files("pokejax").joinpath("js/extract.js")
    proc = subprocess.run([node, str(script), str(package)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"data extraction failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def data_path() -> Path:
    return Path(str(files("pokejax").joinpath("data", DATA_FILE)))


@functools.cache
def load() -> dict:
    return json.loads(data_path().read_text())


def write(data: dict, path: Path | None = None) -> Path:
    path = path or data_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


if __name__ == "__main__":
    print(write(extract()), file=sys.stderr)
