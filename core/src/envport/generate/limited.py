"""``python limited.py BYTES -- CMD ...``: set the address-space limit, then
become CMD. The sandbox starts generated code through this instead of a ``preexec_fn``, which
would force a plain fork() of a parent that may be running JAX's threads."""

from __future__ import annotations

import os
import resource
import sys


def main(argv: list[str]) -> None:
    limit, sep, *cmd = argv
    if sep != "--" or not cmd:
        raise SystemExit("usage: python limited.py BYTES -- CMD [ARGS...]")
    resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
