"""Work split over processes forked from this one: they share what it holds in memory (nothing
is pickled to them), send back only their results, and die with it (a killed compile leaves no
worker holding its lock). Results come back in order, so the same work gives the same result
from any number of processes. Where the platform cannot fork, or one process is asked for, the
work runs here."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.pool import Pool
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_WORK: tuple[Callable[[Sequence[Any]], Any], Sequence[Any]] | None = None  # inherited by the forks


JOBS_ENV = "WIKIC_JOBS"


def default_jobs() -> int:
    """``WIKIC_JOBS`` when it is a whole number of at least 1 (a machine shared with other work,
    or a test suite whose workers already fill the cores), else one process per core this one may
    run on."""
    value = os.environ.get(JOBS_ENV, "").strip()
    if value.isdigit() and int(value) >= 1:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    if os.getppid() == 1:  # the parent died before the line above
        os._exit(1)


_HOLDS = 0  # how many callers are inside ``frozen_heap``


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects made so far, and those ``gc.freeze`` moves later while this holds, are out of
    the garbage collector's walks until the outermost hold ends. (Counted here: asking the
    collector how much is frozen walks everything frozen.)"""
    global _HOLDS
    gc.freeze()
    _HOLDS += 1
    try:
        yield
    finally:
        _HOLDS -= 1
        if not _HOLDS:
            gc.unfreeze()


@contextlib.contextmanager
def forked(jobs: int) -> Iterator[Pool]:
    """A pool of ``jobs`` processes forked from this one, which sees the objects made so far: they
    are frozen (``frozen_heap``) while it runs, so that the forks share their memory pages
    instead of copying them."""
    with frozen_heap(), multiprocessing.get_context("fork").Pool(jobs, initializer=_die_with_parent) as pool:
        yield pool


def _slice(bounds: tuple[int, int]) -> Any:
    assert _WORK is not None
    fn, items = _WORK
    return fn(items[bounds[0] : bounds[1]])


def slices(fn: Callable[[Sequence[T]], R], items: Sequence[T], jobs: int, per_job: int = 4) -> list[R]:
    """``fn`` over consecutive slices of ``items`` that together cover them, in order: about
    ``per_job`` slices per process in ``jobs`` forked processes, or one slice here."""
    global _WORK
    n = len(items)
    if jobs <= 1 or n < 2 * jobs or not can_fork():
        return [fn(items)]
    k = min(n, jobs * per_job)
    cuts = [n * i // k for i in range(k + 1)]
    _WORK = (fn, items)
    try:
        with forked(jobs) as pool:
            return pool.map(_slice, list(zip(cuts, cuts[1:])), chunksize=1)
    finally:
        _WORK = None


def each(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """``fn`` of every item, in order (see ``slices``)."""
    return [r for part in slices(lambda chunk: [fn(x) for x in chunk], items, jobs) for r in part]


def streamed(fn: Callable[[T], R], items: Sequence[T], jobs: int, per_slice: int = 100) -> Iterator[R]:
    """``fn`` of every item, in order, yielded as ``jobs`` forked processes finish each slice of
    up to ``per_slice`` items (at least four slices a process). At most two slices per process
    are done or under way ahead of the one the caller reads, so the results held at once stay
    few however many items there are. (The caller must not start other pool work of this module
    while it reads.)"""
    global _WORK
    n = len(items)
    if jobs <= 1 or n < 2 * jobs or not can_fork():
        yield from map(fn, items)
        return
    size = max(1, min(per_slice, n // (4 * jobs)))
    cuts = list(range(0, n, size)) + [n]
    _WORK = (lambda chunk: [fn(x) for x in chunk], items)
    try:
        with forked(jobs) as pool:
            ahead: deque = deque()
            for bounds in zip(cuts, cuts[1:]):
                ahead.append(pool.apply_async(_slice, (bounds,)))
                if len(ahead) > 2 * jobs:
                    yield from ahead.popleft().get()
            while ahead:
                yield from ahead.popleft().get()
    finally:
        _WORK = None
