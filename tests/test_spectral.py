"""Tests of verify.exact.spectral: exact spectra, certified enclosures and the named predicates.

Independent routes: numpy eigenvalues (float64), SymPy characteristic polynomials / Jordan forms
and leading principal minors, and exact substitution of the computed objects.
"""

from fractions import Fraction

import numpy as np
import pytest
import sympy
from flint import arb, fmpq, fmpq_poly

from verify.errors import InvalidArgument
from verify.exact.inputs import as_float_array, rational_array
from verify.exact.spectral import (
    complex_leading_pair,
    eigenpair,
    good_triple,
    good_triple_with_multiplicity,
    is_identity,
    is_negative_identity,
    paranormal,
    positive_real_part_count,
    qk_positive_definite,
    spectral_class,
    spectral_summary,
    spectrum,
)

# The matrices printed in the paper's figures (spec §3), as exact decimal strings.
V_2D = [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]]
V_3D_NEG = [["0.2362413", "0.0599536", "0.40506019"],
            ["0.81321448", "0.49948705", "0.33754772"],
            ["0.2160645", "0.38505272", "0.14588075"]]
V_3D_POS = [["0.18608476", "0.34391026", "0.13905949"],
            ["0.35244288", "0.6694859", "0.39992145"],
            ["0.46685606", "0.17094454", "0.42092308"]]
V_CODIM = [["0.92761287", "0.94333073", "0.3827744"],
           ["0.94333073", "0.59991396", "0.47825472"],
           ["0.3827744", "0.47825472", "0.46668605"]]
I2 = [[1, 0], [0, 1]]
I3 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def floats(v):
    return as_float_array(rational_array("V", v)[0])


def companion(coeffs):
    """Companion matrix of the monic polynomial x^n + c_{n-1} x^{n-1} + ... + c_0."""
    n = len(coeffs)
    m = [[0] * n for _ in range(n)]
    for i in range(1, n):
        m[i][i - 1] = 1
    for i in range(n):
        m[i][n - 1] = -coeffs[i]
    return m


def block_diag(*blocks):
    n = sum(len(b) for b in blocks)
    out, k = [[0] * n for _ in range(n)], 0
    for b in blocks:
        for i, row in enumerate(b):
            for j, v in enumerate(row):
                out[k + i][k + j] = v
        k += len(b)
    return out


# ------------------------------------------------------------------ the paper's matrices


@pytest.mark.parametrize("V", [V_2D, V_3D_NEG, V_3D_POS], ids=["2d", "3d-neg", "3d-pos"])
def test_paper_hyperplane_matrices_are_good_triples(V):
    check = good_triple(I2 if len(V) == 2 else I3, I2 if len(V) == 2 else I3, V)
    assert check.holds is True and bool(check)
    eig = np.linalg.eigvals(floats(V))
    lead = eig[np.argmax(abs(eig))]
    assert abs(float(check.value.mid() if hasattr(check.value, "mid") else check.value)
               - lead.real) < 1e-12
    assert "good triple" in spectral_summary(None, None, V)


def test_2d_leading_eigenvalue_exact():
    spec = spectrum(V_2D)
    lam = spec.eigenvalues[0]
    assert abs(lam.mid.real - 1.34799) < 1e-5 and lam.is_real and lam.degree == 2
    a = sympy.Matrix(rational_array("V", V_2D)[0].tolist())
    x = sympy.Symbol("x")
    assert sympy.expand(a.charpoly(x).as_expr().subs(x, lam.exact)) == 0
    with_prec = arb(str(sympy.N(lam.exact, 60)), 1e-50)  # ~53-bit rounding of 1e-50 is fine
    assert lam.enclosure.real.overlaps(with_prec) and lam.radius < 1e-30
    assert spec.order == (">",)
    assert spectral_summary(None, None, V_2D).startswith("good triple (λ_1 = 1.34799…)")


def test_codimension_matrix_has_two_positive_eigenvalues():
    check = positive_real_part_count(V_CODIM)
    assert check.value == 2 and check.holds is True
    assert int(np.sum(np.linalg.eigvalsh(floats(V_CODIM)) > 0)) == 2
    assert "k = 2 eigenvalues with Re > 0" in spectral_summary(None, None, V_CODIM)


# ------------------------------------------------------------------ paranormal, Definition 5.1


def test_diag_paranormal_with_two_dimensional_f():
    V = [[1, 0, 0], [0, 1, 0], [0, 0, "-1/2"]]
    p = paranormal(V)
    assert p.holds is True and p.value == Fraction(1)
    assert p.data["dim_F"] == 2 and p.data["orthogonal"] is True
    f_span = sympy.Matrix(p.data["F_basis"]).T
    g_span = sympy.Matrix(p.data["G_basis"]).T
    assert f_span.rank() == 2 and g_span.rank() == 1
    assert list(g_span[:2, 0]) == [0, 0]  # G = span(e_3)
    assert float(p.data["spectral_radius_G"].mid()) == 0.5
    g = good_triple_with_multiplicity(I3, I3, V)
    assert g.holds is True and g.data["block_diagonal"] is True
    assert spectral_summary(None, None, V).startswith("paranormal, dim F = 2")
    assert good_triple(None, None, V).holds is False


def test_paranormal_not_orthogonal_and_qk_not_block_diagonal():
    p = paranormal([[1, 1], [0, 0]])  # F = span e_1, G = span (1, -1)
    assert p.holds is True and p.data["orthogonal"] is False
    # the boundrj-step example of spec §2: F ⊥ G but QᵀK not block-diagonal
    a = [[1, "1/2"], ["1/2", 1]]
    g = good_triple_with_multiplicity(a, a, [[1, 0], [0, 0]])
    assert g.holds is True and g.data["orthogonal"] is True
    assert g.data["block_diagonal"] is False and "not block-diagonal" in g.explanation


def test_paranormal_irrational_lambda_exact_in_field():
    p = paranormal(V_2D)
    assert p.holds is True and p.data["dim_F"] == 1 and p.data["field"] is not None
    sym = np.array(V_CODIM, dtype=object)
    assert paranormal(sym).data["orthogonal"] is True  # symmetric V
    assert p.data["orthogonal"] is False  # V_2D is not normal


def test_not_paranormal_when_leading_not_semisimple():
    p = paranormal(block_diag([[2, 1], [0, 2]], [[1]]))
    assert p.holds is False and "not semisimple" in p.explanation


# ------------------------------------------------------------------ leading pair, Jordan, ±I


def test_rotation_block_gives_complex_leading_pair():
    V = [[0, -2, 0], [2, 0, 0], [0, 0, 1]]
    c = complex_leading_pair(V)
    assert c.holds is True
    spec = spectrum(V)
    assert spec.order == ("=", ">") and [e.exact for e in spec.eigenvalues[:2]] == [
        2 * sympy.I, -2 * sympy.I]
    assert [e.real_part_sign for e in spec.eigenvalues] == [0, 0, 1]
    assert good_triple(None, None, V).holds is False
    assert spectral_summary(None, None, V).startswith("complex leading pair")
    assert complex_leading_pair(V_2D).holds is False


def test_jordan_block_is_not_diagonalisable():
    V = [[1, 1], [0, 1]]
    spec = spectrum(V)
    assert spec.is_diagonalisable is False
    (lam,) = spec.eigenvalues
    assert lam.jordan_blocks == (2,) and lam.algebraic_multiplicity == 2
    assert lam.geometric_multiplicity == 1
    g = good_triple(None, None, V)
    assert g.holds is False and "not simple" in g.explanation
    assert spectral_summary(None, None, V).endswith("non-diagonalisable")


@pytest.mark.parametrize("blocks, expected", [
    ([[[1, 1], [0, 1]], [[1]], [[1]]], (2, 1, 1)),
    ([[[1, 1], [0, 1]], [[1, 1], [0, 1]]], (2, 2)),
    ([[[3, 1, 0], [0, 3, 1], [0, 0, 3]], [[3, 1], [0, 3]], [[3]]], (3, 2, 1)),
])
def test_jordan_blocks_by_ranks_agree_with_sympy(blocks, expected):
    j = block_diag(*blocks)
    p = [[1, 2, 0, 1, 0, 0][: len(j)]] + [[int(i == k or k == i + 1) for k in range(len(j))]
                                          for i in range(1, len(j))]
    pm = sympy.Matrix(p)
    assert pm.det() != 0
    v = pm * sympy.Matrix(j) * pm.inv()  # similar to j, not triangular
    spec = spectrum([[str(x) for x in row] for row in v.tolist()])
    assert spec.eigenvalues[0].jordan_blocks == expected
    _, jf = v.jordan_form()
    sizes, k = [], 0
    while k < jf.rows:
        s = 1
        while k + s < jf.rows and jf[k + s - 1, k + s] == 1:
            s += 1
        sizes.append(s)
        k += s
    assert tuple(sorted(sizes, reverse=True)) == expected


def test_jordan_blocks_of_irrational_eigenvalues():
    # (x^2 - 2)^2 and twice (x^2 - 2): each of ±√2 has blocks (2, 1, 1)
    c2 = companion([-2, 0])
    c4 = companion([4, 0, -4, 0])  # (x^2 - 2)^2 = x^4 - 4x^2 + 4
    spec = spectrum(block_diag(c4, c2, c2))
    assert len(spec.eigenvalues) == 2 and spec.order == ("=",)
    for e in spec.eigenvalues:
        assert e.jordan_blocks == (2, 1, 1) and e.algebraic_multiplicity == 4
        assert e.exact in (sympy.sqrt(2), -sympy.sqrt(2))
    assert good_triple(None, None, block_diag(c4, c2, c2)).holds is False


def test_identity_and_negative_identity():
    assert is_identity(I3).holds is True and is_negative_identity(I3).holds is False
    assert is_negative_identity([[-1, 0], [0, -1]]).holds is True
    assert is_identity([[1, "1/3"], [0, 1]]).explanation == "V[0, 1] = 1/3 ≠ 0."
    assert spectral_summary(None, None, I3) == "V = I"
    assert spectral_summary(None, None, [[-1, 0], [0, -1]]) == "V = -I"
    p = paranormal(I3)
    assert p.holds is True and p.data["dim_F"] == 3 and p.data["G_basis"] == []


def test_ties_in_modulus_are_certified():
    assert spectrum([[2, 0], [0, -2]]).order == ("=",)
    assert good_triple(None, None, [[2, 0], [0, -2]]).holds is False
    rot = [["3/5", "-4/5", 0], ["4/5", "3/5", 0], [0, 0, 1]]  # |(3 ± 4i)/5| = 1
    assert spectrum(rot).order == ("=", "=")
    c = complex_leading_pair(rot)
    assert c.holds is False and "more than two" in c.explanation


def test_undecided_tie_is_reported_not_guessed():
    # λ = 1 + √2 and μ = (1 + √2)(3 + 4i)/5 have equal modulus; μ has degree 4 and is no
    # conjugate or negative of λ, so no exact rule here certifies the tie: it must stay "?"
    mu = companion([1, Fraction(12, 5), Fraction(114, 25), Fraction(-12, 5)])  # 25x^4 - 60x^3 ...
    V = block_diag(companion([-1, -2]), mu)
    x = sympy.Symbol("x")
    mp = sympy.minimal_polynomial((1 + sympy.sqrt(2)) * (3 + 4 * sympy.I) / 5, x)
    assert sympy.Poly(mp, x).monic() == sympy.Poly(
        sympy.Matrix(mu).charpoly(x).as_expr(), x)
    spec = spectrum(V, max_prec=256)
    assert spec.order[0] == "?" and spec.prec == 256
    g = good_triple(None, None, V)
    assert g.holds is None and not g and "undecided" in g.explanation
    assert paranormal(V).holds is None
    # x^4 - 2: 2^(1/4) and -2^(1/4) tie, certified through λ -> -λ
    assert good_triple(None, None, companion([-2, 0, 0, 0])).holds is False


# ------------------------------------------------------------------ the form QᵀK


def test_qk_positive_definite():
    q, k = [[1, 0], [1, 1]], [[2, 1], [1, 1]]  # B = QᵀK = [[3, 2], [1, 1]]: not symmetric
    b = sympy.Matrix(q).T * sympy.Matrix(k)
    assert not b.is_symmetric() and qk_positive_definite(q, k).holds is False
    q, k = [[1, 1], [0, 1]], [[1, 1], [0, 2]]  # B = [[1, 1], [1, 3]], minors 1 and 2
    assert qk_positive_definite(q, k).holds is True
    spd = [[2, -1, 0], [-1, 2, -1], [0, -1, 2]]
    assert qk_positive_definite(I3, spd).holds is True
    indefinite = [[1, 2], [2, 1]]
    q = qk_positive_definite(I2, indefinite)
    assert q.holds is False and "-1" in q.explanation
    ns = qk_positive_definite(I2, [[1, 1], [0, 1]])
    assert ns.holds is False and "not symmetric" in ns.explanation
    semidef = qk_positive_definite(I2, [[1, 1], [1, 1]])
    assert semidef.holds is False  # eigenvalue 0 is not > 0
    rect = qk_positive_definite([[1, 0, 0], [0, 1, 1]], [[1, 0, 0], [0, 1, 1]])  # rank 2 in R^3
    assert rect.holds is False


@pytest.mark.parametrize("seed", range(5))
def test_qk_positive_definite_agrees_with_minors(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(-3, 4, size=(3, 3))
    b = m.T @ m + int(rng.integers(-2, 3)) * np.eye(3, dtype=int)
    minors = [sympy.Matrix(b.tolist())[:k, :k].det() for k in range(1, 4)]
    assert qk_positive_definite(I3, b.tolist()).holds is all(x > 0 for x in minors)


def test_good_triple_fails_on_negative_form():
    check = good_triple(I2, [[-1, 0], [0, -1]], V_2D)
    assert check.holds is False and "≤ 0" in check.explanation


# ------------------------------------------------------------------ enclosures, eigenvectors


@pytest.mark.parametrize("V", [companion([1, -3, 0]), V_3D_NEG], ids=["x3-3x+1", "3d-neg"])
def test_irreducible_cubic_enclosures(V):
    spec = spectrum(V)
    assert len(spec.eigenvalues) == 3 and spec.eigenvalues[0].degree == 3
    mids = sorted((e.mid for e in spec.eigenvalues), key=lambda z: (z.real, z.imag))
    ref = sorted(np.linalg.eigvals(floats(V)), key=lambda z: (z.real, z.imag))
    assert max(abs(a - b) for a, b in zip(mids, ref, strict=True)) < 1e-12
    assert max(e.radius for e in spec.eigenvalues) < 1e-30
    x = sympy.Symbol("x")
    cp = sympy.Matrix(rational_array("V", V)[0].tolist()).charpoly(x).as_expr()
    for e in spec.eigenvalues:  # each ball holds a root of the SymPy characteristic polynomial
        f = e.minimal_polynomial
        assert sympy.rem(cp, sympy.Poly([int(c) for c in reversed(f.coeffs())], x)) == 0
        assert isinstance(e.exact, sympy.CRootOf)


def _field_check(pair, V):
    """V φ = λ φ, φ* V = λ φ*, φ*(φ) = 1, exactly in Q(λ) = Q[x]/(f)."""
    f = fmpq_poly(pair.field.coeffs())
    x = fmpq_poly([0, 1])
    v = rational_array("V", V)[0]
    d = len(v)
    for vec, mat in ((pair.right, v), (pair.left, v.T)):
        for i in range(d):
            acc = -x * vec[i]
            for j in range(d):
                acc += vec[j] * fmpq(mat[i, j].numerator, mat[i, j].denominator)
            assert acc % f == 0
    dot = sum((a * b for a, b in zip(pair.left, pair.right, strict=True)), fmpq_poly([0]))
    assert dot % f == 1


def test_eigenvectors_exact_rational():
    V = [[3, 1, 0], [0, 1, 1], [2, 0, "-1/2"]]  # χ = (x - 3)(x^2 - x/2 + ...)? checked below
    x = sympy.Symbol("x")
    assert sympy.Matrix(rational_array("V", V)[0].tolist()).charpoly(x).as_expr().subs(x, 3) != 0
    V = [[3, 1, 0], [0, 1, 1], [0, 0, "-1/2"]]
    spec = spectrum(V)
    pair = eigenpair(V)
    assert spec.eigenvalues[0].rational == 3 and pair.field is None
    v = rational_array("V", V)[0]
    r, lt = np.array(pair.right, dtype=object), np.array(pair.left, dtype=object)
    assert all(v.dot(r) == 3 * r) and all(lt.dot(v) == 3 * lt) and lt.dot(r) == 1
    with pytest.raises(InvalidArgument):
        eigenpair(V, index=7)


def test_eigenvectors_exact_in_number_field():
    pair = eigenpair(V_2D)
    assert pair.exact and pair.field is not None
    _field_check(pair, V_2D)
    pair3 = eigenpair(V_3D_POS)
    _field_check(pair3, V_3D_POS)
    w, vecs = np.linalg.eig(floats(V_2D))
    ref = vecs[:, np.argmax(w)]
    assert abs(abs(ref @ pair.right_float) / np.linalg.norm(pair.right_float) - 1) < 1e-12


@pytest.mark.parametrize("V", [V_2D, V_3D_NEG, V_CODIM])
def test_eigenvectors_enclosure_route(V):
    num = eigenpair(V, field_max_dim=0)
    assert not num.exact and num.radius < 1e-25
    lam = num.eigenvalue.enclosure.real
    v = rational_array("V", V)[0]
    d = len(v)
    r, lt = num.right_enclosure, num.left_enclosure
    for i in range(d):
        row = sum((arb(fmpq(v[i, j].numerator, v[i, j].denominator)) * r[j] for j in range(d)),
                  arb(0))
        col = sum((lt[j] * arb(fmpq(v[j, i].numerator, v[j, i].denominator)) for j in range(d)),
                  arb(0))
        assert (row - lam * r[i]).contains(0) and (col - lam * lt[i]).contains(0)
    assert sum((a * b for a, b in zip(lt, r, strict=True)), arb(0)).contains(1)
    exact = eigenpair(V)  # second route: same projector φ φ*ᵀ
    p_num = np.outer(num.right_float, num.left_float)
    p_exact = np.outer(exact.right_float, exact.left_float)
    assert np.max(abs(p_num - p_exact)) < 1e-12


def test_eigenpair_needs_real_simple_eigenvalue():
    with pytest.raises(InvalidArgument, match="not real and simple"):
        eigenpair([[0, -2, 0], [2, 0, 0], [0, 0, 1]])
    with pytest.raises(InvalidArgument, match="not real and simple"):
        eigenpair([[1, 1], [0, 1]])


# ------------------------------------------------------------------ size, bad input, class


def test_large_symmetric_matrix():
    rng = np.random.default_rng(7)
    a = rng.integers(-10**6, 10**6, size=(128, 128))
    a = a + a.T
    v = np.array([[Fraction(int(x), 10**6) for x in row] for row in a], dtype=object)
    spec = spectrum(v)
    assert all(e.is_real for e in spec.eigenvalues) and spec.ordering_certified
    ref = np.sort(np.linalg.eigvalsh(a / 1e6))
    got = np.sort([e.mid.real for e in spec.eigenvalues for _ in range(e.algebraic_multiplicity)])
    assert np.max(abs(got - ref)) < 1e-9
    assert positive_real_part_count(v).value == int(np.sum(ref > 0))


def test_large_good_triple_uses_certified_enclosures():
    rng = np.random.default_rng(3)
    a = rng.integers(-10**6, 10**6, size=(96, 96))
    a = a + a.T + 40 * 10**6 * np.eye(96, dtype=np.int64)  # shift: λ_1 > 0 dominant
    v = np.array([[Fraction(int(x), 10**6) for x in row] for row in a], dtype=object)
    g = good_triple(None, None, v)
    assert g.holds is True
    pair = g.data["eigenpair"]
    assert not pair.exact and pair.radius < 1e-20
    ref = np.linalg.eigh(a / 1e6)[1][:, -1]
    assert abs(abs(ref @ pair.right_float) / np.linalg.norm(pair.right_float) - 1) < 1e-10
    assert paranormal(v).data["orthogonal"] is True  # symmetric V


def test_small_matrices_get_a_class():
    """Random 3×3 and 8×8 rational matrices (their cost is measured in benchmarks, not here)."""
    rng = np.random.default_rng(11)
    mats = [[[f"{int(x)}/1000" for x in row] for row in rng.integers(-999, 999, size=(n, n))]
            for n in (3, 8)]
    for m in mats:
        assert spectral_class(None, None, m) is not None


def test_bad_input():
    with pytest.raises(InvalidArgument, match="square"):
        spectrum([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(InvalidArgument, match="not finite"):
        spectrum(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(InvalidArgument):
        good_triple([[1, 0, 0]], [[1, 0, 0]], [[1, 0], [0, 1]])
    with pytest.raises(InvalidArgument):
        qk_positive_definite([[1, 0]], [[1, 0], [0, 1]])
    with pytest.raises(InvalidArgument):
        spectrum([1, 2])


def test_spectral_class_dict():
    c = spectral_class(None, None, V_3D_NEG)
    assert c["good_triple"].holds and c["paranormal"].holds and c["diagonalisable"]
    assert c["positive_real_part_count"].value == 1
    assert spectral_class(None, None, [[5]])["summary"] == (
        "good triple (λ_1 = 5); k = 1 eigenvalue with Re > 0")
