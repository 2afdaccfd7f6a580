r"""Exact vertices of a convex hull, each point with a certificate checked in rationals.

For points $z_1, \dots, z_n \in \mathbb{Q}^d$ every distinct point gets one exact certificate:
a vertex gets an integer vector $c$ with $c \cdot z_i > c \cdot z_j$ for all other distinct
points (a strict separator), a non-vertex gets convex weights $\lambda \ge 0$,
$\sum \lambda = 1$, $z_i = \sum_k \lambda_k z_k$.  Guesses come from floating point (Qhull,
HiGHS) and count only once verified exactly; when no guess verifies, an exact phase-I simplex
(Bland's rule) decides, so no answer is ever uncertified.  Used by
:func:`verify.exact.polytope.polytope_S` (and re-exported there).

Examples
--------
>>> hull_vertices([[0, 0], [2, 0], [0, 2], [1, 1], [2, 0], ["1/2", "1/2"]])
[0, 1, 2]
>>> print("\n".join(hull_certificate([[0], [3], [1], [3]]).lines()))
z_0: vertex, c=(-1) [qhull]
z_1: vertex, c=(1) [qhull]
z_2: not a vertex, z_2 = 2/3·z_0 + 1/3·z_1 [lp]
z_3: duplicate of z_1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from verify.exact._common import integer_rows, points_array, rref, solve_unique

__all__ = ["HullCertificate", "hull_certificate", "hull_vertices"]

Vec = tuple[Fraction, ...]


# --------------------------------------------------------------------------- exact helpers
def _exact_phase1(columns: list[Vec], rhs: Vec):
    """Exact phase-I simplex (Bland's rule) for ``{λ ≥ 0 : Σ λ_k columns[k] = rhs}``.

    Returns ``("feasible", λ)`` or ``("infeasible", y)`` with ``y·columns[k] ≤ 0 < y·rhs``.
    """
    m, r = len(rhs), len(columns)
    sign = [1 if b >= 0 else -1 for b in rhs]
    T = [[sign[i] * col[i] for col in columns] + [Fraction(int(k == i)) for k in range(m)]
         + [sign[i] * rhs[i]] for i in range(m)]
    basis = [r + i for i in range(m)]
    cost = [Fraction(0)] * r + [Fraction(1)] * m
    while True:
        cb = [cost[b] for b in basis]
        enter = next((j for j in range(r + m)
                      if cost[j] - sum(cb[i] * T[i][j] for i in range(m)) < 0), None)
        if enter is None:
            break
        rows = [i for i in range(m) if T[i][enter] > 0]
        leave = min(rows, key=lambda i: (T[i][-1] / T[i][enter], basis[i]))
        piv = T[leave][enter]
        T[leave] = [v / piv for v in T[leave]]
        for i in range(m):
            if i != leave and T[i][enter] != 0:
                f = T[i][enter]
                T[i] = [a - f * b for a, b in zip(T[i], T[leave], strict=True)]
        basis[leave] = enter
    cb = [cost[b] for b in basis]
    if sum(cb[i] * T[i][-1] for i in range(m)) == 0:
        lam = [Fraction(0)] * r
        for i, b in enumerate(basis):
            if b < r:
                lam[b] = T[i][-1]
        return "feasible", lam
    return "infeasible", [sign[k] * sum(cb[i] * T[i][r + k] for i in range(m)) for k in range(m)]


def _primitive(vec) -> tuple[int, ...]:
    """The positive multiple of a rational vector with coprime integer entries."""
    from math import gcd, lcm

    fr = [Fraction(v) for v in vec]
    scale = lcm(*(v.denominator for v in fr))
    ints = [int(v * scale) for v in fr]
    g = gcd(*ints) or 1
    return tuple(v // g for v in ints)


def _separates(c: tuple[int, ...], p: tuple[int, ...], others: list[tuple[int, ...]]) -> bool:
    cp = sum(a * b for a, b in zip(c, p, strict=True))
    return all(cp > sum(a * b for a, b in zip(c, q, strict=True)) for q in others)


def _combines(weights: dict[int, Fraction], p: Vec, pts: list[Vec]) -> bool:
    if any(w < 0 for w in weights.values()) or sum(weights.values()) != 1:
        return False
    return all(sum((w * pts[k][a] for k, w in weights.items()), Fraction(0)) == p[a]
               for a in range(len(p)))


def _rationalise(c: np.ndarray) -> list[tuple[int, ...]]:
    """Candidate integer vectors near the direction of the float vector ``c``, small first."""
    scale = float(np.max(np.abs(c))) if c.size else 0.0
    if not np.isfinite(scale) or scale == 0.0:
        return []
    out = [_primitive(int(round(v)) for v in c / scale * 2.0**b) for b in (3, 6, 10, 20, 30)]
    return list(dict.fromkeys(out + [_primitive(float(v) for v in c)]))


# --------------------------------------------------------------------------- hull certificates
@dataclass
class HullCertificate:
    """Exact certificates for the vertices of ``conv(points)``.

    Attributes
    ----------
    points : ndarray of Fraction, shape (n, d)
    vertices : list of int
        Indices of the vertices (first occurrence of each distinct point).
    duplicate_of : dict
        ``i -> k`` when point ``i`` repeats the earlier point ``k``.
    separators : dict
        ``i -> c`` (coprime integers) for each vertex: ``c·z_i > c·z_j`` for every other
        distinct point ``z_j``.
    combinations : dict
        ``i -> {k: λ_k}`` for each other distinct point: ``λ ≥ 0``, ``Σ λ = 1``,
        ``z_i = Σ λ_k z_k`` over distinct points ``k ≠ i``.
    methods : dict
        ``i -> how the certificate was found``: ``"qhull"`` (summed facet normals),
        ``"qhull-lp"`` (one LP over Qhull's vertices), ``"lp"`` (an LP for this point),
        ``"exact-simplex"`` or ``"single-point"``. Every certificate is verified exactly
        whatever its origin.
    affine_dimension : int
        Dimension of the affine hull of the points.
    """

    points: np.ndarray
    vertices: list[int]
    duplicate_of: dict[int, int]
    separators: dict[int, tuple[int, ...]] = field(default_factory=dict)
    combinations: dict[int, dict[int, Fraction]] = field(default_factory=dict)
    methods: dict[int, str] = field(default_factory=dict)
    affine_dimension: int = 0

    def check(self) -> bool:
        """Re-verify every certificate in exact arithmetic."""
        pts = [tuple(row) for row in self.points]
        ints = integer_rows(pts)
        reps = [i for i in range(len(pts)) if i not in self.duplicate_of]
        if sorted(self.separators) != self.vertices or set(self.separators) | set(
                self.combinations) != set(reps) or set(self.separators) & set(self.combinations):
            return False
        ok = all(_separates(c, ints[i], [ints[k] for k in reps if k != i])
                 for i, c in self.separators.items())
        return ok and all(i not in w and set(w) <= set(reps) and _combines(w, pts[i], pts)
                          for i, w in self.combinations.items())

    def lines(self) -> list[str]:
        """Human-readable certificates, one line per point."""
        out = []
        for i in range(len(self.points)):
            if i in self.duplicate_of:
                out.append(f"z_{i}: duplicate of z_{self.duplicate_of[i]}")
            elif i in self.separators:
                c = ", ".join(map(str, self.separators[i]))
                out.append(f"z_{i}: vertex, c=({c}) [{self.methods[i]}]")
            else:
                w = " + ".join(f"{v}·z_{k}" for k, v in sorted(self.combinations[i].items()))
                out.append(f"z_{i}: not a vertex, z_{i} = {w} [{self.methods[i]}]")
        return out


def _lp_separator(Y: np.ndarray, i: int) -> np.ndarray | None:
    from scipy.optimize import linprog

    k = Y.shape[1]
    diff = np.delete(Y, i, axis=0) - Y[i]
    res = linprog(np.r_[np.zeros(k), -1.0], A_ub=np.c_[diff, np.ones(len(diff))],
                  b_ub=np.zeros(len(diff)), bounds=[(-1, 1)] * k + [(None, 1)], method="highs")
    return res.x[:k] if res.status == 0 and res.x[k] > 0 else None


def _lp_support(Y: np.ndarray, i: int) -> list[int] | None:
    from scipy.optimize import linprog

    others = [k for k in range(len(Y)) if k != i]
    res = linprog(np.zeros(len(others)), A_eq=np.r_[Y[others].T, np.ones((1, len(others)))],
                  b_eq=np.r_[Y[i], 1.0], bounds=(0, None), method="highs-ds")
    if res.status != 0:
        return None
    return [others[k] for k in np.flatnonzero(res.x > 1e-12 * max(1.0, float(res.x.max())))]


def _block_supports(Y: np.ndarray, inner: list[int], verts: list[int]) -> dict[int, list[int]]:
    """One block-diagonal LP (HiGHS dual simplex, so basic: ≤ k+1 weights per point) writing
    every ``Y[r]``, ``r`` in ``inner``, as a convex combination of ``Y[verts]``."""
    from scipy.optimize import linprog
    from scipy.sparse import identity, kron

    block = np.r_[Y[verts].T, np.ones((1, len(verts)))]
    res = linprog(np.zeros(len(inner) * len(verts)), A_eq=kron(identity(len(inner)), block),
                  b_eq=np.concatenate([np.r_[Y[r], 1.0] for r in inner]), bounds=(0, None),
                  method="highs-ds")
    if res.status != 0:
        return {}
    lam = res.x.reshape(len(inner), len(verts))
    return {r: [verts[v] for v in np.flatnonzero(row > 1e-12 * max(1.0, float(row.max())))]
            for r, row in zip(inner, lam, strict=True)}


def _float_guess(Y: np.ndarray):
    """Qhull's guess: vertex set, summed facet normals per vertex, a support per other point."""
    k = Y.shape[1]
    lo, hi = int(np.argmin(Y[:, 0])), int(np.argmax(Y[:, 0]))
    if k == 1:
        return {lo, hi}, {lo: -np.ones(1), hi: np.ones(1)}, {}
    try:
        from scipy.spatial import ConvexHull

        hull = ConvexHull(Y)
        normals: dict[int, np.ndarray] = {}
        for simplex, eq in zip(hull.simplices, hull.equations, strict=True):
            for v in simplex:
                normals[int(v)] = normals.get(int(v), 0) + eq[:k]
        verts = sorted(map(int, hull.vertices))
        inner = [r for r in range(len(Y)) if r not in normals]
        cells = _block_supports(Y, inner, verts) if inner else {}
        return set(verts), normals, cells
    except Exception:  # Qhull fails on nearly flat float data: the LPs and the exact
        return set(range(len(Y))), {}, {}  # simplex still decide every point


def hull_certificate(points: object) -> HullCertificate:
    """Vertices of ``conv(points)`` with an exact certificate for every point.

    Parameters
    ----------
    points : array-like, shape (n, d)
        Exact rationals (see :func:`verify.exact.inputs.rational_array`); any ``n, d ≥ 1``,
        degenerate sets (lower-dimensional, duplicates, grids) allowed.

    Returns
    -------
    HullCertificate
        ``check()`` re-verifies it; ``lines()`` prints it.

    Notes
    -----
    Guesses come from Qhull on the points written in exact affine coordinates (the pivot
    coordinates of the affine hull, an injective projection), then from HiGHS LPs; a guess
    counts only once its certificate is verified exactly. Otherwise the exact phase-I simplex
    decides and returns either the convex weights or (from its dual) a strict separator.

    Examples
    --------
    >>> cert = hull_certificate([[0, 0], [1, 0], [2, 0]])
    >>> cert.vertices, cert.combinations[1], cert.check()
    ([0, 2], {0: Fraction(1, 2), 2: Fraction(1, 2)}, True)
    """
    array = points_array("points", points)
    n, d = array.shape
    pts = [tuple(row) for row in array]
    first: dict[Vec, int] = {}
    for i, p in enumerate(pts):
        first.setdefault(p, i)
    duplicate_of = {i: first[p] for i, p in enumerate(pts) if first[p] != i}
    reps = [i for i in range(n) if i not in duplicate_of]
    cert = HullCertificate(array, [], duplicate_of)
    if len(reps) == 1:
        cert.vertices, cert.separators[reps[0]] = [reps[0]], (0,) * d
        cert.methods[reps[0]] = "single-point"
        return cert
    _, piv = rref([[a - b for a, b in zip(pts[i], pts[reps[0]], strict=True)] for i in reps[1:]])
    cert.affine_dimension = len(piv)
    ints, one = integer_rows(pts), (Fraction(1),)
    Y = np.array([[float(pts[i][a]) for a in piv] for i in reps])
    Y = Y - Y.mean(axis=0)
    Y /= max(float(np.abs(Y).max()), 1e-300)
    guess, normals, cells = _float_guess(Y)
    for r, i in enumerate(reps):
        p, others = pts[i], [ints[j] for j in reps if j != i]
        tries = ["qhull", "lp", "cell", "combination"] if r in guess else [
            "cell", "combination", "lp"]
        for how in tries:
            if how in ("cell", "combination"):
                support = cells.get(r) if how == "cell" else _lp_support(Y, r)
                lam = None if support is None else solve_unique(
                    [pts[reps[s]] + one for s in support], p + one)
                if lam is not None and all(v >= 0 for v in lam):
                    cert.combinations[i] = {reps[s]: v for s, v in zip(support, lam, strict=True)
                                            if v != 0}
                    cert.methods[i] = "qhull-lp" if how == "cell" else "lp"
                    break
            else:
                c_float = normals.get(r) if how == "qhull" else _lp_separator(Y, r)
                for c_proj in _rationalise(c_float) if c_float is not None else []:
                    c = [0] * d
                    for a, v in zip(piv, c_proj, strict=True):
                        c[a] = v
                    if _separates(tuple(c), ints[i], others):
                        cert.separators[i], cert.methods[i] = tuple(c), how
                        break
                if i in cert.separators:
                    break
        else:
            status, sol = _exact_phase1([q + one for q in (pts[j] for j in reps if j != i)],
                                        p + one)
            cert.methods[i] = "exact-simplex"
            if status == "feasible":
                idx = [j for j in reps if j != i]
                cert.combinations[i] = {idx[s]: v for s, v in enumerate(sol) if v != 0}
            else:
                cert.separators[i] = _primitive(sol[:d])
    cert.vertices = sorted(cert.separators)
    if not cert.check():  # unreachable unless a helper is wrong: never return it silently
        raise AssertionError("hull certificate failed its exact re-check")
    return cert


def hull_vertices(points: object) -> list[int]:
    """Indices of the vertices of ``conv(points)``, each distinct point reported once.

    Every answer is certified exactly; see :func:`hull_certificate` for the certificates.

    Examples
    --------
    >>> hull_vertices([[0], [3], [1], [3]])
    [0, 1]
    """
    return hull_certificate(points).vertices
