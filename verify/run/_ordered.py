"""Jobs evaluated in parallel, outcomes taken in submission order: how ``verify check`` runs its
families and its search on a process pool or a Dask cluster and still finds exactly what the
sequential search finds (the first counterexample in draw order, the same records).

:class:`InOrder` keeps at most ``window`` jobs not yet taken (running, queued or finished
early); :meth:`InOrder.submit` hands back every outcome that is ready *and* whose predecessors
are all taken, so a caller that stops at the first counterexample never sees a later job's
outcome.  :meth:`InOrder.cancel` drops the jobs not taken (their work is discarded).

Examples
--------
>>> from verify.run._runner import InlineExecutor
>>> jobs = InOrder(InlineExecutor(), window=2)
>>> [(tag, f.result()) for tag, f in jobs.submit("a", pow, 2, 3)]
[('a', 8)]
>>> [tag for tag, _ in jobs.resolved("b", None)] + [tag for tag, _ in jobs.drain()]
['b']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait

__all__ = ["InOrder"]

_POLL_SECONDS = 1.0


class InOrder:
    """Submit jobs to ``executor``, at most ``window`` not yet taken; take outcomes in order."""

    def __init__(self, executor: Executor, window: int) -> None:
        self.executor, self.window = executor, max(1, int(window))
        self._queue: deque[tuple[object, Future]] = deque()

    def submit(self, tag: object, fn, /, *args) -> list[tuple[object, Future]]:
        """Submit ``fn(*args)`` tagged ``tag``; returns the ``(tag, done future)`` pairs now
        taken, in order (waiting for the oldest job while ``window`` are not taken)."""
        self._queue.append((tag, self.executor.submit(fn, *args)))
        return self._take()

    def resolved(self, tag: object, value: object) -> list[tuple[object, Future]]:
        """Queue an outcome known at once (e.g. a draw that could not be built)."""
        future: Future = Future()
        future.set_result(value)
        self._queue.append((tag, future))
        return self._take()

    def drain(self, wait: bool = True) -> Iterator[tuple[object, Future]]:
        """Every remaining outcome, in order, as it finishes (``wait=False``: only those
        already finished with all their predecessors)."""
        while self._queue and (wait or self._queue[0][1].done()):
            self._wait_oldest()
            yield self._queue.popleft()

    def cancel(self) -> None:
        """Cancel the jobs not taken and forget them."""
        for _, future in self._queue:
            future.cancel()
        self._queue.clear()

    def _take(self) -> list[tuple[object, Future]]:
        if len(self._queue) >= self.window:
            self._wait_oldest()
        taken = []
        while self._queue and self._queue[0][1].done():
            taken.append(self._queue.popleft())
        return taken

    def _wait_oldest(self) -> None:
        oldest = self._queue[0][1]
        while not oldest.done():  # a short timeout keeps Ctrl-C responsive
            wait([oldest], timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
