r"""Exact eigenvectors of a real simple eigenvalue, and linear algebra over $\mathbb{Q}(\lambda)$.

For a real simple eigenvalue $\lambda$ of $V$ the right and left eigenvectors $\varphi$,
$\varphi^*$ (normalised by $\varphi^*(\varphi) = 1$) are computed exactly: over $\mathbb{Q}$
when $\lambda$ is rational, over the number field $\mathbb{Q}(\lambda) = \mathbb{Q}[x]/(f)$
(elements stored as ``fmpq_poly`` in $\lambda$) when $d \le$ ``FIELD_MAX_DIM``, and otherwise
as certified ball enclosures.  The same kernel/image routine gives the splitting $F \oplus G$
used by :func:`verify.exact.spectral.paranormal`.

Examples
--------
>>> p = eigenpair([[1, 1], [1, 1]])
>>> p.eigenvalue.rational, p.right, p.left
(Fraction(2, 1), (Fraction(1, 1), Fraction(1, 1)), (Fraction(1, 2), Fraction(1, 2)))
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact._common import (
    fmpq_of,
    kernel_from_rref,
    rref,
    square_rational,
    working_precision,
)
from verify.exact.eigenvalues import DEFAULT_PREC, MAX_PREC, Eigenvalue, spectrum

__all__ = ["EigenPair", "eigenpair", "FIELD_MAX_DIM"]

FIELD_MAX_DIM = 16  #: exact linear algebra over Q(λ) for irrational λ up to this dimension


class _Field:
    """Arithmetic in $\\mathbb{Q}(\\lambda) = \\mathbb{Q}[x]/(f)$, elements as ``fmpq_poly``."""

    def __init__(self, f):
        from flint import fmpq_poly

        self.f = fmpq_poly(f.coeffs())

    def mul(self, a, b):
        return (a * b) % self.f

    def inv(self, a):
        g, s, _ = a.xgcd(self.f)
        return s / g.coeffs()[0]

    def dot(self, u, v):
        total = u[0] * 0
        for a, b in zip(u, v, strict=True):
            total += a * b
        return total % self.f


def _rref_field(rows: list, fld: _Field) -> tuple[list, list]:
    rows, pivots, r = [list(row) for row in rows], [], 0
    for c in range(len(rows[0]) if rows else 0):
        p = next((k for k in range(r, len(rows)) if rows[k][c] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        inv = fld.inv(rows[r][c])
        rows[r] = [fld.mul(inv, x) for x in rows[r]]
        for k in range(len(rows)):
            if k != r and rows[k][c] != 0:
                fac = rows[k][c]
                rows[k] = [x - fld.mul(fac, y) for x, y in zip(rows[k], rows[r], strict=True)]
        pivots.append(c)
        r += 1
    return rows[:r], pivots


def _shifted(array: np.ndarray, lam, fld: _Field | None, transpose: bool = False) -> list:
    """Rows of $V - \\lambda I$ (or its transpose), entries Fractions or field elements."""
    from flint import fmpq_poly

    d = array.shape[0]
    a = array.T if transpose else array
    if fld is None:
        return [[a[i, j] - (lam if i == j else 0) for j in range(d)] for i in range(d)]
    x = fmpq_poly([0, 1]) % fld.f
    return [[fmpq_poly([fmpq_of(a[i, j])]) - (x if i == j else 0) for j in range(d)]
            for i in range(d)]


def _kernel_and_image(array: np.ndarray, lam, fld: _Field | None, transpose: bool = False):
    """Exact kernel basis and column-space basis of $V - \\lambda I$ (or its transpose)."""
    from flint import fmpq_poly

    rows = _shifted(array, lam, fld, transpose)
    d = len(rows)
    if fld is None:
        red_rows, pivots = rref(rows)
        kern = kernel_from_rref(red_rows, pivots, d, Fraction(1), Fraction(0))
    else:
        red_rows, pivots = _rref_field(rows, fld)
        kern = kernel_from_rref(red_rows, pivots, d, fmpq_poly([1]), fmpq_poly([0]))
    image = [[rows[i][c] for i in range(d)] for c in pivots]
    return kern, image


def _eval(a, ball):
    """Ball value of a field element (``fmpq_poly`` in λ) at the ball of λ."""
    from flint import arb

    total = ball * 0
    for c in reversed(a.coeffs()):
        total = total * ball + arb(c)
    return total


def _sign(value, lam: Eigenvalue | None, fld: _Field | None, prec: int) -> int | None:
    """Certified sign of an exact real number (Fraction, or field element at real λ)."""
    if fld is None:
        return (value > 0) - (value < 0)
    if value % fld.f == 0:
        return 0
    bits = prec
    while bits <= 8 * MAX_PREC:
        with working_precision(bits):
            balls = [c for c, _ in lam.minimal_polynomial.complex_roots()]
            inside = [b for b in balls if lam.enclosure.contains(b)]
            if len(inside) == 1:
                v = _eval(value, inside[0].real)
                if v > 0 or v < 0:
                    return 1 if v > 0 else -1
        bits *= 2
    return None


@dataclass(frozen=True)
class EigenPair:
    r"""Right and left eigenvectors $\varphi$, $\varphi^*$ of a real simple eigenvalue.

    Normalised by $\varphi^*(\varphi) = 1$ (and one entry of $\varphi$ equal to 1).

    Attributes
    ----------
    eigenvalue : Eigenvalue
    right, left : tuple or None
        Exact entries: ``Fraction`` when $\lambda \in \mathbb{Q}$; when ``field`` is set, each
        entry is a ``flint.fmpq_poly`` $p$ standing for $p(\lambda) \in \mathbb{Q}(\lambda)$.
        ``None`` when only an enclosure was computed.
    field : flint.fmpz_poly or None
        Minimal polynomial of $\lambda$ for entries in $\mathbb{Q}(\lambda)$.
    right_enclosure, left_enclosure : tuple of flint.arb
        Certified balls for the entries.
    radius : float
        Largest radius of those balls.
    """

    eigenvalue: Eigenvalue
    right: tuple | None
    left: tuple | None
    field: object
    right_enclosure: tuple
    left_enclosure: tuple
    radius: float

    @property
    def exact(self) -> bool:
        return self.right is not None

    @property
    def right_float(self) -> np.ndarray:
        return np.array([float(b.mid()) for b in self.right_enclosure])

    @property
    def left_float(self) -> np.ndarray:
        return np.array([float(b.mid()) for b in self.left_enclosure])


def _numeric_vector(vq_arb, lam_ball, fix: int, drop: int):
    """Certified kernel vector of $M - \\lambda I$ with entry ``fix`` = 1 (row ``drop`` unused).

    For a simple $\\lambda$ the minor without row ``drop`` and column ``fix`` is nonsingular
    iff $\\varphi^*_{drop}\\varphi_{fix} \\ne 0$; ``arb_mat.solve`` certifies it or raises.
    """
    from flint import arb, arb_mat

    d = vq_arb.nrows()
    rows = [i for i in range(d) if i != drop]
    cols = [j for j in range(d) if j != fix]
    shifted = [[vq_arb[i, j] - (lam_ball if i == j else 0) for j in range(d)] for i in range(d)]
    sol = arb_mat([[shifted[i][j] for j in cols] for i in rows]).solve(
        arb_mat([[-shifted[i][fix]] for i in rows]))
    out = [sol[k, 0] for k in range(d - 1)]
    out.insert(fix, arb(1))
    return out


def eigenpair(V: object, index: int = 0, *, field_max_dim: int = FIELD_MAX_DIM,
              prec: int = DEFAULT_PREC) -> EigenPair:
    r"""Right and left eigenvectors of a real simple eigenvalue, with $\varphi^*(\varphi) = 1$.

    Exact over $\mathbb{Q}$ when $\lambda$ is rational, exact over $\mathbb{Q}(\lambda)$ when
    $d \le$ ``field_max_dim``, otherwise a certified ball enclosure (``arb_mat.solve`` on the
    $(d-1)\times(d-1)$ minor, nonsingular exactly when $\lambda$ is simple).

    Parameters
    ----------
    V : array_like, shape (d, d)
    index : int
        Position of the eigenvalue in ``spectrum(V).eigenvalues`` (0: the leading one).
    field_max_dim : int
        Largest $d$ for exact algebra over $\mathbb{Q}(\lambda)$ with $\lambda$ irrational.
    prec : int
        Precision (bits) of the enclosures.

    Returns
    -------
    EigenPair

    Raises
    ------
    InvalidArgument
        If the eigenvalue is not real and simple, or ``index`` is out of range.

    Examples
    --------
    >>> p = eigenpair([[2, 1], [0, 1]])
    >>> p.right, p.left
    ((Fraction(1, 1), Fraction(0, 1)), (Fraction(1, 1), Fraction(1, 1)))
    """
    from flint import arb, fmpq_poly

    array = square_rational("V", V)
    spec = spectrum(array)
    if not 0 <= index < len(spec.eigenvalues):
        raise InvalidArgument(f"index={index!r} ({type(index).__name__}) is out of range; V has "
                              f"{len(spec.eigenvalues)} distinct eigenvalues.")
    lam = spec.eigenvalues[index]
    if not lam.is_real or lam.algebraic_multiplicity != 1:
        raise InvalidArgument(f"index={index} selects λ = {lam}, which is not real and simple "
                              "(φ* with φ*(φ) = 1 needs a real simple eigenvalue); pick another.")
    d, right, left, fld = array.shape[0], None, None, None
    if lam.rational is not None or d <= field_max_dim:
        fld = _Field(lam.minimal_polynomial) if lam.rational is None else None
        right = list(_kernel_and_image(array, lam.rational, fld)[0][0])
        left = list(_kernel_and_image(array, lam.rational, fld, transpose=True)[0][0])
        scale = fld.dot(left, right) if fld else sum(
            a * b for a, b in zip(left, right, strict=True))
        if fld:
            inv = fld.inv(scale)
            left = [fld.mul(inv, x) for x in left]
        else:
            left = [x / scale for x in left]
    with working_precision(prec):
        if right is not None:
            conv = (lambda x: _eval(x, lam.enclosure.real)) if fld else (
                lambda x: arb(fmpq_of(x)))
            r_enc, l_enc = [conv(x) for x in right], [conv(x) for x in left]
        else:
            from flint import arb_mat

            flt = np.array(array, dtype=float) - lam.mid.real * np.eye(d)
            u, _, vh = np.linalg.svd(flt)
            fix_r, fix_l = int(np.argmax(abs(vh[-1]))), int(np.argmax(abs(u[:, -1])))
            vq = arb_mat([[arb(fmpq_of(x)) for x in row] for row in array])
            r_enc = _numeric_vector(vq, lam.enclosure.real, fix_r, fix_l)
            l_enc = _numeric_vector(vq.transpose(), lam.enclosure.real, fix_l, fix_r)
            scale = sum((a * b for a, b in zip(l_enc, r_enc, strict=True)), arb(0))
            l_enc = [x / scale for x in l_enc]
        radius = max(float(b.rad()) for b in (*r_enc, *l_enc))
    if fld is not None:
        right = [fmpq_poly(x) for x in right]
    return EigenPair(lam, tuple(right) if right else None, tuple(left) if left else None,
                     lam.minimal_polynomial if fld else None, tuple(r_enc), tuple(l_enc), radius)
