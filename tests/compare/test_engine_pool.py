"""``_measure_all``: every job measured once, in order, while ``meanwhile`` runs in the calling
thread; the first error stops the rest."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tensorsight.compare.engine import _Counter, _measure_all
from tensorsight.errors import CompareError


def test_rows_come_back_in_job_order_with_progress():
    seen: list[tuple[int, int]] = []
    counter = _Counter(lambda done, total: seen.append((done, total)))
    jobs: list[Any] = list(range(50))
    counter.add_total(len(jobs))

    go = threading.Event()

    def measure(job: Any) -> Any:
        go.wait(10)  # no job finishes before meanwhile() ran
        time.sleep(0.001 * (job % 3))  # threads finish out of order
        return job * 10

    caller = threading.get_ident()

    def meanwhile() -> tuple[int, int]:
        done = len(seen)
        go.set()
        return threading.get_ident(), done

    with ThreadPoolExecutor(max_workers=3) as pool:
        rows, (ident, done) = _measure_all(pool, measure, jobs, counter, meanwhile)
    assert rows == [j * 10 for j in jobs]
    assert ident == caller  # in the calling thread,
    assert done == 0  # before the pool's first job was done
    assert seen[-1] == (50, 50)
    assert len(seen) == 50


def test_the_first_error_stops_the_other_threads():
    calls: list[int] = []
    lock = threading.Lock()

    def measure(job: Any) -> Any:
        with lock:
            calls.append(job)
        if job == 3:
            raise CompareError("Tensor 't3': cannot be loaded (truncated).")
        time.sleep(0.002)
        return job

    with ThreadPoolExecutor(max_workers=2) as pool, pytest.raises(CompareError, match="t3"):
        _measure_all(pool, measure, list(range(200)), _Counter(None), lambda: None)
    assert len(calls) < 20  # stopped at the next job, not after all 200
