"""Watching a running integration: periodic progress lines, stall detection, a wall-clock budget.

An integrator calls :meth:`RunMonitor.check` once per attempted step with the time reached and
the number of attempted steps; the monitor

* calls ``progress(line)`` at most every ``every`` seconds (``t`` reached, share of the horizon,
  steps, elapsed time and an ETA from the pace so far) — nothing is printed for short runs;
* returns ``("stalled", message)`` when, over the last ``window`` steps, the pace (time advanced
  per step) cannot reach the horizon within the remaining ``max_steps`` (deterministic), or, if
  ``stall_seconds`` is given, when no time at all was gained in that much wall clock;
* returns ``("budget", message)`` once ``budget`` seconds of wall clock are used up, or once
  the wall-clock budget of the enclosing :func:`wall_budget` block (one instance of a run, all
  its integrations together) is;
* returns ``("interrupted", message)`` after a signal caught by an enclosing
  :func:`stop_on_signals` block (``verify simulate``: the first Ctrl-C ends the run with the
  checkpoints reached instead of losing them).

>>> lines = []
>>> m = RunMonitor(0.0, 10.0, max_steps=1000, window=10, progress=lines.append, every=0.0)
>>> m.check(0.001, 10)              # 10 steps for 0.001: 990 more cannot reach t = 10
('stalled', 'steps shrank to ~1.0e-04 at t=0.001: at this pace max_steps=1000 cannot reach T=10.')
>>> lines[0].startswith("t = 0.001 of 10")
True
"""

from __future__ import annotations

import math
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["RunMonitor", "stderr_progress", "PROGRESS_SECONDS", "wall_budget", "WallBudget",
           "stop_on_signals", "remaining_wall_seconds"]

PROGRESS_SECONDS = 10.0  # at most one progress line per this many seconds


def stderr_progress(label: str = "simulate") -> Callable[[str], None]:
    """A progress sink that writes ``label: line`` to standard error (flushed)."""

    def write(line: str) -> None:
        print(f"{label}: {line}", file=sys.stderr, flush=True)

    return write


@dataclass
class WallBudget:
    """The shared wall-clock budget of a :func:`wall_budget` block: ``stopped`` lists the
    messages of the integrations it ended."""

    seconds: float
    deadline: float
    stopped: list[str] = field(default_factory=list)


_WALL_BUDGET: ContextVar[WallBudget | None] = ContextVar("verify_wall_budget", default=None)


@contextmanager
def wall_budget(seconds: float | None) -> Iterator[WallBudget | None]:
    """Every integration monitored inside the block (in this thread) stops with status
    ``"budget"`` once ``seconds`` of wall clock have passed since the block began
    (``None``: no limit).

    >>> with wall_budget(0.0) as shared:
    ...     RunMonitor(0.0, 1.0, max_steps=10).check(0.5, 1)[0], len(shared.stopped)
    ('budget', 1)
    """
    if seconds is None:
        yield None
        return
    shared = WallBudget(float(seconds), time.monotonic() + float(seconds))
    token = _WALL_BUDGET.set(shared)
    try:
        yield shared
    finally:
        _WALL_BUDGET.reset(token)


def remaining_wall_seconds() -> float | None:
    """Seconds left in the enclosing :func:`wall_budget` block (``None``: no limit).

    >>> with wall_budget(60.0):
    ...     0 < remaining_wall_seconds() <= 60
    True
    >>> remaining_wall_seconds() is None
    True
    """
    shared = _WALL_BUDGET.get()
    return None if shared is None else max(0.0, shared.deadline - time.monotonic())


_CAUGHT: list[str] = []  # names of the signals caught inside stop_on_signals


@contextmanager
def stop_on_signals(signums: tuple = (signal.SIGINT,)) -> Iterator[list[str]]:
    """Inside the block the first of ``signums`` does not raise: every monitored integration
    stops at its next step with status ``"interrupted"`` and keeps the checkpoints reached. The
    handlers in place before the block come back at once, so a second signal acts as they do
    (``KeyboardInterrupt`` for Ctrl-C). Yields a list that holds the caught signals' names
    once the block ends. Main thread only (where Python runs signal handlers).

    >>> import os
    >>> with stop_on_signals() as caught:
    ...     os.kill(os.getpid(), signal.SIGINT)
    ...     RunMonitor(0.0, 1.0, max_steps=10).check(0.25, 3)
    ('interrupted', 'interrupted (SIGINT) at t=0.25 (of T=1); the checkpoints reached are kept.')
    >>> caught
    ['SIGINT']
    """
    previous: dict = {}

    def catch(signum, frame) -> None:
        _CAUGHT.append(signal.Signals(signum).name)
        for number, handler in previous.items():
            signal.signal(number, handler)

    for number in signums:
        previous[number] = signal.signal(number, catch)
    caught: list[str] = []
    try:
        yield caught
    finally:
        caught.extend(_CAUGHT)
        _CAUGHT.clear()
        for number, handler in previous.items():
            signal.signal(number, handler)


class RunMonitor:
    """Progress, stall and budget for one integration from ``t0`` to ``T`` (see the module
    docstring). ``budget`` and ``progress`` may be ``None``; ``started`` (a ``time.monotonic()``
    value) lets several integrations share one budget."""

    def __init__(self, t0: float, T: float, *, max_steps: int, window: int = 2_000,
                 progress: Callable[[str], None] | None = None, every: float = PROGRESS_SECONDS,
                 budget: float | None = None, stall_seconds: float | None = None,
                 label: str = "", started: float | None = None) -> None:
        self.t0, self.T, self.max_steps, self.window = float(t0), float(T), max_steps, window
        self.progress, self.every, self.budget = progress, every, budget
        self.stall_seconds, self.label = stall_seconds, label
        self.begin = self.last_line = time.monotonic()  # progress and ETA count from here
        self.start = self.begin if started is None else started  # the budget counts from it
        self.window_start = (0, self.t0)
        self.best = (self.t0, self.begin)  # furthest time reached and when


    def check(self, t: float, steps: int) -> tuple[str, str] | None:
        """``None`` to go on, else ``(status, message)`` to stop with."""
        t, now = float(t), time.monotonic()
        if t > self.best[0]:
            self.best = (t, now)
        if self.progress is not None and now - self.last_line >= self.every:
            self.last_line = now
            self.progress(self.line(t, steps, now))
        if _CAUGHT:
            return "interrupted", (f"interrupted ({_CAUGHT[0]}) at t={t:.6g} (of T={self.T:g}); "
                                   "the checkpoints reached are kept.")
        if self.budget is not None and now - self.start > self.budget:
            return "budget", (f"wall-clock budget of {self.budget:g} s used up at t={t:.6g} "
                              f"(of T={self.T:g}); the checkpoints reached are kept.")
        shared = _WALL_BUDGET.get()
        if shared is not None and now >= shared.deadline:
            message = (f"the instance's wall-clock budget of {shared.seconds:g} s was used up "
                       f"at t={t:.6g} (of T={self.T:g}).")
            shared.stopped.append(message)
            return "budget", message
        if self.stall_seconds is not None and now - self.best[1] > self.stall_seconds:
            return "stalled", (f"no progress past t={self.best[0]:.6g} for "
                               f"{now - self.best[1]:.0f} s of wall clock.")
        if steps - self.window_start[0] >= self.window:
            rate = (t - self.window_start[1]) / (steps - self.window_start[0])
            self.window_start = (steps, t)
            if rate * (self.max_steps - steps) < self.T - t:
                return "stalled", (f"steps shrank to ~{rate:.1e} at t={t:.6g}: at this pace "
                                   f"max_steps={self.max_steps} cannot reach T={self.T:g}.")
        return None

    def line(self, t: float, steps: int, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self.begin
        done = (t - self.t0) / (self.T - self.t0) if self.T > self.t0 else 1.0
        eta = elapsed * (1 - done) / done if done > 0 else math.inf
        eta_text = f"ETA {eta:.0f} s" if math.isfinite(eta) else "ETA unknown"
        label = f"{self.label}: " if self.label else ""
        return (f"{label}t = {t:.6g} of {self.T:g} ({100 * done:.1f} %), {steps} steps, "
                f"{elapsed:.0f} s elapsed, {eta_text} at this pace")
