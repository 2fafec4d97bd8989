"""The shards of :mod:`envport.verify.workers` as tasks of Ray actors (``envport[ray]``).

Each actor is one worker: it holds the plan and the backends of the suite it works on (its
own reference process), exactly like a worker process. ``address=None`` starts a local Ray
for the run (``num_cpus = workers``) and shuts it down at the end; an address joins a running
cluster (``"auto"``, ``"10.0.0.5:6379"``, ``"ray://head:10001"``), which is checked to answer
before Ray is asked, so a wrong address fails in seconds with a clear error instead of Ray's
connection retries. An actor that dies is replaced and its shard retried once, as a worker
process would be.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

from envport.errors import EnvportError
from envport.verify.workers import (
    More,
    Shard,
    ShardPlan,
    ShardRunner,
    WorkerError,
    _error_text,
    _Ordered,
)

RAY_HINT = "pip install 'envport[ray]'"
CONNECT_TIMEOUT_S = 5.0


def import_ray():
    from envport.extras import require

    return require("ray", "ray", "--ray")


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`EnvportError` unless ``host:port`` of ``address`` accepts a connection.
    ``auto`` and ``local`` are left to Ray (they look for a cluster on this machine)."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise EnvportError(f"Ray address {address!r} is not of the form HOST:PORT (or "
                           "ray://HOST:PORT, 'auto')")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise EnvportError(f"cannot reach a Ray cluster at {address!r} ({exc}); start one with "
                           "`ray start --head` or check the address") from None


class RayShardWorker:
    """The actor: a :class:`ShardRunner` over the plan, with the driver's ``sys.path`` (so
    suites defined in the driver's modules unpickle on a local Ray's workers)."""

    def __init__(self, blob: bytes, paths: list[str]):
        import cloudpickle

        sys.path[:0] = [p for p in paths if p not in sys.path]
        self.runner = ShardRunner(cloudpickle.loads(blob))

    def run(self, shard: Shard):
        try:
            return "ok", self.runner.run(shard), False
        except BaseException as exc:
            return "error", _error_text(exc), isinstance(exc, EnvportError)

    def close(self) -> None:
        self.runner.close()


class RayExecutor(_Ordered):
    kind = "ray"

    def __init__(self, plan: ShardPlan, workers: int, address: str | None = None):
        import cloudpickle

        from envport.verify.workers import check_workers

        super().__init__(plan)
        self.workers = check_workers(workers)
        self.address = address
        ray = self._ray = import_ray()
        if address is not None:
            check_reachable(address)
        self._owns = not ray.is_initialized()
        if self._owns:
            try:
                if address is None:
                    ray.init(num_cpus=self.workers, include_dashboard=False,
                             log_to_driver=False, configure_logging=False)
                else:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError
                raise EnvportError(f"could not start or join Ray "
                                   f"({'local' if address is None else address}): "
                                   f"{type(exc).__name__}: {exc}") from None
        self._actor = ray.remote(num_cpus=1, max_restarts=0)(RayShardWorker)
        self._blob = cloudpickle.dumps(plan)
        self._actors = [self._new_actor() for _ in range(self.workers)]

    def _new_actor(self):
        return self._actor.remote(self._blob, list(sys.path))

    def ordered(self, shards: Iterator[Shard], more: More) -> Iterator:
        ray = self._ray
        running: dict[Any, tuple[int, int, Shard, int]] = {}  # ref -> (actor, seq, shard, try)
        done: dict[int, Any] = {}
        next_seq = handed = 0
        exhausted = False
        try:
            while True:
                while next_seq in done:
                    yield done.pop(next_seq)
                    next_seq += 1
                idle = set(range(len(self._actors))) - {t[0] for t in running.values()}
                for i in sorted(idle):
                    if exhausted or not more(len(running)):
                        break
                    shard = next(shards, None)
                    if shard is None:
                        exhausted = True
                        break
                    running[self._actors[i].run.remote(shard)] = (i, handed, shard, 0)
                    handed += 1
                if not running:
                    return
                (ref,), _ = ray.wait(list(running), num_returns=1)
                i, seq, shard, attempt = running.pop(ref)
                try:
                    status, payload, envport_error = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    self._actors[i] = self._new_actor()
                    if attempt >= self.retries:
                        raise self._failed(shard, f"its Ray actor died {attempt + 1} times "
                                                  f"({type(exc).__name__}); not retried again"
                                           ) from None
                    running[self._actors[i].run.remote(shard)] = (i, seq, shard, attempt + 1)
                    continue
                if status != "ok":
                    raise (EnvportError if envport_error else WorkerError)(
                        f"{shard.describe(self.plan)}: raised in a Ray worker:\n{payload}")
                done[seq] = payload
        except GeneratorExit:
            if running:  # let them finish: the actors keep their backends for the next suite
                ray.wait(list(running), num_returns=len(running))
            raise
        except BaseException:
            for i, *_ in running.values():
                ray.kill(self._actors[i])
                self._actors[i] = self._new_actor()
            raise

    def close(self) -> None:
        ray = self._ray
        for a in self._actors:
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:
                pass
            ray.kill(a)
        self._actors = []
        if self._owns:
            ray.shutdown()
