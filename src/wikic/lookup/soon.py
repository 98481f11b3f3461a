"""Work started in another thread while this one does its own: ``Soon(work)``, then ``result()``.

A search reads its BM25 lists this way while it works out the dense list in pure Python: SQLite
lets go of the interpreter while it runs a statement, so on two cores the two overlap. (``_thread``,
not ``threading``: a search would import ``threading`` and its weak-reference sets for one lock.)
"""

from __future__ import annotations

import _thread
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: a search imports this module
if TYPE_CHECKING:
    from typing import Any


class Soon:
    """What ``work()`` returns, worked out in a new thread; ``result`` waits for it, and raises
    what ``work`` raised as if it had run there."""

    def __init__(self, work: Callable[[], Any]):
        self._done, started = _thread.allocate_lock(), _thread.allocate_lock()
        self._done.acquire()
        started.acquire()
        self._value: Any = None
        self._error: BaseException | None = None
        _thread.start_new_thread(self._run, (work, started))
        started.acquire()  # lets the new thread run now, rather than when this one next waits

    def _run(self, work: Callable[[], Any], started: Any) -> None:
        started.release()
        try:
            self._value = work()
        except BaseException as exc:  # for the caller of ``result``
            self._error = exc
        finally:
            self._done.release()

    def result(self) -> Any:
        with self._done:
            pass
        if self._error is not None:
            raise self._error
        return self._value
