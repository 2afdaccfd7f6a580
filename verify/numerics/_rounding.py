r"""Rounding allowances of float64 numbers, in one place.

An error estimate of a number read off a float64 computation (a run against its reference run,
a second route) cannot see the rounding both routes share: the rounding of the stored values, of
the last few operations that formed the number, of a cancellation. Each such allowance is
``count`` units in the last place of the size of what is rounded,

.. math::  \mathrm{ulps}(c, s) = c\,\varepsilon\,s, \qquad \varepsilon = 2^{-52},

(:math:`\varepsilon s \ge \mathrm{ulp}(s)` for every normal :math:`s`, and a correctly rounded
operation errs by at most half an ulp of its result), added to the estimate before a margin is
judged. The counts are named below, one per kind of rounding; each says what it covers and why
that many. They are allowances for roundings the estimate cannot see, not rigorous bounds (the
rigorous paths — enclosures, the certified argmax — round outward in ball arithmetic or with
``np.nextafter`` instead).

Where two places allow a different count for what is the same rounding, each keeps its count
(``count=`` at the call) so that no verdict changes; the team's report of the change lists them.

Examples
--------
>>> ulps(STORED_ULPS, 1.0) == 4 * 2.0 ** -52
True
>>> float(ulps(DIFFERENCE_ULPS * 3, 2.0))  # a difference of two 3-vectors of size 2
1.0658141036401503e-14
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

__all__ = ["EPS", "ulps", "CONVERSION_ULPS", "STORED_ULPS", "DIFFERENCE_ULPS",
           "NORMALISED_ULPS", "HULL_ULPS", "SVD_ULPS", "SUM_ULPS", "RESOLUTION_ULPS",
           "UNIT_ROUNDOFF", "UNDERFLOW_FLOOR", "gamma", "upward_factor"]

#: Machine epsilon of float64, :math:`2^{-52}`: the spacing of the floats in :math:`[1, 2)`.
EPS = float(np.finfo(float).eps)

#: An exact number (a rational input, an exact initial token) rounded once to float64: the
#: conversion errs by at most half an ulp, ``ε/2`` of the value (of the largest component, for
#: a row of components); 2 ulp is four times that. (The exact matrix converted in
#: ``predict._spectral.f_coordinates_rows`` allows 4, the stored-value count.)
CONVERSION_ULPS = 2

#: A float64 value formed by a few operations and stored (a state's score, a quantity at a
#: checkpoint, a formula of the exact initial data evaluated once): up to eight correctly
#: rounded operations of that size, half an ulp each. Both routes of an error estimate round
#: the same stored numbers the same way, so this is added to their difference. (The attention
#: weights in ``judge._attention``'s Boolean test allow 2 ulp of 1, the size of a weight.)
STORED_ULPS = 4

#: Per coordinate, a quantity formed from differences of ``d``-coordinate tokens or from a
#: ``d``-term dot product (a distance, a score difference): the subtraction of two large
#: numbers keeps their absolute rounding, so the allowance is relative to the largest
#: coordinate, not to the result — ``8 d ε max|x|``. (The distances of ``judge._limits`` allow
#: ``4 d ε`` of the largest token norm.)
DIFFERENCE_ULPS = 8

#: Absolute, on vectors normalised to unit length in float64 (a sum of squares, a square root,
#: a division) and then subtracted or orthonormalised: the consensus cap's chord, the eigenbasis
#: rows of the prediction ``F``.
NORMALISED_ULPS = 8

#: A depth below a facet of a convex hull computed by Qhull: its facet hyperplanes come from
#: Qhull's own floating-point construction (normalised normals, offsets, merged facets), whose
#: rounding is well above that of one dot product; 64 ulp of the coordinates' size (per
#: dimension of the hull, for a depth). (The distance to a hull in ``judge._distances`` allows
#: 8 ulp of ``max(1, size)``.)
HULL_ULPS = 64

#: Per row, the spectral norm ``‖M‖₂`` computed by an SVD: LAPACK's backward error is a small
#: multiple of ``n ε ‖M‖``; ``4 n ε ‖M‖_F`` bounds it with room.
SVD_ULPS = 4

#: Per term, a float64 sum of ``n`` terms (recursive summation errs by at most
#: :math:`\gamma_{n-1} \approx (n-1)\,u` of the sum of the magnitudes, ``u = ε/2``):
#: ``n ε`` of the terms' size.
SUM_ULPS = 1

#: The resolution of a float64 value: one ulp, the floor under any error bar (a difference of
#: two routes that agree to the last bit is not an error of 0).
RESOLUTION_ULPS = 1


def ulps(count: float, scale=1.0):
    r"""``count`` units in the last place of numbers of size ``scale``: :math:`c\,\varepsilon\,s`
    (an array for an array ``scale``). ``count`` is one of the named counts above, times the
    number of coordinates or terms where the allowance grows with it.

    The product is formed as ``(count · ε) · scale``: ``count · ε`` is exact (an integer times a
    power of two), so the allowance is ``c ε s`` rounded once.

    >>> ulps(2, 0.5) == 2.0 ** -52
    True
    """
    return count * EPS * scale


# ------------------------------------------------------------------------------------------
# Rigorous bounds (not allowances): the float64 ball arithmetic of verify.numerics._midrad
# rounds to nearest and bounds every rounding with the constants below (Higham, *Accuracy and
# Stability of Numerical Algorithms*, 2nd ed., §2.2 and Lemma 3.1/Theorem 3.1; Rump, "Fast and
# parallel interval arithmetic", BIT 39, 1999).

#: The unit roundoff :math:`u = 2^{-53}` of float64 round-to-nearest: for every real :math:`x`
#: in the normal range, :math:`\mathrm{fl}(x) = x(1 + \delta)`, :math:`|\delta| \le u`.
UNIT_ROUNDOFF = EPS / 2

#: An absolute floor added to every radius of that arithmetic: it covers the underflow of each
#: product (at most :math:`\eta = 2^{-1074}` each, :math:`2^{-1022}` even with flush-to-zero)
#: for up to :math:`2^{22}` operations feeding one radius — any jet of this project by far.
UNDERFLOW_FLOOR = 2.0 ** -1000


def _up(value: Fraction) -> float:
    """The smallest float64 at or above the rational ``value`` (finite, positive)."""
    x = float(value)
    return x if Fraction(x) >= value else math.nextafter(x, math.inf)


@cache
def gamma(k: int) -> float:
    r"""A float64 upper bound of :math:`\gamma_k = k u / (1 - k u)`: an inner product of length
    ``k`` computed in float64 in any order, with or without fused multiply-adds, errs by at most
    :math:`\gamma_k \sum_j |a_j b_j|` (Higham, Theorem 3.1; underflow aside), and a sum of
    ``k + 1`` terms by :math:`\gamma_k` of the sum of their magnitudes.

    >>> gamma(1) > 2.0 ** -53
    True
    >>> gamma(0)
    0.0
    """
    if k <= 0:
        return 0.0
    u = Fraction(UNIT_ROUNDOFF)
    return _up(k * u / (1 - k * u))


@cache
def upward_factor(depth: int) -> float:
    r"""A float64 :math:`f = 1 + 2 j u` (``j`` an integer, so :math:`f` is exact) with
    :math:`f\,(1 - u)^{\text{depth} + 2} \ge 1`.

    Use: a nonnegative quantity :math:`r` (a radius) computed from nonnegative floats by at
    most ``depth`` round-to-nearest operations (``+``, ``×``, ``/``) along any path is at least
    :math:`r_{\text{exact}}(1 - u)^{\text{depth}}` (underflow aside: each such result is
    :math:`\ge x(1 - u)`); so :math:`\mathrm{fl}(\mathrm{fl}(r f) + \text{floor}) \ge
    r f (1 - u)^2 \ge r_{\text{exact}}` — the two extra roundings are those of the product by
    :math:`f` and of the floor's addition (:data:`UNDERFLOW_FLOOR`).

    >>> upward_factor(0) > 1
    True
    >>> upward_factor(10) == 1 + 14 * 2.0 ** -53
    True
    """
    u = Fraction(UNIT_ROUNDOFF)
    need = 1 / (1 - u) ** (depth + 2)
    j = math.ceil((need - 1) / (2 * u))
    return float(1 + 2 * j * u)
