r"""Exact leaders, the finite set :math:`\mathcal S` of Theorem 3.1 and projections along F ⊕ G.

Claim ``polytope`` (paper.md §2): for :math:`V = I_d` and :math:`B = Q^\top K = A^2` symmetric
positive definite, :math:`\operatorname{conv}\{z_i(t)\}` shrinks to a polytope
:math:`\mathcal K` with vertices :math:`\mathcal V = \{v_1,\dots,v_m\}`, and every :math:`z_i(t)`
converges to a point of

.. math:: \mathcal S = \{x\in\mathcal K : x^\top B x = \max_j x^\top B v_j\},
          \qquad \mathcal V\subseteq\mathcal S\subseteq\partial\mathcal K\cup\{0\}.

Every answer here is exact (``fractions.Fraction``). Hull vertices come with one exact
certificate per point (:mod:`verify.exact.hull`, whose names are re-exported here); this module
adds the exact leader margins, the set :math:`\mathcal S` and the projection along
:math:`F \oplus G` of Theorem 5.2.

Examples
--------
>>> hull_vertices([[0, 0], [2, 0], [0, 2], [1, 1], [2, 0], ["1/2", "1/2"]])
[0, 1, 2]
>>> leaders_exact([[1, 0], [0, 1]], [[3, 0], [0, 1], [1, 0]])
[0, 1]
>>> S = polytope_S([[1, 1], [-1, 1], [-1, -1], [1, -1]], [[1, 0], [0, 1]])
>>> len(S.points), S.vertices_in_S(), S.in_boundary_or_origin()
(9, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import numpy as np

from verify.errors import InvalidArgument
from verify.exact._common import kernel_from_rref, points_array, rref, solve_unique
from verify.exact.hull import HullCertificate, Vec, hull_certificate, hull_vertices
from verify.exact.inputs import rational_array

__all__ = [
    "HullCertificate",
    "hull_certificate",
    "hull_vertices",
    "leader_margin",
    "leaders_exact",
    "PolytopeS",
    "polytope_S",
    "project_along",
]


# --------------------------------------------------------------------------- exact helpers
def _square(name: str, value: object, d: int) -> np.ndarray:
    array, _ = rational_array(name, value)
    if array.shape != (d, d):
        raise InvalidArgument(
            f"Expected {name} of shape ({d}, {d}) but got {name}.shape={array.shape}; "
            f"{name} must be d×d with d = points.shape[1]."
        )
    return array


def _dot(u, v) -> Fraction:
    return sum((a * b for a, b in zip(u, v, strict=True)), Fraction(0))


# --------------------------------------------------------------------------- leaders
def leader_margin(matrix: object, points: object, i: int, *, kind: str = "B") -> Fraction:
    r"""Exact leader margin :math:`z_i^\top B z_i - \max_{j\ne i} z_i^\top B z_j`.

    With :math:`B = Q^\top K` (``= A^\top A``) this is
    :math:`\|Az_i\|^2 - \max_{j\ne i}\langle Az_i, Az_j\rangle`; token ``i`` is a *leader*
    (attends to itself in the hardmax limit) iff the margin is positive.

    Parameters
    ----------
    matrix : array-like, shape (d, d)
        ``B`` (default) or ``A`` when ``kind="A"`` (then ``B = AᵀA``).
    points : array-like, shape (n, d), n ≥ 2
    i : int
        Token index.
    kind : {"B", "A"}

    Returns
    -------
    Fraction

    Examples
    --------
    >>> leader_margin([[1, 0], [0, 1]], [[3, 0], [0, 1], [1, 0]], 2)
    Fraction(-2, 1)
    """
    Z = points_array("points", points)
    n, d = Z.shape
    if kind not in ("A", "B"):
        raise InvalidArgument(f"kind={kind!r} ({type(kind).__name__}) must be 'A' or 'B'.")
    M = _square(kind, matrix, d)
    B = M.T.dot(M) if kind == "A" else M
    if n < 2 or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
        raise InvalidArgument(
            f"i={i!r} ({type(i).__name__}) with n={n} tokens; need n ≥ 2 and 0 ≤ i < n.")
    row = Z[i].dot(B)
    return _dot(row, Z[i]) - max(_dot(row, Z[j]) for j in range(n) if j != i)


def leaders_exact(B: object, points: object) -> list[int]:
    """Indices ``i`` with :func:`leader_margin` ``> 0`` (exact)."""
    Z = points_array("points", points)
    return [i for i in range(Z.shape[0]) if leader_margin(B, Z, i) > 0]


# --------------------------------------------------------------------------- the set 𝒮
def _normal(rows: list[list[Fraction]], ncols: int) -> list[Fraction] | None:
    """A vector spanning the null space of ``rows`` when it is one-dimensional, else None."""
    basis = kernel_from_rref(*rref(rows), ncols, Fraction(1), Fraction(0))
    return basis[0] if len(basis) == 1 else None


@dataclass(frozen=True)
class PolytopeS:
    r"""The finite set :math:`\mathcal S` of Theorem 3.1, for :math:`\mathcal K = \mathrm{conv}\,V`.

    Attributes
    ----------
    vertices : list of tuple of Fraction
        :math:`\mathcal V`, the distinct vertices of :math:`\mathcal K`.
    points : list of tuple of Fraction
        :math:`\mathcal S`, sorted; always rational (each point solves a rational linear system).
    weights : list of dict
        For each point ``x``, barycentric weights ``{j: μ_j > 0}`` over ``vertices`` with
        ``x = Σ μ_j v_j`` (the certificate that ``x ∈ 𝒦``); every such ``j`` attains
        :math:`\max_j x^\top B v_j`.
    is_vertex, is_origin, on_boundary, on_relative_boundary : list of bool
        Per point. ``on_boundary`` is the topological boundary in :math:`\mathbb R^d` (all of
        :math:`\mathcal K` when it is lower-dimensional); ``on_relative_boundary`` is the
        boundary inside the affine hull.
    affine_dimension : int
    """

    vertices: list[Vec]
    points: list[Vec]
    weights: list[dict[int, Fraction]]
    is_vertex: list[bool]
    is_origin: list[bool]
    on_boundary: list[bool]
    on_relative_boundary: list[bool]
    affine_dimension: int

    def vertices_in_S(self) -> bool:
        r""":math:`\mathcal V\subseteq\mathcal S` (true iff every vertex is a weak leader)."""
        return set(self.vertices) <= set(self.points)

    def in_boundary_or_origin(self) -> bool:
        r""":math:`\mathcal S\subseteq\partial\mathcal K\cup\{0\}`."""
        return all(b or o for b, o in zip(self.on_boundary, self.is_origin, strict=True))


def polytope_S(vertices: object, B: object) -> PolytopeS:
    r"""Compute :math:`\mathcal S = \{x\in\mathcal K: x^\top Bx = \max_j x^\top B v_j\}` exactly.

    Method (valid for any dimension; cost grows like :math:`\binom{m}{\le r+1}`). Write
    :math:`x = \sum_j \mu_j v_j` with :math:`\mu` in the simplex. Then
    :math:`x^\top B x = \sum_j \mu_j\, x^\top B v_j \le \max_j x^\top B v_j`, with equality iff
    every ``j`` in the support ``J`` of ``μ`` attains the maximum (for *any* ``B``). By
    Carathéodory ``J`` may be taken affinely independent. Equal values
    :math:`x^\top B v_j` on ``J`` say :math:`x^\top B (v_j - v_{j_0}) = 0`, i.e. ``x`` is the
    ``B``-orthogonal projection of 0 onto :math:`\mathrm{aff}\{v_j\}_{j\in J}`: a linear system
    :math:`(W^\top B^\top W)\alpha = -W^\top B^\top v_{j_0}` for :math:`x = v_{j_0} + W\alpha`,
    uniquely solvable when ``B`` is positive definite. So :math:`\mathcal S` is the set of
    these projections, over affinely independent ``J``, whose barycentric weights are
    :math:`\ge 0` and at which ``J`` attains :math:`\max_j x^\top B v_j` (checked exactly). In
    particular :math:`\mathcal S` is finite and rational; ``0 ∈ 𝒮`` whenever ``0 ∈ 𝒦``.

    Parameters
    ----------
    vertices : array-like, shape (m, d)
        Points generating :math:`\mathcal K` (non-vertices and duplicates are dropped exactly).
    B : array-like, shape (d, d)
        :math:`B = Q^\top K`; Theorem 3.1 assumes it symmetric positive definite.

    Returns
    -------
    PolytopeS

    Raises
    ------
    InvalidArgument
        If some system is singular (possible only when ``B`` is not definite): then
        :math:`\mathcal S` need not be finite.

    Notes
    -----
    :math:`\mathcal V\subseteq\mathcal S` holds iff each vertex satisfies
    :math:`v_i^\top B v_i \ge v_i^\top B v_j`; this is true for the limit polytope of the
    dynamics (its vertices are leaders) but **not** for an arbitrary polytope, which is why it is
    reported (:meth:`PolytopeS.vertices_in_S`) rather than assumed.

    Examples
    --------
    >>> S = polytope_S([[2, 0], [-1, 1], [-1, -1]], [[1, 0], [0, 1]])
    >>> [" ".join(map(str, x)) for x in S.points]
    ['-1 -1', '-1 0', '-1 1', '0 0', '1/5 -3/5', '1/5 3/5', '2 0']
    """
    cert = hull_certificate(vertices)
    d = cert.points.shape[1]
    Bm = _square("B", B, d)
    vert = [tuple(cert.points[i]) for i in cert.vertices]
    m, r = len(vert), cert.affine_dimension
    Bv = [tuple(Bm.dot(np.array(v, dtype=object))) for v in vert]
    found: dict[Vec, dict[int, Fraction]] = {}
    for size in range(1, min(m, r + 1) + 1):
        for J in combinations(range(m), size):
            v0 = vert[J[0]]
            W = [[a - b for a, b in zip(vert[j], v0, strict=True)] for j in J[1:]]
            if W and len(rref(W)[1]) != len(W):
                continue
            BW = [tuple(Bm.dot(np.array(w, dtype=object))) for w in W]
            alpha = solve_unique([tuple(_dot(wb, bwa) for bwa in BW) for wb in W],
                                  tuple(-_dot(v0, bwa) for bwa in BW)) if W else []
            if alpha is None:
                raise InvalidArgument(
                    f"B={Bm.tolist()} gives a singular system on the face spanned by vertices "
                    f"{list(J)}; 𝒮 need not be finite. Use B = QᵀK symmetric positive definite.")
            mu = [1 - sum(alpha, Fraction(0))] + list(alpha)
            if any(v < 0 for v in mu):
                continue
            x = tuple(v0[a] + sum((al * w[a] for al, w in zip(alpha, W, strict=True)),
                                  Fraction(0)) for a in range(d))
            values = [_dot(x, bv) for bv in Bv]
            if _dot(x, Bm.dot(np.array(x, dtype=object))) == max(values) and x not in found:
                found[x] = {j: w for j, w in zip(J, mu, strict=True) if w != 0}
    piv = rref([[a - b for a, b in zip(v, vert[0], strict=True)] for v in vert[1:]])[1]
    facets = []
    Y = [[v[a] for a in piv] for v in vert]
    for F in combinations(range(m), r) if r else []:
        nrm = _normal([[a - b for a, b in zip(Y[s], Y[F[0]], strict=True)] for s in F[1:]], r)
        if nrm is None:
            continue
        c0, vals = _dot(nrm, Y[F[0]]), [_dot(nrm, y) for y in Y]
        if all(v <= c0 for v in vals) or all(v >= c0 for v in vals):
            facets.append((nrm, c0))
    points = sorted(found)
    rel = [any(_dot(nrm, [x[a] for a in piv]) == c0 for nrm, c0 in facets) for x in points]
    return PolytopeS(
        vertices=vert, points=points, weights=[found[x] for x in points],
        is_vertex=[x in vert for x in points], is_origin=[all(v == 0 for v in x) for x in points],
        on_boundary=[b or r < d for b in rel], on_relative_boundary=rel, affine_dimension=r)


# --------------------------------------------------------------------------- projections
def project_along(points: object, F_basis: object, G_basis: object = None) -> np.ndarray:
    r"""Exact projection :math:`\pi_F` onto ``F`` along ``G`` (Theorem 5.2), row by row.

    Each point is written uniquely as :math:`z = f + g`, ``f ∈ F``, ``g ∈ G``; the result is
    ``f``.

    Parameters
    ----------
    points : array-like, shape (n, d)
    F_basis : array-like, shape (p, d)
        Basis of ``F`` (one vector per row), ``p ≥ 1``.
    G_basis : array-like, shape (q, d), optional
        Basis of ``G``; ``None`` means ``G = {0}``. Need ``p + q = d`` and ``F ⊕ G = R^d``.

    Returns
    -------
    ndarray of Fraction, shape (n, d)

    Examples
    --------
    >>> project_along([[3, 5]], [[1, 0]], [[1, 1]]).tolist()
    [[Fraction(-2, 1), Fraction(0, 1)]]
    """
    Z = points_array("points", points)
    d = Z.shape[1]
    F = points_array("F_basis", F_basis)
    G = np.empty((0, d), dtype=object) if G_basis is None else rational_array("G_basis", G_basis)[0]
    if G.size == 0:
        G = np.empty((0, d), dtype=object)
    if F.shape[1] != d or G.shape[1] != d:
        raise InvalidArgument(
            f"F_basis.shape={F.shape}, G_basis.shape={G.shape}; both need d={d} columns "
            "(one basis vector per row).")
    basis = [tuple(row) for row in F] + [tuple(row) for row in G]
    if len(basis) != d or len(rref([list(b) for b in basis])[1]) != d:
        raise InvalidArgument(
            f"F_basis ({F.shape[0]} rows) and G_basis ({G.shape[0]} rows) do not form a basis of "
            f"R^{d}; F ⊕ G = R^d is required (check independence and p + q = d).")
    out = np.empty(Z.shape, dtype=object)
    for k, z in enumerate(Z):
        coef = solve_unique(basis, tuple(z))
        for a in range(d):
            out[k, a] = sum((c * F[s, a] for s, c in enumerate(coef[: F.shape[0]])), Fraction(0))
    return out
