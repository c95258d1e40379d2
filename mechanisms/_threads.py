"""One two-thread pool for numpy work that releases the GIL (FFTs, ufuncs and reductions on large arrays), shared by
every module that splits such work (:mod:`mechanisms.subsampled_gaussian_cf`, :mod:`accountants.windowed_buckets`).

The machines this library targets have two cores; more threads would only contend. A forked child inherits the
pool's state but not its threads (work submitted there would never run), so the pool is forgotten at fork and made
again on first use."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["run_in_parallel"]

_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


def run_in_parallel(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Each call's result, in order: the calls run on two threads (a single call runs here). Where calls raise, the
    exception of the first of them in the order given is raised again, after every call has finished."""
    global _POOL
    if len(calls) < 2:
        return [call() for call in calls]
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="dpledger")
    futures = [_POOL.submit(call) for call in calls]
    concurrent.futures.wait(futures)
    return [future.result() for future in futures]
