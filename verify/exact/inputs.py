"""Exact inputs: numbers and matrices become exact rationals, and the conversion is recorded.

Rules (no surprise, no silent rounding):

* an ``int`` or a :class:`fractions.Fraction` is taken as it is (``"integer"``, ``"rational"``);
* a string is read as written: ``"0.64709742"`` is ``64709742/10**8`` and ``"1/3"`` is ``1/3``
  (``"decimal-string"``, ``"fraction-string"``);
* a :class:`decimal.Decimal` (what TOML files give, see :func:`verify.model.load_instance`) is
  its exact decimal value (``"decimal"``);
* a ``float`` is its **exact binary value**: ``0.1`` becomes ``3602879701896397/2**55``
  (``"float-binary"``); write ``"0.1"`` to mean one tenth;
* any other string is an **exact expression** (:mod:`verify.exact.reals`, never ``eval``):
  ``"cos(pi/3)"`` is ``1/2`` (``"expression"``); an irrational value such as ``"sqrt(2)/2"``
  is an :class:`~verify.exact.reals.Irrational`, the value rounded to 256 significant bits that
  keeps its expression (``"expression-rounded"``).

NaN and infinities are rejected with an error naming the entry.

Examples
--------
>>> to_rational("0.64709742")
(Fraction(32354871, 50000000), 'decimal-string')
>>> to_rational(0.5)
(Fraction(1, 2), 'float-binary')
>>> rational_array("V", [["1", "1/2"], [0, 2]])[0]
array([[Fraction(1, 1), Fraction(1, 2)],
       [Fraction(0, 1), Fraction(2, 1)]], dtype=object)
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from numbers import Integral

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.reals import Irrational, exact_number

__all__ = ["to_rational", "rational_array", "as_float_array", "format_rational"]

# The order in which conversions are reported when several kinds meet in one matrix.
_P_OVER_Q = re.compile(r"[+-]?[0-9]+/[0-9]+")
_KIND_ORDER = [
    "integer", "rational", "fraction-string", "decimal-string", "decimal", "float-binary",
    "expression", "expression-rounded",
]


def to_rational(value: object, name: str = "value") -> tuple[Fraction, str]:
    """Convert one number to an exact :class:`~fractions.Fraction`.

    Parameters
    ----------
    value : int, Fraction, Decimal, float or str
        The number; see the module docstring for the rule of each type.
    name : str
        Used in the error message (e.g. ``"V[0, 1]"``).

    Returns
    -------
    (rational, kind) : (Fraction, str)
        The exact value and the name of the conversion used.

    Raises
    ------
    InvalidArgument
        For NaN, infinities, booleans, unparsable strings and other types.
    """
    if isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} (bool) is not a number; write 0 or 1.")
    if isinstance(value, Integral):
        return Fraction(int(value)), "integer"
    if isinstance(value, Irrational):
        return value, "expression-rounded"
    if isinstance(value, Fraction):
        return value, "rational"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidArgument(
                f"{name}={value} is not finite; every entry must be a real number."
            )
        return Fraction(value), "decimal"
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise InvalidArgument(
                f"{name}={value} is not finite; every entry must be a real number."
            )
        return Fraction(float(value)), "float-binary"
    if isinstance(value, np.integer):
        return Fraction(int(value)), "integer"
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        problem = "not finite"
        if "/" in text:
            if _P_OVER_Q.fullmatch(text):  # the files' "p/q": without Fraction's parser
                numerator, _, denominator = text.partition("/")
                if int(denominator):
                    return Fraction(int(numerator), int(denominator)), "fraction-string"
            try:
                return Fraction(text), "fraction-string"
            except (ValueError, ZeroDivisionError):
                pass
        try:
            dec = Decimal(text)
        except InvalidOperation:
            dec = None
        if dec is not None and dec.is_finite():
            return Fraction(dec), "decimal-string"
        if dec is None:  # not a decimal ("nan" and "inf" are, and are refused): an expression
            try:
                number = exact_number(value)
            except ValueError as exc:
                problem = str(exc)
            else:
                return number, "expression-rounded" if isinstance(number, Irrational) \
                    else "expression"
        raise InvalidArgument(
            f"{name}={value!r} (str) is not a finite number ({problem}); write a decimal like "
            "'0.25', a fraction like '1/4' or an exact expression like 'sqrt(2)/2'."
        )
    raise InvalidArgument(
        f"{name}={value!r} ({type(value).__name__}) is not a number; use an int, a decimal "
        "string, a fraction string or a float."
    )


def rational_array(name: str, value: object, ndim: int = 2) -> tuple[np.ndarray, str]:
    """Convert a nested list (or array) of numbers to an exact object array of Fractions.

    Parameters
    ----------
    name : str
        Name of the matrix, used in error messages.
    value : nested sequence or ndarray
        The entries; each is converted by :func:`to_rational`.
    ndim : int
        Required number of dimensions (2 for matrices and token arrays, 0 for a scalar).

    Returns
    -------
    (array, conversion) : (ndarray of Fraction, str)
        ``conversion`` names the conversions used, e.g. ``"decimal-string"`` or
        ``"integer+float-binary"``.
    """
    if isinstance(value, np.ndarray) and value.dtype != object:
        raw = value
    else:
        try:
            raw = np.array(value, dtype=object)
        except ValueError as exc:  # ragged nested lists
            raise InvalidArgument(f"{name} is not a rectangular array: {exc}") from None
    if raw.dtype == object and any(isinstance(v, (list, tuple, np.ndarray)) for v in raw.flat):
        raise InvalidArgument(f"{name} is not a rectangular array: its rows differ in length.")
    if raw.ndim != ndim:
        raise InvalidArgument(
            f"Expected {name} with {ndim} dimension(s) but got {name}.ndim={raw.ndim} "
            f"(shape {raw.shape}); write {name} as a list of rows."
        )
    out = np.empty(raw.shape, dtype=object)
    kinds = set()
    for index, entry in zip(np.ndindex(raw.shape), raw.flat, strict=True):
        if hasattr(entry, "item") and not isinstance(entry, Fraction):
            entry = entry.item()
        try:
            out[index], kind = to_rational(entry, name)
        except InvalidArgument:  # said again with the entry's position
            to_rational(entry, f"{name}[{', '.join(map(str, index))}]" if index else name)
            raise
        kinds.add(kind)
    conversion = "+".join(k for k in _KIND_ORDER if k in kinds) or "empty"
    return out, conversion


def as_float_array(array: np.ndarray) -> np.ndarray:
    """The nearest float64 array to an exact object array (each entry rounded once)."""
    return np.vectorize(float, otypes=[float])(array) if array.size else array.astype(float)


def format_rational(value: Fraction) -> str:
    """A rational as ``"p/q"`` (or ``"p"``), the form used in files and reports."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"
