r"""Is a matrix in a class of the search? The test behind :meth:`SearchSpace.contains`.

A search draws ``V`` from named classes (``identity``, ``random`` in ``[low, high]``,
``integer`` with entries bounded by ``bound``, ...) and ``QᵀK`` likewise; a shrink move (``V →
diag(V)``, rounding, dropping a coordinate) may leave the class, and then the shrunk instance
is no longer an instance of the conjecture's search. Each class has an exact test here, on the
exact entries (``Fraction``):

* a test of the entries (``identity``, ``negative-identity``, ``random``, ``scalar-positive``,
  ``integer``, ``integer-diagonal``, ``symmetric-MMt``: symmetric positive semidefinite,
  ``eigenvalues``: the exact characteristic polynomial);
* for a class defined by a spectral property, the hypothesis that states it (``paranormal``,
  ``complex-leading`` → ``complex_leading_pair``, ``random-good-triple`` → ``good_triple``,
  ``spd-NNt`` → ``qk_positive_definite``), decided exactly on the instance; *undecided*
  counts as outside (a move is taken only when it certainly stays inside).

``QK`` classes are about :math:`B = Q^\top K` (the dynamics see only ``B``), so ``Q, K → I, B``
stays in the class.

Examples
--------
>>> from fractions import Fraction as F
>>> import numpy as np
>>> I2 = np.array([[F(1), F(0)], [F(0), F(1)]], dtype=object)
>>> entries_in_class("V", "identity", {}, I2), entries_in_class("V", "integer", {"bound": 3}, I2)
(True, True)
>>> entries_in_class("V", "random", {"low": F(0), "high": F(1, 2)}, I2)
False
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from verify.exact import exact_det
from verify.exact.linalg import to_fmpq_mat

__all__ = ["entries_in_class", "HYPOTHESIS_OF_CLASS"]

#: Classes defined by a spectral property: the hypothesis that states it, per axis.
HYPOTHESIS_OF_CLASS = {("V", "paranormal"): "paranormal",
                       ("V", "complex-leading"): "complex_leading_pair",
                       ("V", "random-good-triple"): "good_triple",
                       ("QK", "spd-NNt"): "qk_positive_definite"}


def _eye(M: np.ndarray, sign: int = 1) -> bool:
    d = M.shape[0]
    return all(M[i, j] == (sign if i == j else 0) for i in range(d) for j in range(d))


def _within(M: np.ndarray, params: dict) -> bool:
    return all(Fraction(params["low"]) <= x <= Fraction(params["high"]) for x in M.flat)


def _integer(M: np.ndarray, params: dict) -> bool:
    return all(Fraction(x).denominator == 1 and abs(x) <= params["bound"] for x in M.flat)


def _psd(M: np.ndarray) -> bool:
    """Symmetric positive semidefinite, exactly (every principal minor ≥ 0)."""
    from itertools import combinations


    d = M.shape[0]
    if any(M[i, j] != M[j, i] for i in range(d) for j in range(i)):
        return False
    return all(exact_det(M[np.ix_(rows, rows)]) >= 0
               for k in range(1, d + 1) for rows in combinations(range(d), k))


def _has_eigenvalues(M: np.ndarray, params: dict) -> bool:
    """The characteristic polynomial of ``M`` is ``∏ (x − λ_i)`` over the given eigenvalues."""
    import flint


    wanted = flint.fmpq_poly([1])
    for value in params.get("eigenvalues") or []:
        value = Fraction(value)
        wanted *= flint.fmpq_poly([flint.fmpq(-value.numerator, value.denominator), 1])
    return len(params.get("eigenvalues") or []) == M.shape[0] and \
        to_fmpq_mat(M).charpoly() == wanted


_ENTRY_TESTS: dict[tuple[str, str], Callable[[np.ndarray, dict], bool]] = {
    ("V", "identity"): lambda M, p: _eye(M),
    ("V", "negative-identity"): lambda M, p: _eye(M, -1),
    ("V", "scalar-positive"): lambda M, p: M.shape == (1, 1) and _within(M, p) and M[0, 0] > 0,
    ("V", "random"): _within,
    ("V", "symmetric-MMt"): lambda M, p: _psd(M),
    ("V", "integer"): _integer,
    ("V", "eigenvalues"): _has_eigenvalues,
    ("V", "matrix"): lambda M, p: M.tolist() == [list(row) for row in p["matrix"]],
    ("QK", "matrix"): lambda M, p: M.tolist() == [list(row) for row in p["matrix"]],
    ("V", "integer-diagonal"): lambda M, p: _integer(M, p) and all(
        M[i, j] == 0 for i in range(M.shape[0]) for j in range(M.shape[0]) if i != j),
    ("QK", "identity"): lambda M, p: _eye(M),
    ("QK", "random-uniform"): _within,
    ("QK", "integer"): _integer,
}


def entries_in_class(axis: str, name: str, params: dict, matrix: np.ndarray) -> bool | None:
    """Whether ``matrix`` (``V``, or ``B = QᵀK`` for ``axis = "QK"``) is in class ``name``
    with parameters ``params``; ``None`` when the class has no test of the entries (see
    :data:`HYPOTHESIS_OF_CLASS`)."""
    test = _ENTRY_TESTS.get((axis, name))
    if test is None:
        return None
    M = np.asarray(matrix, dtype=object)
    return bool(test(M, {k: v for k, v in params.items() if v is not None}))
