"""Hyperplane / affine-subspace distances and Boolean limit shapes (hand-computed values)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import mpmath
import numpy as np
import pytest

from verify.errors import InvalidArgument
from verify.exact.boolean import boolean_1d_shape, boolean_rank, classify_entries, is_boolean
from verify.exact.hyperplanes import (
    distance_to_affine_subspaces,
    distance_to_hyperplanes,
    hyperplane_offsets,
    offset_error_bound,
)


# ----------------------------------------------------------------- hyperplanes
def test_offsets_and_distance_by_hand():
    pts = [[1, 0], [0, 1], [-1, -1]]
    a, b = hyperplane_offsets([1, 2], pts)  # φ*(z) = 1, 2, -3
    assert (a, b) == (-3, 2)
    d = distance_to_hyperplanes([1, 2], [1, 1], (a, 0, b))  # φ*(x) = 3: |3 - 2| / √5
    assert d.squared == Fraction(1, 5) and d.nearest == 2
    assert abs(d.value - 1 / 5**0.5) <= 2**-52 and d.error < 1e-16
    on = distance_to_hyperplanes([1, 2], [0, 0], (a, 0, b))  # the middle hyperplane
    assert on.squared == 0 and on.nearest == 1 and on.value == 0.0
    assert offset_error_bound(pts, "1/10") == Fraction(2, 10)


def test_distance_error_bound_is_rigorous_and_not_loose():
    phi, x, offs = [Fraction(3, 2), Fraction(-1, 3)], [Fraction(2), Fraction(5, 7)], (-1, 0, 2)
    r = Fraction(1, 10**4)
    d = distance_to_hyperplanes(phi, x, offs, radius=r)
    worst = 0.0
    with mpmath.workdps(40):  # independent route: 40 digits from exact rationals
        for s in product([-1, 0, 1], repeat=2):  # corners and centre of the ball of φ*
            p = [phi[k] + s[k] * r for k in range(2)]
            v = p[0] * x[0] + p[1] * x[1]
            num, den2 = min(abs(v - c) for c in offs), p[0] ** 2 + p[1] ** 2
            true = (mpmath.mpf(num.numerator) / num.denominator) / mpmath.sqrt(
                mpmath.mpf(den2.numerator) / den2.denominator)
            worst = max(worst, float(abs(true - d.value)))
    assert worst <= d.error <= 3 * worst + 1e-15
    d2 = distance_to_hyperplanes(phi, x, offs, radius=r, offsets_error=r)
    assert d2.error > d.error
    assert distance_to_hyperplanes([1, 1], [2, 1], (0,), radius=2).error == float("inf")


def test_hyperplane_errors():
    with pytest.raises(InvalidArgument, match="zero vector"):
        distance_to_hyperplanes([0, 0], [1, 1], (0,))
    with pytest.raises(InvalidArgument, match="length"):
        distance_to_hyperplanes([1, 0], [1, 1, 1], (0,))
    with pytest.raises(InvalidArgument, match="radius"):
        distance_to_hyperplanes([1, 0], [1, 1], (0,), radius=-1)
    with pytest.raises(InvalidArgument):
        hyperplane_offsets([1, 0, 0], [[1, 2]])


def test_codimension_distances_by_hand():
    W = [[1, 0, 0], [0, 1, 0]]
    d = distance_to_affine_subspaces(W, [3, 4, 7], [[0, 0], [3, 0], [-1, 9]])
    assert (d.squared, d.nearest) == (16, 1) and d.value == 4.0
    # non-orthogonal rows: {x1 + x2 = 0, x2 + x3 = 0} = span(1, -1, 1); |e1|² - 1/3 = 2/3
    d = distance_to_affine_subspaces([[1, 1, 0], [0, 1, 1]], [1, 0, 0], [[0, 0]])
    assert d.squared == Fraction(2, 3)
    # shifted: {x1 + x2 = 1, x2 + x3 = 1} contains (1, 0, 1); x - (1, 0, 1) = (0, 0, -1) -> 2/3
    assert distance_to_affine_subspaces([[1, 1, 0], [0, 1, 1]], [1, 0, 0],
                                        [[1, 1]]).squared == Fraction(2, 3)
    # k = 1 agrees with the hyperplane formula
    h = distance_to_hyperplanes([2, -1, 3], [1, 1, 1], (-2, 0, 5))
    s = distance_to_affine_subspaces([[2, -1, 3]], [1, 1, 1], [[-2], [0], [5]])
    assert (h.squared, h.nearest) == (s.squared, s.nearest) == (Fraction(1, 14), 2)


def test_codimension_errors():
    with pytest.raises(InvalidArgument, match="rank"):
        distance_to_affine_subspaces([[1, 1], [2, 2]], [0, 0], [[0, 0]])
    with pytest.raises(InvalidArgument, match="offsets"):
        distance_to_affine_subspaces([[1, 0]], [0, 0], [[0, 0]])


# ----------------------------------------------------------------- Boolean shapes
E1, E4 = [1, 0, 0, 0], [0, 0, 0, 1]


def test_valid_shape_rank_two_and_one():
    s = boolean_1d_shape([E1, E1, E4, E4], range(4))
    assert s.rows == ("first", "first", "last", "last")
    assert (s.number_free, s.matches, s.rank, s.boolean, s.leaders) == (0, True, 2, True, (0, 3))
    s = boolean_1d_shape([E1] * 4, range(4))
    assert s.rank == 1 and s.matches


def test_one_free_row_rank_three():
    free = ["1/4", "1/2", 0, "1/4"]
    s = boolean_1d_shape([E1, free, E4, E4], [0, 1, 2, 3])
    assert s.rows == ("first", "free", "last", "last") and s.free_rows == (1,)
    assert (s.matches, s.rank, s.boolean) == (True, 3, False)
    # a free row inside span(e_1, e_n) leaves the rank at 2
    assert boolean_1d_shape([E1, ["1/2", 0, 0, "1/2"], E4, E4], range(4)).rank == 2


def test_invalid_shape_two_free_rows():
    s = boolean_1d_shape([E1, [0, 1, 0, 0], [0, 0, 1, 0], E4], range(4))
    assert s.rows == ("first", "free", "free", "last")
    assert s.number_free == 2 and s.matches is False and s.boolean is True


def test_order_is_respected():
    # initial positions 5, 0, 9, 2: sorted order [1, 3, 0, 2]; smallest is token 1
    x0 = np.array([5.0, 0.0, 9.0, 2.0])
    P = [[0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    s = boolean_1d_shape(P, np.argsort(x0))
    assert s.rows == ("last", "first", "last", "first") and s.leaders == (1, 2)
    s = boolean_1d_shape(P, range(4))  # the wrong order makes every row free
    assert s.number_free == 4 and s.matches is False


def test_float_tolerances_and_undecided():
    P = np.array([[1 - 1e-12, 1e-12, 0.0], [0.0, 2e-13, 1 - 2e-13], [0.3, 0.3, 0.4]])
    s = boolean_1d_shape(P, [0, 1, 2], tol=1e-9)
    assert s.rows == ("first", "last", "free") and s.matches and s.rank == 3
    with pytest.raises(InvalidArgument, match="probability"):
        boolean_1d_shape(P, [0, 1, 2])  # tol = 0: the float row sums are not exactly 1
    # an entry 1e-3 away from 0, between tol = 1e-9 and reject = 1e-2: undecided
    Q = np.array([[1 - 1e-3, 1e-3, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]])
    s = boolean_1d_shape(Q, [0, 1, 2], tol=1e-9, reject=1e-2)
    assert s.rows == ("undecided", "last", "free") and s.matches is None and s.rank is None
    assert classify_entries(Q, 1e-9, reject=1e-2)[1][0].tolist() == [
        "undecided", "undecided", "snapped"]
    assert is_boolean(Q[:2], 1e-9, reject=1e-2) is None
    assert boolean_rank(Q[:2], 1e-9, reject=1e-2) is None
    assert is_boolean(Q[:2], 1e-9) is False and boolean_rank(Q[:2], 1e-2) == 2


def test_boolean_rank_exact():
    assert boolean_rank([[1, 0, 0], [0, 1, 0], [1, 0, 0]]) == 2
    assert boolean_rank([["1/2", "1/2"]]) is None and is_boolean([["1/2", "1/2"]]) is False


def test_boolean_errors():
    with pytest.raises(InvalidArgument, match="permutation"):
        boolean_1d_shape([E1] * 4, [0, 1, 1, 3])
    with pytest.raises(InvalidArgument, match="n×n"):
        boolean_1d_shape([[1, 0]], [0])
    with pytest.raises(InvalidArgument, match="tol"):
        is_boolean([[1]], tol="1/2")
    with pytest.raises(InvalidArgument, match="reject"):
        is_boolean([[1]], tol=0.1, reject=0.01)
