"""Where the rank pairs of a comparison run: any :class:`concurrent.futures.Executor`.

:func:`tensorsight.compare.compare` turns a multi-rank comparison into one
:class:`~tensorsight.compare.pairs.PairTask` per rank and submits
:func:`~tensorsight.compare.pairs.compare_pair` to an executor; this module holds the
built-in ones, the ``--executor`` grammar and the loop that collects results as they finish.

Built in (``spec`` strings, as ``compare(..., executor=spec)`` and ``--executor`` take them):

=====================  ========================================================================
``serial``             every pair in this process, one after the other (:class:`SerialExecutor`)
``threads[:N]``        a thread pool in this process (N threads, default ``min(8, cpus)``)
``local[:N]``          a spawn process pool of N workers (default: the CPU count), each with
                       its BLAS/OpenMP threads pinned to 1 (:func:`local_pool`)
``dask[:N]``           a ``distributed.Client``'s executor over a ``LocalCluster`` of N one-thread
                       worker processes (default: the CPU count) (``tensorsight[dask]``)
``dask://HOST:PORT``   the same over the scheduler at ``tcp://HOST:PORT``
``ray[:N]``            Ray tasks (:class:`RayExecutor`) on the running Ray instance, or on a
                       local one started here with N CPUs (``tensorsight[ray]``)
``ray://ADDR``         Ray tasks through the Ray Client at ``ray://ADDR``
=====================  ========================================================================

An executor passed as an object is used as it is and never shut down here; one made from a
spec is shut down when the comparison ends. Workers get the dump paths, never the tensors.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.compare._pin import pin_threads
from tensorsight.errors import MissingDependencyError, UsageError

__all__ = [
    "EXECUTOR_SPECS",
    "ExecutorSpec",
    "RayExecutor",
    "SerialExecutor",
    "iter_completed",
    "local_pool",
    "open_executor",
    "parse_executor",
]

EXECUTOR_SPECS = "serial | threads[:N] | local[:N] | dask[:N|://HOST:PORT] | ray[:N|://ADDR]"

_SPEC = re.compile(r"(?P<kind>serial|threads|local|dask|ray)(?::(?P<n>\d+)|(?P<addr>://\S+))?")


class SerialExecutor(Executor):
    """Runs each task inside :meth:`submit`, in the caller's thread (the reference run)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # the caller reads it from the future, as from any pool
            future.set_exception(exc)
        return future


def local_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """A spawn process pool whose workers pin BLAS/OpenMP to one thread each.

    Spawn, not fork: a forked child inherits the parent's threads' locks (a fork taken
    while another thread holds the allocator's or a BLAS lock deadlocks) and the parent's
    BLAS thread pool, already sized for every core.

    Args:
        workers: Worker processes (default: the CPU count).
    """
    n = workers if workers is not None else (os.cpu_count() or 1)
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=pin_threads)


@dataclass(frozen=True)
class ExecutorSpec:
    """A parsed ``--executor`` value: ``kind`` and its worker count or address."""

    kind: str
    workers: int | None = None
    address: str | None = None


def parse_executor(spec: str) -> ExecutorSpec:
    """Parse ``spec`` (:data:`EXECUTOR_SPECS`).

    Raises:
        UsageError: Not one of the forms, or a worker count below 1.

    Example:
        >>> parse_executor("local:4")
        ExecutorSpec(kind='local', workers=4, address=None)
        >>> parse_executor("dask://10.0.0.5:8786").address
        'tcp://10.0.0.5:8786'
    """
    m = _SPEC.fullmatch(spec.strip())
    bad = m is None or (m["n"] is not None and int(m["n"]) < 1)
    bad = bad or (m is not None and m["addr"] is not None and m["kind"] not in ("dask", "ray"))
    bad = bad or (m is not None and m["n"] is not None and m["kind"] == "serial")
    if bad or m is None:
        msg = f"Option --executor {spec!r}: not an executor. Expected {EXECUTOR_SPECS}."
        raise UsageError(msg)
    addr = m["addr"]
    if addr is not None and m["kind"] == "dask":
        addr = "tcp" + addr  # dask://host:port -> the scheduler's tcp://host:port
    elif addr is not None:
        addr = "ray" + addr  # the Ray Client address keeps its scheme
    return ExecutorSpec(m["kind"], int(m["n"]) if m["n"] else None, addr)


@contextmanager
def open_executor(spec: str | ExecutorSpec, *, pairs: int) -> Iterator[Executor]:
    """The executor ``spec`` names, shut down (pending tasks cancelled) on the way out.

    Args:
        spec: A spec string or a parsed :class:`ExecutorSpec`.
        pairs: Number of rank pairs (a local pool starts no more workers than that).

    Raises:
        UsageError: A bad spec.
        MissingDependencyError: ``dask``/``ray`` without its package (names the extra).
    """
    s = parse_executor(spec) if isinstance(spec, str) else spec
    if s.kind in ("dask", "ray"):
        with (_dask if s.kind == "dask" else _ray)(s) as remote:
            yield remote
        return
    ex: Executor
    if s.kind == "serial":
        ex = SerialExecutor()
    elif s.kind == "threads":
        ex = ThreadPoolExecutor(max_workers=s.workers or min(8, os.cpu_count() or 1))
    else:
        ex = local_pool(min(s.workers or (os.cpu_count() or 1), max(1, pairs)))
    try:
        yield ex
    except BaseException:
        _stop(ex)
        raise
    ex.shutdown(wait=True)


def _stop(ex: Executor) -> None:
    """Cancel what has not started; a process pool's workers stop now (an interrupt)."""
    ex.shutdown(wait=False, cancel_futures=True)
    if isinstance(ex, ProcessPoolExecutor):
        for proc in list((getattr(ex, "_processes", None) or {}).values()):
            proc.terminate()


@contextmanager
def _dask(s: ExecutorSpec) -> Iterator[Executor]:
    distributed = _optional("distributed", "dask", "--executor dask")
    if s.address is not None:
        client = distributed.Client(s.address)
        cluster = None
    else:
        # one-thread worker processes; the nanny pins OMP/MKL/OpenBLAS to 1 in each of them
        cluster = distributed.LocalCluster(
            n_workers=s.workers or (os.cpu_count() or 1),
            threads_per_worker=1,
            # None still binds the scheduler's HTTP server to 8787, which another cluster
            # (a notebook's) may hold: any free port, as the pool is this comparison's own
            dashboard_address=":0",
        )
        client = distributed.Client(cluster)
    ex = client.get_executor(pure=False)
    try:
        yield ex
    except BaseException:
        ex.shutdown(wait=False)  # cancels the cluster's tasks of this comparison
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextmanager
def _ray(s: ExecutorSpec) -> Iterator[Executor]:
    ray = _optional("ray", "ray", "--executor ray")
    started = False
    if s.address is not None:
        ray.init(address=s.address, logging_level="WARNING", log_to_driver=False)
        started = True
    elif not ray.is_initialized():
        ray.init(
            num_cpus=s.workers,
            include_dashboard=False,
            logging_level="WARNING",
            log_to_driver=False,
        )
        started = True
    ex = RayExecutor()
    try:
        yield ex
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if started:
            ray.shutdown()


def _optional(module: str, extra: str, who: str) -> Any:
    try:
        return lazy_import(module, extra=extra, needed_by=who)
    except MissingDependencyError as exc:
        # one line that names the extra, without the import error's own sentence
        msg = f"{who} needs {module}: pip install 'tensorsight[{extra}]'"
        raise MissingDependencyError(msg) from exc


class RayExecutor(Executor):
    """A :class:`concurrent.futures.Executor` over Ray tasks (``ray.remote``).

    Each :meth:`submit` is one Ray task (one CPU); cancelling its future cancels the task.
    Needs a started Ray (``ray.init()``); ``--executor ray`` starts one.
    """

    def __init__(self) -> None:
        self._ray = _optional("ray", "ray", "RayExecutor")
        self._remote = self._ray.remote(num_cpus=1)(_call_pinned)
        self._refs: dict[Future[Any], Any] = {}

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        ref = self._remote.remote(fn, args, kwargs)
        out: Future[Any] = Future()
        inner = ref.future()
        self._refs[out] = ref

        def copy(done: Future[Any]) -> None:
            self._refs.pop(out, None)
            if out.cancelled():
                return
            if out.set_running_or_notify_cancel():
                exc = done.exception()
                if exc is None:
                    out.set_result(done.result())
                else:
                    out.set_exception(exc)

        def cancel(f: Future[Any]) -> None:
            if f.cancelled():
                self._ray.cancel(ref)

        out.add_done_callback(cancel)
        inner.add_done_callback(copy)
        return out

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            for future in list(self._refs):
                future.cancel()


def _call_pinned(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A Ray task's body: pin this worker's BLAS/OpenMP threads, then run ``fn``."""
    pin_threads()
    return fn(*args, **kwargs)


def iter_completed(
    executor: Executor,
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    window: int | None = None,
) -> Iterator[tuple[Any, Future[Any]]]:
    """Submit ``fn(item)`` for each item and yield ``(item, future)`` as each finishes.

    At most ``window`` tasks are in flight (default: all of them; a
    :class:`SerialExecutor` runs one at a time, so its results stream too). On any
    exception while waiting, a ``KeyboardInterrupt`` included, the futures not yet done
    are cancelled before it propagates. A ``submit`` that raises (a pool whose worker
    died) gives a future holding that error, so the item is reported like a failed task.
    """
    todo = iter(items)
    if window is None and isinstance(executor, SerialExecutor):
        window = 1
    pending: dict[Future[Any], Any] = {}
    try:
        while True:
            while window is None or len(pending) < window:
                item = next(todo, _END)
                if item is _END:
                    break
                pending[_submit(executor, fn, item)] = item
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future
    except BaseException:
        for future in pending:
            future.cancel()
        raise


_END = object()


def _submit(executor: Executor, fn: Callable[[Any], Any], item: Any) -> Future[Any]:
    """``executor.submit(fn, item)``; a refusal (a broken pool) becomes that task's error."""
    try:
        return executor.submit(fn, item)
    except Exception as exc:
        future: Future[Any] = Future()
        future.set_exception(exc)
        return future
