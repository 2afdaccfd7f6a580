r"""Distances to the predicted hyperplanes (Theorem 4.2) and affine subspaces (Conjecture 4.3).

Claim ``hyperplanes``: for a good triple, every :math:`z_i(t)` approaches one of at most three
parallel hyperplanes :math:`H_c = \{x : \varphi_1^*(x) = c\}`, :math:`c \in \{a, 0, b\}`, with
:math:`a = \lim\min_j \varphi_1^*(z_j)` and :math:`b = \lim\max_j \varphi_1^*(z_j)`.
Claim ``codimension``: with ``k`` eigenvalues of positive real part, the :math:`z_i` approach at
most three parallel affine subspaces :math:`\{x : Wx = c\}` of codimension ``k``.

Distances are exact where the data are exact: :attr:`Distance.squared` is a ``Fraction``.
When the dual vector is known only to within a radius (e.g. a float eigenvector), the
:attr:`Distance.error` field bounds the effect rigorously (ball arithmetic, FLINT ``arb``).

Examples
--------
>>> hyperplane_offsets([1, 1], [[1, 0], [3, -1], [0, 4]])
(Fraction(1, 1), Fraction(4, 1))
>>> dist = distance_to_hyperplanes([1, 1], [2, 1], (1, 0, 4))
>>> dist.squared, round(dist.value, 12), dist.nearest
(Fraction(1, 2), 0.707106781187, 2)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array, to_rational
from verify.exact.precision import working_precision

__all__ = [
    "Distance",
    "hyperplane_offsets",
    "offset_error_bound",
    "distance_to_hyperplanes",
    "distance_to_affine_subspaces",
]

_PREC = 128  # bits for the rigorous error bounds


class Distance(NamedTuple):
    """A distance to the nearest of several parallel affine sets.

    Attributes
    ----------
    squared : Fraction
        The exact squared distance for the data as given (centres of any balls).
    value : float
        ``sqrt(squared)`` rounded to float64 (``0.0`` below the float range).
    nearest : int
        Index of the nearest offset (the first one on ties).
    error : float
        Rigorous upper bound on ``|true distance − value|`` given the input radii (just the
        rounding of ``value`` when the data are exact).
    """

    squared: Fraction
    value: float
    nearest: int
    error: float


def _vector(name: str, value: object, d: int | None = None) -> np.ndarray:
    array, _ = rational_array(name, value, ndim=1)
    if array.size == 0 or (d is not None and array.size != d):
        want = "non-empty" if d is None else f"of length d={d}"
        raise InvalidArgument(
            f"Expected {name} {want} but got {name}.shape={array.shape}; pass one number per "
            "coordinate.")
    return array


def _radius(name: str, value: object) -> Fraction:
    r, _ = to_rational(value, name)
    if r < 0:
        raise InvalidArgument(f"{name}={value!r} ({type(value).__name__}) is negative; a radius "
                              "must be ≥ 0 (use 0 for exact data).")
    return r


def _up(x: float) -> float:
    return math.nextafter(math.nextafter(x, math.inf), math.inf)


def _upper_float(x) -> float:
    """A float ≥ every point of the arb ball ``x``."""
    u = x.upper()
    return _up(float(u.mid()) + float(u.rad()))


def _sqrt_float(q: Fraction) -> float:
    return math.sqrt(float(q))


def hyperplane_offsets(phi_star: object, points: object) -> tuple[Fraction, Fraction]:
    r"""The offsets :math:`(a, b) = (\min_i \varphi^*(z_i), \max_i \varphi^*(z_i))`, exactly.

    Parameters
    ----------
    phi_star : array-like, shape (d,)
        The dual vector :math:`\varphi_1^*` (a left eigenvector of ``V``), exact rationals;
        floats are taken at their exact binary value. If it is only known to within ``r`` per
        component, the true offsets lie within :func:`offset_error_bound` ``(points, r)``.
    points : array-like, shape (n, d)

    Returns
    -------
    (a, b) : (Fraction, Fraction)
    """
    Z, _ = rational_array("points", points)
    phi = _vector("phi_star", phi_star, Z.shape[1] if Z.size else None)
    if Z.shape[0] == 0:
        raise InvalidArgument("points is empty; pass at least one token (one row per token).")
    values = list(Z.dot(phi))
    return min(values), max(values)


def offset_error_bound(points: object, radius: object) -> Fraction:
    r"""``radius · max_i ‖z_i‖_1``: how far the offsets can move when each component of
    :math:`\varphi^*` moves by at most ``radius``.

    Examples
    --------
    >>> offset_error_bound([[1, -2], [0, 1]], "1/100")
    Fraction(3, 100)
    """
    Z, _ = rational_array("points", points)
    r = _radius("radius", radius)
    return r * max(sum(abs(v) for v in row) for row in Z)


def distance_to_hyperplanes(phi_star: object, point: object, offsets: object, *,
                            radius: object = 0, offsets_error: object = 0) -> Distance:
    r"""Distance from ``x`` to the nearest hyperplane :math:`\{\varphi^*(y) = c\}`.

    .. math:: \operatorname{dist}(x, H) = \min_c \frac{|\varphi^*(x) - c|}{\|\varphi^*\|}.

    Parameters
    ----------
    phi_star : array-like, shape (d,)
        Non-zero dual vector (exact; floats at their binary value).
    point : array-like, shape (d,)
    offsets : sequence of numbers
        The offsets ``c``, e.g. ``(a, 0, b)`` from :func:`hyperplane_offsets`.
    radius : number, optional
        Each component of the true :math:`\varphi^*` is within ``radius`` of ``phi_star``.
    offsets_error : number, optional
        Each true offset is within ``offsets_error`` of the given one.

    Returns
    -------
    Distance
    """
    phi = _vector("phi_star", phi_star)
    x = _vector("point", point, phi.size)
    cs = _vector("offsets", offsets)
    rad, eps = _radius("radius", radius), _radius("offsets_error", offsets_error)
    norm2 = sum(v * v for v in phi)
    if norm2 == 0:
        raise InvalidArgument("phi_star is the zero vector; a dual vector must be non-zero.")
    value_x = sum(p * v for p, v in zip(phi, x, strict=True))
    sq = [(value_x - c) ** 2 / norm2 for c in cs]
    nearest = min(range(len(sq)), key=sq.__getitem__)
    value = _sqrt_float(sq[nearest])
    from flint import arb, fmpq

    def ball(v: Fraction, r: Fraction):
        return arb(fmpq(v.numerator, v.denominator), fmpq(r.numerator, r.denominator))

    with working_precision(_PREC):
        phis = [ball(v, rad) for v in phi]
        num = sum((p * ball(v, Fraction(0)) for p, v in zip(phis, x, strict=True)), arb(0))
        den = sum((p * p for p in phis), arb(0)).sqrt()
        if rad and not (den.lower() > 0):
            error = math.inf
        else:
            dists = [abs(num - ball(c, eps)) / den for c in cs]
            best = dists[0]
            for dist in dists[1:]:
                best = best.min(dist)
            error = _upper_float(abs(best - arb(value)))
    return Distance(sq[nearest], value, nearest, error)


def distance_to_affine_subspaces(W: object, point: object, offsets: object) -> Distance:
    r"""Distance from ``x`` to the nearest affine subspace :math:`\{y : Wy = c\}`.

    .. math:: \operatorname{dist}(x, \{Wy = c\})^2 = (Wx - c)^\top (WW^\top)^{-1} (Wx - c),

    exact least squares (``W`` of full row rank ``k``: codimension ``k``).

    Parameters
    ----------
    W : array-like, shape (k, d)
        Rows spanning the dual of the invariant subspace of eigenvalues with positive real part
        (for a complex pair, the real and imaginary parts). Taken as exact.
    point : array-like, shape (d,)
    offsets : array-like, shape (m, k)
        The offsets ``c ∈ R^k`` (Conjecture 4.3 predicts ``m ≤ 3``), taken as exact.

    Returns
    -------
    Distance
        ``error`` bounds only the rounding of ``value`` (the data are exact).

    Examples
    --------
    >>> W = [[1, 0, 0], [0, 1, 0]]
    >>> distance_to_affine_subspaces(W, [3, 4, 7], [[0, 0], [3, 0]]).squared
    Fraction(16, 1)
    """
    Wm, _ = rational_array("W", W)
    k, d = Wm.shape
    x = _vector("point", point, d)
    C, _ = rational_array("offsets", offsets)
    if k == 0 or C.shape[0] == 0 or C.shape[1] != k:
        raise InvalidArgument(
            f"W.shape={Wm.shape}, offsets.shape={C.shape}; need k ≥ 1 rows in W and offsets "
            f"of shape (m, k) with k={k} (one offset vector c ∈ R^k per row).")
    from flint import fmpq, fmpq_mat

    gram = fmpq_mat(k, k, [fmpq(v.numerator, v.denominator) for v in Wm.dot(Wm.T).flat])
    if gram.rank() != k:
        raise InvalidArgument(f"W has rank {gram.rank()} < k={k}; its rows must be linearly "
                              "independent (drop redundant rows).")
    ginv = gram.inv()
    Ginv = [[Fraction(int(ginv[a, b].p), int(ginv[a, b].q)) for b in range(k)] for a in range(k)]
    Wx = Wm.dot(x)
    sq = []
    for c in C:
        r = [Wx[a] - c[a] for a in range(k)]
        sq.append(sum(r[a] * Ginv[a][b] * r[b] for a in range(k) for b in range(k)))
    nearest = min(range(len(sq)), key=sq.__getitem__)
    value = _sqrt_float(sq[nearest])
    return Distance(sq[nearest], value, nearest, _up(value * 2.0**-51) + 5e-324)
