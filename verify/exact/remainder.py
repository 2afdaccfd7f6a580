r"""The remainder :math:`r_j(t)` of the ``boundrj-step`` in the proof of Theorem 5.2 (SymPy).

Setting (Definition 5.1): ``V`` paranormal, :math:`F\oplus G=\mathbb R^d` invariant,
:math:`V|_F=\lambda I` with :math:`\lambda>0`, spectral radius :math:`|\lambda_2|` of
:math:`V|_G` below :math:`\lambda`; :math:`\pi_F` the projection onto ``F`` along ``G``. For
tokens :math:`z_i, z_j` held fixed,

.. math:: r_j(t) = \langle A e^{tV} z_i,\ A e^{tV}(z_j - z_i)\rangle - a_j\, e^{2\lambda t},
          \qquad a_j = \langle \pi_F(A z_i),\ \pi_F(A(z_j - z_i))\rangle .

The proof of Theorem 5.2 (§10) uses :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}`. That
bound is **false as written** (paper.md, ``boundrj-step``): ``d = n = 2``,
``V = diag(1, 0)``, ``A = [[1, 1/2], [1/2, 1]]``, ``z_1 = (0, 1)``, ``z_2 = (0, 2)`` (a
stationary configuration) give :math:`r_2(t) = 5/4 - e^{2t}/4`, which grows like
:math:`e^{2t}`, not :math:`e^{t}`. Sign convention checked against that answer: ``r`` is the
score minus :math:`a_j e^{2\lambda t}`, with :math:`\pi_F` applied *after* ``A``.

Token indices are **0-based** here (the paper's ``i = 1, j = 2`` are ``i=0, j=1``).

Examples
--------
>>> import sympy
>>> V, A = [[1, 0], [0, 0]], [[1, "1/2"], ["1/2", 1]]
>>> r = boundrj_remainder(V, A, [[0, 1], [0, 2]], 0, 1, [[1, 0]], [[0, 1]])
>>> r
5/4 - exp(2*t)/4
>>> boundrj_bound_violated(V, A, [[0, 1], [0, 2]], 0, 1, [[1, 0]], [[0, 1]]).violated
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from verify.errors import InvalidArgument
from verify.exact.inputs import rational_array
from verify.exact.polytope import project_along

__all__ = ["T", "boundrj_remainder", "BoundrjCheck", "boundrj_bound_violated"]

T = sympy.Symbol("t", real=True)


def _sym(array: np.ndarray) -> sympy.Matrix:
    return sympy.Matrix(array.shape[0], array.shape[1],
                        [sympy.Rational(v.numerator, v.denominator) for v in array.flat])


def _paranormal(V: sympy.Matrix, F: np.ndarray, G: np.ndarray) -> tuple[sympy.Rational, object]:
    """Check Definition 5.1 exactly; return (λ, |λ_2|)."""
    lam = None
    for k, f in enumerate(F):
        fv = _sym(f.reshape(-1, 1))
        Vf = V * fv
        a = next(a for a in range(len(fv)) if fv[a] != 0)
        mu = Vf[a] / fv[a]
        if Vf != mu * fv or (lam is not None and mu != lam):
            raise InvalidArgument(
                f"F_basis row {k} = {list(fv)} is not an eigenvector of V with the same eigenvalue"
                " as the others; V restricted to F must be λ·I (Definition 5.1).")
        lam = mu
    if not lam > 0:
        raise InvalidArgument(f"V restricted to F is {lam}·I; Definition 5.1 needs λ > 0.")
    if G.shape[0] == 0:
        return lam, sympy.Integer(0)
    Gm = _sym(G).T  # d×q, columns span G
    M = (Gm.T * Gm).inv() * Gm.T * V * Gm
    if V * Gm != Gm * M:
        raise InvalidArgument("G is not V-invariant (V G ⊄ G); Definition 5.1 needs F and G "
                              "invariant under V.")
    rho = max(sympy.Abs(ev) for ev in M.eigenvals())
    if not rho < lam:
        raise InvalidArgument(f"the spectral radius of V on G is {rho} ≥ λ = {lam}; Definition "
                              "5.1 needs it below λ.")
    return lam, rho


def _setup(V, A, z, i, j, F_basis, G_basis):
    Vq, _ = rational_array("V", V)
    d = Vq.shape[0]
    if Vq.shape != (d, d) or d == 0:
        raise InvalidArgument(f"V.shape={Vq.shape}; V must be a non-empty square matrix.")
    Aq, _ = rational_array("A", A)
    Z, _ = rational_array("z", z)
    if Aq.shape != (d, d) or Z.ndim != 2 or Z.shape[1] != d:
        raise InvalidArgument(f"A.shape={Aq.shape}, z.shape={Z.shape}; need A d×d and z n×d "
                              f"with d={d} (V.shape={Vq.shape}).")
    n = Z.shape[0]
    for name, k in (("i", i), ("j", j)):
        if not isinstance(k, (int, np.integer)) or not 0 <= k < n:
            raise InvalidArgument(f"{name}={k!r} ({type(k).__name__}) must be a 0-based token "
                                  f"index in range({n}).")
    F, _ = rational_array("F_basis", F_basis)
    G = (np.empty((0, d), dtype=object) if G_basis is None or np.size(G_basis) == 0
         else rational_array("G_basis", G_basis)[0])
    Vs = _sym(Vq)
    charpoly = Vs.charpoly(sympy.Symbol("lambda"))
    if any(f.degree() > 1 for f, _ in charpoly.factor_list()[1]):
        raise InvalidArgument(
            f"V={Vq.tolist()} has a non-rational eigenvalue (characteristic polynomial "
            f"{charpoly.as_expr()}); the symbolic e^(tV) is only supported for rational "
            "spectra. Use the rigorous numerical route (arb_mat.exp) instead.")
    project_along(Z[:1], F, G if G.shape[0] else None)  # validates F ⊕ G = R^d
    lam, rho = _paranormal(Vs, F, G)
    return Vq, Aq, Z, F, G, lam, rho


def boundrj_remainder(V: object, A: object, z: object, i: int, j: int, F_basis: object,
                      G_basis: object = None) -> sympy.Expr:
    r"""The exact :math:`r_j(t)` (module docstring) as a SymPy expression in :data:`T`.

    Parameters
    ----------
    V : array-like, shape (d, d)
        Rational entries and rational spectrum (else ``InvalidArgument``).
    A : array-like, shape (d, d)
        :math:`A = (Q^\top K)^{1/2}`; scores are :math:`\langle A e^{tV}z_i, A e^{tV}z_j\rangle`.
    z : array-like, shape (n, d)
        The tokens (fixed).
    i, j : int
        0-based token indices.
    F_basis, G_basis : array-like, shapes (p, d), (q, d)
        Bases (rows) of ``F`` and ``G``; ``G_basis=None`` means ``G = {0}``.

    Returns
    -------
    sympy.Expr
        :math:`r_j(t)`, expanded.
    """
    Vq, Aq, Z, F, G, lam, _ = _setup(V, A, z, i, j, F_basis, G_basis)
    E = (_sym(Vq) * T).exp()
    As = _sym(Aq)
    zi, dz = _sym(Z[i].reshape(-1, 1)), _sym((Z[j] - Z[i]).reshape(-1, 1))
    score = ((As * E * zi).T * (As * E * dz))[0, 0]
    Az = np.array([Aq.dot(Z[i]), Aq.dot(Z[j] - Z[i])], dtype=object)
    pf = project_along(Az, F, G if G.shape[0] else None)
    a_j = sum((u * v for u, v in zip(pf[0], pf[1], strict=True)), Fraction(0))
    return sympy.expand(score - sympy.Rational(a_j.numerator, a_j.denominator)
                        * sympy.exp(2 * lam * T))


def _exp_poly_terms(expr: sympy.Expr) -> dict[tuple[object, int], sympy.Expr]:
    """Write ``expr`` as ``Σ c · t^p · e^{μ t}``: return ``{(μ, p): c}`` with ``c ≠ 0``."""
    terms: dict[tuple[object, int], sympy.Expr] = {}
    for term in sympy.Add.make_args(sympy.expand(sympy.powsimp(sympy.expand(expr)))):
        coeff, rest = term.as_independent(T, as_Add=False)
        mu, p = sympy.Integer(0), 0
        for f in sympy.Mul.make_args(rest):
            base, e = (f.base, f.exp) if f.is_Pow else (f, sympy.Integer(1))
            if base == T and e.is_Integer:
                p += int(e)
            elif isinstance(base, sympy.exp):
                poly = sympy.Poly(base.args[0] * e, T)
                if poly.degree() > 1:
                    raise InvalidArgument(f"unexpected factor {f} in r_j(t)")
                mu += poly.coeff_monomial(T)
                coeff *= sympy.exp(poly.coeff_monomial(1))
            elif f != 1:
                raise InvalidArgument(f"unexpected factor {f} in r_j(t) (not t^p e^(μt))")
        terms[(mu, p)] = terms.get((mu, p), 0) + coeff
    return {k: sympy.nsimplify(v) if v.is_number else v for k, v in terms.items()
            if sympy.simplify(v) != 0}


@dataclass(frozen=True)
class BoundrjCheck:
    r"""Verdict on :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` as :math:`t\to\infty`.

    Attributes
    ----------
    remainder : sympy.Expr
        :math:`r_j(t)`.
    growth_rate, degree : sympy.Rational or None, int
        :math:`r_j \sim c\, t^{\text{degree}} e^{\text{growth\_rate}\cdot t}` (None if
        :math:`r_j \equiv 0`).
    leading_coefficient : sympy.Expr or None
    bound_rate : sympy.Rational
        :math:`\lambda + |\lambda_2|`.
    violated : bool
        True iff the growth is faster than :math:`e^{t(\lambda+|\lambda_2|)}` (decided exactly).
    """

    remainder: sympy.Expr
    growth_rate: object
    degree: int
    leading_coefficient: object
    bound_rate: object
    violated: bool


def boundrj_bound_violated(V: object, A: object, z: object, i: int, j: int, F_basis: object,
                           G_basis: object = None) -> BoundrjCheck:
    r"""Decide whether :math:`r_j` breaks :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}`.

    :math:`r_j` is an exponential polynomial :math:`\sum c\,t^p e^{\mu t}` (rational
    spectrum); the bound fails iff its leading term has :math:`\mu > \lambda+|\lambda_2|`, or
    :math:`\mu = \lambda+|\lambda_2|` with ``p ≥ 1``. Arguments as in :func:`boundrj_remainder`.

    Returns
    -------
    BoundrjCheck
    """
    r = boundrj_remainder(V, A, z, i, j, F_basis, G_basis)
    _, _, _, _, _, lam, rho = _setup(V, A, z, i, j, F_basis, G_basis)
    terms = _exp_poly_terms(r)
    bound = lam + rho
    if not terms:
        return BoundrjCheck(r, None, 0, None, bound, False)
    mu, p = max(terms, key=lambda k: (k[0], k[1]))
    return BoundrjCheck(r, mu, p, terms[(mu, p)], bound, bool(mu > bound or (mu == bound
                                                                            and p > 0)))
