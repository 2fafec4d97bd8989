"""Run generated code only in a subprocess: its own session, a wall-clock timeout, a memory
limit (RLIMIT_AS), an environment without secrets, a private temporary folder, and a
best-effort file-system jail.

The jail (``Limits.jail``, on by default) is an audit hook that every sandboxed Python process
installs before any generated code runs (``jail/sitecustomize.py``, first on its PYTHONPATH): it
may write only inside the folders the caller names (the work dir, the call's output folder), its
private temporary folder (``TMPDIR``) and ``/dev``; any other write, removal, rename or link
raises ``PermissionError`` ("envport sandbox: generated code may not write to a path outside its
writable folders ..."). Reading stays allowed. Needs no root and no extra dependency.

This is containment against runaway and careless code (an infinite loop, a huge allocation, a
leaked API key, a test that writes or deletes outside the work dir), not a security boundary
against code that sets out to escape: ctypes, non-Python child processes and a Python child
started with a scrubbed environment are not covered (see ``jail/sitecustomize.py``).

A package's build and native test commands (``TranslationPlan.build``/``native_tests``, e.g.
``cargo build``, ``cargo test``) run through :func:`run` too: the same session, timeout,
memory limit and environment without secrets (``CARGO_REGISTRY_TOKEN`` and the like are
dropped), but cargo, rustc and the test binaries they build are not Python, so the audit hook
does not confine their writes. What confines them is the command line the package declares (a
``--target-dir`` in the env's build cache, which is a writable folder for the Python steps
too); the generated Rust code itself only runs inside ``cargo test`` and in the extension that
the sandboxed Python processes load, where the jail applies to their Python side only.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# a variable whose name contains one of these never reaches generated code
SECRET_MARKERS = ("API_KEY", "TOKEN", "SECRET", "PASSWORD", "ANTHROPIC")
JAIL_DIR = Path(__file__).with_name("jail")   # holds the sitecustomize that installs the hook
WRITABLE_ENV = "ENVPORT_SANDBOX_WRITABLE"
# caches the caller configured for the subprocess stay writable (a persistent JAX cache)
CACHE_VARS = ("JAX_COMPILATION_CACHE_DIR",)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 900.0
    memory_bytes: int = 8 * 2**30  # address space; XLA:CPU needs a few GiB of it
    jail: bool = True              # writes confined to the writable folders (audit hook)


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


def python_path(work_dir: Path, roots: Sequence[str] = ("src",)) -> str:
    """The work dir's Python roots (``src`` by default) first, so its package shadows the
    installed one (an editable install's ``.pth`` included: it comes after PYTHONPATH)."""
    parts = [*(str(Path(work_dir) / r) for r in roots), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def run(argv: Sequence[str], cwd: Path, limits: Limits, env: dict[str, str] | None = None,
        writable: Sequence[Path] = ()) -> SandboxResult:
    """``argv`` in ``cwd`` under ``limits``; with ``limits.jail`` its Python processes may write
    only inside ``cwd``, ``writable`` and a private temporary folder (removed afterwards)."""
    # the limit is set by a small launcher that then execs argv; run as a file, not with -m,
    # so that it starts without importing envport (and with it jax)
    launcher = [sys.executable, "-S", str(Path(__file__).with_name("limited.py")),
                str(int(limits.memory_bytes)), "--"]
    tmp = Path(tempfile.mkdtemp(prefix="envport-sandbox-"))
    full = clean_env({**(env or {}), "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp)})
    if limits.jail:
        caches = [full[k] for k in CACHE_VARS if full.get(k)]
        full[WRITABLE_ENV] = os.pathsep.join(str(p) for p in (cwd, *writable, tmp, *caches, "/dev"))
        full["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(JAIL_DIR), full.get("PYTHONPATH", "")) if p)
        full.setdefault("MPLCONFIGDIR", str(tmp))  # matplotlib's cache, not ~/.config
    else:
        full.pop(WRITABLE_ENV, None)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen([*launcher, *argv], cwd=cwd, env=full, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=limits.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            # the whole session: pytest or the verifier may have started children of its own
            _kill(proc)
            out, _ = proc.communicate()
            timed_out = True
            out += f"\n[sandbox] killed after {limits.timeout_s:g} s (timeout)\n"
        except BaseException:  # Ctrl-C while it runs: it must not outlive us
            _kill(proc)
            proc.wait()
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # the folder's name is random: output that shows it must not differ between run and replay
    out = out.replace(str(tmp), "$TMPDIR")
    return SandboxResult(proc.returncode, out, timed_out, round(time.monotonic() - t0, 2))


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_python(args: Sequence[str], work_dir: Path, limits: Limits,
               env: dict[str, str] | None = None, writable: Sequence[Path] = (),
               roots: Sequence[str] = ("src",)) -> SandboxResult:
    """``python <args>`` in ``work_dir`` with the work dir's package importable first."""
    return run([sys.executable, *args], Path(work_dir), limits,
               {**(env or {}), "PYTHONPATH": python_path(work_dir, roots)}, writable)
