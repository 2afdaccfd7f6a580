r"""Boolean limits of the attention matrix and the shape predicted by Theorem 2.1.

Claim ``boolean-1d`` (``d = 1``, ``V > 0``, ``QK > 0``, pairwise distinct tokens): after sorting
the tokens by initial position, every row of :math:`P^* = \lim P(t)` is :math:`e_1^\top`
(attend to the smallest token) or :math:`e_n^\top` (the largest), except at most one row, which
is an arbitrary probability vector. Hence :math:`\operatorname{rank} P^* \le 3`, and for almost
every datum :math:`P^*` is Boolean of rank 1 or 2.

Entries are judged with two thresholds, ``tol ≤ reject``:

* within ``tol`` of 0 or 1: **snapped** to that value;
* farther than ``reject`` from both 0 and 1: **not Boolean** (kept at its exact value);
* in between: **undecided** (then any answer depending on it is ``None``).

With the default ``reject = tol`` there is no undecided band. Exact rational input with
``tol = 0`` (the default) is judged exactly. Floats are taken at their exact binary value.

Examples
--------
>>> P = [[1, 0, 0], [1, 0, 0], [0, 0, 1]]
>>> shape = boolean_1d_shape(P, [0, 1, 2])
>>> shape.rows, shape.matches, shape.rank
(('first', 'first', 'last'), True, 2)
>>> boolean_rank([[0.9999999, 1e-7], [0.0, 1.0]], tol=1e-6)
2
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array, to_rational
from verify.exact.linalg import exact_rank

__all__ = ["BooleanShape", "classify_entries", "is_boolean", "boolean_rank", "boolean_1d_shape"]

SNAPPED, NON_BOOLEAN, UNDECIDED = "snapped", "non-boolean", "undecided"


def _thresholds(tol: object, reject: object) -> tuple[Fraction, Fraction]:
    t, _ = to_rational(tol, "tol")
    r = t if reject is None else to_rational(reject, "reject")[0]
    if not 0 <= t < Fraction(1, 2) or r < t:
        raise InvalidArgument(
            f"tol={tol!r}, reject={reject!r}: need 0 ≤ tol < 1/2 and reject ≥ tol (reject=None "
            "means reject = tol).")
    return t, r


def classify_entries(P: object, tol: object = 0, *,
                     reject: object = None) -> tuple[np.ndarray, np.ndarray]:
    """Snap the entries of ``P`` near 0/1 and label every entry.

    Parameters
    ----------
    P : array-like, shape (m, n)
    tol, reject : number
        Thresholds (module docstring).

    Returns
    -------
    (values, labels) : (ndarray of Fraction, ndarray of str)
        ``values`` has snapped entries replaced by 0 or 1, others exact; ``labels`` holds
        ``"snapped"``, ``"non-boolean"`` or ``"undecided"``.

    Examples
    --------
    >>> classify_entries([[0.5, 1e-9]], 1e-6)[1].tolist()
    [['non-boolean', 'snapped']]
    """
    t, r = _thresholds(tol, reject)
    M, _ = rational_array("P", P)
    values, labels = M.copy(), np.empty(M.shape, dtype=object)
    for idx, v in np.ndenumerate(M):
        gap = min(abs(v), abs(v - 1))
        if gap <= t:
            values[idx], labels[idx] = Fraction(0 if abs(v) <= t else 1), SNAPPED
        else:
            labels[idx] = NON_BOOLEAN if gap > r else UNDECIDED
    return values, labels


def is_boolean(P: object, tol: object = 0, *, reject: object = None) -> bool | None:
    """True if every entry snaps to 0/1, False if one is not Boolean, None if undecided.

    Examples
    --------
    >>> is_boolean([[1, 0], [0, 1]]), is_boolean([[0.5, 0.5]]), is_boolean([[0.01]], 0, reject=0.1)
    (True, False, None)
    """
    labels = classify_entries(P, tol, reject=reject)[1]
    if (labels == NON_BOOLEAN).any():
        return False
    return None if (labels == UNDECIDED).any() else True


def boolean_rank(P: object, tol: object = 0, *, reject: object = None) -> int | None:
    """Exact rank after snapping every entry to 0/1; None when some entry does not snap."""
    values, labels = classify_entries(P, tol, reject=reject)
    return exact_rank(values) if (labels == SNAPPED).all() else None


@dataclass(frozen=True)
class BooleanShape:
    """Row classification of :math:`P^*` against Theorem 2.1.

    Attributes
    ----------
    rows : tuple of str
        Per token (original index): ``"first"`` (row is ``e_1ᵀ``, the smallest token),
        ``"last"`` (``e_nᵀ``), ``"free"`` (neither) or ``"undecided"``.
    free_rows : tuple of int
        Tokens whose row is ``"free"``.
    number_free : int
    matches : bool or None
        At most one free row (None if undecided rows could change the answer).
    rank : int or None
        Exact rank of the snapped matrix (non-Boolean entries kept exact); None if some entry
        is undecided.
    boolean : bool or None
        :func:`is_boolean` of ``P*``.
    leaders : tuple of int
        The extreme tokens ``(order[0], order[-1])``.
    """

    rows: tuple[str, ...]
    free_rows: tuple[int, ...]
    number_free: int
    matches: bool | None
    rank: int | None
    boolean: bool | None
    leaders: tuple[int, int]


def boolean_1d_shape(P_star: object, order: object, *, tol: object = 0,
                     reject: object = None) -> BooleanShape:
    """Check the shape of the limit attention matrix predicted by Theorem 2.1.

    Parameters
    ----------
    P_star : array-like, shape (n, n)
        The (approximate) limit of ``P(t)``, rows indexed by the original token order; must be
        row-stochastic within ``tol`` (entries ``≥ −tol``, row sums within ``n·tol`` of 1).
    order : sequence of int
        Token indices sorted by increasing initial position (``numpy.argsort(x0)``).
    tol, reject : number
        Entry thresholds (module docstring); ``tol = 0`` judges exactly.

    Returns
    -------
    BooleanShape

    Raises
    ------
    InvalidArgument
        Non-square or non-stochastic ``P_star``; ``order`` not a permutation.

    Examples
    --------
    >>> P = [[0, 0, 1], ["1/4", "1/2", "1/4"], [0, 0, 1]]   # tokens at 5, 0, 9
    >>> s = boolean_1d_shape(P, [1, 0, 2])
    >>> s.rows, s.free_rows, s.matches, s.rank, s.leaders
    (('last', 'free', 'last'), (1,), True, 2, (1, 2))
    """
    values, labels = classify_entries(P_star, tol, reject=reject)
    n = values.shape[0]
    if values.shape != (n, n) or n == 0:
        raise InvalidArgument(f"P_star.shape={values.shape}; P_star must be a non-empty n×n "
                              "matrix.")
    try:
        perm = [int(k) for k in order]
    except (TypeError, ValueError):
        perm = None
    if perm is None or sorted(perm) != list(range(n)):
        raise InvalidArgument(f"order={order!r} ({type(order).__name__}) must be a permutation "
                              f"of range({n}); pass numpy.argsort(x0).")
    t = _thresholds(tol, reject)[0]
    raw, _ = rational_array("P_star", P_star)
    for i in range(n):
        if min(raw[i]) < -t or abs(sum(raw[i]) - 1) > n * t:
            raise InvalidArgument(
                f"P_star row {i} = {[float(v) for v in raw[i]]} is not a probability vector "
                f"within tol={tol}; P* must be row-stochastic.")
    first, last = perm[0], perm[-1]

    def fits(i: int, k: int) -> tuple[bool, bool]:
        """Row i is surely / possibly e_kᵀ."""
        ok = [labels[i, j] == SNAPPED and values[i, j] == int(j == k) for j in range(n)]
        return all(ok), all(o or labels[i, j] == UNDECIDED for j, o in enumerate(ok))

    rows = []
    for i in range(n):
        (sure_f, maybe_f), (sure_l, maybe_l) = fits(i, first), fits(i, last)
        rows.append("first" if sure_f else "last" if sure_l
                    else "undecided" if maybe_f or maybe_l else "free")
    free = tuple(i for i, r in enumerate(rows) if r == "free")
    undecided = rows.count("undecided")
    matches = False if len(free) > 1 else True if len(free) + undecided <= 1 else None
    rank = None if (labels == UNDECIDED).any() else exact_rank(values)
    return BooleanShape(tuple(rows), free, len(free), matches, rank,
                        is_boolean(P_star, tol, reject=reject), (first, last))
