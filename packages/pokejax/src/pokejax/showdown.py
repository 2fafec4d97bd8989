"""The real Showdown, in one Node process that this object starts and always closes."""

from __future__ import annotations

import json
import subprocess
from importlib.resources import files
from typing import Any

from envport.errors import EnvportError
from pokejax import install


class ShowdownError(EnvportError, RuntimeError):
    """Showdown (or the driver) reported an error for a request."""


class TeamRefusedError(ShowdownError):
    """Showdown's team validator refused a team the driver was asked to play; ``problems``
    holds its words (and the driver's own refusals: aliases, levels, Special IVs)."""

    def __init__(self, message: str, problems: list[str]):
        super().__init__(message)
        self.problems = problems


class Showdown:
    """``with Showdown() as sd: sd.request("prng", seed=[1, 2, 3, 4], calls=[[6, None]])``."""

    def __init__(self, timeout: float = 60.0):
        package = install.check()
        node = install.require_tool("node")
        driver = files("pokejax").joinpath("js/driver.js")
        self.timeout = timeout
        self._next_id = 0
        self._pending = None
        self._proc = subprocess.Popen(
            [node, str(driver), str(package)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
        )

    def request(self, cmd: str, **args: Any) -> Any:
        self.post(cmd, **args)
        return self.reply()

    def post(self, cmd: str, **args: Any) -> None:
        """Send a request without waiting (``reply`` reads its answer): several processes can
        then work at once, e.g. the benchmark's reference in N processes."""
        if self._proc is None or self._proc.poll() is not None:
            raise ShowdownError("the Showdown process is not running"
                                + self._stderr_tail())
        self._next_id += 1
        self._pending = cmd
        self._proc.stdin.write(json.dumps({"id": self._next_id, "cmd": cmd, "args": args}) + "\n")
        self._proc.stdin.flush()

    def reply(self) -> Any:
        """The answer to the last ``post``."""
        cmd = self._pending
        line = self._proc.stdout.readline()
        if not line:
            raise ShowdownError(f"Showdown exited while handling {cmd!r}" + self._stderr_tail())
        reply = json.loads(line)
        if not reply.get("ok"):
            if "problems" in reply:
                raise TeamRefusedError(f"Showdown rejected {cmd!r}: {reply['error']}",
                                       reply["problems"])
            raise ShowdownError(f"Showdown rejected {cmd!r}: {reply.get('error')}")
        return reply["result"]

    def _stderr_tail(self) -> str:
        if self._proc is None or self._proc.poll() is None:
            return ""
        err = self._proc.stderr.read()[-2000:]
        return f"\n{err}" if err else ""

    def close(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        try:
            proc.stdin.close()
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            proc.kill()
            proc.wait()
        finally:
            for stream in (proc.stdout, proc.stderr):
                stream.close()

    def __enter__(self) -> Showdown:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # last resort: never leave node running
        try:
            self.close()
        except Exception:
            pass
