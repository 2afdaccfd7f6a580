"""Small exact linear algebra over the rationals (python-flint ``fmpq_mat``).

Examples
--------
>>> exact_rank([[1, 0, 0], [1, 0, 0], [0, 0, 1]])
2
>>> exact_rank([["1/2", "1/2"], [1, 1]])
1
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.exact.inputs import rational_array

__all__ = ["to_fmpq_mat", "from_fmpq_mat", "exact_rank", "exact_det"]


def to_fmpq_mat(matrix: object):
    """An exact ``flint.fmpq_mat`` from a 2-D array of numbers (see :mod:`verify.exact.inputs`)."""
    from flint import fmpq, fmpq_mat

    array = matrix if isinstance(matrix, np.ndarray) and matrix.dtype == object else None
    if array is None or not all(isinstance(v, Fraction) for v in array.flat):
        array, _ = rational_array("matrix", matrix)
    rows, cols = array.shape
    return fmpq_mat(rows, cols, [fmpq(v.numerator, v.denominator) for v in array.flat])


def from_fmpq_mat(matrix) -> np.ndarray:
    """The object array of Fractions of a ``flint.fmpq_mat`` (inverse of :func:`to_fmpq_mat`)."""
    rows, cols = matrix.nrows(), matrix.ncols()
    out = np.empty((rows, cols), dtype=object)
    for i in range(rows):
        for j in range(cols):
            value = matrix[i, j]
            out[i, j] = Fraction(int(value.p), int(value.q))
    return out


def exact_rank(matrix: object) -> int:
    """Exact rank of a rational (e.g. Boolean) matrix, by fraction-free elimination in FLINT."""
    return int(to_fmpq_mat(matrix).rank())


def exact_det(matrix: object) -> Fraction:
    """Exact determinant of a square rational matrix."""
    return Fraction(str(to_fmpq_mat(matrix).det()))
