"""The escape threshold of Theorem 2.1's proof (§7): ``a > 0`` with ``a² = n² e^{−a²}``.

A token beyond ``a`` (for ``Q = K = V = 1``, ``d = 1``) escapes to infinity like ``e^t``.

Examples
--------
>>> escape_threshold_value(1, 10)  # a = sqrt(W(1)), W the Lambert function
'0.753089165'
"""

from __future__ import annotations

from fractions import Fraction

from verify.exact.precision import working_precision

__all__ = ["escape_threshold_value", "above_escape_threshold"]


def escape_threshold_value(n: int, digits: int = 30) -> str:
    r"""The ``a > 0`` with ``a² = n² e^{−a²}``: ``a = √W(n²)`` (Lambert W), as a decimal string.

    >>> escape_threshold_value(3, 15)
    '1.29576865982536'
    """
    import mpmath

    with mpmath.workdps(digits + 10):
        a = mpmath.sqrt(mpmath.lambertw(n * n).real)
        return mpmath.nstr(a, digits)


def above_escape_threshold(value: Fraction, n: int) -> bool | None:
    r"""Whether ``value > a`` (certified in ball arithmetic): for ``u = value² > 0``,
    ``value > a ⇔ value > 0 and u e^{u} > n²`` (``u e^u`` is increasing). ``None`` if undecided.

    >>> above_escape_threshold(Fraction(13, 10), 3), above_escape_threshold(Fraction(129, 100), 3)
    (True, False)
    """
    from flint import arb, fmpq

    if value <= 0:
        return False
    with working_precision(256):
        u = arb(fmpq(value.numerator, value.denominator)) ** 2
        s = u * u.exp() - n * n
        return True if s > 0 else False if s < 0 else None
