"""``python -m envport.generate.verify_worker <env> --out DIR [--compose M1,M2] [--levels ...]``:
the compose check and the verifier as the sandboxed subprocess of a generation run (the work
dir's package is first on PYTHONPATH).

Compose (``--compose``): every listed module of the plan imports, and with ``--build`` the env
is looked up in the registry and each L1 target's env is constructed; on failure the traceback
goes to ``DIR/compose.json`` and the exit code is 3. Then (unless ``--levels`` is empty) the
verification at those levels. Exit 0 when everything passed, 1 when a level failed, 2 on an
error, 3 when the package does not compose.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from envport import registry
from envport.errors import EnvportError
from envport.generate.compose_check import COMPOSE_FAILED, import_all, write


def compose(env: str, modules: list[str], build: bool) -> str | None:
    """None when every module imports (and the env builds); else what went wrong."""
    error = import_all(modules)
    if error is not None or not build:
        return error
    step = f"registry.get({env!r})"
    try:
        port = registry.get(env)
        for target in port.l1:
            step = f"building the L1 target {target.name!r} (make_env())"
            target.make_env()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return f"{step} failed:\n{''.join(traceback.format_exception(exc))}"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("env")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--levels", default="L1,L2,L3")
    p.add_argument("--scale", type=float, default=0.01)
    p.add_argument("--compose", default=None, help="comma-separated modules that must import")
    p.add_argument("--build", action="store_true", help="compose: also build the env's L1 targets")
    args = p.parse_args(argv)
    levels = [s.strip().upper() for s in args.levels.split(",") if s.strip()]
    if args.compose is not None:
        modules = [m for m in args.compose.split(",") if m]
        error = compose(args.env, modules, args.build)
        args.out.mkdir(parents=True, exist_ok=True)
        write(str(args.out / "compose.json"), modules, error, args.build)
        if error is not None:
            print(f"{args.env}: the package does not compose: {error}", file=sys.stderr)
            return COMPOSE_FAILED
        print(f"{args.env}: composed ({len(modules)} module(s) import"
              + (", the env builds)" if args.build else ")"))
    if not levels:
        return 0
    from envport import verify
    from envport.generate.failures import from_verify_report
    from envport.generate.tools import levels_ran

    try:
        port = registry.get(args.env)
        port.check_reference()
        report = verify.run(port, out_dir=args.out, scale=args.scale, levels=levels, progress=False)
    except EnvportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ok = from_verify_report(report) is None and levels_ran(report, levels)
    print(f"{args.env}: {'PASSED' if ok else 'FAILED'} {report['levels']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
