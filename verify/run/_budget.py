"""Per-instance budgets of a run: wall time and memory, so that a runaway instance ends as
*inconclusive (budget)* instead of holding up the sweep.

:func:`judge_within` runs one instance's judgement (the check and the re-check of a violation)
under a :class:`Budget`:

* wall time: every integration of the instance shares one deadline
  (:func:`verify.numerics._monitor.wall_budget`) and stops with status ``budget`` when it
  passes; if any integration was stopped so, the instance's verdict is replaced by an
  inconclusive one whose reason starts with ``budget:`` — what was decided from truncated
  runs is not trusted;
* memory: the address space of the process may grow by at most ``memory`` bytes during the
  instance (``RLIMIT_AS``, Linux and macOS; one instance at a time per process, as the local
  pool and :func:`verify.run._cluster.on_worker` run them); an allocation beyond it raises
  ``MemoryError``, which becomes the same inconclusive verdict.

Examples
--------
>>> from verify.claim import InstanceResult, InstanceVerdict
>>> slow = lambda: (InstanceResult("f#0", "f", 0, InstanceVerdict.HOLDS, "ok", margin=1.0,
...                                error=0.1), {})
>>> judge_within(Budget(seconds=60), slow)[0].verdict.value
'holds'
>>> parse_memory("512M"), parse_memory("2G"), parse_memory("1000")
(536870912, 2147483648, 1000)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from verify.errors import InvalidArgument
from verify.judge import budget_used_up
from verify.numerics._monitor import wall_budget
from verify.proof import proof_budget

__all__ = ["Budget", "judge_within", "parse_memory", "BUDGET_PREFIX"]

BUDGET_PREFIX = "budget:"
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclass(frozen=True)
class Budget:
    """What one instance may use: ``seconds`` of wall clock, ``memory`` bytes of address space
    beyond what the worker process held when it began (``None``: no limit), and ``proof``
    CPU seconds to prove its verdict (:func:`verify.proof.prove_result`; ``None``: the
    default, 0: no proof)."""

    seconds: float | None = None
    memory: int | None = None
    proof: float | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds > 0:
            raise InvalidArgument(f"instance budget seconds={self.seconds} must be positive.")
        if self.memory is not None and not self.memory > 0:
            raise InvalidArgument(f"instance budget memory={self.memory} must be positive.")
        if self.proof is not None and not self.proof >= 0:
            raise InvalidArgument(f"proof budget proof={self.proof} must be >= 0 seconds "
                                  "(0: no proofs).")

    def describe(self) -> str:
        parts = [f"{self.seconds:g} s" if self.seconds is not None else "",
                 f"{self.memory / 2**20:.0f} MiB" if self.memory is not None else ""]
        return " and ".join(p for p in parts if p) or "none"


def parse_memory(text: str, flag: str = "--instance-memory") -> int:
    """Bytes from ``"1000"``, ``"512M"``, ``"2G"`` (binary units K, M, G, T)."""
    size = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = _UNITS.get(size[-1:], 1)
    number = size[:-1] if size[-1:] in _UNITS else size
    try:
        value = float(number) * scale
    except ValueError:
        raise InvalidArgument(f"{flag}={text!r}: give bytes or a size like 512M or 2G.") \
            from None
    if not value >= 1 or value == float("inf"):
        raise InvalidArgument(f"{flag}={text!r} must be a positive, finite size.")
    return int(value)


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def _memory_cap(extra: int | None) -> Iterator[bool]:
    """Limit the address space to its current size + ``extra`` bytes; yields whether a limit
    is in force (not where ``resource`` or ``/proc/self/statm`` is missing)."""
    current = None if extra is None else _address_space()
    try:
        import resource
    except ImportError:
        current = None
    if current is None:
        yield False
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield True
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def judge_within(budget: Budget | None, judge: Callable[[], tuple]) -> tuple:
    """``judge()`` (returning ``(InstanceResult, extra)``) under ``budget``; a used-up budget
    gives an inconclusive result whose reason starts with :data:`BUDGET_PREFIX`."""

    with proof_budget(None if budget is None else budget.proof):
        if budget is None or (budget.seconds is None and budget.memory is None):
            return judge()

        with wall_budget(budget.seconds) as wall, _memory_cap(budget.memory) as capped:
            result, extra = judge()
    exception = str(extra.get("exception") or "")
    if capped and exception.startswith("MemoryError"):
        return _used_up(result, budget, f"memory: an allocation beyond the instance's "
                        f"{budget.memory / 2**20:.0f} MiB failed ({exception})"), extra
    if wall is not None and wall.stopped:
        return _used_up(result, budget, f"wall time: {wall.stopped[0]}"), {}
    return result, extra


def _used_up(result, budget: Budget, what: str):
    return budget_used_up(result, f"{BUDGET_PREFIX} the instance used up its budget ({what}); "
                          "nothing decided under it is trusted.",
                          {"seconds": budget.seconds, "memory": budget.memory})
