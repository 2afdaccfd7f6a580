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
(:meth:`Balls.to_arb`, the function in ``arb``, :meth:`Balls.from_arb`, which rounds
outward). Overflow gives ``inf``/``nan`` entries: :meth:`Balls.finite` says so, and the caller
falls back to Arb.

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

import numpy as np
from flint import arb, arb_mat

from verify.numerics._rounding import UNDERFLOW_FLOOR, UNIT_ROUNDOFF, gamma, upward_factor

__all__ = ["Balls", "hadamard_sum", "product_sum"]


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

    def __getitem__(self, index) -> Balls:
        return Balls(self.mid[index], self.rad[index])

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

    def __neg__(self) -> Balls:
        return Balls(-self.mid, self.rad)

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

    def __matmul__(self, other: Balls) -> Balls:
        """The matrix product (:func:`product_sum` of one pair)."""
        return product_sum([self], [other])


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
    r""":math:`\sum_j L_j R_j` (matrix products) as **one** product of the concatenations
    :math:`[L_0 \cdots L_{k-1}]` and :math:`[R_0; \dots; R_{k-1}]` (inner length :math:`K`),
    by BLAS in any order: midpoint :math:`\mathrm{fl}(M_L M_R)`, error :math:`\le \gamma_K
    |M_L||M_R| + K\eta`; radius :math:`[\,|M_L|\;\; R_L\,]\,[\,R_R + \gamma_K |M_R|;\;
    |M_R| + R_R\,]` (one product of inner length :math:`2K` after two entrywise operations:
    at most :math:`2 + 2K` rounded operations along any path, a fused multiply–add counting
    as one).

    >>> I = Balls.exact([[1.0, 0.0], [0.0, 1.0]])
    >>> (I @ I).mid.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    mL = np.concatenate([b.mid for b in left], axis=1) if len(left) > 1 else left[0].mid
    rL = np.concatenate([b.rad for b in left], axis=1) if len(left) > 1 else left[0].rad
    mR = np.concatenate([b.mid for b in right], axis=0) if len(right) > 1 else right[0].mid
    rR = np.concatenate([b.rad for b in right], axis=0) if len(right) > 1 else right[0].rad
    K = mL.shape[1]
    mid = mL @ mR
    aR = np.abs(mR)
    rad = (np.concatenate([np.abs(mL), rL], axis=1)
           @ np.concatenate([rR + gamma(K) * aR, aR + rR], axis=0))
    return Balls(mid, _upward(rad, 2 + 2 * K))

