"""``python -m envport.generate.verify_worker <env> --out DIR``: the verifier as the sandboxed
subprocess of a generation run (the work dir's package is first on PYTHONPATH). Exit 0 when
every requested level passed, 1 when not, 2 on an error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envport import registry
from envport.errors import EnvportError


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("env")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--levels", default="L1,L2,L3")
    p.add_argument("--scale", type=float, default=0.01)
    args = p.parse_args(argv)
    from envport import verify
    from envport.generate.failures import from_verify_report
    from envport.generate.tools import levels_ran

    try:
        port = registry.get(args.env)
        port.check_reference()
        levels = [s.strip().upper() for s in args.levels.split(",") if s.strip()]
        report = verify.run(port, out_dir=args.out, scale=args.scale, levels=levels, progress=False)
    except EnvportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ok = from_verify_report(report) is None and levels_ran(report, levels)
    print(f"{args.env}: {'PASSED' if ok else 'FAILED'} {report['levels']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
