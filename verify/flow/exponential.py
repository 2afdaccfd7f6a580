r"""The matrix exponential ``e^{tV}`` from a decomposition of ``V`` computed once.

The rescaled scores ``<Q e^{tV} z_i, K e^{tV} z_j>`` grow like ``e^{2 μ t}`` with ``μ`` the largest
real part of an eigenvalue of ``V`` (``μ = λ_1`` for the paper's good triples). We therefore
factor

.. math:: e^{tV} = e^{\mu t}\, \tilde E(t), \qquad
          \tilde E(t) = P\, \mathrm{diag}_k\big(e^{(\lambda_k-\mu)t} N_k(t)\big)\, P^{-1},

where ``V = P J P^{-1}`` is an eigen (or, for defective ``V``, Jordan) decomposition and
``N_k(t) = Σ_m t^m N^m / m!`` the polynomial part of a Jordan block. ``Ẽ(t)`` stays bounded
(up to polynomial growth), so neither float64 nor the scores overflow; the growth ``μ t`` is
carried separately in log form. No ``expm`` is evaluated along a trajectory.

Decompositions: symmetric ``V`` uses ``numpy.linalg.eigh``; a diagonalisable ``V`` uses
``numpy.linalg.eig`` (float64) or FLINT's certified ``acb_mat.eig`` (arbitrary precision); a
defective ``V`` (or one whose eigenvector matrix is too ill-conditioned for float64) uses SymPy's
exact Jordan form, which is practical for small ``d``.

Examples
--------
>>> import numpy as np
>>> from fractions import Fraction
>>> V = np.array([[Fraction(1), Fraction(1)], [Fraction(0), Fraction(1)]], dtype=object)
>>> E = ValueExponential(V)
>>> E.kind
'jordan'
>>> scaled, growth = E.scaled_float(2.0)          # e^{2V} = e^{2} [[1, 2], [0, 1]]
>>> np.round(scaled, 12), growth
(array([[1., 2.],
       [0., 1.]]), 2.0)
"""

from __future__ import annotations

import math

import numpy as np
from flint import acb, acb_mat, arb, arb_mat, fmpq

from verify.errors import InvalidArgument
from verify.exact.inputs import as_float_array

__all__ = ["ValueExponential"]

_MAX_FLOAT_CONDITION = 1e8  # beyond this the float64 eigenvector matrix is not trusted
_ARB_CACHE_SIZE = 16  # arb decompositions kept per process, by (exact V, bits)
_ARB_DECOMPOSITIONS: dict = {}


def _is_symmetric(V: np.ndarray) -> bool:
    return bool(np.all(V == V.T))


class ValueExponential:
    """``e^{tV} = e^{μ t} Ẽ(t)`` from a decomposition of the exact ``V`` done once.

    Parameters
    ----------
    V : ndarray of Fraction, shape (d, d)
        The exact value matrix.

    Attributes
    ----------
    kind : str
        ``"symmetric"``, ``"diagonalisable"`` or ``"jordan"``.
    mu : float
        Largest real part of an eigenvalue of ``V`` (float64 value).
    """

    def __init__(self, V: np.ndarray) -> None:
        self.V_exact = V
        self.d = V.shape[0]
        Vf = as_float_array(V)
        self._arb_cache: dict[int, tuple] = {}
        self._arb_transposed: dict[int, tuple] = {}  # bits -> (P^{-T}, Pᵀ, μ) for rows
        self._arb_real: dict[int, tuple | None] = {}  # bits -> the real form (_real_form_arb)
        if _is_symmetric(V):
            lam, P = np.linalg.eigh(Vf)
            self.kind = "symmetric"  # real, contiguous arrays: the fast path of scaled_float
            self._float = (lam, P, np.ascontiguousarray(P.T), None)
        else:
            lam, P = np.linalg.eig(Vf)
            if np.linalg.cond(P) < _MAX_FLOAT_CONDITION:
                self.kind = "diagonalisable"
                self._float = (lam, P, np.linalg.inv(P), None)
            else:
                self.kind = "jordan"
                self._float = self._jordan(digits=17, to="float")
        self.mu = float(np.max(self._float[0].real))

    # -- decompositions --------------------------------------------------------------------
    def _jordan(self, digits: int, to: str):
        import sympy  # start-up: ~0.3 s to import, needed only for a Jordan form of V

        if self.d > 12:
            raise InvalidArgument(
                f"V (d={self.d}) is defective or too ill-conditioned to diagonalise in float64, "
                "and its exact Jordan form is only computed for d ≤ 12."
            )
        M = sympy.Matrix(self.d, self.d, [sympy.Rational(v.numerator, v.denominator)
                                          for v in self.V_exact.flat])
        P, J = M.jordan_form()
        blocks = []  # (start, size)
        start = 0
        while start < self.d:
            size = 1
            while start + size < self.d and J[start + size - 1, start + size] == 1 \
                    and J[start + size, start + size] == J[start, start]:
                size += 1
            blocks.append((start, size))
            start += size
        Pinv = P.inv()
        lam = [J[i, i] for i in range(self.d)]

        if to == "float":
            def num(e):
                return complex(sympy.N(e, digits))

            lam_ = np.array([num(v) for v in lam])
            P_ = np.array([[num(P[i, j]) for j in range(self.d)] for i in range(self.d)])
            Pinv_ = np.array([[num(Pinv[i, j]) for j in range(self.d)] for i in range(self.d)])
            return lam_, P_, Pinv_, blocks

        def num_acb(e):
            value = sympy.N(e, digits)
            re, im = value.as_real_imag()
            return acb(arb(str(sympy.Float(re, digits))), arb(str(sympy.Float(im, digits))))

        lam_ = [num_acb(v) for v in lam]
        P_ = acb_mat(self.d, self.d,
                     [num_acb(P[i, j]) for i in range(self.d) for j in range(self.d)])
        Pinv_ = acb_mat(self.d, self.d,
                        [num_acb(Pinv[i, j]) for i in range(self.d) for j in range(self.d)])
        return lam_, P_, Pinv_, blocks

    def _arb_decomposition(self, bits: int):
        """(eigenvalues as acb, P, P^{-1} as acb_mat, Jordan blocks or None) at ``bits``;
        shared by every :class:`ValueExponential` of the same ``V`` in this process (a run,
        its reference, the round-off spot check, the other instances of a family: an arb
        eigen-decomposition of a 128×128 ``V`` takes seconds)."""
        if bits not in self._arb_cache:
            key = (self.V_exact.shape, tuple(self.V_exact.flat), bits)
            if key not in _ARB_DECOMPOSITIONS:
                if len(_ARB_DECOMPOSITIONS) >= _ARB_CACHE_SIZE:
                    _ARB_DECOMPOSITIONS.pop(next(iter(_ARB_DECOMPOSITIONS)))  # the oldest
                _ARB_DECOMPOSITIONS[key] = self._decompose_arb(bits)
            self._arb_cache[bits] = _ARB_DECOMPOSITIONS[key]
        return self._arb_cache[bits]

    def _decompose_arb(self, bits: int):
        d = self.d
        if all(self.V_exact[i, j] == 0 for i in range(d) for j in range(d) if i != j):
            # diagonal V (V = λI above all): P = I exactly. acb_mat.eig cannot isolate a
            # repeated eigenvalue, and SymPy's Jordan form (~0.3 s to import) is not needed
            identity = acb_mat(d, d, [int(i == j) for i in range(d) for j in range(d)])
            lam = [acb(fmpq(v.numerator, v.denominator)) for v in np.diagonal(self.V_exact)]
            return lam, identity, identity, None
        if self.kind == "jordan":
            result = self._jordan(digits=int(bits * 0.302) + 10, to="arb")
        else:
            A = acb_mat(self.d, self.d,
                        [fmpq(v.numerator, v.denominator) for v in self.V_exact.flat])
            try:
                lam, P = A.eig(right=True)
            except ValueError:
                result = self._jordan(digits=int(bits * 0.302) + 10, to="arb")
            else:
                result = (list(lam), P, P.inv(), None)
        return result

    # -- evaluation ------------------------------------------------------------------------
    def scaled_float(self, t: float) -> tuple[np.ndarray, float]:
        """``(Ẽ(t), μ t)`` in float64, with ``e^{tV} = e^{μ t} Ẽ(t)``."""
        lam, P, Pinv, blocks = self._float
        if blocks is None:
            middle = np.exp((lam - self.mu) * t)
            if self.kind == "symmetric":
                E = (P * middle) @ Pinv
            else:
                E = ((P * middle) @ Pinv).real
            return E, self.mu * t
        inner = np.zeros((self.d, self.d), dtype=complex)
        for start, size in blocks:
            base = np.exp((lam[start] - self.mu) * t)
            for offset in range(size):
                coeff = base * t ** offset / math.factorial(offset)
                for r in range(start, start + size - offset):
                    inner[r, r + offset] = coeff
        return (P @ inner @ Pinv).real, self.mu * t

    def scaled_arb(self, t, bits: int):
        """``(Ẽ(t), μ t)`` as (``arb_mat``, ``arb``) at ``bits`` bits (call inside that precision).

        ``μ`` is the midpoint of the certified largest real part, so ``e^{μt} Ẽ(t)`` is exactly
        ``e^{tV}`` whichever ``μ`` is used. Through the real eigen-form where it is certified
        (:meth:`_real_form_arb`), else ``P diag(e^{(λ_k − μ)t} N_k(t)) P^{-1}`` in complex balls.
        """
        lam, P, Pinv, blocks = self._arb_decomposition(bits)
        form = None if blocks is not None else self._real_form_arb(bits)
        if form is not None:  # Ẽ(t)ᵀ = P_R^{-T} e^{(Λ_R − μ)t ᵀ} P_Rᵀ, real (scaled_rows_arb)
            Pinv_t, P_t, _, mu = form
            return (Pinv_t * self._rotation_arb(t, bits) * P_t).transpose(), mu * t
        mu = max((v.real.mid() for v in lam), key=float)
        d = self.d
        inner = [[acb(0)] * d for _ in range(d)]
        if blocks is None:
            for k in range(d):
                inner[k][k] = ((lam[k] - mu) * t).exp()
        else:
            for start, size in blocks:
                base = ((lam[start] - mu) * t).exp()
                for offset in range(size):
                    coeff = base * t ** offset / math.factorial(offset)
                    for r in range(start, start + size - offset):
                        inner[r][r + offset] = coeff
        M = P * acb_mat(inner) * Pinv
        real = arb_mat(d, d, [M[i, j].real for i in range(d) for j in range(d)])
        return real, mu * t

    def scaled_rows_arb(self, t, Z, bits: int):
        r"""``(Z Ẽ(t)ᵀ, μ t)`` for an ``arb_mat`` ``Z`` of token rows, without forming ``Ẽ(t)``
        (call inside the precision of ``bits``).

        For a diagonalisable ``V`` this uses its real eigen-decomposition
        ``V = P_R Λ_R P_R^{-1}`` (:meth:`_real_form_arb`: ``Λ_R`` block-diagonal with the real
        eigenvalues and, for each pair ``α ± iβ``, the block ``[[α, β], [−β, α]]``):

        .. math:: Z \tilde E(t)^T = \big((Z P_R^{-T})\, e^{(Λ_R - μ)t\,T}\big)\, P_R^T,

        two real ``n×d×d`` products and one with the sparse ``e^{(Λ_R − μ)t}ᵀ`` (blocks
        ``e^{(α−μ)t} [[cos βt, −sin βt], [sin βt, cos βt]]``), all in C. Where the real form
        cannot be certified it goes through the complex decomposition
        (:meth:`_scaled_rows_complex_arb`); a defective ``V`` through :meth:`scaled_arb`.

        >>> from flint import arb_mat
        >>> from verify.numerics import Arb
        >>> e = ValueExponential(np.array([[2, 1], [0, -1]], dtype=object))
        >>> with Arb(bits=80).working_precision():
        ...     Z = arb_mat([[1, 2], [3, -1]])
        ...     rows, growth = e.scaled_rows_arb(1, Z, 80)
        ...     E, _ = e.scaled_arb(1, 80)
        ...     bool(abs(float((rows - Z * E.transpose()).mid()[1, 0])) < 1e-20)
        True
        """
        if self._arb_decomposition(bits)[3] is not None:
            E, growth = self.scaled_arb(t, bits)
            return Z * E.transpose(), growth
        rows = self.eigen_rows_arb(t, Z, bits)
        if rows is None:
            return self._scaled_rows_complex_arb(t, Z, bits)
        U, P_t, growth = rows
        return U * P_t, growth

    def eigen_rows_arb(self, t, Z, bits: int):
        """``(U, P_Rᵀ, μ t)`` with ``Z Ẽ(t)ᵀ = U P_Rᵀ``, ``U = (Z P_R^{-T}) e^{(Λ_R − μ)t ᵀ}``
        (the token rows in the real eigen-basis, see :meth:`scaled_rows_arb`), or ``None``
        where ``V`` has no certified real eigen-decomposition (call inside the precision of
        ``bits``). A quadratic form of the rows needs no ``P_R``: ``(Z Ẽᵀ) B (Z Ẽᵀ)ᵀ =
        U (P_Rᵀ B P_R) Uᵀ``."""
        if self._arb_decomposition(bits)[3] is not None:
            return None
        form = self._real_form_arb(bits)
        if form is None:
            return None
        Pinv_t, P_t, _, mu = form
        return Z * Pinv_t * self._rotation_arb(t, bits), P_t, mu * t

    def _rotation_arb(self, t, bits: int):
        """``e^{(Λ_R − μ)t}ᵀ`` of the real form as a sparse ``arb_mat``."""
        _, _, blocks, mu = self._real_form_arb(bits)
        M = arb_mat(self.d, self.d)
        for position, lam, pair in blocks:
            if pair:  # e^{(λ−μ)t} = e^{(α−μ)t} (cos βt + i sin βt)
                z = ((lam - mu) * t).exp()
                c, s = z.real, z.imag
                M[position, position] = M[position + 1, position + 1] = c
                M[position, position + 1], M[position + 1, position] = -s, s
            else:
                M[position, position] = ((lam - mu) * t).exp()
        return M

    def _real_form_arb(self, bits: int):
        r"""``(P_R^{-T}, P_Rᵀ, blocks, μ)`` with ``V = P_R Λ_R P_R^{-1}`` real, or ``None``.

        From the certified complex decomposition (disjoint balls, one simple eigenvalue each):
        an eigenvalue whose ball excludes the real axis is non-real; one whose conjugate ball
        meets no other ball is real (its conjugate is an eigenvalue, in no other ball). For a
        real ``λ`` the column is ``Re w`` with ``w = v / v_m`` for its eigenvector ``v = c u``
        (``u`` real, ``v_m`` the largest entry: ``w = u / u_m`` is real); for a pair ``α ± iβ``
        (``β > 0``) the columns are ``Re w, Im w`` (any eigenvector ``w`` gives ``V Re w = α Re w
        − β Im w`` and ``V Im w = β Re w + α Im w``). Every ball contains the exact entries of
        one real basis, and ``arb_mat.inv`` certifies its inverse. ``blocks``: ``(column, λ,
        pair)`` with ``λ`` an ``arb`` for a real eigenvalue and an ``acb`` for a pair; ``μ`` the
        midpoint of the largest real part (exact), as in :meth:`scaled_arb`.
        """
        if bits in self._arb_real:
            return self._arb_real[bits]
        lam, P, _, _ = self._arb_decomposition(bits)
        d = self.d
        form = None
        if not any(lam[j].overlaps(lam[k]) for k in range(d) for j in range(k)) or all(
                v.imag.is_zero() for v in lam):
            columns, blocks = [], []
            for k, value in enumerate(lam):
                real = value.imag.is_zero() or (value.imag.contains(0) and not any(
                    lam[m].overlaps(value.conjugate()) for m in range(d) if m != k))
                if not real and value.imag.contains(0):
                    break  # neither certified real nor certified non-real
                if not real and value.imag < 0:
                    continue  # the conjugate of a pair taken with β > 0
                v = [P[i, k] for i in range(d)]
                top = v[max(range(d), key=lambda i: abs(complex(v[i].mid())))]
                w = [x / top for x in v]
                blocks.append((len(columns), value.real if real else value, not real))
                columns.append([x.real for x in w])
                if not real:
                    columns.append([x.imag for x in w])
            else:
                if len(columns) == d:
                    P_R = arb_mat(d, d, [columns[j][i] for i in range(d) for j in range(d)])
                    try:
                        P_inv = P_R.inv()
                    except ZeroDivisionError:
                        P_inv = None
                    if P_inv is not None:
                        mu = max((v.real.mid() for v in lam), key=float)
                        form = (P_inv.transpose(), P_R.transpose(), blocks, mu)
        self._arb_real[bits] = form
        return form

    def _scaled_rows_complex_arb(self, t, Z, bits: int):
        """``(Z Ẽ(t)ᵀ, μ t)`` through the complex decomposition: ``((Z P^{-T}) e^{(Λ − μ)t})
        Pᵀ``, two complex ``n×d×d`` products (where the real form is not certified)."""
        lam, P, Pinv, _ = self._arb_decomposition(bits)
        if bits not in self._arb_transposed:
            self._arb_transposed[bits] = (Pinv.transpose(), P.transpose(),
                                          max((v.real.mid() for v in lam), key=float))
        Pinv_t, P_t, mu = self._arb_transposed[bits]
        n, d = Z.nrows(), Z.ncols()
        W = acb_mat(Z) * Pinv_t                               # rows P^{-1} z_i
        scale = [((lam[k] - mu) * t).exp() for k in range(d)]
        W = acb_mat(n, d, [W[i, k] * scale[k] for i in range(n) for k in range(d)])
        return (W * P_t).real, mu * t

    def exp_float(self, t: float) -> np.ndarray:
        """``e^{tV}`` in float64 (may overflow to ``inf`` for large ``μ t``)."""
        E, growth = self.scaled_float(t)
        with np.errstate(over="ignore"):
            return math.exp(growth) * E if growth < 709 else np.where(E == 0, 0.0, E * np.inf)

    def __repr__(self) -> str:
        return f"ValueExponential(kind={self.kind!r}, d={self.d}, mu={self.mu:.6g})"
