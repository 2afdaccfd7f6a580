"""A one-line progress bar on a terminal (stderr); silent when not a TTY or when ``CI=true``.

Examples
--------
>>> import io
>>> bar = Progress(3, stream=io.StringIO())   # not a TTY: silent
>>> bar.enabled
False
>>> bar.update("polytope/u#0", "holds"); bar.close()
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["Progress", "progress_enabled"]

_SYMBOLS = {"holds": "ok", "violated": "violated", "inconclusive": "?", "out-of-scope": "n/a"}


def progress_enabled(stream) -> bool:
    """True on an interactive terminal outside CI (``CI`` unset, or not ``true``/``1``)."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """``[#####-----] 12/40  0:07 left  polytope/u#3 ok`` redrawn in place with ``\\r``."""

    def __init__(self, total: int, *, stream=None, enabled: bool | None = None,
                 width: int = 24) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_enabled(self.stream) if enabled is None else enabled
        self.total, self.done, self.width = max(total, 0), 0, width
        self.counts: dict[str, int] = {}
        self.start = time.monotonic()

    def update(self, key: str, verdict: str) -> None:
        """One more instance finished."""
        self.done += 1
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        if not self.enabled:
            return
        filled = self.width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self.start
        left = elapsed / self.done * (self.total - self.done)
        tally = " ".join(f"{self.counts[v]} {_SYMBOLS.get(v, v)}" for v in sorted(self.counts))
        line = (f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} "
                f"{int(left) // 60}:{int(left) % 60:02d} left  {tally}  {key}")
        self.stream.write("\r" + line[:118].ljust(118))
        self.stream.flush()

    def close(self) -> None:
        """End the line."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
