r"""Numbers printed with the digits their error allows: one formatter for every text a person
reads (the reports, the verdicts' reasons, the command line).

A computed number :math:`v` with an error estimate :math:`e \ge 0` (the truth lies within
:math:`e` of :math:`v`) is printed in one of three forms:

* :func:`plus_minus` — ``v ± e``: the error rounded *up* (from its shortest decimal form: an
  error estimate has no more digits than that) to two significant digits, the value
  rounded to the same decimal place: ``1.23457 ± 0.00031``, ``(4.62 ± 0.05)×10⁻⁹``;
* :func:`trusted` — the value cut to its *trusted digits*: rounded to the place
  :math:`P = 10^{\lceil \log_{10} 2e \rceil}`, the smallest power of ten with
  :math:`e \le P/2`, so the printed value is within one unit of its last digit of the truth
  (``1.2346`` for ``1.2345678`` with error ``3·10⁻⁵``); when not even the first digit can be
  trusted, the ``v ± e`` form;
* :func:`upper` — an upper bound, rounded *up* (``≤ 0.18`` for 0.1723);
* :func:`versus` — a margin and its error estimate side by side (a verdict compares them),
  printed to the *same* decimal place and with enough digits that the inequality between them
  is visible: ``4.62×10⁻⁹ > 4.59×10⁻⁹`` where three significant digits each would both read
  ``4.6×10⁻⁹``.

An error of 0 means exact arithmetic: exact values (``int``, :class:`~fractions.Fraction`,
``"p/q"``) print exactly, a float with error 0 to :data:`SIGNIFICANT` significant digits.
Powers of ten are written ``×10⁻⁹`` (Unicode superscripts: the same text in a terminal, in
Markdown and in HTML); numbers between :data:`SMALL` and :data:`LARGE` in magnitude are written
without one.

Examples
--------
>>> plus_minus(1.2345678, 3.1e-5), trusted(1.2345678, 3e-5), trusted(2.5e-9, 1e-13)
('1.234568 ± 0.000031', '1.2346', '2.500×10⁻⁹')
>>> versus(4.6234e-9, 4.5812e-9)
('4.62×10⁻⁹', '4.59×10⁻⁹')
>>> versus(0.1, 1e-12), plus_minus(3, 0), trusted(0.3, 2)
(('0.100', '1.0×10⁻¹²'), '3', '0.3 ± 2.0')
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, ROUND_UP, Decimal, localcontext

__all__ = ["plus_minus", "trusted", "versus", "exact", "scientific", "upper", "trusted_place",
           "SIGNIFICANT", "MARGIN_DIGITS", "SMALL", "LARGE"]

SIGNIFICANT = 6        #: most significant digits printed for a value, however small its error
SMALL, LARGE = 1e-3, 1e5  #: magnitudes printed without a power of ten
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
FLOAT_DIGITS = 17      #: significant digits a float64 holds
MARGIN_DIGITS = 3      #: significant digits of a margin far larger than its error
_MAX_EXTRA = 4         #: extra digits :func:`versus` may add to make an inequality visible


def _exponent(x: float) -> int:
    """``floor(log10 |x|)`` for ``x != 0`` (exact at powers of ten, unlike ``log10``)."""
    return Decimal(repr(abs(float(x)))).adjusted()


def _round(x: float, place: int, rounding=ROUND_HALF_EVEN) -> Decimal:
    """``x`` rounded to a multiple of ``10**place``: a value from its exact binary value, an
    error rounded up (``ROUND_CEILING``) from its shortest decimal form."""
    exact_value = Decimal(repr(float(x))) if rounding == ROUND_CEILING else Decimal(float(x))
    with localcontext() as context:
        context.prec = 80
        return exact_value.quantize(Decimal(1).scaleb(place), rounding=rounding)


def _power(exponent: int) -> str:
    return f"×10{str(exponent).translate(_SUPERSCRIPT)}"


def _plain(d: Decimal, place: int) -> str:
    """``d`` (a multiple of ``10**place``) in positional notation with ``max(0, -place)``
    decimals (a zero without its sign)."""
    text = f"{d:.{max(0, -place)}f}"
    return text.lstrip("-") if d == 0 else text


def _scaled(d: Decimal, place: int, exponent: int) -> str:
    """The mantissa of ``d`` for ``…×10^exponent`` (decimals down to ``place``)."""
    return _plain(d.scaleb(-exponent), place - exponent)


def _needs_power(magnitude: float) -> bool:
    return magnitude != 0 and not SMALL <= magnitude < LARGE


def _fixed(d: Decimal, place: int) -> str:
    """``d`` (a multiple of ``10**place``) with a power of ten of its own magnitude when it is
    outside ``[SMALL, LARGE)`` or its last digit is left of the units (``1.2×10³``: "1200"
    would claim four digits)."""
    if d == 0 and place < -4:  # not 0.0000000000
        return "0"
    if d != 0 and (_needs_power(abs(float(d))) or place > 0):  # 1.2×10³, never "1200"
        return _scaled(d, place, d.adjusted()) + _power(d.adjusted())
    return _plain(d, place)


def scientific(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, with a Unicode power of ten when it is outside
    ``[SMALL, LARGE)``.

    >>> scientific(1.5e-7), scientific(0.25), scientific(123456.0, 2), scientific(0.0)
    ('1.50×10⁻⁷', '0.250', '1.2×10⁵', '0')
    """
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    place = _exponent(x) - digits + 1
    d = _round(x, place)
    if d != 0 and d.adjusted() != _exponent(x):  # 9.99 → 10.0: one digit fewer
        place += 1
        d = _round(x, place)
    return _fixed(d, place)


def exact(value) -> str:
    """An exact number as it is (``int``, ``Fraction`` or ``"p/q"``), a float to
    :data:`SIGNIFICANT` significant digits without trailing zeros.

    >>> from fractions import Fraction
    >>> exact(Fraction(5, 4)), exact("-1/3"), exact(2), exact(0.1), exact(2e-20)
    ('5/4', '-1/3', '2', '0.1', '2×10⁻²⁰')
    """
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            return str(value) if not math.isfinite(value) else "0"
        text = scientific(value, SIGNIFICANT)
        mantissa, times, power = text.partition("×")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return mantissa + times + power
    return str(value)


def upper(bound, digits: int = 2) -> str:
    """An upper bound rounded *up* to ``digits`` significant digits (it stays a bound).

    >>> upper(0.17234), upper(1.0001e-12), upper(0.0)
    ('0.18', '1.1×10⁻¹²', '0')
    """
    x = float(bound)
    if not math.isfinite(x) or x == 0:
        return exact(x)
    place = _exponent(x) - digits + 1
    d = _round(x, place, ROUND_UP)
    if d.adjusted() > _exponent(x):
        place += 1
        d = _round(x, place, ROUND_UP)
    return _fixed(d, place)


def trusted_place(error: float) -> int:
    """The exponent of :math:`P = 10^{\\lceil \\log_{10} 2e \\rceil}`: a value rounded to a
    multiple of ``P`` is within one unit of ``P`` of the truth.

    >>> trusted_place(3e-5), trusted_place(4e-6), trusted_place(5e-3)
    (-4, -5, -2)
    """
    twice = Decimal(repr(2 * float(error)))
    place = twice.adjusted()
    return place if twice == Decimal(1).scaleb(place) else place + 1


def _error_place(error: float, digits: int) -> int:
    return _exponent(error) - digits + 1


def plus_minus(value, error, digits: int = 2) -> str:
    """``value ± error``: the error rounded up to ``digits`` significant digits, the value to
    the same decimal place (a shared power of ten outside ``[SMALL, LARGE)``). An error of 0
    prints the value alone (:func:`exact`); an unknown error (``None``, NaN, inf) says so.

    >>> plus_minus(2.0, 1e-3), plus_minus(-4.62e-9, 5e-11), plus_minus(1.0, None)
    ('2.0000 ± 0.0010', '(-4.620 ± 0.050)×10⁻⁹', '1.00000 (no error estimate)')
    """
    if error is None or not math.isfinite(float(error)):
        return f"{scientific(float(value), SIGNIFICANT)} (no error estimate)"
    if float(error) == 0:
        return exact(value)
    v, e = float(value), float(error)
    # no finer than float64 resolves the value (17 significant digits)
    place = max(_error_place(e, digits), _exponent(max(abs(v), e)) - FLOAT_DIGITS + 1)
    e_text = _round(e, place, ROUND_CEILING)
    if e_text.adjusted() > _exponent(e):  # 9.96 → 10: keep two digits of the new magnitude
        place += 1
        e_text = _round(e, place, ROUND_CEILING)
    v_text = _round(v, place)
    magnitude = max(abs(v), e)
    if _needs_power(magnitude) or place > 0:
        k = _exponent(magnitude)
        return (f"({_scaled(v_text, place, k)} ± {_scaled(e_text, place, k)})"
                f"{_power(k)}")
    return f"{_plain(v_text, place)} ± {_plain(e_text, place)}"


def trusted(value, error) -> str:
    """``value`` cut to the digits ``error`` allows (at most :data:`SIGNIFICANT` significant
    digits); :func:`plus_minus` when not even the leading digit is trusted; :func:`exact` for
    error 0.

    >>> trusted(1.2345678, 4e-6), trusted(-0.5, 1e-17), trusted(12.0, 30.0)
    ('1.23457', '-0.500000', '12 ± 30')
    """
    if error is None or not math.isfinite(float(error)):
        return plus_minus(value, error)
    if float(error) == 0:
        return exact(value)
    v = float(value)
    place = trusted_place(float(error))
    if v == 0 or _exponent(v) < place or abs(_round(v, place)) == 0:
        return plus_minus(value, error)
    place = max(place, _exponent(v) - SIGNIFICANT + 1)
    return _fixed(_round(v, place), place)


def versus(margin, error) -> tuple[str, str]:
    """A margin and its error estimate as two strings, for a verdict that compares them: two
    significant digits of the error (rounded up), more when needed to show ``|margin| > error``
    or ``|margin| ≤ error`` as computed (up to :data:`_MAX_EXTRA` more); the margin to the same
    decimal place, or to :data:`MARGIN_DIGITS` significant digits when it is far larger, so it
    is printed within its trusted digits in the sense of :func:`plus_minus`. Error 0:
    ``(exact(margin), "0")``.

    >>> versus(4.6e-9, 4.6e-9), versus(-3.0, 0.25), versus(2.0, 1.5), versus(0.1, 1e-12)
    (('4.6×10⁻⁹', '4.6×10⁻⁹'), ('-3.00', '0.25'), ('2.0', '1.5'), ('0.100', '1.0×10⁻¹²'))
    """
    if error is None or not math.isfinite(float(error)):
        return scientific(float(margin), SIGNIFICANT), "unknown"
    m, e = float(margin), float(error)
    if e == 0:
        return exact(margin), "0"
    if not math.isfinite(m):
        return str(m), scientific(e, 2)
    place = _error_place(e, 2)
    m_place = place if m == 0 else max(place, _exponent(m) - MARGIN_DIGITS + 1)
    for _ in range(_MAX_EXTRA + 2):
        e_d = _round(e, place, ROUND_CEILING)
        if e_d.adjusted() > _exponent(e):  # 9.96 → 10: two digits of the new magnitude
            place += 1
            m_place = max(m_place, place)
            e_d = _round(e, place, ROUND_CEILING)
        m_d = _round(m, m_place)
        if m_d != 0 and m_place > place and m_d.adjusted() > _exponent(m):  # 0.0999… → 0.100
            m_place += 1
            m_d = _round(m, m_place)
        if (abs(m_d) > e_d) == (abs(m) > e) and (abs(m) == e or abs(m_d) != e_d):
            break
        place = m_place = min(place, m_place) - (m_place == place)  # both to one place, finer
    return _fixed(m_d, m_place), _fixed(e_d, place)
