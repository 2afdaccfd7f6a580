r"""Rigorous midpoint–radius ball arithmetic on float64 NumPy arrays.

A :class:`Balls` array is a pair of float64 arrays ``(mid, rad)``, ``rad >= 0``, standing for
the balls :math:`\{x : |x - \mathrm{mid}| \le \mathrm{rad}\}` entry by entry. Every operation
below returns balls that contain every exact result for all points of its input balls (the
*inclusion property* of Arb, whose balls are midpoint–radius too), although NumPy rounds to
nearest only: the rounding of the midpoint and of the radius computation are bounded
explicitly (Rump, "Fast and parallel interval arithmetic", BIT 39, 1999, §2–3; the constants
are :func:`verify.numerics._rounding.gamma` and
:func:`~verify.numerics._rounding.upward_factor`):

* **midpoint.** With :math:`u = 2^{-53}`, a product or a quotient of floats errs by at most
  :math:`u` of its rounded result plus :math:`\eta = 2^{-1074}` (underflow), a sum by at most
  :math:`u` of its rounded result; an inner product of length :math:`K` computed by BLAS in
  *any* order, with or without fused multiply–adds, errs by at most :math:`\gamma_K
  \sum_j |a_j||b_j|` plus :math:`K\eta` (Higham, *Accuracy and Stability*, Theorem 3.1);
* **radius.** The radius is a sum of products of nonnegative floats (the midpoint error above,
  :math:`|a| r_b + r_a (|b| + r_b)` for a product, :math:`r_a + r_b` for a sum), computed in
  round-to-nearest by at most ``depth`` operations along any path: each operation's result is
  at least :math:`(1 - u)` times its exact value, so the computed radius is at least
  :math:`(1 - u)^{\text{depth}}` of the exact one; it is multiplied by
  ``upward_factor(depth)`` :math:`\ge (1 - u)^{-(\text{depth} + 2)}` and
  :data:`~verify.numerics._rounding.UNDERFLOW_FLOOR` is added (which covers every
  :math:`\eta`), so it is at least the exact radius.

Transcendental functions (exp, powers, reciprocals) are **not** computed here: libm's are not
correctly rounded and IEEE bounds nothing about them. A caller takes them from Arb
(:meth:`Balls.to_arb_list`, the function in ``arb``, :meth:`Balls.from_arb`, which rounds
outward). Overflow gives ``inf``/``nan`` entries: :meth:`Balls.finite` says so, and the caller
falls back to Arb.

The jets' Cauchy sums (:func:`cauchy_product`, :func:`cauchy_hadamard`, :func:`stack_sum`) read
*stacks* of coefficients (:func:`new_stack`) and are compiled by Numba when it is installed
(the optional ``compiled`` extra): at the jets' sizes (``n ≤ 8``) NumPy's ~1 µs per call made
the same sums, a dozen calls per node and order, 2× slower than python-flint (measured, session
8); without Numba they run through NumPy (:func:`product_sum`, :func:`hadamard_sum`), with the
same bounds, and the enclosures keep Arb (:func:`compiled`).

Examples
--------
>>> from flint import arb
>>> x = Balls.from_arb([arb(1) / 3], (1,))
>>> y = x * x + x          # 1/9 + 1/3 = 4/9
>>> y.to_arb_list()[0].contains(arb(4) / 9)
True
>>> float(y.rad[0]) < 1e-15
True
"""

from __future__ import annotations

import functools
import os

import numpy as np
from flint import arb, arb_mat

from verify.numerics._rounding import UNDERFLOW_FLOOR, UNIT_ROUNDOFF, gamma, upward_factor

__all__ = ["Balls", "hadamard_sum", "product_sum", "new_stack", "cauchy_product",
           "cauchy_hadamard", "stack_sum", "compiled", "INDICES"]


def _upward(radius: np.ndarray, depth: int) -> np.ndarray:
    """``radius`` (computed by at most ``depth`` rounded operations from exact nonnegative
    quantities) rounded up to a bound of the exact value (module docstring)."""
    return radius * upward_factor(depth) + UNDERFLOW_FLOOR


class Balls:
    """An array of real balls ``mid ± rad`` (float64; ``rad >= 0``, module docstring).

    Parameters
    ----------
    mid, rad : numpy.ndarray
        Same shape (or broadcastable); ``rad`` already an upper bound of the radius.
    """

    __slots__ = ("mid", "rad")

    def __init__(self, mid: np.ndarray, rad: np.ndarray) -> None:
        self.mid, self.rad = mid, rad

    # ---------------------------------------------------------------- conversions
    @classmethod
    def exact(cls, values) -> Balls:
        """Floats taken exactly (radius 0), e.g. integers or dyadic constants."""
        mid = np.asarray(values, dtype=float)
        return cls(mid, np.zeros_like(mid))

    @classmethod
    def from_arb(cls, entries, shape: tuple) -> Balls:
        """Balls containing the ``arb`` balls ``entries`` (row-major, reshaped to ``shape``),
        rounded outward: with :math:`m` the arb midpoint and :math:`\\tilde m` = ``float(m)``
        (a faithful rounding), :math:`|m - \\tilde m| \\le` ``np.spacing(|m̃|)``, and the
        arb radius is rounded up to the next float."""
        mids = np.array([float(v.mid()) for v in entries], dtype=float).reshape(shape)
        rads = np.array([float(v.rad()) for v in entries], dtype=float).reshape(shape)
        with np.errstate(over="ignore", invalid="ignore"):
            rad = _upward(np.nextafter(rads, np.inf) + np.spacing(np.abs(mids)), 1)
        return cls(mids, rad)

    @classmethod
    def from_arb_mat(cls, matrix: arb_mat) -> Balls:
        """:meth:`from_arb` of an ``arb_mat``, shape ``(rows, cols)``."""
        return cls.from_arb(matrix.entries(), (matrix.nrows(), matrix.ncols()))

    def to_arb_list(self) -> list:
        """The balls as ``arb`` (exact: a float midpoint and a float radius, which Arb rounds
        up to its magnitude type), row-major."""
        return [arb(m, r) for m, r in zip(self.mid.reshape(-1).tolist(),
                                          self.rad.reshape(-1).tolist(), strict=True)]

    def to_arb_mat(self) -> arb_mat:
        """The balls of a 2-d array as an ``arb_mat``."""
        rows, cols = self.mid.shape
        return arb_mat(rows, cols, self.to_arb_list())

    # ---------------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        return self.mid.shape

    def finite(self) -> bool:
        """Whether every midpoint and radius is finite (else overflow: use Arb)."""
        return bool(np.isfinite(self.mid).all() and np.isfinite(self.rad).all())

    def transpose(self) -> Balls:
        return Balls(self.mid.T, self.rad.T)

    def __repr__(self) -> str:
        return f"Balls(mid={self.mid!r}, rad={self.rad!r})"

    # ---------------------------------------------------------------- arithmetic
    def __add__(self, other: Balls) -> Balls:
        r"""Entrywise sum: midpoint error :math:`\le u|\tilde c|` (a sum does not underflow);
        radius :math:`r_a + r_b + u|\tilde c|`, two rounded operations."""
        mid = self.mid + other.mid
        return Balls(mid, _upward(self.rad + other.rad + UNIT_ROUNDOFF * np.abs(mid), 2))

    def __sub__(self, other: Balls) -> Balls:
        """Entrywise difference (as :meth:`__add__`)."""
        mid = self.mid - other.mid
        return Balls(mid, _upward(self.rad + other.rad + UNIT_ROUNDOFF * np.abs(mid), 2))

    def __mul__(self, other: Balls) -> Balls:
        r"""Entrywise (broadcast) product: for :math:`x \in a`, :math:`y \in b`,
        :math:`|xy - \tilde c| \le |m_a| r_b + r_a(|m_b| + r_b) + u|\tilde c| + \eta`;
        radius: four rounded operations along any path."""
        mid = self.mid * other.mid
        rad = (np.abs(self.mid) * other.rad + self.rad * (np.abs(other.mid) + other.rad)
               + UNIT_ROUNDOFF * np.abs(mid))
        return Balls(mid, _upward(rad, 4))

    def divide(self, divisor: float) -> Balls:
        r"""Division by an exact nonzero float: :math:`|x/c - \tilde c| \le r/|c| + u|\tilde c|
        + \eta`, two rounded operations."""
        mid = self.mid / divisor
        return Balls(mid, _upward(self.rad / abs(divisor) + UNIT_ROUNDOFF * np.abs(mid), 2))



def hadamard_sum(left: list[Balls], right: list[Balls]) -> Balls:
    r""":math:`\sum_j L_j \circ R_j` (entrywise products, broadcast within each list, summed
    over ``j``), with one NumPy pass per array: the midpoint is :math:`\mathrm{fl}(\sum_j
    \mathrm{fl}(m_{L_j} m_{R_j}))` in NumPy's (pairwise) order, which errs by at most
    :math:`\gamma_k \sum_j |p_j|` (:math:`k` terms, :math:`p_j` the rounded products; any
    order) plus :math:`k\eta`; the radius :math:`\sum_j |m_{L_j}| r_{R_j} + r_{L_j}(|m_{R_j}| +
    r_{R_j}) + \gamma_k |p_j|` takes four rounded operations per term and :math:`k - 1`
    additions.

    >>> a = Balls.exact([[1.0, 2.0]])
    >>> hadamard_sum([a, a], [a, a]).mid.tolist()
    [[2.0, 8.0]]
    """
    k = len(left)
    mL = np.stack(np.broadcast_arrays(*[b.mid for b in left]))
    rL = np.stack(np.broadcast_arrays(*[b.rad for b in left]))
    mR = np.stack(np.broadcast_arrays(*[b.mid for b in right]))
    rR = np.stack(np.broadcast_arrays(*[b.rad for b in right]))
    products = mL * mR
    mid = products.sum(axis=0)
    terms = np.abs(mL) * rR + rL * (np.abs(mR) + rR) + gamma(k) * np.abs(products)
    return Balls(mid, _upward(terms.sum(axis=0), 4 + k - 1))


def product_sum(left: list[Balls], right: list[Balls]) -> Balls:
    r""":math:`\sum_j L_j R_j` (matrix products) from the concatenations
    :math:`[L_0 \cdots L_{k-1}]` and :math:`[R_0; \dots; R_{k-1}]` (inner length :math:`K`),
    by BLAS in any order: midpoint :math:`\mathrm{fl}(M_L M_R)`, error :math:`\le \gamma_K
    |M_L||M_R| + K\eta`; radius :math:`[\,|M_L|\;\; R_L\,]\,[\,R_R;\; |M_R| + R_R\,] +
    \gamma_K (|M_L||M_R|)` (two products, of inner lengths :math:`2K` and :math:`K`: at most
    :math:`3 + 2K` rounded operations along any path, a fused multiply–add counting as one).
    :math:`\gamma_K` multiplies the product, not :math:`|M_R|` before it: :math:`\gamma_K
    |M_R|` underflows for a subnormal entry, and the lost :math:`\eta` would then be
    multiplied by :math:`|M_L|` (a subnormal times 1e25 escaped the radius).

    >>> I = Balls.exact([[1.0, 0.0], [0.0, 1.0]])
    >>> product_sum([I], [I]).mid.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    mL = np.concatenate([b.mid for b in left], axis=1) if len(left) > 1 else left[0].mid
    rL = np.concatenate([b.rad for b in left], axis=1) if len(left) > 1 else left[0].rad
    mR = np.concatenate([b.mid for b in right], axis=0) if len(right) > 1 else right[0].mid
    rR = np.concatenate([b.rad for b in right], axis=0) if len(right) > 1 else right[0].rad
    K = mL.shape[1]
    mid = mL @ mR
    aR = np.abs(mR)
    aL = np.abs(mL)
    rad = (np.concatenate([aL, rL], axis=1) @ np.concatenate([rR, aR + rR], axis=0)
           + gamma(K) * (aL @ aR))
    return Balls(mid, _upward(rad, 3 + 2 * K))



# ------------------------------------------------------------------------------------------
# Cauchy sums over stacks of coefficients: the jets' inner loops (verify.enclosure._jets).
# A *stack* is a pair of float64 arrays (mids, rads) of shape (capacity, rows, cols) holding a
# jet's coefficients of orders 0, 1, ...; these functions sum over orders j = lo..hi without
# copying the coefficients out. The compiled kernels (Numba, the optional ``compiled`` extra)
# compute exactly the bounds of product_sum / hadamard_sum, entry by entry in one pass; without
# Numba the same sums go through NumPy.


#: Exact float weights 0, 1, 2, ... (the index j of a Cauchy sum) and ones.
INDICES = np.arange(256, dtype=float)
_ONES = np.ones(256)


def new_stack(rows: int, cols: int, capacity: int = 16) -> np.ndarray:
    """An empty stack: a float64 array ``(2, capacity, rows, cols)``, ``[0]`` the midpoints
    and ``[1]`` the radii of the coefficients of orders ``0, 1, ...``."""
    return np.zeros((2, capacity, rows, cols))


def cauchy_product(left: np.ndarray, right: np.ndarray, lo: int, hi: int, m: int,
                   out: np.ndarray, at: int) -> None:
    r""":math:`\sum_{j=lo}^{hi} L_j R_{m-j}` (matrix products) of two stacks
    (:func:`new_stack`): the bounds of :func:`product_sum` with :math:`K = (hi - lo + 1) \cdot`
    inner length (one inner product of length :math:`K` in some order: midpoint error
    :math:`\le \gamma_K \sum |a||b| + K\eta`; radius :math:`\sum |a| r_b + r_a(|b| + r_b) +
    \gamma_K \sum |a||b|`, at most :math:`K + 3` rounded operations along any path), written
    to the stack ``out`` at order ``at``.

    >>> L, O = new_stack(1, 1), new_stack(1, 1)
    >>> L[0, :2] = 1.0
    >>> cauchy_product(L, L, 0, 1, 1, O, 0); O[0, 0].tolist()   # 1·1 + 1·1
    [[2.0]]
    """
    K = (hi - lo + 1) * left.shape[3]
    kernels = _kernels()
    if kernels is None:
        _put(out, at, product_sum([Balls(left[0, j], left[1, j]) for j in range(lo, hi + 1)],
                                  [Balls(right[0, m - j], right[1, m - j])
                                   for j in range(lo, hi + 1)]))
    else:
        kernels[0](left, right, lo, hi, m, gamma(K), upward_factor(K + 3), out, at)


def cauchy_hadamard(left: np.ndarray, right: np.ndarray, lo: int, hi: int, m: int,
                    out: np.ndarray, at: int, weights: np.ndarray = _ONES,
                    divisor: float = 1.0) -> None:
    r""":math:`\frac{1}{c} \sum_{j=lo}^{hi} w_j\, L_j \circ R_{m-j}` of two stacks
    (entrywise, broadcast over axes of length 1) for exact float weights :math:`w_j` and an
    exact nonzero float divisor :math:`c`. With :math:`k = hi - lo + 1` terms, each
    :math:`\tilde q_j = \mathrm{fl}(w_j\,\mathrm{fl}(a_j b_j))` errs by two roundings and the
    sum by :math:`k - 1`: midpoint error :math:`\le \gamma_{k+1} \sum |w_j a_j b_j| \le
    \gamma_{k+3} \sum |\tilde q_j|` (plus underflow); then the division, :math:`u` of the
    result. Radius :math:`\big(\sum |w_j|(|a_j| r_{b_j} + r_{a_j}(|b_j| + r_{b_j})) +
    \gamma_{k+3} \sum |\tilde q_j|\big)/|c| + u|\tilde c|`: at most :math:`k + 6` rounded
    operations along any path. Written to the stack ``out`` at order ``at``.

    >>> L, O = new_stack(1, 2), new_stack(1, 2)
    >>> L[0, :3] = 2.0
    >>> cauchy_hadamard(L, L, 1, 2, 2, O, 0, INDICES, 4.0); O[0, 0].tolist()  # (4 + 8)/4
    [[3.0, 3.0]]
    """
    k = hi - lo + 1
    kernels = _kernels()
    if kernels is None:
        total = hadamard_sum([Balls(left[0, j], left[1, j]) * Balls.exact(weights[j])
                              for j in range(lo, hi + 1)],
                             [Balls(right[0, m - j], right[1, m - j])
                              for j in range(lo, hi + 1)])
        _put(out, at, total.divide(divisor))
    else:
        kernels[1](left, right, lo, hi, m, weights, divisor, gamma(k + 3),
                   upward_factor(k + 6), out, at)


def stack_sum(left: np.ndarray, right: np.ndarray, m: int, sign: float, out: np.ndarray,
              at: int) -> None:
    """``L_m + sign · R_m`` (``sign`` = ±1) of two stacks, to ``out`` at order ``at``: the
    bounds of :meth:`Balls.__add__`.

    >>> L, O = new_stack(1, 1), new_stack(1, 1)
    >>> L[0, 0] = 1.0
    >>> stack_sum(L, L, 0, -1.0, O, 0); O[:, 0].tolist()   # 0 ± the underflow floor
    [[[0.0]], [[9.33...e-302]]]
    """
    kernels = _kernels()
    if kernels is None:
        a, b = Balls(left[0, m], left[1, m]), Balls(right[0, m], right[1, m])
        _put(out, at, a + b if sign > 0 else a - b)
    else:
        kernels[2](left, right, m, sign, upward_factor(2), out, at)


def _put(out: np.ndarray, at: int, value: Balls) -> None:
    out[0, at], out[1, at] = value.mid, value.rad


def compiled() -> bool:
    """Whether the Cauchy sums run compiled: Numba (the optional ``compiled`` extra) installed
    and not turned off by ``VERIFY_COMPILED=0`` (read once per process)."""
    return _kernels() is not None


@functools.cache
def _kernels():
    if os.environ.get("VERIFY_COMPILED", "1") == "0":
        return None
    try:
        import numba  # optional extra (`pip install .[compiled]`), imported on first use only
    except ImportError:
        return None
    options = {"cache": True, "nogil": True, "error_model": "numpy"}

    @numba.njit(**options)
    def product(L, R, lo, hi, m, g, factor, out, at):  # pragma: no cover - compiled
        rows, inner, cols = L.shape[2], L.shape[3], R.shape[3]
        for i in range(rows):
            for c in range(cols):
                mid = 0.0
                mag = 0.0
                rad = 0.0
                for j in range(lo, hi + 1):
                    for q in range(inner):
                        a = L[0, j, i, q]
                        b = R[0, m - j, q, c]
                        rb = R[1, m - j, q, c]
                        mid += a * b
                        mag += abs(a) * abs(b)
                        rad += abs(a) * rb + L[1, j, i, q] * (abs(b) + rb)
                out[0, at, i, c] = mid
                out[1, at, i, c] = (rad + g * mag) * factor + UNDERFLOW_FLOOR

    @numba.njit(**options)
    def hadamard(L, R, lo, hi, m, W, divisor, g, factor, out, at):  # pragma: no cover
        rows, cols = max(L.shape[2], R.shape[2]), max(L.shape[3], R.shape[3])
        lr, lc, rr, rc = L.shape[2] > 1, L.shape[3] > 1, R.shape[2] > 1, R.shape[3] > 1
        scale = abs(divisor)
        for i in range(rows):
            il, ir = (i if lr else 0), (i if rr else 0)
            for c in range(cols):
                cl, cr = (c if lc else 0), (c if rc else 0)
                mid = 0.0
                mag = 0.0
                rad = 0.0
                for j in range(lo, hi + 1):
                    a = L[0, j, il, cl]
                    b = R[0, m - j, ir, cr]
                    rb = R[1, m - j, ir, cr]
                    q = W[j] * (a * b)
                    mid += q
                    mag += abs(q)
                    rad += abs(W[j]) * (abs(a) * rb + L[1, j, il, cl] * (abs(b) + rb))
                value = mid / divisor
                out[0, at, i, c] = value
                out[1, at, i, c] = (((rad + g * mag) / scale + UNIT_ROUNDOFF * abs(value))
                                    * factor + UNDERFLOW_FLOOR)

    @numba.njit(**options)
    def combine(L, R, m, sign, factor, out, at):  # pragma: no cover - compiled
        for i in range(L.shape[2]):
            for c in range(L.shape[3]):
                value = L[0, m, i, c] + sign * R[0, m, i, c]
                out[0, at, i, c] = value
                out[1, at, i, c] = ((L[1, m, i, c] + R[1, m, i, c] + UNIT_ROUNDOFF * abs(value))
                                    * factor + UNDERFLOW_FLOOR)

    return product, hadamard, combine
