"""Plain values: what goes into ``results.json`` and error messages of the claim layer.

* :func:`to_plain` turns exact numbers, numpy values and enums into JSON-able Python values
  (a non-integer rational becomes its exact string ``"p/q"``, a non-finite float the string
  ``"inf"``, ``"-inf"`` or ``"nan"``);
* :func:`fail` raises :class:`~verify.errors.InvalidArgument` as ``"<file>: <field>: <problem>"``;
* :func:`suggest` is the "did you mean" of unknown names.

Examples
--------
>>> from fractions import Fraction
>>> to_plain({"a": Fraction(1, 2), "b": [Fraction(3), float("inf")]})
{'a': '1/2', 'b': [3, 'inf']}
>>> suggest("symmetric-MMT", ["symmetric-MMt", "random"])
" Did you mean 'symmetric-MMt'?"
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from typing import NoReturn

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import format_rational
from verify.exact.reals import Irrational

__all__ = ["to_plain", "plain_float", "fail", "suggest"]


def to_plain(value: object) -> object:
    """A JSON-able copy of ``value`` (dicts, lists, str, int, float, bool, None).

    Exact rationals stay exact: integers become ``int``, other rationals the string ``"p/q"``,
    an :class:`~verify.exact.reals.Irrational` its expression (``"sqrt(2)/2"``); ``Decimal`` is
    read as the rational it denotes.  Non-finite floats become strings.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return to_plain(value.value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value).lower().replace("infinity", "inf")
        value = Fraction(value)
    if isinstance(value, Irrational):  # the exact value it was written as
        return value.expression
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else format_rational(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return [to_plain(item) for item in value.tolist()] if value.dtype != object else \
            [to_plain(item) for item in value]
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    raise InvalidArgument(
        f"value={value!r} ({type(value).__name__}) cannot be stored in JSON; use numbers, "
        "strings, lists and dicts (or Fractions, which are written exactly)."
    )


def plain_float(value: object) -> float | None:
    """``float(value)``, reading the strings ``"inf"``, ``"-inf"``, ``"nan"``; ``None`` stays."""
    if value is None:
        return None
    if isinstance(value, str) and "/" in value:
        return float(Fraction(value))
    return float(value)


def suggest(name: str, known: Iterable[str]) -> str:
    """``" Did you mean 'x'?"`` for the closest known name, or ``""``."""
    close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def fail(source: str, where: str, problem: str) -> NoReturn:
    """Raise :class:`InvalidArgument` naming the file, the field and the problem."""
    field = f"{where}: " if where else ""
    raise InvalidArgument(f"{source}: {field}{problem}")


def require_positive_int(table: dict, key: str, source: str, where: str) -> None:
    """Fail (naming ``where.key``) unless ``table[key]``, when present, is an integer ≥ 1.

    >>> require_positive_int({"layers": 0}, "layers", "f.toml", "conclusion")
    Traceback (most recent call last):
        ...
    verify.errors.InvalidArgument: f.toml: conclusion.layers: 0 must be a positive integer.
    """
    value = table.get(key)
    if key in table and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        fail(source, f"{where}.{key}", f"{value!r} must be a positive integer.")
