"""``python compose_check.py OUT_JSON MODULE [MODULE ...]``: the compose check of a generation run
(every module of the plan imports, with all of them present), run as a file in the sandbox so
that it starts without importing envport (and with it jax). Writes ``{"modules", "passed",
"error"}`` to OUT_JSON; exit 0 when every module imported, 3 when one did not.

The verifier's worker (``verify_worker --compose``) runs the same imports, then builds the env.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback

COMPOSE_FAILED = 3


def import_all(modules: list[str]) -> str | None:
    """None when every module imports; else which one failed and its traceback."""
    for name in modules:
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # an import can raise anything, SystemExit included
            return f"import {name} failed:\n{''.join(traceback.format_exception(exc))}"
    return None


def write(path: str, modules: list[str], error: str | None, build: bool = False) -> None:
    with open(path, "w") as f:
        json.dump({"modules": modules, "build": build, "passed": error is None, "error": error},
                  f, indent=2)
        f.write("\n")


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: python compose_check.py OUT_JSON MODULE [MODULE ...]")
    out, *modules = argv
    error = import_all(modules)
    write(out, modules, error)
    if error is not None:
        print(f"the package does not compose: {error}", file=sys.stderr)
        return COMPOSE_FAILED
    print(f"composed: {len(modules)} module(s) import")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
