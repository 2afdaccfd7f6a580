"""Progress of a run on stderr: a one-line bar redrawn in place on an interactive terminal;
elsewhere (a log file, a pipe, CI) a plain line now and then, so that a log shows life.

Lines mode writes one line at the start, after the first finished instance, then whenever
``interval`` seconds (default 30) have passed since the last line, whether an instance finished
or not (:meth:`Progress.tick`), and one at the end.

Examples
--------
>>> import io
>>> now = [0.0]
>>> log = io.StringIO()   # not a TTY: lines
>>> bar = Progress(3, stream=log, clock=lambda: now[0])
>>> bar.mode
'lines'
>>> now[0] = 2.0; bar.update("polytope/u#0", "holds")
>>> now[0] = 9.0; bar.update("polytope/u#1", "holds")     # < 30 s since the last line: quiet
>>> now[0] = 45.0; bar.tick()
>>> print(log.getvalue(), end="")
progress: 0/3 instances
progress: 1/3 instances (1 ok), 0:02 elapsed, about 0:04 left
progress: 2/3 instances (2 ok), 0:45 elapsed, about 0:22 left
>>> Progress(3, stream=log, enabled=False).mode is None
True
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

__all__ = ["Progress", "progress_enabled", "LINE_INTERVAL"]

_SYMBOLS = {"holds": "ok", "violated": "violated", "inconclusive": "?", "out-of-scope": "n/a",
            "error": "ERROR"}

#: Seconds between two progress lines on a non-terminal.
LINE_INTERVAL = 30.0


def progress_enabled(stream) -> bool:
    """True on an interactive terminal outside CI (``CI`` unset, or not ``true``/``1``): where
    the redrawn bar is shown."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _clock_text(seconds: float) -> str:
    """``0:07``, ``12:30``, ``1:02:03``."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    text = f"{rest // 60}:{rest % 60:02d}"
    return f"{hours}:{text.zfill(5)}" if hours else text


class Progress:
    """Progress of ``total`` instances on ``stream`` (default stderr).

    ``mode``: ``"bar"`` (``[#####-----] 12/40  0:07 left  polytope/u#3 ok`` redrawn with
    ``\\r``; on a terminal outside CI), ``"lines"`` (anywhere else) or ``None`` (silent:
    ``enabled=False``).  ``enabled=True`` forces the bar.
    """

    def __init__(self, total: int, *, stream=None, enabled: bool | None = None,
                 width: int = 24, interval: float = LINE_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = sys.stderr if stream is None else stream
        if enabled is False:
            self.mode = None
        elif enabled or progress_enabled(self.stream):
            self.mode = "bar"
        else:
            self.mode = "lines"
        self.total, self.done, self.width = max(total, 0), 0, width
        self.interval, self.clock = interval, clock
        self.counts: dict[str, int] = {}
        self.start = clock()
        self.last_line: float | None = None
        self.shown = 0  # instances finished at the last line
        if self.mode == "lines" and self.total:
            self._line()

    @property
    def enabled(self) -> bool:
        """True when anything is written."""
        return self.mode is not None

    def update(self, key: str, verdict: str) -> None:
        """One more instance finished."""
        self.done += 1
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        if self.mode == "bar":
            self._bar(key)
        elif self.mode == "lines" and (self.done == 1 or self._due()):
            self._line()

    def tick(self) -> None:
        """Called now and then while waiting: a line when ``interval`` seconds have passed."""
        if self.mode == "lines" and self.done < self.total and self._due():
            self._line()

    def close(self) -> None:
        """End the bar's line, or write the last progress line."""
        if self.mode == "bar" and self.done:
            self.stream.write("\n")
            self.stream.flush()
        elif self.mode == "lines" and self.done != self.shown:
            self._line()

    def _due(self) -> bool:
        return self.last_line is None or self.clock() - self.last_line >= self.interval

    def _tally(self) -> str:
        return ", ".join(f"{self.counts[v]} {_SYMBOLS.get(v, v)}" for v in sorted(self.counts))

    def _line(self) -> None:
        now = self.clock()
        elapsed = now - self.start
        line = f"progress: {self.done}/{self.total} instances"
        if self.done:
            line += f" ({self._tally()}), {_clock_text(elapsed)} elapsed"
            if self.done < self.total:
                left = elapsed / self.done * (self.total - self.done)
                line += f", about {_clock_text(left)} left"
        elif elapsed >= 1:
            line += f", {_clock_text(elapsed)} elapsed"
        self.stream.write(line + "\n")
        self.stream.flush()
        self.last_line, self.shown = now, self.done

    def _bar(self, key: str) -> None:
        filled = self.width * self.done // max(self.total, 1)
        elapsed = self.clock() - self.start
        left = elapsed / self.done * (self.total - self.done)
        tally = " ".join(f"{self.counts[v]} {_SYMBOLS.get(v, v)}" for v in sorted(self.counts))
        line = (f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} "
                f"{int(left) // 60}:{int(left) % 60:02d} left  {tally}  {key}")
        self.stream.write("\r" + line[:118].ljust(118))
        self.stream.flush()
