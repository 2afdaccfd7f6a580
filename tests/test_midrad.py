"""Float64 midpoint–radius balls (verify.numerics._midrad): every ball contains the truth.

Independent route: exact rational arithmetic (``fractions.Fraction``) at sampled points of the
input balls — their corners, their centres and random rational points — including cancellation,
subnormal midpoints and radii, and radii of 1e25 (the a-priori box's coefficients).
"""

import contextlib
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from flint import arb, ctx
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.numerics._midrad as midrad
from verify.numerics._midrad import (
    INDICES,
    Balls,
    cauchy_hadamard,
    cauchy_product,
    hadamard_sum,
    new_stack,
    product_sum,
    stack_sum,
)

pytestmark = pytest.mark.numerics

#: Midpoints from all of float64's range that matters: subnormals, ordinary, huge.
_mids = st.one_of(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=True),
                  st.floats(-1e-300, 1e-300, allow_subnormal=True),
                  st.sampled_from([0.0, 1.0, -1.0, 5e-324, 2.0 ** -1022, 1e25, -3e30]))
_rads = st.one_of(st.just(0.0), st.floats(0, 1e-10), st.floats(0, 1e25),
                  st.sampled_from([5e-324, 2.0 ** -60, 1e-300]))


def _ball(shape):
    return st.tuples(st.lists(_mids, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))),
                     st.lists(_rads, min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))
                     ).map(lambda p: Balls(np.array(p[0]).reshape(shape),
                                           np.array(p[1]).reshape(shape)))


def _points(b: Balls, rng, k: int = 4) -> list[np.ndarray]:
    """Exact rational points of ``b``: both corners by sign patterns, the centre, random
    rationals inside (object arrays of Fraction)."""
    mid = np.vectorize(Fraction, otypes=[object])(b.mid)
    rad = np.vectorize(Fraction, otypes=[object])(b.rad)
    out = [mid]
    for _ in range(k):
        signs = rng.choice([-1, 1], size=b.mid.shape)
        out.append(mid + rad * np.vectorize(Fraction, otypes=[object])(signs))
        w = rng.integers(-1000, 1001, size=b.mid.shape)
        out.append(mid + rad * np.vectorize(lambda v: Fraction(int(v), 1000),
                                            otypes=[object])(w))
    return out


def _contains(b: Balls, exact: np.ndarray) -> bool:
    mid = np.vectorize(Fraction, otypes=[object])(b.mid)
    rad = np.vectorize(Fraction, otypes=[object])(b.rad)
    return bool(np.all(abs(exact - mid) <= rad))


def _check(op, exact_op, *balls, seed=0):
    rng = np.random.default_rng(seed)
    result = op(*balls)
    assert result.finite()
    samples = [_points(b, rng) for b in balls]
    for pick in range(len(samples[0])):
        exact = exact_op(*[s[pick % len(s)] for s in samples])
        assert _contains(result, exact), pick


@settings(max_examples=60, deadline=None)
@given(_ball((3,)), _ball((3,)))
def test_sum_difference_and_product_contain_the_exact_results(a, b):
    _check(lambda x, y: x + y, lambda x, y: x + y, a, b)
    _check(lambda x, y: x - y, lambda x, y: x - y, a, b)
    _check(lambda x, y: x * y, lambda x, y: x * y, a, b)
    _check(lambda x: x.divide(3.0), lambda x: x / 3, a)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_ball((2, 3)), _ball((3, 2))), min_size=1, max_size=5))
def test_a_sum_of_matrix_products_contains_the_exact_sum(pairs):
    left, right = [p[0] for p in pairs], [p[1] for p in pairs]
    k = len(pairs)
    _check(lambda *bs: product_sum(list(bs[:k]), list(bs[k:])),
           lambda *xs: sum((xs[j].dot(xs[k + j]) for j in range(k)),
                           np.zeros((2, 2), dtype=object)), *left, *right)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_ball((2, 3)), _ball((2, 1))), min_size=1, max_size=6))
def test_a_sum_of_entrywise_products_contains_the_exact_sum(pairs):
    """Broadcast as in a row scaling: ``(2, 1)`` columns times ``(2, 3)`` matrices."""
    left, right = [p[0] for p in pairs], [p[1] for p in pairs]
    k = len(pairs)
    _check(lambda *bs: hadamard_sum(list(bs[:k]), list(bs[k:])),
           lambda *xs: sum((xs[j] * xs[k + j] for j in range(k)),
                           np.zeros((2, 3), dtype=object)), *left, *right)


def test_cancellation_keeps_the_rounding_of_the_large_terms():
    """``(1 + 2^-52) · (1 - 2^-52) - 1`` in exact balls: the product rounds to 1, the
    difference to 0; the ball must still contain the exact ``-2^-104``."""
    a, b, one = Balls.exact([1 + 2.0 ** -52]), Balls.exact([1 - 2.0 ** -52]), Balls.exact([1.0])
    result = a * b - one
    assert result.mid[0] == 0.0
    assert _contains(result, np.array([Fraction(-1, 2 ** 104)], dtype=object))
    # and in a dot product: 1e16 + 1 - 1e16 with BLAS in any order
    left = Balls.exact([[1e16, 1.0, -1e16]])
    right = Balls.exact([[1.0], [1.0], [1.0]])
    assert _contains(product_sum([left], [right]), np.array([[Fraction(1)]], dtype=object))


def test_conversions_round_outward():
    """From Arb: 1/3 at 128 bits and a wide ball; back to Arb exactly."""
    with ctx.workprec(128):
        third = arb(1) / 3
        wide = arb(1) / 7 + arb(0, 1e25)
        balls = Balls.from_arb([third, wide, arb(0)], (3,))
        back = balls.to_arb_list()
        assert back[0].contains(third) and back[1].contains(wide) and back[2].contains(0)
        assert float(balls.rad[0]) < 1e-16


def test_overflow_is_reported_not_hidden():
    with np.errstate(all="ignore"):
        big = Balls.exact([1e300]) * Balls.exact([1e300])
    assert not big.finite()


def test_dropping_the_upward_rounding_of_the_radius_loses_the_truth(monkeypatch):
    """The radius ``r_a + r_b`` with ``r_a = 1``, ``r_b = 2^-60`` rounds to 1 in float64: at the
    corner ``1 + 2^-60`` the sum is outside the ball unless the radius is rounded up
    (``upward_factor``) — the test of the allowance itself."""
    a, b = Balls(np.array([0.0]), np.array([1.0])), Balls(np.array([0.0]), np.array([2.0 ** -60]))
    corner = np.array([Fraction(1) + Fraction(1, 2 ** 60)], dtype=object)
    assert _contains(a + b, corner)
    monkeypatch.setattr(midrad, "_upward", lambda radius, depth: radius)
    assert not _contains(a + b, corner)


def _stack(balls: list[Balls]) -> np.ndarray:
    out = new_stack(*balls[0].shape, capacity=len(balls) + 1)
    for j, b in enumerate(balls):
        out[0, j], out[1, j] = b.mid, b.rad
    return out


def _read(stack: np.ndarray, at: int) -> Balls:
    return Balls(stack[0, at], stack[1, at])


#: The stacked Cauchy sums run compiled when Numba is installed (the test extra installs it)
#: and through NumPy otherwise: both routes are checked here.
_ROUTES = pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])


@contextlib.contextmanager
def _route(compiled: bool):
    """The compiled kernels or (patched off) the NumPy route, for one generated example."""
    if compiled and midrad._kernels() is None:
        pytest.skip("Numba (the compiled extra) is not installed")
    if compiled:
        yield
    else:
        with mock.patch.object(midrad, "_kernels", lambda: None):
            yield


@_ROUTES
def test_a_subnormal_times_a_large_entry_stays_within_the_cauchy_products_radius(compiled):
    """The example Hypothesis found (session 9): 1e25 times the subnormal 2.2250738585072e-309
    in a Cauchy product. The NumPy route formed γ_K |M_R| first, which underflowed, and the
    lost η was multiplied by 1e25: the exact product escaped the radius."""
    with _route(compiled):
        small, large = np.zeros((3, 2)), np.zeros((2, 3))
        small[2, 1], large[1, 2] = 2.225073858507203e-309, 1e25
        zeros_l, zeros_r = Balls.exact(np.zeros((2, 3))), Balls.exact(np.zeros((3, 2)))
        L = _stack([zeros_l, zeros_l, Balls.exact(large), zeros_l])
        R = _stack([zeros_r, Balls.exact(small), zeros_r, zeros_r])
        out = new_stack(2, 2)
        cauchy_product(L, R, 0, 2, 3, out, 1)
        exact = np.zeros((2, 2), dtype=object)
        exact[1, 1] = Fraction(1e25) * Fraction(2.225073858507203e-309)
        assert _contains(_read(out, 1), exact)


@_ROUTES
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_ball((2, 3)), _ball((3, 2))), min_size=2, max_size=5),
       st.data())
def test_the_stacked_cauchy_product_contains_the_exact_sum(compiled, pairs, data):
    """:math:`\\sum_{j=lo}^{hi} L_j R_{m-j}` of two stacks, for every window ``lo..hi``."""
    with _route(compiled):
        m = len(pairs) - 1
        lo = data.draw(st.integers(0, m))
        hi = data.draw(st.integers(lo, m))
        L, R = _stack([p[0] for p in pairs]), _stack([p[1] for p in pairs])
        out = new_stack(2, 2)

        def op(*_):
            cauchy_product(L, R, lo, hi, m, out, 1)
            return _read(out, 1)

        left, right = [p[0] for p in pairs], [p[1] for p in pairs]
        _check(op, lambda *xs: sum((xs[j].dot(xs[len(pairs) + m - j]) for j in range(lo, hi + 1)),
                                   np.zeros((2, 2), dtype=object)), *left, *right)


@_ROUTES
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_ball((3, 1)), _ball((3, 2))), min_size=2, max_size=6),
       st.sampled_from([1.0, 3.0, -7.0]), st.booleans())
def test_the_stacked_weighted_hadamard_sum_contains_the_exact_sum(compiled, pairs, divisor,
                                                                 weighted):
    """:math:`\\frac1c \\sum_{j=1}^{m} w_j L_j \\circ R_{m-j}` with the column ``L_j``
    broadcast over the rows of ``R`` (a row scaling), weights ``j`` or the power rule's
    ``-j/2 - (m - j)``."""
    with _route(compiled):
        m = len(pairs) - 1
        weights = INDICES if weighted else -0.5 * INDICES - (m - INDICES)
        L, R = _stack([p[0] for p in pairs]), _stack([p[1] for p in pairs])
        out = new_stack(3, 2)

        def op(*_):
            cauchy_hadamard(L, R, 1, m, m, out, 0, weights, divisor)
            return _read(out, 0)

        left, right = [p[0] for p in pairs], [p[1] for p in pairs]
        n = len(pairs)
        _check(op, lambda *xs: sum((Fraction(weights[j]) * xs[j] * xs[n + m - j]
                                    for j in range(1, m + 1)),
                                   np.zeros((3, 2), dtype=object)) / Fraction(divisor),
               *left, *right)


@_ROUTES
@settings(max_examples=30, deadline=None)
@given(_ball((2, 2)), _ball((2, 2)), st.sampled_from([1.0, -1.0]))
def test_the_stacked_sum_contains_the_exact_sum(compiled, a, b, sign):
    with _route(compiled):
        A, B, out = _stack([a]), _stack([b]), new_stack(2, 2)

        def op(*_):
            stack_sum(A, B, 0, sign, out, 0)
            return _read(out, 0)

        _check(op, lambda x, y: x + int(sign) * y, a, b)


@_ROUTES
def test_the_stacked_sums_keep_the_cancellation(compiled):
    """``1e16·1 + 1·1 + (-1e16)·1`` as a Cauchy product and as a weighted Hadamard sum."""
    with _route(compiled):
        L = _stack([Balls.exact([[1e16]]), Balls.exact([[1.0]]), Balls.exact([[-1e16]])])
        ones = _stack([Balls.exact([[1.0]])] * 3)
        out = new_stack(1, 1)
        cauchy_product(L, ones, 0, 2, 2, out, 0)
        assert _contains(_read(out, 0), np.array([[Fraction(1)]], dtype=object))
        cauchy_hadamard(L, ones, 0, 2, 2, out, 1)
        assert _contains(_read(out, 1), np.array([[Fraction(1)]], dtype=object))


def test_dropping_the_upward_factor_loses_the_truth_in_the_compiled_sum(monkeypatch):
    """As above for the stacked sum (compiled when Numba is installed): without
    ``upward_factor`` the radius ``1 + 2^-60`` rounds to 1 and the corner is lost."""
    a = _stack([Balls(np.array([[0.0]]), np.array([[1.0]]))])
    b = _stack([Balls(np.array([[0.0]]), np.array([[2.0 ** -60]]))])
    corner = np.array([[Fraction(1) + Fraction(1, 2 ** 60)]], dtype=object)
    out = new_stack(1, 1)
    stack_sum(a, b, 0, 1.0, out, 0)
    assert _contains(_read(out, 0), corner)
    monkeypatch.setattr(midrad, "upward_factor", lambda depth: 1.0)
    stack_sum(a, b, 0, 1.0, out, 0)
    assert not _contains(_read(out, 0), corner)
