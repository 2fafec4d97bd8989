"""Verification spread over workers: L2 batches and L3 seeds as shards.

A *shard* is one unit of a suite: an L2 batch or an L3 seed (:class:`Shard`). A worker holds
the suites (:class:`ShardPlan`, shipped once with cloudpickle, so suites built from lambdas
and closures travel too) and the backends of the suite it is working on, each with its own
reference process, made on its first shard of that suite and reused for the next ones.

Executors run shards and hand their results back **in shard order**, whatever order the
workers finish in, so the merged report is the one a single process writes:

- :class:`SerialExecutor` runs them one after the other in this process (the default);
- :class:`ProcessExecutor` runs them on N worker processes (``spawn``: JAX and reference
  processes do not survive a ``fork``);
- :class:`envport.verify.ray_workers.RayExecutor` runs them as tasks of Ray actors, on a local
  Ray or on a cluster.

A worker that dies (a crash, the OOM killer, a kill) is replaced and its shard retried once;
if it dies again the run stops with :class:`WorkerError` naming the shard. An exception raised
by the suite's own code is not retried (it would raise again): it stops the run with the
shard named and the worker's traceback.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from envport.errors import EnvportError
from envport.verify.diff import ToleranceSpec


class WorkerError(EnvportError, RuntimeError):
    """A shard that could not be run: its worker died twice, or the suite's code raised."""


@dataclass(frozen=True)
class Shard:
    level: str  # "L2" or "L3"
    suite: int  # index into ShardPlan.l2 / ShardPlan.l3
    unit: int   # the L2 batch index or the L3 seed
    size: int = 0  # L2: the batch size (the backends' num_envs)

    def describe(self, plan: ShardPlan) -> str:
        suite = plan.suites(self.level)[self.suite]
        what = "batch" if self.level == "L2" else "seed"
        return f"{self.level} suite {suite.name!r}, {what} {self.unit}"


@dataclass
class ShardPlan:
    """Everything a worker needs: the suites and how to compare."""

    l2: list = field(default_factory=list)
    l3: list = field(default_factory=list)
    tolerance: ToleranceSpec = 0.0
    l2_seed: int = 0
    max_examples: int = 5

    def suites(self, level: str) -> list:
        return self.l2 if level == "L2" else self.l3


# -- counters ----------------------------------------------------------------------------------
def read_counters(counters: Any) -> dict[str, int] | None:
    """The integer attributes of a suite's ``counters`` object (None without one)."""
    if counters is None:
        return None
    return {k: v for k, v in vars(counters).items() if isinstance(v, int)}


def add_counters(counters: Any, increments: dict[str, int] | None) -> None:
    if counters is None or not increments:
        return
    for k, v in increments.items():
        setattr(counters, k, getattr(counters, k) + v)


# -- running shards -------------------------------------------------------------------------------
class ShardRunner:
    """Runs shards of a plan, keeping the backends of one suite at a time."""

    def __init__(self, plan: ShardPlan):
        self.plan = plan
        self._key: tuple | None = None
        self._backends: tuple | None = None

    def _backends_for(self, shard: Shard):
        key = (shard.level, shard.suite, shard.size)
        if key != self._key:
            self.close()
            suite = self.plan.suites(shard.level)[shard.suite]
            if shard.level == "L2":
                ref = suite.make_reference(shard.size)
                try:
                    cand = suite.make_candidate(shard.size)
                except BaseException:
                    ref.close()
                    raise
            else:
                ref = suite.make_reference()
                try:
                    cand = suite.make_candidate()
                except BaseException:
                    ref.close()
                    raise
            check_pair(ref, cand, suite.name)
            self._key, self._backends = key, (ref, cand)
        return self._backends

    def run(self, shard: Shard):
        from envport.verify.l2 import run_l2_batch, suite_tolerance
        from envport.verify.l3 import run_l3_seed

        suite = self.plan.suites(shard.level)[shard.suite]
        ref, cand = self._backends_for(shard)
        before = read_counters(getattr(suite, "counters", None))
        if shard.level == "L2":
            out = run_l2_batch(suite, ref, cand, shard.unit, suite_tolerance(suite, self.plan),
                               seed=self.plan.l2_seed, max_examples=self.plan.max_examples)
        else:
            out = run_l3_seed(suite, ref, cand, shard.unit, self.plan.tolerance)
        after = read_counters(getattr(suite, "counters", None))
        if before is not None:
            out.counters = {k: after[k] - before.get(k, 0) for k in after}
        return out

    def close(self) -> None:
        if self._backends is not None:
            for b in self._backends:
                b.close()
        self._key = self._backends = None


def check_pair(ref, cand, what: str) -> None:
    """Two backends that can be compared at all: same num_envs, same spaces."""
    from envport.types import spaces_equal

    if ref.num_envs != cand.num_envs:
        raise EnvportError(f"{what}: the reference has num_envs={ref.num_envs}, the candidate "
                           f"num_envs={cand.num_envs}: they must step the same batch")
    for name in ("observation_space", "action_space"):
        a, b = getattr(ref.spec, name), getattr(cand.spec, name)
        if not spaces_equal(a, b):
            raise EnvportError(f"{what}: the backends' specs differ: reference {name} {a!r}, "
                               f"candidate {name} {b!r}")
    if ref.spec.num_agents != cand.spec.num_agents:
        raise EnvportError(f"{what}: the backends' specs differ: reference num_agents="
                           f"{ref.spec.num_agents}, candidate num_agents={cand.spec.num_agents}")


# -- executors ------------------------------------------------------------------------------------
More = Callable[[int], bool]  # more(in_flight): start another shard while in_flight run?


class SerialExecutor:
    """Shards one after the other in this process; the suite's counters are its own."""

    workers = 1
    kind = "in-process"

    def __init__(self, plan: ShardPlan):
        self.plan = plan
        self.runner = ShardRunner(plan)

    def ordered(self, shards: Iterator[Shard], more: More) -> Iterator:
        for shard in shards:
            if not more(0):
                return
            yield self.runner.run(shard)

    def merge_counters(self, suite, increments) -> None:
        pass  # the suite's own objects counted already

    def close(self) -> None:
        self.runner.close()


class _Ordered:
    """The bookkeeping every pool shares: shards handed out in order, results yielded in
    order, a dead worker's shard retried once."""

    retries = 1

    def __init__(self, plan: ShardPlan):
        self.plan = plan

    def merge_counters(self, suite, increments) -> None:
        add_counters(getattr(suite, "counters", None), increments)

    def _failed(self, shard: Shard, why: str) -> WorkerError:
        return WorkerError(f"{shard.describe(self.plan)}: {why}")


def _worker_main(conn, blob: bytes) -> None:  # pragma: no cover - runs in the child
    import cloudpickle

    try:
        runner = ShardRunner(cloudpickle.loads(blob))
    except BaseException as exc:
        conn.send(("error", _error_text(exc), isinstance(exc, EnvportError)))
        return
    try:
        while True:
            shard = conn.recv()
            if shard is None:
                break
            try:
                conn.send(("ok", runner.run(shard), False))
            except BaseException as exc:
                conn.send(("error", _error_text(exc), isinstance(exc, EnvportError)))
    except EOFError:
        pass
    finally:
        runner.close()


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc))


class _Process:
    """One worker process, started when it is first handed a shard."""

    def __init__(self, ctx, blob: bytes):
        self._ctx, self._blob = ctx, blob
        self.proc = self.conn = None
        self.task: tuple | None = None  # (seq, shard, attempt)

    def start(self) -> None:
        if self.proc is None:
            self.conn, child = self._ctx.Pipe()
            self.proc = self._ctx.Process(target=_worker_main, args=(child, self._blob),
                                          daemon=True)
            self.proc.start()
            child.close()

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        self.proc = self.conn = None


class ProcessExecutor(_Ordered):
    """``workers`` worker processes (``spawn``), one shard each at a time."""

    kind = "processes"

    def __init__(self, plan: ShardPlan, workers: int):
        import multiprocessing

        import cloudpickle

        super().__init__(plan)
        self.workers = check_workers(workers)
        self._ctx = multiprocessing.get_context("spawn")
        self._blob = cloudpickle.dumps(plan)
        self._procs = [_Process(self._ctx, self._blob) for _ in range(self.workers)]

    def ordered(self, shards: Iterator[Shard], more: More) -> Iterator:
        from multiprocessing.connection import wait

        done: dict[int, Any] = {}
        next_seq = handed = 0
        exhausted = False
        try:
            while True:
                while next_seq in done:  # merged by the caller before more() is asked again
                    yield done.pop(next_seq)
                    next_seq += 1
                for i, p in enumerate(self._procs):
                    if p.task is not None or exhausted or not more(self._in_flight()):
                        continue
                    shard = next(shards, None)
                    if shard is None:
                        exhausted = True
                        continue
                    self._hand(i, (handed, shard, 0))
                    handed += 1
                busy = [p for p in self._procs if p.task is not None]
                if not busy:  # nothing running and nothing more wanted or left
                    return
                ready = wait([p.conn for p in busy] + [p.proc.sentinel for p in busy])
                for p in busy:
                    if p.conn in ready or p.proc.sentinel in ready:
                        self._collect(p, done)
        except GeneratorExit:  # the caller has what it needs
            self._drain()
            raise
        except BaseException:  # an error or an interrupt: stop what still runs
            for p in self._procs:
                if p.task is not None:
                    p.proc.kill()
                    p.stop()
                    p.task = None
            raise

    def _in_flight(self) -> int:
        return sum(p.task is not None for p in self._procs)

    def _hand(self, i: int, task: tuple) -> None:
        p = self._procs[i]
        p.task = task
        p.start()
        try:
            p.conn.send(task[1])
        except (BrokenPipeError, OSError):
            pass  # it died while idle: the wait sees its sentinel, and it is replaced

    def _collect(self, p: _Process, done: dict) -> None:
        seq, shard, attempt = p.task
        try:
            if p.conn.poll():
                status, payload, envport_error = p.conn.recv()
                p.task = None
                if status == "ok":
                    done[seq] = payload
                    return
                raise (EnvportError if envport_error else WorkerError)(
                    f"{shard.describe(self.plan)}: raised in a worker:\n{payload}")
        except (EOFError, OSError):
            pass
        if p.proc.is_alive():
            return  # woken without a whole message: wait again
        code = p.proc.exitcode
        i = self._procs.index(p)
        p.task = None
        p.stop()
        if attempt >= self.retries:
            raise self._failed(shard, f"its worker died {attempt + 1} times (last exit code "
                                      f"{code}); not retried again")
        self._hand(i, (seq, shard, attempt + 1))

    def _drain(self) -> None:
        """Let shards still running finish (their results are not needed) so the workers
        and their backends stay usable for the next suite."""
        from multiprocessing.connection import wait

        for p in self._procs:
            if p.task is None:
                continue
            wait([p.conn, p.proc.sentinel])
            p.task = None
            try:
                if p.conn.poll():
                    p.conn.recv()
                    continue
            except (EOFError, OSError):
                pass
            p.stop()

    def close(self) -> None:
        for p in self._procs:
            p.stop()
        self._procs = []


def check_workers(workers) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise EnvportError(f"workers must be a whole number >= 1, got {workers!r}")
    return workers


def default_workers() -> int:
    """One worker per core (each worker runs its own reference process)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def make_executor(plan: ShardPlan, workers: int = 1, ray: str | bool | None = None):
    """The executor for ``workers`` and ``ray``: in this process for one worker, worker
    processes for more, Ray actors when ``ray`` is given (True: a local Ray; a string: the
    address of a running cluster, e.g. ``"auto"`` or ``"10.0.0.5:6379"``)."""
    if ray is not None and ray is not False:
        from envport.verify.ray_workers import RayExecutor

        return RayExecutor(plan, workers, None if ray is True else str(ray))
    check_workers(workers)
    return SerialExecutor(plan) if workers == 1 else ProcessExecutor(plan, workers)


__all__ = ["Shard", "ShardPlan", "ShardRunner", "SerialExecutor", "ProcessExecutor",
           "WorkerError", "make_executor", "default_workers", "check_workers", "check_pair"]
