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


Jobs = int | Callable[[], int]  # how many processes; a callable is asked at each pass (how many now)


def now(jobs: Jobs) -> int:
    """How many processes ``jobs`` gives a pass starting now."""
    return jobs() if callable(jobs) else jobs


# documents per process below which a light pass over each (counting its words, splitting its
# sentences) runs in this process: forking the pool and sending results back cost more than it saves
LIGHT = 400


def _slice(bounds: tuple[int, int]) -> Any:
    assert _WORK is not None
    fn, items = _WORK
    return fn(items[bounds[0] : bounds[1]])


def slices(
    fn: Callable[[Sequence[T]], R],
    items: Sequence[T],
    jobs: Jobs,
    per_job: int = 4,
    least: int = 2,
    meanwhile: Callable[[], object] | None = None,
) -> list[R]:
    """``fn`` over consecutive slices of ``items`` that together cover them, in order: about
    ``per_job`` slices per process in ``jobs`` forked processes, or one slice here when there are
    fewer than ``least`` items for each process (forking costs more than cheap work saves).
    ``meanwhile`` is called here once the processes are at work (this one would wait idle), or
    first when the work is done here."""
    global _WORK
    n, jobs = len(items), now(jobs)
    if jobs <= 1 or n < max(2, least) * jobs or not can_fork():
        if meanwhile is not None:
            meanwhile()
        return [fn(items)]
    k = min(n, jobs * per_job)
    cuts = [n * i // k for i in range(k + 1)]
    _WORK = (fn, items)
    try:
        with forked(jobs) as pool:
            found = pool.map_async(_slice, list(zip(cuts, cuts[1:])), chunksize=1)
            if meanwhile is not None:
                meanwhile()
            return found.get()
    finally:
        _WORK = None


def each(
    fn: Callable[[T], R],
    items: Sequence[T],
    jobs: Jobs,
    least: int = 2,
    meanwhile: Callable[[], object] | None = None,
) -> list[R]:
    """``fn`` of every item, in order (see ``slices``)."""
    return [
        r
        for part in slices(
            lambda chunk: [fn(x) for x in chunk], items, jobs, least=least, meanwhile=meanwhile
        )
        for r in part
    ]


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


AHEAD_NICENESS = 10  # how much lower an ``Ahead`` runs: it takes the cores the caller leaves idle


class Ahead:
    """``fn()`` under way in one process forked from this one, while this one goes on with other
    work; ``result()`` waits for what it returned. It runs at a lower priority (``niceness``), so
    that the caller's own work (and its pools) keep the cores when they want them; 0 when the
    caller soon waits for it. Where the platform cannot fork, nothing runs ahead and ``result()``
    is None: the caller then does the work itself."""

    def __init__(self, fn: Callable[[], Any], niceness: int = AHEAD_NICENESS):
        self.why = ""  # why nothing came back, when nothing did
        self._process = self._reader = None
        if not can_fork():
            self.why = "this platform cannot fork"
            return
        ctx = multiprocessing.get_context("fork")
        self._reader, writer = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_run_ahead, args=(fn, writer, niceness), daemon=True)
        with frozen_heap():  # the fork shares this one's memory pages instead of copying them
            self._process.start()
        writer.close()

    def result(self) -> Any:
        """What ``fn`` returned (None when it failed or never ran; ``why`` says which)."""
        if self._process is None or self._reader is None:
            return None
        try:
            ok, value = self._reader.recv()
        except EOFError:  # it died without a word (killed, out of memory)
            self._process.join()
            ok, value = False, f"the process ended with code {self._process.exitcode}"
        finally:
            self._process.join()
            self._reader.close()
            self._process = self._reader = None
        if not ok:
            self.why = value
            return None
        return value

    def done(self) -> bool:
        """Whether ``fn`` is over (``result()`` would not wait); True when nothing runs ahead."""
        return self._reader is None or self._reader.poll()

    def stop(self) -> None:
        """End it if it is still running (the caller gave up waiting, on an error)."""
        if self._process is not None:
            self._process.terminate()
            self._process.join()
            self._process = None


def _run_ahead(fn: Callable[[], Any], writer: Any, niceness: int) -> None:
    _die_with_parent()
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no os.nice here
        if niceness:
            os.nice(niceness)
    try:
        found = (True, fn())
    except BaseException as exc:  # noqa: BLE001 - told to the parent, which does the work itself
        found = (False, f"{type(exc).__name__}: {exc}")
    writer.send(found)
    writer.close()


@contextlib.contextmanager
def ahead(
    fn: Callable[[], Any], enabled: bool = True, niceness: int = AHEAD_NICENESS
) -> Iterator[Ahead | None]:
    """An ``Ahead`` of ``fn`` (None when not ``enabled``), stopped on the way out if its result
    was never asked for."""
    job = Ahead(fn, niceness) if enabled else None
    try:
        yield job
    finally:
        if job is not None:
            job.stop()
