#!/usr/bin/env python3
"""Regenerate this folder (packages/pong-port/tests/regressions/): the divergences that the two XLA float
rewrites (FMA contraction, division by reciprocal) cause when the port's guards are removed,
found by L3 against the live C reference and shrunk to their shortest action prefix.

Run in the dev venv: ``python packages/pong-port/tests/regressions/regenerate.py``.
"""

import shutil
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # the package's tests/ (mutants.py)
sys.path.insert(0, str(TESTS))

from mutants import XlaFma, XlaReciprocal, mutant_suite  # noqa: E402

from envport.verify.l3 import run_l3  # noqa: E402
from pong_port.port import PORT  # noqa: E402

# engine -> the L3 suite (by name) where its divergence shows
CASES = {XlaFma: "continuous, num_envs=1, frameskip=1", XlaReciprocal: "num_envs=16, frameskip=8"}


def main() -> int:
    out = TESTS / "regressions"
    shutil.rmtree(out, ignore_errors=True)
    suites = {s.name: s for s in PORT.l3}
    for engine, suite_name in CASES.items():
        res = run_l3(mutant_suite(suites[suite_name], engine), episodes=5, regressions_dir=out)
        if not res.divergences:
            print(f"{engine.__name__}: no divergence found", file=sys.stderr)
            return 1
        print(f"{engine.__name__}: {res.divergences[0].summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
