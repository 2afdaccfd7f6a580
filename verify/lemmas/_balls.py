r"""Exact text for balls and rationals, and what every lemma check reports.

A ball is written ``"M*2^E +/- R*2^F"`` (integers ``M, E, R, F``): the midpoint :math:`M 2^E`
and the radius :math:`R 2^F` are dyadic rationals, so the text is the ball *exactly* (no decimal
rounding); ``"M*2^E"`` is an exact point. A rational is ``"p/q"`` or ``"p"``.

This module, like every module of :mod:`verify.lemmas`, imports only python-flint and the
standard library (the independent checker is built from them; a test enforces it).

>>> from flint import arb
>>> text = ball_text(arb(1) / 3)
>>> text
'6004799503160661*2^-54 +/- 1*2^-54'
>>> parse_ball(text).contains(arb(1) / 3)
True
>>> parse_ball("3*2^-1"), rational("-2/6")
(1.50000000000000, Fraction(-1, 3))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from flint import arb, arb_mat, ctx, fmpq, fmpz

__all__ = ["ball_text", "parse_ball", "rational", "exact", "exact_matrix", "ball_matrix",
           "matrix_text", "dot", "CheckFailure", "Inequality", "LemmaReport"]


class CheckFailure(Exception):
    """The certificate does not prove what it says (the message names the failed part)."""


def _dyadic(value: arb) -> tuple[int, int]:
    man, exp = value.man_exp()
    return int(man), int(exp)


def ball_text(value: arb) -> str:
    """The exact text of a ball (module docstring)."""
    if not value.is_finite():
        raise CheckFailure(f"{value} is not a finite ball.")
    m, e = _dyadic(value.mid())
    radius = value.rad()
    if radius == 0:
        return f"{m}*2^{e}"
    r, f = _dyadic(radius)
    return f"{m}*2^{e} +/- {r}*2^{f}"


def _power(m: int, e: int) -> arb:
    bits = max(abs(m).bit_length() + 8, ctx.prec)
    with ctx.workprec(bits):
        return arb(fmpz(m)) * arb(fmpq(1, 2 ** -e)) if e < 0 else arb(fmpz(m * 2 ** e))


def parse_ball(text: str) -> arb:
    """The ball written by :func:`ball_text`; raises :class:`CheckFailure` on bad text."""
    try:
        parts = str(text).split("+/-")
        m, e = (int(v) for v in parts[0].strip().split("*2^"))
        mid = _power(m, e)
        if len(parts) == 1:
            return mid
        r, f = (int(v) for v in parts[1].strip().split("*2^"))
        if r < 0:
            raise ValueError("negative radius")
        return arb(mid, _power(r, f))
    except (ValueError, IndexError) as exc:
        raise CheckFailure(f"{text!r} is not a ball 'M*2^E +/- R*2^F' ({exc}).") from None


def rational(text) -> Fraction:
    """An exact rational from ``"p/q"`` (or an int); raises :class:`CheckFailure`."""
    try:
        value = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        raise CheckFailure(f"{text!r} is not an exact rational 'p/q'.") from None
    return value


def exact(value: Fraction) -> arb:
    """A rational as a ball at the working precision (exact when dyadic and short)."""
    return arb(fmpq(value.numerator, value.denominator))


def exact_matrix(rows) -> arb_mat:
    """A matrix of rational strings as balls."""
    return arb_mat([[exact(rational(v)) for v in row] for row in rows])


def ball_matrix(rows) -> arb_mat:
    """A matrix of ball strings."""
    return arb_mat([[parse_ball(v) for v in row] for row in rows])


def matrix_text(matrix: arb_mat) -> list[list[str]]:
    return [[ball_text(v) for v in row] for row in matrix.tolist()]


def dot(u: list, v: list) -> arb:
    """The inner product of two vectors of balls.

    >>> dot([arb(1), arb(2)], [arb(3), arb(4)])
    11.0000000000000
    """
    return sum((a * b for a, b in zip(u, v, strict=True)), arb(0))


@dataclass
class Inequality:
    """One hypothesis of a lemma, as a margin that must be positive."""

    name: str
    margin: arb
    statement: str = ""

    @property
    def holds(self) -> bool:
        return bool(self.margin > 0)

    def to_dict(self) -> dict:
        return {"name": self.name, "statement": self.statement,
                "margin": ball_text(self.margin)}


@dataclass
class LemmaReport:
    """What a lemma check found: its inequalities, what it certifies for all ``t >= t1``
    (``conclusions``: plain data, balls as text) and whether every inequality holds."""

    lemma: str
    inequalities: list = field(default_factory=list)
    conclusions: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return bool(self.inequalities) and all(q.holds for q in self.inequalities)

    def failed(self) -> list:
        return [q for q in self.inequalities if not q.holds]

    def require(self, name: str, margin: arb, statement: str = "") -> arb:
        self.inequalities.append(Inequality(name, margin, statement))
        return margin
