r"""Checks of the fields of a ``[[families]]`` table shared by
the family parsers (:mod:`verify.claim._family_file`, :mod:`verify.claim._family_weights`):
errors name ``families[i].<field>``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from verify.errors import InvalidArgument
from verify.exact.inputs import to_rational
from verify.exact.plain import fail, suggest

__all__ = ["NAME_RE"]


NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def _check_keys(table: dict, allowed, where: str, source: str) -> None:
    for key in table:
        if key not in allowed:
            fail(source, f"{where}.{key}" if where else key, f"unknown field {key!r}."
                 f"{suggest(key, allowed)} Known fields: {', '.join(allowed)}.")


def _int(value, where, source, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        fail(source, where, f"{value!r} ({type(value).__name__}) must be an integer ≥ {minimum}.")
    return value


def _number(value, where, source) -> Fraction:
    try:
        return to_rational(value, where)[0]
    except InvalidArgument as exc:
        fail(source, where, str(exc))


def _checkpoints(value, horizon, where, source):
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return _int(value, where, source, 2)
    if not isinstance(value, list) or not value:
        fail(source, where, f"{value!r} must be an integer ≥ 2 or a list of times.")
    times = tuple(_number(v, f"{where}[{i}]", source) for i, v in enumerate(value))
    if times[0] != 0 or any(b <= a for a, b in zip(times, times[1:], strict=False)) \
            or times[-1] > horizon:
        fail(source, where, "times must start at 0, increase strictly and not exceed the "
             "horizon.")
    return times
