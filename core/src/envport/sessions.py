"""What a stage of an env runs, for the nox sessions and CI: one generic loop over the envs.

A stage (``tests``, ``verify``, ``bench``, ``train``, ``generate``) of an env is: install its
pinned reference, :func:`prepare` it (the env's system requirements, then its ``prepare`` hook),
then run :func:`commands` (the env's ``session_commands`` hook, else the default ``envport
<stage> <env> *args``). ``noxfile.py`` calls ``envport prepare`` and ``envport session-commands``
and runs what they say, so it names no env and a new env package joins with one ``ENVS`` line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from envport.errors import EnvportError
from envport.registry import EnvPort, SystemRequirement

STAGES = ("tests", "verify", "bench", "train", "generate")
# the default arguments of a stage's command when the session is given none
DEFAULT_ARGS = {"train": ("--seeds", "0,1,2")}


class MissingSystemRequirementError(EnvportError):
    """A program an env needs is not on PATH; the message names the apt package."""


def _check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise EnvportError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")


def ensure_system(requirements: Sequence[SystemRequirement], install: bool = False,
                  log=print) -> None:
    """Every requirement's command on PATH; with ``install`` (CI, as root with apt-get) the
    missing ones are apt-installed first. Missing otherwise -> an error naming the package."""
    missing = [r for r in requirements if shutil.which(r.command) is None]
    if not missing:
        return
    packages = sorted({r.apt_package for r in missing})
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if install and root and shutil.which("apt-get"):
        log(f"installing {' '.join(packages)} (apt-get)")
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", *packages], check=True)
        missing = [r for r in missing if shutil.which(r.command) is None]
        if not missing:
            return
    raise MissingSystemRequirementError(
        "; ".join(f"{r.command} not found ({r.why})" for r in missing)
        + f". Install it with: sudo apt-get install -y {' '.join(packages)}")


def prepare(port: EnvPort, stage: str, install_system: bool = False, log=print) -> None:
    """The env's system requirements, then its ``prepare`` hook for ``stage``."""
    _check_stage(stage)
    ensure_system(port.system_requirements, install=install_system, log=log)
    if port.prepare is not None:
        port.prepare(stage)


def default_commands(port: EnvPort, stage: str, args: Sequence[str]) -> list[list[str]]:
    """``envport <stage> <env> *args`` (``tests`` has none: pytest runs once for every env)."""
    _check_stage(stage)
    if stage == "tests":
        return []
    args = list(args) or list(DEFAULT_ARGS.get(stage, ()))
    return [["envport", stage, port.name, *args]]


def commands(port: EnvPort, stage: str, args: Sequence[str] = ()) -> list[list[str]]:
    """The command lines of ``stage`` for this env (its hook's, else the default)."""
    _check_stage(stage)
    if port.session_commands is None:
        return default_commands(port, stage, args)
    out = [list(map(str, cmd)) for cmd in port.session_commands(stage, list(args))]
    if any(not cmd for cmd in out):
        raise EnvportError(f"{port.name}'s session_commands gave an empty command for {stage}")
    return out


def out_dir(args: Sequence[str], default: str = "reports") -> str:
    """The ``--out`` among a stage's arguments (``--out DIR`` or ``--out=DIR``), else default:
    for a hook whose later commands read what the first wrote."""
    args = list(args)
    for i, a in enumerate(args):
        if a == "--out" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--out="):
            return a.split("=", 1)[1]
    return default
