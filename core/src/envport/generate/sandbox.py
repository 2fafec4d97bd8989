"""Run generated code only in a subprocess: its own session, a wall-clock timeout, a memory
limit (RLIMIT_AS), and an environment without secrets.

This is containment against runaway code (an infinite loop, a huge allocation, a leaked API
key), not a security jail: the subprocess still sees the file system with our user's rights.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# a variable whose name contains one of these never reaches generated code
SECRET_MARKERS = ("API_KEY", "TOKEN", "SECRET", "PASSWORD", "ANTHROPIC")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 900.0
    memory_bytes: int = 8 * 2**30  # address space; XLA:CPU needs a few GiB of it


@dataclass(frozen=True)
class SandboxResult:
    returncode: int
    output: str      # stdout and stderr interleaved
    timed_out: bool
    wall_s: float


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not any(m in k.upper() for m in SECRET_MARKERS)}
    env.update(extra or {})
    return env


def python_path(work_dir: Path) -> str:
    """The work dir's ``src`` first, so its package shadows the installed one."""
    parts = [str(Path(work_dir) / "src"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def run(argv: Sequence[str], cwd: Path, limits: Limits, env: dict[str, str] | None = None) -> SandboxResult:
    # the limit is set by a small launcher that then execs argv; run as a file, not with -m,
    # so that it starts without importing envport (and with it jax)
    launcher = [sys.executable, "-S", str(Path(__file__).with_name("limited.py")),
                str(int(limits.memory_bytes)), "--"]
    t0 = time.monotonic()
    proc = subprocess.Popen([*launcher, *argv], cwd=cwd, env=clean_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limits.timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        # the whole session: pytest or the verifier may have started children of its own
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
        out += f"\n[sandbox] killed after {limits.timeout_s:g} s (timeout)\n"
    return SandboxResult(proc.returncode, out, timed_out, round(time.monotonic() - t0, 2))


def run_python(args: Sequence[str], work_dir: Path, limits: Limits,
               env: dict[str, str] | None = None) -> SandboxResult:
    """``python <args>`` in ``work_dir`` with the work dir's package importable first."""
    return run([sys.executable, *args], Path(work_dir), limits,
               {**(env or {}), "PYTHONPATH": python_path(work_dir)})
