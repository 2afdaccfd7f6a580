r"""Private helpers shared by the exact modules (spectra, hulls, symmetries).

* a scoped FLINT precision (:func:`working_precision`: ``flint.ctx.prec`` is global);
* exact conversions between ``Fraction`` arrays and FLINT (:func:`to_fraction_array`,
  :func:`fmpq_of`, :func:`arb_to_fraction`; the other direction is
  :func:`verify.exact.linalg.to_fmpq_mat`) and exact input checks (:func:`square_rational`,
  :func:`points_array`);
* row reduction over $\mathbb{Q}$ (:func:`rref`, :func:`kernel_from_rref`, :func:`solve_unique`)
  and integer scaling (:func:`integer_rows`);
* short display of exact numbers and balls (:func:`fmt`).

Examples
--------
>>> from fractions import Fraction as F
>>> rref([[F(1), F(2)], [F(2), F(4)]])
([[Fraction(1, 1), Fraction(2, 1)]], [0])
>>> kernel_from_rref(*rref([[F(1), F(2)], [F(2), F(4)]]), 2, F(1), F(0))
[[Fraction(-2, 1), Fraction(1, 1)]]
>>> solve_unique([(F(1), F(0)), (F(1), F(1))], (F(3), F(5)))
[Fraction(-2, 1), Fraction(5, 1)]
>>> integer_rows([(F(1, 2), F(1, 3))])
[(3, 2)]
>>> fmt(F(-3, 4)), fmt(F(5))
('-3/4', '5')
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array
from verify.exact.linalg import to_fmpq_mat
from verify.exact.precision import working_precision

__all__ = [
    "working_precision", "fmt", "square_rational", "points_array", "fmpq_of",
    "arb_to_fraction", "to_fraction_array", "rref", "kernel_from_rref", "solve_unique",
    "integer_rows",
]


def arb_to_fraction(value) -> Fraction:
    """An exact ``flint.arb`` (e.g. a midpoint) as a Fraction."""
    mantissa, exponent = value.man_exp()
    return Fraction(int(mantissa)) * Fraction(2) ** int(exponent)


def fmt(x, digits: int = 6) -> str:
    """A ball or exact number as a short decimal, ``…`` marking a rounded value."""
    from flint import acb, arb

    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if isinstance(x, acb):
        if x.imag.is_zero():
            return fmt(x.real, digits)
        im = x.imag
        sign = "-" if im < 0 else "+"
        return f"{fmt(x.real, digits)} {sign} {fmt(abs(im), digits)}i"
    if isinstance(x, arb):
        if x.is_exact():
            value = arb_to_fraction(x)
            return f"{float(value):.15g}" if Fraction(float(value)) == value else fmt(value)
        return f"{float(x.mid()):.{digits}g}…"
    return str(x)


def square_rational(name: str, value: object) -> np.ndarray:
    """A nonempty square matrix as an exact object array of Fractions (kept if already so)."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 2 and all(
            type(v) is Fraction for v in value.flat):
        array = value
    else:
        array, _ = rational_array(name, value)
    if array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise InvalidArgument(
            f"Expected {name} square (d×d, d ≥ 1) but got {name}.shape={array.shape} "
            f"({type(value).__name__}); pass {name} as a list of d rows of length d."
        )
    return array


def points_array(name: str, value: object) -> np.ndarray:
    """An n×d array of exact points (one per row), n, d ≥ 1."""
    array, _ = rational_array(name, value)
    if array.shape[0] < 1 or array.shape[1] < 1:
        raise InvalidArgument(
            f"{name}.shape={array.shape} is empty; {name} must be an n×d array with n, d ≥ 1 "
            "(one point per row)."
        )
    return array


def fmpq_of(x: Fraction):
    """A Fraction as a ``flint.fmpq``."""
    from flint import fmpq

    return fmpq(x.numerator, x.denominator)


def to_fraction_array(mat) -> np.ndarray:
    """An ``fmpq_mat`` as an exact object array of Fractions (inverse of ``to_fmpq_mat``)."""
    out = np.empty((mat.nrows(), mat.ncols()), dtype=object)
    for i in range(mat.nrows()):
        for j in range(mat.ncols()):
            v = mat[i, j]
            out[i, j] = Fraction(int(v.p), int(v.q))
    return out


def rref(rows: list[list[Fraction]]) -> tuple[list[list[Fraction]], list[int]]:
    """Reduced row echelon form (FLINT ``fmpq_mat``): the nonzero rows and the pivot columns."""
    if not rows or not rows[0]:
        return [], []
    red, rank = to_fmpq_mat(np.array(rows, dtype=object)).rref()
    out = to_fraction_array(red)[: int(rank)].tolist()
    return out, [next(j for j, v in enumerate(row) if v != 0) for row in out]


def kernel_from_rref(rows: list, pivots: list, n: int, one, zero) -> list:
    """Kernel basis read from a reduced row echelon form: one vector per free column.

    Works over any field whose elements support ``-`` (``one``/``zero`` give the type).
    """
    basis = []
    for free in (c for c in range(n) if c not in pivots):
        v = [zero] * n
        v[free] = one
        for i, pc in enumerate(pivots):
            v[pc] = -rows[i][free]
        basis.append(v)
    return basis


def solve_unique(columns: list, rhs: tuple) -> list[Fraction] | None:
    """The unique solution of ``Σ_k x_k columns[k] = rhs``, or None (inconsistent/not unique)."""
    s = len(columns)
    red, piv = rref([[col[r] for col in columns] + [rhs[r]] for r in range(len(rhs))])
    if s in piv or len(piv) != s:
        return None
    return [red[k][s] for k in range(s)]


def integer_rows(rows) -> list[tuple[int, ...]]:
    """Rational rows times the lcm of all their denominators, as tuples of Python integers.

    A positive common scaling: it keeps every equality, sign and separating inequality.
    """
    scale = lcm(*(v.denominator for row in rows for v in row))
    return [tuple(int(v * scale) for v in row) for row in rows]
