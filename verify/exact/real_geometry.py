r"""Hulls and hemispheres of exact data, decided with a certificate either way.

The data are points with exact entries: rationals, or :class:`~verify.exact.reals.Irrational`
entries whose exact value is an expression. Each question is first answered on the rationals
the entries enter as (exact phase-I simplex of :mod:`verify.exact.hull`, or a floating-point
guess made exact), and the certificate is then **checked on the exact values**: in rational
arithmetic when every entry is rational, else by :func:`verify.exact.reals.sign` (SymPy, or a
ball that excludes 0). A certificate that cannot be checked leaves the answer undecided
(``None``), never guessed.

* :func:`in_hull` — ``p ∈ conv{x_k}``: convex weights ``λ ≥ 0``, ``Σ λ = 1``,
  ``Σ λ_k x_k = p`` (re-solved exactly on the support for irrational data), or a Farkas
  vector ``y`` with ``y·(x_k, 1) ≤ 0 < y·(p, 1)``;
* :func:`convex_position` — every point is a vertex: no point in the hull of the others;
* :func:`in_closed_hemisphere` — some ``w ≠ 0`` has ``⟨w, x_i⟩ ≥ 0`` for all ``i``: such a
  ``w`` (rational, checked exactly), or the origin in the interior of the hull (the ``2d``
  points ``±ε e_a`` in the hull).

Examples
--------
>>> from fractions import Fraction as F
>>> in_hull([F(1, 4), F(1, 4)], [[0, 0], [1, 0], [0, 1]])[0]
True
>>> convex_position([[0, 0], [1, 0], [0, 1], [F(1, 3), F(1, 3)]])
(False, 'token 4 is in the hull of the others (exact convex weights).')
>>> in_closed_hemisphere([[1, 0], [-1, 0], [0, 1]])[0], in_closed_hemisphere(
...     [[1, 0], [-1, 0], [0, 1], [0, -1]])[0]
(True, False)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.exact.hull import _exact_phase1, _rationalise
from verify.exact.linalg import exact_rank
from verify.exact.precision import working_precision
from verify.exact.reals import Irrational, sign, symbolic, to_arb

__all__ = ["in_hull", "convex_position", "in_closed_hemisphere"]


def _rational(rows) -> bool:
    return not any(isinstance(v, Irrational) for row in rows for v in row)


def _fractions(rows) -> list[tuple[Fraction, ...]]:
    return [tuple(Fraction(v) for v in row) for row in rows]


def _dot_sign(w, row) -> int | None:
    """The sign of ``⟨w, row⟩`` on the exact values (``w`` rational; ``row`` entries
    rational, :class:`Irrational` or SymPy numbers)."""
    if all(isinstance(v, Fraction | int) and not isinstance(v, Irrational) for v in row):
        return sign(sum((Fraction(a) * Fraction(b) for a, b in zip(w, row, strict=True)),
                        Fraction(0)))
    import sympy

    return sign(sympy.Add(*(symbolic(Fraction(a)) * symbolic(b)
                            for a, b in zip(w, row, strict=True))))


def in_hull(point, rows) -> tuple[bool | None, str]:
    """Whether ``point`` lies in the convex hull of ``rows`` (module docstring)."""

    one = (Fraction(1),)
    columns = [r + one for r in _fractions(rows)]
    status, vector = _exact_phase1(columns, tuple(Fraction(v) for v in point) + one)
    exact = _rational([*rows, point])
    if status == "infeasible":  # Farkas: y·(x_k, 1) ≤ 0 < y·(p, 1)
        if exact:
            return False, "a separating hyperplane (exact Farkas vector) leaves it outside."
        for c in _strict_separators(point, rows):
            if all(_dot_sign(c, [a - b for a, b in zip(symbolic_row(point), symbolic_row(row),
                                                       strict=True)]) == 1 for row in rows):
                return False, "a rational hyperplane separates it strictly (checked on the " \
                              "exact values)."
        return None, "no strict separating hyperplane was verified on the exact values."
    if exact:
        return True, "exact convex weights."
    support = [k for k, v in enumerate(vector) if v != 0]
    return _weights_on_exact(point, rows, support)


def symbolic_row(row) -> list:
    """The exact values of a row (SymPy numbers)."""
    return [symbolic(v) for v in row]


def _strict_separators(point, rows) -> list[tuple[int, ...]]:
    """Integer ``c`` near the float direction maximising ``min_k c·(p − x_k)`` (HiGHS)."""
    from scipy.optimize import linprog


    diff = np.array([[float(a) - float(b) for a, b in zip(row, point, strict=True)]
                     for row in rows])
    d = diff.shape[1]
    found = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[diff, np.ones(len(diff))],
                    b_ub=np.zeros(len(diff)), bounds=[(-1, 1)] * d + [(None, 1)],
                    method="highs")
    return _rationalise(found.x[:d]) if found.status == 0 and found.x[d] > 0 else []


def _weights_on_exact(point, rows, support) -> tuple[bool | None, str]:
    """Re-solve the convex weights on ``support`` with the exact values and check them: in
    balls when the system is square (strictly positive weights are then proved), else in
    SymPy."""
    import sympy

    if len(support) == len(point) + 1 and _positive_ball_weights(point, rows, support):
        return True, "convex weights enclosed in balls, all > 0, on the exact values."
    A = sympy.Matrix([[symbolic(rows[k][a]) for k in support] for a in range(len(point))]
                     + [[1] * len(support)])
    b = sympy.Matrix([symbolic(v) for v in point] + [1])
    try:
        solution, free = A.gauss_jordan_solve(b)
    except ValueError:
        return None, "the convex weights of the rounded data do not solve the exact system."
    weights = [sympy.radsimp(v.subs({p: 0 for p in free})) for v in solution]
    residual = A * sympy.Matrix(weights) - b
    if all(sign(w) in (0, 1) for w in weights) and all(sign(sympy.expand(r)) == 0
                                                       for r in residual):
        return True, "convex weights solved and checked on the exact values."
    return None, "the convex weights are not decided on the exact values."


def _positive_ball_weights(point, rows, support) -> bool:
    """Whether the square system ``Σ λ_k (x_k, 1) = (p, 1)`` over ``support`` has a solution
    enclosed in balls that are all > 0 (arb: a rigorous enclosure of the exact solution)."""
    import flint


    bits = 320
    entries = [[to_arb(symbolic(rows[k][a]), bits) for k in support] for a in range(len(point))]
    rhs = [to_arb(symbolic(v), bits) for v in point]
    if any(v is None for row in entries for v in row) or any(v is None for v in rhs):
        return False
    with working_precision(bits):
        A = flint.arb_mat(entries + [[flint.arb(1)] * len(support)])
        try:
            weights = A.solve(flint.arb_mat([[v] for v in rhs] + [[flint.arb(1)]]))
        except (ZeroDivisionError, ValueError):
            return False
        return all(weights[k, 0] > 0 for k in range(len(support)))


def convex_position(rows) -> tuple[bool | None, str]:
    """Whether every point is a vertex of the hull (none is in the hull of the others)."""
    undecided = []
    for i in range(len(rows)):
        inside, why = in_hull(rows[i], [r for k, r in enumerate(rows) if k != i])
        if inside:
            return False, f"token {i + 1} is in the hull of the others ({why[:-1]})."
        if inside is None:
            undecided.append(i + 1)
    if undecided:
        return None, f"whether tokens {undecided} are vertices is undecided."
    return True, f"each of the {len(rows)} tokens is separated from the hull of the others."


def _candidate_w(X: np.ndarray) -> list[tuple[int, ...]]:
    """Integer directions near a float ``w`` with ``Xw ≥ 0`` maximising ``Σ Xw`` (HiGHS)."""
    from scipy.optimize import linprog


    d = X.shape[1]
    found = linprog(-X.sum(axis=0), A_ub=-X, b_ub=np.zeros(len(X)), bounds=[(-1, 1)] * d,
                    method="highs")
    return _rationalise(found.x) if found.status == 0 else []


def _interior_epsilon(X: np.ndarray) -> float | None:
    """The largest ``s`` with ``±s e_a`` in the hull for every ``a`` (float), or ``None``."""
    from scipy.optimize import linprog

    n, d = X.shape
    best = np.inf
    for a in range(d):
        for direction in (1, -1):  # maximise s: Σλ x = s·direction·e_a, Σλ = 1, λ ≥ 0
            A = np.zeros((d + 1, n + 1))
            A[:d, :n], A[d, :n] = X.T, 1
            A[a, n] = -direction
            found = linprog(np.r_[np.zeros(n), -1.0], A_eq=A, b_eq=np.r_[np.zeros(d), 1],
                            bounds=[(0, None)] * (n + 1), method="highs")
            if found.status != 0:
                return None
            best = min(best, float(found.x[n]))
    return best if best > 0 else None


def in_closed_hemisphere(rows) -> tuple[bool | None, str]:
    """Whether some ``w ≠ 0`` has ``⟨w, x_i⟩ ≥ 0`` for every point (module docstring)."""
    X = np.array([[float(v) for v in row] for row in rows])
    d = X.shape[1]
    for w in _candidate_w(X):
        if not any(w):
            continue
        signs = [_dot_sign(w, row) for row in rows]
        if all(s is not None and s >= 0 for s in signs):
            return True, f"w = {list(w)} has <w, x_i> ≥ 0 for every token (checked exactly)."
    eps = _interior_epsilon(X)
    if eps is not None:
        e = Fraction(eps / 2).limit_denominator(2**20) or Fraction(1, 2**20)
        corners = [[e * direction * int(b == a) for b in range(d)]
                   for a in range(d) for direction in (1, -1)]
        if all(in_hull(q, rows)[0] is True for q in corners):
            return False, (f"the origin is interior to the hull (±{e}·e_a are in it, exact): no "
                           "closed hemisphere holds every token.")
    if _rational(rows):
        if exact_rank(np.array(_fractions(rows), dtype=object)) < d:
            return True, "the tokens span a proper subspace: a normal w has <w, x_i> = 0."
    return None, "neither a hemisphere w nor an interior origin was verified."
