r"""Distributions of ``beta`` for a search: ranges, bounded or not (``β ∈ (0, ∞)``).

A ``[search]`` lists its choices of ``beta`` as numbers, or as tables naming a distribution::

    beta = [1, { distribution = "log-uniform", low = 0, high = "inf" }]

* ``log-uniform`` — ``log|β|`` uniform on ``(log|low|, log|high|)`` when both ends are finite
  and nonzero; an end at ``0`` or ``±inf`` is unbounded in ``log|β|``, which then has a Cauchy
  density of scale ``ln 10`` (a half-Cauchy with one end finite): half the draws lie within a
  factor 10 of the centre, and every positive value has positive density. The range must not
  contain 0 inside (``low ≥ 0`` or ``high ≤ 0``); its ends are never drawn (open);
* ``uniform`` — ``β`` uniform on ``[low, high]`` (finite ends).

The point ``u ∈ [0, 1)`` is ``numpy.random.default_rng(k).random()`` for an integer ``k``
Hypothesis chooses (uniform whatever ``k`` is; the same ``k``, the same ``β``), and ``β`` is
rounded to 4 significant digits, an exact decimal. A numerical run cannot
take an arbitrary real: draws are limited to ``10^-12 ≤ |β| ≤ 10^12`` (the tails beyond are
clamped there, and said so in :meth:`BetaRange.describe`).

Examples
--------
>>> r = BetaRange("log-uniform", Fraction(0), None)
>>> r.value(0.5), r.describe()
(Fraction(1, 1), 'log-uniform(0, inf)')
>>> 0 < r.draw(7) < 10**13 and r.contains(Fraction(10**6)) and not r.contains(0)
True
>>> BetaRange("uniform", Fraction(-1), Fraction(1)).value(0.0)
Fraction(-1, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from verify.exact.plain import fail, suggest

__all__ = ["BetaRange", "LAWS", "parse_beta_range", "LIMIT"]

LAWS = ("log-uniform", "uniform")
#: Draws are limited to ``1/LIMIT ≤ |β| ≤ LIMIT``.
LIMIT = 10**12
_SCALE = math.log(10)


@dataclass(frozen=True)
class BetaRange:
    """A distribution of ``beta`` on ``(low, high)`` (``None``: infinite)."""

    law: str
    low: Fraction | None
    high: Fraction | None

    @property
    def sign(self) -> int:
        """-1 for a range of negative betas, else 1."""
        return -1 if self.high is not None and self.high <= 0 else 1

    def contains(self, beta) -> bool:
        """Whether ``beta`` is a value this range can give."""
        beta = Fraction(beta)
        if self.law == "log-uniform":
            if beta == 0 or (beta > 0) != (self.sign > 0) or not \
                    Fraction(1, LIMIT) <= abs(beta) <= LIMIT:
                return False
            return (self.low is None or beta > self.low) and (self.high is None
                                                              or beta < self.high)
        return self.low <= beta <= self.high

    def draw(self, k: int) -> Fraction:
        """The ``beta`` of the integer ``k``: :meth:`value` at ``default_rng(k).random()``."""
        import numpy as np

        return self.value(float(np.random.default_rng(k).random()))

    def value(self, u: float) -> Fraction:
        """The ``beta`` at the point ``u ∈ [0, 1)`` of the distribution (``1/2``: the
        centre)."""
        if self.law == "uniform":
            x = float(self.low) + u * float(self.high - self.low)
            return Fraction(Decimal(f"{min(max(x, float(self.low)), float(self.high)):.4g}"))
        if self.sign > 0:  # log|β| runs from lo to hi; None is -inf (at lo) or +inf (at hi)
            lo = None if self.low == 0 else math.log(self.low)
            hi = None if self.high is None else math.log(self.high)
        else:
            lo = None if self.high == 0 else math.log(-self.high)
            hi = None if self.low is None else math.log(-self.low)
        if lo is not None and hi is not None:
            logb = lo + u * (hi - lo)
        elif lo is None and hi is None:
            logb = _SCALE * math.tan(math.pi * (u - 0.5))
        elif lo is None:
            logb = hi - _SCALE * math.tan(math.pi * (1 - u) / 2)
        else:
            logb = lo + _SCALE * math.tan(math.pi * u / 2)
        bound = math.log(LIMIT)
        magnitude = math.exp(min(max(logb, -bound), bound))
        return _four_digits(self.sign * magnitude, self.low, self.high)

    def representative(self) -> Fraction:
        """One value of the range (its centre), for validating the model options."""
        return self.value(0.5)

    def describe(self) -> str:
        def end(e, inf):
            return inf if e is None else str(e)

        return f"{self.law}({end(self.low, '-inf')}, {end(self.high, 'inf')})"


def _four_digits(x: float, low, high) -> Fraction:
    """``x`` to 4 significant digits as an exact decimal, kept strictly inside an open end."""
    value = Fraction(Decimal(f"{x:.4g}"))
    for digits in (6, 9, 17):  # rounding may land on an end of the range: keep more digits
        if (low is None or value != low) and (high is None or value != high):
            break
        value = Fraction(Decimal(f"{x:.{digits}g}"))
    return value


def parse_beta_range(table: dict, where: str, source: str, number) -> BetaRange:
    """Validate ``{ distribution = ..., low = ..., high = ... }`` (``number`` reads an exact
    number, naming the field); errors read ``"<source>: <where>.<key>: ..."``."""

    unknown = sorted(set(table) - {"distribution", "low", "high"})
    if unknown:
        fail(source, f"{where}.{unknown[0]}", f"unknown key of a beta distribution."
             f"{suggest(unknown[0], ['distribution', 'low', 'high'])} Keys: distribution, "
             "low, high.")
    law = table.get("distribution")
    if law not in LAWS:
        fail(source, f"{where}.distribution", f"{law!r} must be one of {', '.join(LAWS)}."
             f"{suggest(str(law), LAWS)}")
    ends = []
    for key in ("low", "high"):
        if key not in table:
            fail(source, f"{where}.{key}", "missing: give the end of the range (a number, or "
                 "\"inf\" / \"-inf\" for log-uniform).")
        value = table[key]
        if isinstance(value, str) and value.strip() in ("inf", "+inf", "-inf"):
            if law != "log-uniform":
                fail(source, f"{where}.{key}", "a uniform beta needs finite ends; use "
                     "log-uniform for an unbounded range.")
            if (value.strip() == "-inf") != (key == "low"):
                fail(source, f"{where}.{key}", f"{value!r} cannot be the {key} end.")
            ends.append(None)
        else:
            ends.append(number(value, f"{where}.{key}", source))
    low, high = ends
    if low is not None and high is not None and not low < high:
        fail(source, where, f"the range ({low}, {high}) is empty: needs low < high.")
    if law == "log-uniform":
        inside_zero = (low is None or low < 0) and (high is None or high > 0)
        if inside_zero:
            fail(source, where, "a log-uniform beta cannot cross 0: give low ≥ 0 or high ≤ 0 "
                 "(list two ranges for both signs).")
    return BetaRange(law, low, high)
