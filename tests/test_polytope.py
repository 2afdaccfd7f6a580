"""Exact hulls, leaders, the set 𝒮 of Theorem 3.1 and projections (verify.exact.polytope).

Hull answers are compared with an independent brute force: Carathéodory enumeration of
affinely independent subsets, solved by plain Gaussian elimination in Fractions (no FLINT, no
LP, no Qhull).
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import combinations, product

import numpy as np
import pytest

from verify.errors import InvalidArgument
from verify.exact.polytope import (
    hull_certificate,
    hull_vertices,
    leader_margin,
    leaders_exact,
    polytope_S,
    project_along,
)


# ----------------------------------------------------------------- independent brute force
def _gauss_solve(M: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """Unique solution of the (possibly overdetermined) system M x = b, else None."""
    rows = [list(r) + [v] for r, v in zip(M, b, strict=True)]
    ncol, piv_cols, r = len(M[0]), [], 0
    for c in range(ncol):
        k = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if k is None:
            return None  # rank deficient: not unique
        rows[r], rows[k] = rows[k], rows[r]
        rows[r] = [v / rows[r][c] for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [a - f * e for a, e in zip(rows[i], rows[r], strict=True)]
        piv_cols.append(c)
        r += 1
    if any(row[-1] != 0 for row in rows[r:]):
        return None
    return [rows[i][-1] for i in range(ncol)]


def _in_hull_brute(p, others) -> bool:
    d = len(p)
    for size in range(1, min(len(others), d + 1) + 1):
        for S in combinations(others, size):
            M = [[q[a] for q in S] for a in range(d)] + [[Fraction(1)] * size]
            lam = _gauss_solve(M, list(p) + [Fraction(1)])
            if lam is not None and all(v >= 0 for v in lam):
                return True
    return False


def _brute_vertices(points) -> list[int]:
    pts = [tuple(Fraction(v) for v in row) for row in points]
    reps = [i for i, p in enumerate(pts) if p not in pts[:i]]
    return [i for i in reps if not _in_hull_brute(pts[i], [pts[j] for j in reps if j != i])]


def _random_points(seed: int, n: int, d: int) -> list[list[Fraction]]:
    rng = random.Random(seed)
    return [[Fraction(rng.randint(-20, 20), rng.randint(1, 4)) for _ in range(d)]
            for _ in range(n)]


# ----------------------------------------------------------------- hulls
@pytest.mark.parametrize("seed,n,d", [(1, 12, 2), (2, 12, 2), (3, 10, 3), (4, 10, 3),
                                      (5, 9, 5), (6, 9, 5)])
def test_random_hulls_match_brute_force(seed, n, d):
    pts = _random_points(seed, n, d)
    if d == 2:  # add interior points and a duplicate so both certificate kinds occur
        pts += [[Fraction(0), Fraction(0)], [pts[0][0] / 2, pts[0][1] / 2], list(pts[3])]
    cert = hull_certificate(pts)
    assert cert.vertices == _brute_vertices(pts)
    assert cert.check()
    assert cert.affine_dimension == d


@pytest.mark.parametrize("pts,expected,dim", [
    ([[0, 0], [1, 1], [3, 3], [2, 2], ["1/2", "1/2"]], [0, 2], 1),              # collinear
    ([[5], [1], [3], [1], [5]], [0, 1], 1),                                    # 1-D, duplicates
    ([[0, 0, 1], [2, 0, 1], [0, 2, 1], [2, 2, 1], [1, 1, 1], [1, 0, 1]], [0, 1, 2, 3], 2),
    ([[1, 2, 3]], [0], 0),                                                     # single point
    ([[1, 2, 3], [1, 2, 3], [1, 2, 3]], [0], 0),                               # one point x3
    ([[1, 2], [3, 4]], [0, 1], 1),                                             # two points
    ([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], ["1/3"] * 5], [0, 1], 1),              # segment in 5-D
])
def test_degenerate_hulls(pts, expected, dim):
    cert = hull_certificate(pts)
    assert cert.vertices == expected == _brute_vertices(
        [[Fraction(v) for v in row] for row in pts])
    assert cert.affine_dimension == dim
    assert cert.check()


def test_grid_3x3x3_has_the_eight_corners():
    grid = list(product([0, 1, 2], repeat=3))
    cert = hull_certificate(grid)
    assert [grid[i] for i in cert.vertices] == [p for p in grid if set(p) <= {0, 2}]
    assert cert.check() and len(cert.combinations) == 19


def test_float_hostile_thin_rhombus():
    eps = Fraction(1, 10**30)  # invisible in float64 next to 1: Qhull sees a segment
    pts = [[0, 0], [2, 0], [1, eps], [1, -eps], [1, 0], [Fraction(1, 2), 0]]
    cert = hull_certificate(pts)
    assert cert.vertices == [0, 1, 2, 3] == _brute_vertices(pts)
    assert cert.check()
    assert {cert.methods[i] for i in (2, 3, 4)} == {"exact-simplex"}  # the floats gave up


@pytest.mark.parametrize("seed", range(6))
def test_exact_phase1_against_brute_force(seed):
    from verify.exact.hull import _exact_phase1

    d = 2 + seed % 3
    pts = _random_points(100 + seed, 7, d)
    centroid = [sum(q[a] for q in pts) / 7 for a in range(d)]  # always feasible
    statuses = set()
    for p in [centroid, _random_points(200 + seed, 1, d)[0]] + pts[:2]:
        others = [tuple(q) for q in pts if q != p]
        status, sol = _exact_phase1([q + (Fraction(1),) for q in others], tuple(p) + (1,))
        if status == "feasible":
            assert all(v >= 0 for v in sol) and sum(sol) == 1
            assert all(sum(w * q[a] for w, q in zip(sol, others, strict=True)) == p[a]
                       for a in range(d))
        else:  # y·(q, 1) ≤ 0 < y·(p, 1): a strict separator
            assert all(sum(y * v for y, v in zip(sol, q + (1,), strict=True)) <= 0
                       for q in others)
            assert sum(y * v for y, v in zip(sol, list(p) + [1], strict=True)) > 0
        assert (status == "feasible") == _in_hull_brute(tuple(p), others)
        statuses.add(status)
    assert statuses == {"feasible", "infeasible"}


def test_certificates_are_exact_and_tamper_evident():
    cert = hull_certificate([[0, 0], [4, 0], [0, 4], [1, 1], [1, 1]])
    assert cert.vertices == [0, 1, 2] and cert.duplicate_of == {4: 3}
    w = cert.combinations[3]
    assert sum(w.values()) == 1 and all(v > 0 for v in w.values())
    assert len(cert.lines()) == 5 and "duplicate of z_3" in cert.lines()[4]
    cert.separators[0] = (Fraction(1), Fraction(0))  # c·z_0 = 0 < c·z_1 = 4: wrong
    assert not cert.check()


def test_hull_bad_input():
    with pytest.raises(InvalidArgument, match="points"):
        hull_vertices([[]])
    with pytest.raises(InvalidArgument):
        hull_vertices([[1, float("nan")]])
    assert hull_vertices(np.array([[0.5, 0.0], [0.0, 0.5], [0.25, 0.25]])) == [0, 1]


# ----------------------------------------------------------------- leaders
def test_leader_margin_hand_computed():
    pts = [[3, 0], [0, 1], [1, 0]]
    # B = I: |z_0|² = 9, <z_0, z_2> = 3 -> 6; z_1: 1 - 0 = 1; z_2: 1 - <z_2, z_0> = 1 - 3 = -2
    assert [leader_margin(np.eye(2, dtype=int), pts, i) for i in range(3)] == [6, 1, -2]
    assert leaders_exact([[1, 0], [0, 1]], pts) == [0, 1]
    # A = [[1, 1], [0, 1]]: A z = (3, 0), (1, 1), (1, 0); margins 9 - 3, 2 - 3, 1 - 3
    A = [[1, 1], [0, 1]]
    assert [leader_margin(A, pts, i, kind="A") for i in range(3)] == [6, -1, -2]
    assert leader_margin([[1, 1], [1, 2]], pts, 1) == -1  # the same with B = AᵀA
    assert leader_margin([[1, 0], [0, 1]], [["1/2", 0], [0, 0], ["1/2", 0]], 0) == 0  # tie


def test_leader_margin_errors():
    with pytest.raises(InvalidArgument, match="n ≥ 2"):
        leader_margin([[1]], [[1]], 0)
    with pytest.raises(InvalidArgument, match="shape"):
        leader_margin([[1, 0]], [[1, 0], [0, 1]], 0)
    with pytest.raises(InvalidArgument, match="kind"):
        leader_margin([[1, 0], [0, 1]], [[1, 0], [0, 1]], 0, kind="Q")


# ----------------------------------------------------------------- the set 𝒮
def _f(x, B, verts):
    """max_j xᵀBv_j − xᵀBx (≥ 0 on 𝒦)."""
    Bx = [sum(B[a][b] * x[b] for b in range(len(x))) for a in range(len(x))]
    xB = [sum(x[a] * B[a][b] for a in range(len(x))) for b in range(len(x))]
    return max(sum(xB[a] * v[a] for a in range(len(x))) for v in verts) - sum(
        x[a] * Bx[a] for a in range(len(x)))


def _F(*xs):
    return tuple(Fraction(x) for x in xs)


def test_S_triangle_identity_by_hand():
    # vertices, feet of 0 on the three edges, and 0 (interior): 7 points
    S = polytope_S([[2, 0], [-1, 1], [-1, -1]], [[1, 0], [0, 1]])
    assert S.points == sorted([_F(2, 0), _F(-1, 1), _F(-1, -1), _F(-1, 0),
                               _F("1/5", "3/5"), _F("1/5", "-3/5"), _F(0, 0)])
    assert S.vertices_in_S() and S.in_boundary_or_origin()
    assert S.is_origin == [p == (0, 0) for p in S.points]
    assert S.on_boundary == [p != (0, 0) for p in S.points]


def test_S_square_and_cube_identity_by_hand():
    S = polytope_S([[1, 1], [-1, 1], [-1, -1], [1, -1], [0, 0]], np.eye(2, dtype=int))
    assert S.points == sorted(_F(a, b) for a, b in product([-1, 0, 1], repeat=2))
    assert sum(S.is_vertex) == 4 and S.vertices_in_S() and S.in_boundary_or_origin()
    cube = polytope_S(list(product([-1, 1], repeat=3)), np.eye(3, dtype=int))
    assert cube.points == sorted(_F(*p) for p in product([-1, 0, 1], repeat=3))  # 27 points
    assert cube.in_boundary_or_origin() and sum(cube.on_boundary) == 26


def test_S_exact_definition_and_grid_completeness():
    verts = [[2, 0], [-1, 2], [-2, -1], [1, -2]]
    B = [[2, 1], [1, 3]]
    Bf = [[Fraction(v) for v in row] for row in B]
    S = polytope_S(verts, B)
    V = [_F(*v) for v in verts]
    for x, w in zip(S.points, S.weights, strict=True):
        assert _in_hull_brute(x, V) and _f(x, Bf, V) == 0
        assert sum(w.values()) == 1 and all(v > 0 for v in w.values())
    assert S.in_boundary_or_origin() and (0, 0) in S.points
    # every point of a fine rational grid with f = 0 must be in 𝒮 (and grid points of 𝒮 found)
    step = Fraction(1, 12)
    grid = [(step * a, step * b) for a in range(-24, 25) for b in range(-24, 25)]
    zeros = {x for x in grid if _f(x, Bf, V) == 0 and _in_hull_brute(x, V)}
    assert zeros and zeros <= set(S.points)


def test_S_reports_non_leader_vertex():
    # vertex (1, 0) of [1, 2] x [0, 1] is not a leader: <v, (2, 0)> = 2 > |v|² = 1
    S = polytope_S([[1, 0], [2, 0], [1, 1], [2, 1]], [[1, 0], [0, 1]])
    assert not S.vertices_in_S() and _F(1, 0) not in S.points and _F(2, 1) in S.points
    assert S.in_boundary_or_origin()  # holds for every polytope when B is nonsingular


def test_S_lower_dimensional_and_singular():
    S = polytope_S([[-1, 1], [1, 1]], [[1, 0], [0, 1]])  # a segment: foot of 0 is (0, 1)
    assert S.points == [_F(-1, 1), _F(0, 1), _F(1, 1)]
    assert S.on_relative_boundary == [True, False, True] and all(S.on_boundary)
    with pytest.raises(InvalidArgument, match="singular"):
        polytope_S([[-1, 1], [1, 1]], [[0, 0], [0, 1]])


# ----------------------------------------------------------------- projections
def test_project_along():
    z = [[3, 5], [1, 0], ["1/2", "-1/3"]]
    out = project_along(z, [[1, 0]], [[1, 1]])  # z = α e1 + β (1, 1): β = z_2, α = z_1 − z_2
    assert out.tolist() == [[-2, 0], [1, 0], [Fraction(5, 6), 0]]
    assert project_along(z, [[1, 0], [0, 1]]).tolist() == [[Fraction(v) for v in r] for r in z]
    resid = np.array([[Fraction(v) for v in r] for r in z], dtype=object) - out
    assert all(r[0] == r[1] for r in resid)  # z − π_F z ∈ G = span(1, 1)
    with pytest.raises(InvalidArgument, match="basis"):
        project_along(z, [[1, 0]], [[2, 0]])
    with pytest.raises(InvalidArgument, match="basis"):
        project_along(z, [[1, 0]])


# ----------------------------------------------------------------- boundrj-step (Theorem 5.2)
def test_boundrj_counterexample():
    import sympy

    from verify.exact.remainder import T, boundrj_bound_violated, boundrj_remainder

    V, A, z = [[1, 0], [0, 0]], [[1, "1/2"], ["1/2", 1]], [[0, 1], [0, 2]]
    r = boundrj_remainder(V, A, z, 0, 1, [[1, 0]], [[0, 1]])  # paper's i = 1, j = 2
    assert sympy.simplify(r - (sympy.Rational(5, 4) - sympy.exp(2 * T) / 4)) == 0
    check = boundrj_bound_violated(V, A, z, 0, 1, [[1, 0]], [[0, 1]])
    assert check.violated and (check.growth_rate, check.degree) == (2, 0)
    assert check.bound_rate == 1 and check.leading_coefficient == sympy.Rational(-1, 4)


def test_boundrj_bound_holds_when_A_is_block_diagonal():
    from verify.exact.remainder import boundrj_bound_violated

    # A = I, V = diag(1, 0): score = e^{2t} + 2, a_j = 1, so r = 2
    check = boundrj_bound_violated([[1, 0], [0, 0]], np.eye(2, dtype=int), [[1, 1], [2, 3]],
                                   0, 1, [[1, 0]], [[0, 1]])
    assert str(check.remainder) == "2" and not check.violated and check.growth_rate == 0


def test_boundrj_jordan_block_in_G():
    import sympy

    from verify.exact.remainder import T, boundrj_bound_violated

    # V = diag(2, J_2(1)), F = e1 (λ = 2), G = span(e2, e3), |λ_2| = 1; A = I.
    # e^{tV} z_1 = (e^{2t}, t e^t, e^t), e^{tV}(z_2 − z_1) = (e^{2t}, e^t + 2t e^t, 2 e^t):
    # score = e^{4t} + (2t² + t + 2) e^{2t}, a_j = 1, r = (2t² + t + 2) e^{2t}.
    V = [[2, 0, 0], [0, 1, 1], [0, 0, 1]]
    check = boundrj_bound_violated(V, np.eye(3, dtype=int), [[1, 0, 1], [2, 1, 3]], 0, 1,
                                   [[1, 0, 0]], [[0, 1, 0], [0, 0, 1]])
    assert sympy.simplify(check.remainder - (2 * T**2 + T + 2) * sympy.exp(2 * T)) == 0
    assert (check.growth_rate, check.degree, check.bound_rate) == (2, 2, 3)
    assert not check.violated


def test_boundrj_hypotheses():
    from verify.exact.remainder import boundrj_remainder

    A, z = np.eye(2, dtype=int), [[1, 0], [0, 1]]
    with pytest.raises(InvalidArgument, match="rational spectra"):
        boundrj_remainder([[0, 1], [1, 1]], A, z, 0, 1, [[1, 0]], [[0, 1]])
    with pytest.raises(InvalidArgument, match="eigenvector"):
        boundrj_remainder([[1, 1], [0, 0]], A, z, 0, 1, [[0, 1]], [[1, 0]])
    with pytest.raises(InvalidArgument, match="λ > 0"):
        boundrj_remainder([[-1, 0], [0, -2]], A, z, 0, 1, [[1, 0]], [[0, 1]])
    with pytest.raises(InvalidArgument, match="spectral radius"):
        boundrj_remainder([[1, 0], [0, -2]], A, z, 0, 1, [[1, 0]], [[0, 1]])
    with pytest.raises(InvalidArgument, match="invariant"):
        boundrj_remainder([[1, 0], [0, "1/2"]], A, z, 0, 1, [[1, 0]], [[1, 1]])
    with pytest.raises(InvalidArgument, match="token"):
        boundrj_remainder([[1, 0], [0, 0]], A, z, 0, 2, [[1, 0]], [[0, 1]])
