"""Sanity limits checked before any work starts: memory of an instance, number of instances,
horizon, precision, growth ``T·|V|``.  Each limit but the precision's has one override,
``--allow-large`` on the command line (``allow=True`` here, or :func:`lifted_limits` around the
code that reads the files: the same limits hold for values read from claim, conjecture and
instance files as for the command line's).

The memory estimate is deliberately rough and errs high: the integrator holds a few ``n×n``
matrices (logits, attention, their products) and a few dozen ``n×d`` stages, each entry a
float64 (8 bytes) or an arb ball (48 bytes plus the mantissa beyond 128 bits); the exact
weights are ``d×d`` matrices of rationals (``V``, ``Q``, ``K``, about 128 bytes an entry) with
their float64 copies.

Examples
--------
>>> estimate_bytes(20, 2, "float64")
34912
>>> estimate_bytes(200_000, 2, "float64") / 2**30 > 1000
True
>>> check_memory(20, 2, "float64", "polytope.toml")        # fine: returns nothing
>>> check_memory(200_000, 2, "float64", "big.toml")
Traceback (most recent call last):
...
verify.errors.InvalidArgument: big.toml: n=200000, d=2 at precision float64 needs about ...
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from verify.errors import InvalidArgument

__all__ = ["estimate_bytes", "memory_limit", "check_memory", "check_instances",
           "check_horizon", "check_digits", "check_growth", "lifted_limits", "MAX_INSTANCES",
           "MAX_HORIZON", "MAX_HORIZON_BOUNDED", "MAX_DIGITS", "OVERRIDE"]

#: Instances per family (``verify run``) or search instances (``verify check``) above which
#: ``--allow-large`` is needed.
MAX_INSTANCES = 10_000
#: Horizons above this need ``--allow-large`` (the paper's claims use T ≤ 40) ...
MAX_HORIZON = 1000
#: ... or above this when the scores stay bounded (tokens on the sphere, pre-LN): the working
#: precision is then constant in T and the cost grows only linearly (a post-LN run with n = 16,
#: d = 3 to T = 10^4 takes ~30 s with its error estimate; benchmarks/README.md).
MAX_HORIZON_BOUNDED = 100_000
#: Decimal digits of precision: a hard limit (the tolerances are float64 numbers: 10^-d and the
#: reference run's (10^-d)^1.25 underflow to 0 beyond about 240 digits).
MAX_DIGITS = 200
#: ``T·‖V‖∞`` beyond which ``e^{TV}`` overflows float64 (709), and beyond which "auto" would need
#: about 2.9·10^4 bits.
MAX_GROWTH_FLOAT64 = 700
MAX_GROWTH = 10_000
#: The flag that lifts the limits.
OVERRIDE = "--allow-large"
_LIFTED: ContextVar[bool] = ContextVar("verify_limits_lifted", default=False)


@contextmanager
def lifted_limits(lifted: bool = True) -> Iterator[None]:
    """Within the block, every check here behaves as with ``allow=True`` when ``lifted`` (the
    command line's ``--allow-large`` reaching the parsers of claim and conjecture files).

    >>> with lifted_limits():
    ...     check_horizon(10_000, "T")
    """
    token = _LIFTED.set(bool(lifted))
    try:
        yield
    finally:
        _LIFTED.reset(token)


def _allowed(allow: bool) -> bool:
    return allow or _LIFTED.get()
_FALLBACK_LIMIT = 8 * 2**30
_AUTO_BITS = 256  # what "auto" precision is assumed to pick, for the estimate only
_EXACT_BYTES = 128  # an exact rational entry of V, Q or K (a Fraction in an object array)


def _entry_bytes(precision: object) -> int:
    if precision in (None, "float64"):
        return 8
    bits = _AUTO_BITS if precision == "auto" else math.ceil(int(precision) * 3.33)
    return 48 + 8 * max(0, math.ceil((bits - 128) / 64))


def estimate_bytes(n: int, d: int, precision: object = "float64") -> int:
    """Rough memory (bytes) of integrating ``n`` tokens in ``R^d`` at ``precision``
    (``"float64"``, ``"auto"`` or a number of decimal digits): 4 ``n×n`` matrices and 64
    ``n×d`` arrays, and the exact and float ``d×d`` weights."""
    return (4 * n * n + 64 * n * d) * _entry_bytes(precision) + (_EXACT_BYTES + 8) * 3 * d * d


def memory_limit() -> int:
    """Half of this machine's physical memory (8 GiB when it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_LIMIT


def _size(count: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count / 1024:.1f} KiB"


def check_memory(n: int, d: int, precision: object, what: str, allow: bool = False) -> None:
    """Raise :class:`InvalidArgument` naming ``what`` when :func:`estimate_bytes` exceeds
    :func:`memory_limit` (unless ``allow``)."""
    need = estimate_bytes(n, d, precision)
    limit = memory_limit()
    if need > limit and not _allowed(allow):
        raise InvalidArgument(
            f"{what}: n={n}, d={d} at precision {precision} needs about {_size(need)} of "
            f"memory (the n×n attention matrices), more than the {_size(limit)} allowed (half "
            f"of this machine's memory); use fewer tokens, or {OVERRIDE} to try anyway.")


def check_instances(count: int, flag: str, allow: bool = False) -> None:
    """``count`` must be a positive integer, at most :data:`MAX_INSTANCES` unless ``allow``."""
    if count < 1:
        raise InvalidArgument(f"{flag}={count} must be a positive integer.")
    if count > MAX_INSTANCES and not _allowed(allow):
        raise InvalidArgument(f"{flag}={count} is more than {MAX_INSTANCES} instances; "
                              f"add {OVERRIDE} if you mean it.")


def check_horizon(horizon, what: str, allow: bool = False, bounded: bool = False) -> None:
    """``horizon`` (a number) must be positive, at most :data:`MAX_HORIZON` unless ``allow`` —
    :data:`MAX_HORIZON_BOUNDED` when the scores stay ``bounded`` (normalised tokens).

    >>> check_horizon(10_000, "T", bounded=True)          # the sphere: constant precision
    >>> check_horizon(10_000, "T")
    Traceback (most recent call last):
    ...
    verify.errors.InvalidArgument: T=10000 is beyond T = 1000 (the paper's claims use T ≤ 40; ...
    """
    if not horizon > 0:
        raise InvalidArgument(f"{what}={horizon} must be positive.")
    limit = MAX_HORIZON_BOUNDED if bounded else MAX_HORIZON
    if horizon > limit and not _allowed(allow):
        why = ("the run could take hours" if bounded else
               "the scores grow like e^(2μt), so do the precision and the cost")
        raise InvalidArgument(f"{what}={horizon} is beyond T = {limit} (the paper's claims "
                              f"use T ≤ 40; {why}); add {OVERRIDE} if you mean it.")


def check_digits(precision: object, what: str) -> None:
    """A precision in decimal digits must be an integer in ``[16, MAX_DIGITS]``; ``"float64"``
    and ``"auto"`` pass.

    >>> check_digits(400, "--precision")
    Traceback (most recent call last):
    ...
    verify.errors.InvalidArgument: --precision=400 digits: at most 200 (the tolerances ...
    """
    if precision in ("float64", "auto"):
        return
    if not isinstance(precision, int) or isinstance(precision, bool) or precision < 16:
        raise InvalidArgument(f"{what}={precision!r} must be 'float64', 'auto' or a number of "
                              "decimal digits ≥ 16.")
    if precision > MAX_DIGITS:
        raise InvalidArgument(f"{what}={precision} digits: at most {MAX_DIGITS} (the tolerances "
                              "are float64 numbers and 10^-digits would underflow to 0).")


def check_growth(V, horizon: float, precision: object, what: str, allow: bool = False) -> None:
    """Refuse ``T·‖V‖∞`` beyond what the precision can carry: ``e^{T‖V‖}`` overflows float64
    past ~709 (:data:`MAX_GROWTH_FLOAT64`), and "auto" or digits pick about ``2.9·T·‖V‖`` bits
    (:data:`MAX_GROWTH`). ``V`` is a matrix of exact or float numbers.

    >>> check_growth([[1, 0], [0, 1]], 10, "float64", "f.toml")
    >>> check_growth([[10**6, 0], [0, 1]], 10, "float64", "f.toml")
    Traceback (most recent call last):
    ...
    verify.errors.InvalidArgument: f.toml: T·|V| = 10 × 1e+06 = 1e+07 is beyond 700 at ...
    """
    if _allowed(allow):
        return
    norm = max(sum(abs(float(x)) for x in row) for row in V)
    growth = float(horizon) * norm
    bound = MAX_GROWTH_FLOAT64 if precision in (None, "float64") else MAX_GROWTH
    if not growth <= bound:
        fix = "use precision 'auto' (--precision auto)" if bound == MAX_GROWTH_FLOAT64 \
            else "scale V down"
        raise InvalidArgument(
            f"{what}: T·|V| = {float(horizon):g} × {norm:.3g} = {growth:.3g} is beyond {bound} "
            f"at precision {precision}: e^(T·V) would overflow or need about "
            f"{2.9 * growth:.3g} bits; {fix}, shorten the horizon, or add {OVERRIDE}.")
