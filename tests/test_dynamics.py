"""Vector fields and the float64 path, each checked against an independent route."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb, arb_mat, ctx

from verify.exact.inputs import as_float_array, rational_array
from verify.flow.exponential import ValueExponential
from verify.flow.fields import (
    VectorField,
    attention_weights,
    attention_weights_arb,
    discrete_step_rescaled,
    discrete_step_tokens,
    softmax_terms_arb,
)
from verify.flow.simulate import simulate
from verify.model import Instance, Model
from verify.numerics import Float64, estimate_bound

EPS = np.finfo(float).eps

F = Fraction


def flint_expm(V_rows, t: float) -> np.ndarray:
    """e^{tV} by FLINT's rigorous arb_mat.exp (an independent route: no eigenvectors)."""
    saved = ctx.prec
    ctx.prec = 200
    try:
        d = len(V_rows)
        M = arb_mat(d, d, [arb(str(v)) for row in V_rows for v in row]) * arb(repr(t))
        E = M.exp()
        return np.array([[float(E[i, j].mid()) for j in range(d)] for i in range(d)])
    finally:
        ctx.prec = saved


V_CASES = {
    "identity": [[1, 0], [0, 1]],
    "hyperplanes-2d": [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]],
    "rotation-dominant": [[0, -2, 0], [2, 0, 0], [0, 0, 1]],
    "jordan": [[2, 1, 0], [0, 2, 0], [0, 0, -1]],
}


@pytest.mark.parametrize("name", V_CASES)
def test_value_exponential_matches_rigorous_expm(name):
    V, _ = rational_array("V", V_CASES[name])
    E = ValueExponential(V)
    for t in (0.0, 0.7, 3.0):
        scaled, growth = E.scaled_float(t)
        reference = flint_expm(V_CASES[name], t)
        assert np.allclose(np.exp(growth) * scaled, reference, rtol=1e-12, atol=1e-12)


ARB_CASES = {**V_CASES, "thirds": [["1/3", 0, 0], [0, "1/3", 0], [0, 0, "-1/2"]]}


@pytest.mark.parametrize("name", ARB_CASES)
def test_arb_value_exponential_contains_rigorous_expm(name):
    """The arb route (an eigen-decomposition by FLINT, P = I exactly for a diagonal V, SymPy's
    Jordan form for a defective one) gives balls that contain e^{tV} of FLINT's arb_mat.exp."""
    V, _ = rational_array("V", ARB_CASES[name])
    E = ValueExponential(V)
    d = len(V)
    saved = ctx.prec
    ctx.prec = 120
    try:
        exact = arb_mat(d, d, [arb(Fraction(v).numerator) / Fraction(v).denominator
                               for v in V.flat])
        for t in (Fraction(0), Fraction(7, 10), Fraction(3)):
            rows, growth = E.scaled_rows_arb(arb(t.numerator) / t.denominator,
                                             arb_mat(d, d, [int(i == j) for i in range(d)
                                                            for j in range(d)]), 120)
            truth = (exact * (arb(t.numerator) / t.denominator)).exp()
            for i in range(d):
                for j in range(d):  # row i of Ẽ(t)ᵀ times e^{μt}: (e^{tV})_{ji}
                    ball = rows[i, j] * growth.exp()
                    assert ball.overlaps(truth[j, i])
                    assert ball.rad() < 1e-25 * max(1.0, abs(float(truth[j, i].mid())))
    finally:
        ctx.prec = saved



def _random_rational_V(rng, d: int) -> list:
    """A random V with short rational entries (complex pairs and real eigenvalues, generic)."""
    return [[Fraction(int(v), 64) for v in row] for row in rng.integers(-96, 97, (d, d))]


@pytest.mark.parametrize("seed", range(4))
def test_arb_rows_real_form_agrees_with_the_complex_route(seed):
    """Z Ẽ(t)ᵀ through the real eigen-decomposition (real blocks for complex pairs) against the
    complex one it replaced (kept as the fallback): the balls overlap, both contain the value
    at twice the bits, the real form's are no wider, and it is certified for these V (real
    and complex eigenvalues, d up to 9)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 10))
    V = np.array(_random_rational_V(rng, d), dtype=object)
    E = ValueExponential(V)
    Z0 = rng.standard_normal((int(rng.integers(1, 6)), d))
    saved = ctx.prec
    try:
        results = {}
        for bits in (120, 240):
            ctx.prec = bits
            Z = arb_mat([[arb(float(v)) for v in row] for row in Z0])
            assert E._real_form_arb(bits) is not None
            for t in (Fraction(0), Fraction(7, 10), Fraction(5, 2)):
                ta = arb(t.numerator) / t.denominator
                real, growth = E.scaled_rows_arb(ta, Z, bits)
                complex_, growth_c = E._scaled_rows_complex_arb(ta, Z, bits)
                assert growth.overlaps(growth_c)
                full, _ = E.scaled_arb(ta, bits)               # Ẽ(t) itself, real form too
                identity = arb_mat(d, d, [int(i == j) for i in range(d) for j in range(d)])
                columns, _ = E._scaled_rows_complex_arb(ta, identity, bits)   # Ẽ(t)ᵀ
                assert all(full[i, j].overlaps(columns[j, i]) for i in range(d)
                           for j in range(d))
                results[bits, t] = real, complex_
        for t in (Fraction(0), Fraction(7, 10), Fraction(5, 2)):
            (real, complex_), (fine, _) = results[120, t], results[240, t]
            for i in range(real.nrows()):
                for j in range(d):
                    assert real[i, j].overlaps(complex_[i, j])
                    assert real[i, j].contains(fine[i, j]) and complex_[i, j].contains(fine[i, j])
                    assert float(real[i, j].rad()) <= 2 * float(complex_[i, j].rad())
    finally:
        ctx.prec = saved



@pytest.mark.parametrize("seed", range(3))
def test_arb_rescaled_scores_in_the_eigen_basis(seed):
    """The arb field's rescaled scores S̃ = U (P_Rᵀ B P_R) Uᵀ (rows in V's real eigen-basis)
    against Y B Yᵀ with Y = Z Ẽ(t)ᵀ of the complex route: the balls overlap and contain the
    scores at twice the bits."""
    from verify.numerics import Arb

    rng = np.random.default_rng(10 + seed)
    d, n = int(rng.integers(2, 8)), int(rng.integers(2, 6))
    V, Q, K = (_random_rational_V(rng, d) for _ in range(3))
    model = Model(V=V, Q=Q, K=K)
    z0 = rng.standard_normal((n, d))
    fine = {}
    for bits in (240, 120):
        backend = Arb(bits=bits)
        with backend.working_precision():
            field = VectorField(model, n, backend)
            Z = backend.from_float(z0)
            for t in (Fraction(0), Fraction(3, 4), Fraction(2)):
                ta = backend.scalar(t)
                S, L = field.scores(ta, Z)
                if bits == 240:
                    fine[t] = S
                    continue
                assert field.exponential.eigen_rows_arb(ta, Z, bits) is not None
                Y, growth = field.exponential._scaled_rows_complex_arb(ta, Z, bits)
                B = field._heads[0][1]
                old = Y * B * Y.transpose()
                assert L.overlaps(2 * growth)
                for i in range(n):
                    for j in range(n):
                        assert S[i, j].overlaps(old[i, j])
                        assert S[i, j].contains(fine[t][i, j]), (t, i, j)


def _exact_softmax(X: np.ndarray, log_scale: float, mask) -> list:
    """Softmax weights of the exact scores ``e^L <x_i, x_j>`` (Fractions from the float tokens)
    by mpmath at 200 digits: an independent route."""
    n = len(X)
    S = [[sum((Fraction(a) * Fraction(b) for a, b in zip(X[i], X[j], strict=True)), Fraction(0))
          for j in range(n)] for i in range(n)]
    with mpmath.workdps(200):
        scale = mpmath.exp(mpmath.mpf(log_scale))
        out = []
        for i in range(n):
            row = [mpmath.exp(scale * mpmath.mpf(S[i][j].numerator) / S[i][j].denominator)
                   if mask is None or mask[i, j] else mpmath.mpf(0) for j in range(n)]
            total = sum(row)
            out.append([w / total for w in row])
        return out


@pytest.mark.parametrize("sphere", [True, False])
@pytest.mark.parametrize("log_scale", [0.0, 2.5])
@pytest.mark.parametrize("symmetric", [True, False])
def test_arb_softmax_balls_contain_the_exact_weights(sphere, log_scale, symmetric):
    """Every ball of the arb softmax contains the exact weight (mpmath at 200 digits from the
    exact scores), with the pair exponentials shared between rows (``symmetric``, used when
    every row's largest score is within e^{-L} of the largest: tokens on the sphere) or not; a
    weight set to 0 is below the working precision. The two routes give midpoints within a few
    units of the working precision of each other."""
    rng = np.random.default_rng(int(sphere) + 2 * int(symmetric) + int(4 * log_scale))
    for trial in range(6):
        n = int(rng.integers(2, 9))
        X = rng.standard_normal((n, 3))
        if sphere:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        mask = None if trial % 2 else np.tril(np.ones((n, n), dtype=bool)) | np.eye(n, dtype=bool)
        if mask is not None and symmetric:
            mask = mask | mask.T
        exact = _exact_softmax(X, log_scale, mask)
        saved = ctx.prec
        ctx.prec = 99
        try:
            Xa = arb_mat([[arb(float(v)) for v in row] for row in X])
            L = 0 if log_scale == 0 else arb(log_scale)
            P = attention_weights_arb(Xa * Xa.transpose(), L, "softmax", mask, symmetric)
            plain = attention_weights_arb(Xa * Xa.transpose(), L, "softmax", mask, False)
            for i in range(n):
                for j in range(n):
                    truth, ball = exact[i][j], P[i, j]
                    if ball == 0:
                        assert truth < mpmath.mpf(2) ** -(ctx.prec + 20)
                        continue
                    assert ball.overlaps(arb(mpmath.nstr(truth, 60), 1e-55)), (i, j, ball, truth)
                    assert abs(float((ball - plain[i, j]).mid())) <= 2.0 ** -85
            if log_scale == 0:  # the decisions read off float64 scores (the token form's route)
                w, _, _ = softmax_terms_arb(Xa * Xa.transpose(), 0, mask, symmetric, X @ X.T)
                for i in range(n):
                    total = sum(w[i * n:(i + 1) * n], arb(0))
                    for j in range(n):
                        truth, ball = exact[i][j], w[i * n + j] / total
                        if ball == 0:
                            assert truth < mpmath.mpf(2) ** -(ctx.prec + 20)
                            continue
                        assert ball.overlaps(arb(mpmath.nstr(truth, 60), 1e-55)), (i, j)
                        assert abs(float((ball - plain[i, j]).mid())) <= 2.0 ** -85
        finally:
            ctx.prec = saved


@pytest.mark.parametrize("masked", [False, True])
def test_shared_softmax_far_apart_rows_and_dropped_weights(masked):
    """The symmetric softmax shares every pair's exponential even where the rows' largest
    scores lie far apart (a rescaled run's ``e^L`` large): every ball contains the exact weight
    (mpmath at 200 digits), and a weight set to 0 is below ``2^{-(prec+20)}`` — while some of
    those set to 0 lie above ``2^{-2(prec+20)}``, which the general route's factor-2 cutoff
    would have evaluated."""
    rng = np.random.default_rng(7 + masked)
    dropped_above = 0
    for trial in range(5):
        n = int(rng.integers(5, 10))
        X = rng.standard_normal((n, 2)) * (1 + trial)
        log_scale = 3.0 + trial
        mask = np.tril(np.ones((n, n), dtype=bool)) if masked else None
        if mask is not None:
            mask = mask | mask.T | np.eye(n, dtype=bool)
            mask[0, n - 1] = mask[n - 1, 0] = False
        exact = _exact_softmax(X, log_scale, mask)
        saved = ctx.prec
        ctx.prec = 99
        try:
            Xa = arb_mat([[arb(float(v)) for v in row] for row in X])
            w, needed, shared = softmax_terms_arb(Xa * Xa.transpose(), arb(log_scale), mask, True)
            assert shared
            for i in range(n):
                total = sum(w[i * n:(i + 1) * n], arb(0))
                for j in range(n):
                    truth = exact[i][j]
                    if w[i * n + j] == 0:
                        assert i * n + j not in needed
                        assert truth < mpmath.mpf(2) ** -(ctx.prec + 20), (trial, i, j)
                        dropped_above += truth > mpmath.mpf(2) ** -(2 * (ctx.prec + 20))
                        continue
                    ball = w[i * n + j] / total
                    assert ball.overlaps(arb(mpmath.nstr(truth, 60), 1e-55)), (trial, i, j)
        finally:
            ctx.prec = saved
    assert dropped_above > 0


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_weight_matrix_arb_against_mpmath(symmetric, masked):
    """The softmax weight matrix of the rescaled arb field (``_weight_matrix_arb``: by pairs for
    symmetric scores, by rows otherwise), row-normalised, contains the exact softmax of the
    same scores (mpmath at 200 digits from the exact float entries); a weight left out is below
    ``2^{-(prec+20)}``, and some are left out at these large ``e^L``."""
    from verify.flow.fields import _weight_matrix_arb

    rng = np.random.default_rng(11 + 2 * symmetric + masked)
    zeros = 0
    for trial in range(4):
        n = int(rng.integers(4, 11))
        S = rng.standard_normal((n, n)) * (1 + trial)
        if symmetric:
            S = S + S.T
        log_scale = 2.0 + trial
        mask = None
        if masked:
            mask = np.tril(np.ones((n, n), dtype=bool))
            mask = mask | mask.T if symmetric else mask
        with mpmath.workdps(200):
            factor = mpmath.exp(mpmath.mpf(log_scale))
            exact = []
            for i in range(n):
                row = [mpmath.exp(factor * mpmath.mpf(float(S[i, j])))
                       if mask is None or mask[i, j] else mpmath.mpf(0) for j in range(n)]
                exact.append([w / sum(row) for w in row])
        saved = ctx.prec
        ctx.prec = 120
        try:
            W = _weight_matrix_arb(arb_mat([[arb(float(v)) for v in row] for row in S]),
                                   arb(log_scale), mask, symmetric, None)
            for i in range(n):
                total = sum((W[i, j] for j in range(n)), arb(0))
                for j in range(n):
                    truth = exact[i][j]
                    if W[i, j] == 0:
                        assert truth < mpmath.mpf(2) ** -(ctx.prec + 20), (trial, i, j)
                        zeros += truth > 0
                        continue
                    assert (W[i, j] / total).overlaps(arb(mpmath.nstr(truth, 70), 1e-65))
        finally:
            ctx.prec = saved
    assert zeros > 0


def test_weight_matrix_arb_all_needed_against_mpmath():
    """Symmetric scores whose exponents all lie within the cutoff of each other take the route
    that skips the row-by-row decisions (every weight needed): the row-normalised weights
    contain the exact softmax (mpmath at 200 digits), none is left out, and the decisions agree
    with the row-by-row ones (``needed`` all true)."""
    from verify.flow.fields import _shared_pairs_arb, _weight_matrix_arb

    rng = np.random.default_rng(5)
    saved = ctx.prec
    ctx.prec = 110
    try:
        for trial in range(6):
            n = int(rng.integers(1, 12))
            S = rng.standard_normal((n, n))
            S = S + S.T
            log_scale = -1.0 + trial / 2
            Sa = arb_mat([[arb(float(v)) for v in row] for row in S])
            _, _, needed = _shared_pairs_arb(Sa, arb(log_scale), None, False)
            assert needed.all()
            W = _weight_matrix_arb(Sa, arb(log_scale), None, True, None)
            with mpmath.workdps(200):
                factor = mpmath.exp(mpmath.mpf(log_scale))
                for i in range(n):
                    row = [mpmath.exp(factor * mpmath.mpf(float(S[i, j]))) for j in range(n)]
                    total = sum((W[i, j] for j in range(n)), arb(0))
                    for j in range(n):
                        assert not W[i, j].is_zero()
                        truth = mpmath.nstr(row[j] / sum(row), 70)
                        assert (W[i, j] / total).overlaps(arb(truth, 1e-65)), (trial, i, j)
    finally:
        ctx.prec = saved


def _exact_sphere_field(X: np.ndarray, V: list, B: list, mask, pre_ln: bool = False) -> list:
    """``ẋ_i = P_{x_i}(Σ_j P_ij V x_j)`` with ``P = softmax(<x_i, B x_j>)`` and ``P_x`` the
    projection on the tangent space at ``x`` (pre-LN: ``ẋ_i = Σ_j P_ij V x̂_j`` with the scores of
    ``x̂ = x/|x|``), from the exact tokens (Fractions of the floats) by mpmath at 200 digits: an
    independent route."""
    with mpmath.workdps(200):
        Xm = mpmath.matrix([[mpmath.mpf(Fraction(v).numerator) / Fraction(v).denominator
                             for v in row] for row in X])
        Vm, Bm = (mpmath.matrix([[mpmath.mpf(Fraction(v).numerator) / Fraction(v).denominator
                                  for v in row] for row in M]) for M in (V, B))
        n, d = Xm.rows, Xm.cols
        rows = [Xm[i, :].T for i in range(n)]
        if pre_ln:
            rows = [r / mpmath.sqrt((r.T * r)[0]) for r in rows]
        out = []
        for i in range(n):
            w = [mpmath.exp((rows[i].T * Bm * rows[j])[0]) if mask is None or mask[i, j]
                 else mpmath.mpf(0) for j in range(n)]
            mean = sum((w[j] * (Vm * rows[j]) for j in range(n)), mpmath.matrix(d, 1)) / sum(w)
            radial = 0 if pre_ln else (mean.T * rows[i])[0] / (rows[i].T * rows[i])[0]
            out.append([mean[a] - radial * rows[i][a] for a in range(d)])
        return out


CASES_SPHERE = ["identity", "symmetric-B", "general-B", "causal", "pre-ln"]


@pytest.mark.parametrize("case", CASES_SPHERE)
def test_arb_sphere_field_contains_the_exact_field(case):
    """The arb field on the sphere (one softmax head: row normalisation and tangent projection
    in one pass, the decisions read off float64 scores) and of pre-LN tokens (the general path)
    at 99 bits: every ball contains the field computed by mpmath at 200 digits and the field at
    198 bits."""
    from verify.numerics import Arb

    rng = np.random.default_rng(CASES_SPHERE.index(case))
    n, d = 7, 3
    V = np.eye(d, dtype=int).tolist() if case == "identity" else _random_rational_V(rng, d)
    Q = np.eye(d, dtype=int).tolist() if case in ("identity", "causal") else \
        _random_rational_V(rng, d)
    K = Q if case != "general-B" else _random_rational_V(rng, d)
    model = Model(V=V, Q=Q, K=K, beta="3/2", form="x",
                  normalisation="pre-ln" if case == "pre-ln" else "sphere",
                  mask="causal" if case == "causal" else "full")
    X = rng.standard_normal((n, d))
    if case != "pre-ln":
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    B = (Fraction(3, 2) * np.array(Q, dtype=object).T.dot(np.array(K, dtype=object))).tolist()
    exact = _exact_sphere_field(X, V, B, model.mask_for(n), pre_ln=case == "pre-ln")
    fields = {}
    for bits in (198, 99):
        backend = Arb(bits=bits)
        with backend.working_precision():
            field = VectorField(model, n, backend)
            assert field._sphere_softmax == (case != "pre-ln")
            fields[bits] = field(0, backend.from_float(X))
    for i in range(n):
        for a in range(d):
            ball = fields[99][i, a]
            assert ball.overlaps(arb(mpmath.nstr(exact[i][a], 60), 1e-55)), (i, a)
            assert ball.contains(fields[198][i, a]), (i, a)


@pytest.mark.parametrize("name", ["hyperplanes-2d", "rotation-dominant", "jordan"])
def test_single_token_is_linear_flow(name):
    """n = 1: P = 1, so x(t) = e^{tV} x(0) exactly; in the rescaled form z is constant."""
    V = V_CASES[name]
    x0 = [["0.3"] + ["-1.25"] * (len(V) - 1)]
    T = 2.0
    traj = simulate(Instance(Model(V=V, form="x"), x0), T, checkpoints=3, rtol=1e-12,
                    atol=1e-14)
    expected = as_float_array(rational_array("x0", x0)[0]) @ flint_expm(V, T).T
    error = np.abs(traj.x[-1] - expected).max()
    assert error < 1e-9 * max(1.0, np.abs(expected).max())
    # the estimate covers the true error, after the measured safety factor (and 4 ulp of rounding)
    assert error <= estimate_bound(traj.error_estimate) + 4 * np.finfo(float).eps * max(
        1.0, np.abs(expected).max())
    rescaled = simulate(Instance(Model(V=V), x0), T, checkpoints=3, error_estimate=False)
    # the field is zero; what is left is the round-off of the change to eigen-coordinates and
    # back (a few ulps, which fall differently with each BLAS kernel)
    z0 = np.abs(rescaled.z[0]).max()
    assert np.abs(rescaled.z[-1] - rescaled.z[0]).max() <= 16 * np.finfo(float).eps * z0
    assert np.allclose(rescaled.x[-1], expected, rtol=1e-12)


def test_two_token_reduction_matches_scalar_ode():
    """Remark closing §7: x_{1,2}(0) = (1, ±ε), Q = K = V = I_2. With z_{1,2} = (a, ±b),
    w = e^{2t} b² solves dw/dt = 2 w tanh w; solve that scalar ODE independently (mpmath's
    Taylor integrator) and compare."""
    eps = Fraction(1, 4)
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, eps], [1, -eps]])
    T = 3
    traj = simulate(inst, T, checkpoints=7, rtol=1e-12, atol=1e-14)
    mpmath.mp.dps = 30
    w0 = mpmath.mpf(eps.numerator) ** 2 / eps.denominator ** 2
    w = mpmath.odefun(lambda t, w: 2 * w * mpmath.tanh(w), 0, w0)
    for t, z in zip(traj.t, traj.z, strict=True):
        b = z[0, 1]
        assert z[0, 1] == -z[1, 1] and z[0, 0] == z[1, 0] == 1.0  # kept on the symmetric set
        assert abs(np.exp(2 * t) * b * b - float(w(t))) < 1e-9 * float(w(t))


def test_remark_3_4_discrete_rescaling_is_exact():
    """z[k] = R^{-k} x[k] with R = I + hV: the rescaled recursion equals the layer map exactly
    (in rational arithmetic, with the same P[k] used by both)."""
    V, _ = rational_array("V", [[1, "1/2"], ["-1/3", 2]])
    h = F(1, 10)
    R = np.eye(2, dtype=int).astype(object) + h * V
    R_inv = rational_array("R_inv", [[R[1, 1], -R[0, 1]], [-R[1, 0], R[0, 0]]])[0] / (
        R[0, 0] * R[1, 1] - R[0, 1] * R[1, 0])
    x, _ = rational_array("x0", [[1, 0], ["1/2", "1/3"], [-1, 2]])
    z = x.copy()
    R_inv_k = np.eye(2, dtype=int).astype(object)
    field = VectorField(Model(V=as_float_array(V).tolist(), form="x"), 3, Float64())
    for _ in range(4):
        P_float = field.attention(0.0, as_float_array(x))
        P = np.vectorize(Fraction, otypes=[object])(P_float)
        P = P / P.sum(axis=1, keepdims=True)  # exactly row-stochastic rationals
        x = discrete_step_tokens(x, P, V, h)
        z = discrete_step_rescaled(z, P, V, h, R_inv)
        R_inv_k = R_inv.dot(R_inv_k)
        assert np.array_equal(z, x.dot(R_inv_k.T))  # exact equality of rationals


def test_softmax_kernel_is_overflow_free_and_exact_limits():
    S = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, -5.0], [1.0, 1.0, 1.0]])
    for L in (0.0, 50.0, 1e3, 1e6):
        A = attention_weights(S, L)
        assert np.all(np.isfinite(A)) and np.allclose(A.sum(axis=1), 1.0)
        if L == 0.0:
            expected = np.exp(S - S.max(axis=1, keepdims=True))
            assert np.allclose(A, expected / expected.sum(axis=1, keepdims=True), rtol=1e-15)
    # far past overflow: the hardmax with ties split evenly
    assert np.array_equal(attention_weights(S, 1e6), attention_weights(S, 0, "hardmax"))
    assert np.allclose(attention_weights(S, 1e6)[0], [0.5, 0, 0.5])
    mask = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 1]], dtype=bool)
    A = attention_weights(S, 0.0, mask=mask)
    assert A[0, 2] == 0 and A[2, 2] == 1 and np.allclose(A.sum(axis=1), 1)


def test_long_horizon_float64_no_overflow():
    """V = I to T = 30: scores e^{60}·S̃ never overflow (λ_1 ≈ 6.7 needs arbitrary precision:
    see tests/test_simulate.py)."""
    V, T = [[1, 0, 0], [0, 1, 0], [0, 0, 1]], 30
    rng = np.random.default_rng(5)
    inst = Instance(Model(V=V), rng.uniform(-1, 1, size=(8, 3)))
    traj = simulate(inst, T, checkpoints=T + 1, error_estimate=False)
    assert traj.success
    assert np.all(np.isfinite(traj.z)) and np.all(np.isfinite(traj.attention))
    assert np.allclose(traj.attention.sum(axis=2), 1.0, atol=1e-14)
    assert traj.log_scale[-1] == pytest.approx(2 * ValueExponential(inst.model.V).mu * T)


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "real-diagonalisable"])
@pytest.mark.parametrize("mask", ["full", "causal"])
def test_eigen_coordinates_field_is_the_rescaled_field(mask, symmetric):
    """EigenRescaledField (w = z Φ for symmetric V; w = z P^{-T} for a triangular V with
    distinct real eigenvalues) against VectorField, with a general QᵀK and a mask, at a time
    where the attention is partly saturated: the same field to round-off."""
    from verify.flow.fields import EigenRescaledField

    rng = np.random.default_rng(3)
    M = rng.integers(-3, 4, (3, 3))
    V = (M + M.T).tolist() if symmetric else [[2, 1, -1], [0, -1, 3], [0, 0, "1/2"]]
    Q, K = rng.integers(-2, 3, (3, 3)).tolist(), rng.integers(-2, 3, (3, 3)).tolist()
    model = Model(V=V, Q=Q, K=K, mask=mask)
    assert EigenRescaledField.applies(model)
    f, g = EigenRescaledField(model, 5), VectorField(model, 5, Float64())
    assert f.kind == ("symmetric" if symmetric else "diagonalisable")
    z = rng.uniform(-1, 1, (5, 3))
    for t in (0.0, 0.4, 1.5):
        expected = g(t, z)
        got = f.to_z(f(t, f.to_w(z)))
        assert np.allclose(got, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_eigen_coordinates_field_keeps_no_state_between_calls():
    """The softmax is written over a preallocated buffer: a returned derivative must not change
    when the field is called again (the solver keeps every stage), the input of
    ``attention_weights`` is not overwritten, and the weights match a 40-digit softmax of the
    same scores within the rounding of their exponents (a few ulps of ``e^L·gap``, which
    multiply the weight by ``1 + O(|log P| u)``)."""
    import mpmath

    from verify.flow.fields import EigenRescaledField

    model = Model(V=[[2, 1, 0], [1, 2, 0], [0, 0, -1]])
    f = EigenRescaledField(model, 4)
    rng = np.random.default_rng(7)
    w1, w2 = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    first = f(0.5, w1)
    kept = first.copy()
    f(0.9, w2)
    assert np.array_equal(first, kept)
    S, L = f.scores(0.5, w1)
    scores = S.copy()
    A = attention_weights(S, L)
    assert np.array_equal(S, scores)
    with mpmath.workdps(40):
        for i in range(4):
            top = max(mpmath.mpf(v) for v in S[i])
            e = [mpmath.exp(mpmath.exp(L) * (mpmath.mpf(v) - top)) for v in S[i]]
            exact = np.array([float(v / sum(e)) for v in e])
            bound = 8 * np.finfo(float).eps * (1 + np.abs(np.log(exact))) * exact
            assert np.all(np.abs(A[i] - exact) <= bound)


def test_eigen_coordinates_refuse_complex_or_defective_v():
    """A rotation-like V (complex pair) and a Jordan block stay on the general field."""
    from verify.flow.fields import EigenRescaledField

    assert not EigenRescaledField.applies(Model(V=[[1, "7/10"], ["-3/5", 1]]))
    assert not EigenRescaledField.applies(Model(V=[[1, 1], [0, 1]]))


@pytest.mark.parametrize("scale", [1.0, 1e7])
def test_arb_token_form_decides_on_float64_scores_only_within_their_error(scale):
    """The token form's softmax decides on float64 scores only where their rounding is below
    2^-10 (then they agree with the balls' midpoints that closely); with tokens of size 1e7
    (scores ~1e14, float64 error ~0.1) it reads the midpoints instead, as before."""
    from verify.numerics import Arb

    rng = np.random.default_rng(3)
    model = Model(V=_random_rational_V(rng, 3), Q=_random_rational_V(rng, 3), form="x")
    backend = Arb(bits=99)
    with backend.working_precision():
        field = VectorField(model, 6, backend)
        X = backend.from_float(rng.standard_normal((6, 3)) * scale)
        approx = field._float_scores(X, 0)
        if scale > 1:
            assert approx is None
            return
        S, _ = field.scores(0, X)
        mids = backend.to_float(S)
        assert np.max(np.abs(approx - mids)) <= 2.0 ** -10


COMPILED_CASES = {
    "symmetric, B = I": ({"V": [[2, 1, 0], [1, 2, 0], [0, 0, -1]]}, (0.0, 0.3, 1.2)),
    "diagonalisable, QᵀK, causal": ({"V": [[2, 1, -1], [0, -1, 3], [0, 0, "1/2"]],
                                     "Q": [[1, 2, 0], [0, 1, -1], [1, 0, 1]],
                                     "K": [[2, 0, 1], [-1, 1, 0], [0, 1, 1]],
                                     "mask": "causal"}, (0.0, 0.5, 2.0)),
    "e^L beyond float64 (L ≥ 700)": ({"V": [[200, 0], [0, -1]]}, (0.1, 1.8, 2.5)),
}


@pytest.mark.parametrize("case", COMPILED_CASES)
def test_compiled_field_agrees_with_numpy_and_a_40_digit_softmax(case, monkeypatch):
    """The compiled softmax (verify.flow.compiled, Numba) against the NumPy path and against the
    field computed in 40 digits from the same float64 scores: both within the rounding of the
    weights' exponents (a few ulps of ``e^L·gap`` per weight, ``1 + |log P|`` relative) and of
    the ``n``-term sums (``n ε max|w|`` each), times ``|λ_k|`` — never bit for bit."""
    pytest.importorskip("numba")
    from verify.flow import compiled
    from verify.flow.fields import EigenRescaledField
    from verify.numerics import STORED_ULPS, SUM_ULPS, ulps

    spec, times = COMPILED_CASES[case]
    model, n = Model(**spec), 6
    monkeypatch.setattr(compiled, "MIN_SIZE", 0)
    monkeypatch.setenv("VERIFY_COMPILED", "0")
    plain = EigenRescaledField(model, n)
    monkeypatch.delenv("VERIFY_COMPILED")
    fast = EigenRescaledField(model, n)
    assert plain._kernel is None and fast._kernel is not None
    rng = np.random.default_rng(11)
    for t in times:
        w = rng.uniform(-1, 1, (n, len(fast.lam)))
        got, numpy_path = fast(t, w), plain(t, w)
        S, L = plain.scores(t, w)
        mask = plain.mask
        with mpmath.workdps(40):
            field = np.zeros_like(w)
            weights = np.zeros((n, n))
            for i in range(n):
                allowed = [j for j in range(n) if mask is None or mask[i, j]]
                top = max(mpmath.mpf(S[i, j]) for j in allowed)
                e = {j: mpmath.exp(-mpmath.exp(L) * (top - mpmath.mpf(S[i, j])))
                     for j in allowed}
                total = sum(e.values())
                for j in allowed:
                    weights[i, j] = float(e[j] / total)
                for k in range(w.shape[1]):
                    value = sum(e[j] / total * mpmath.mpf(w[j, k]) for j in allowed)
                    field[i, k] = float((value - mpmath.mpf(w[i, k])) * mpmath.mpf(fast.lam[k]))
        with np.errstate(divide="ignore"):
            log_p = np.where(weights > 0, np.abs(np.log(weights)), 0.0)
        weight_error = ulps(STORED_ULPS * 2 * (1 + log_p), weights)       # per weight
        bound = np.abs(fast.lam) * (weight_error @ np.abs(w)
                                    + ulps(SUM_ULPS * 4 * (n + 2), np.abs(w).max()))
        assert np.all(np.abs(got - field) <= bound), (case, t)
        assert np.all(np.abs(numpy_path - field) <= bound), (case, t)
        assert np.all(np.abs(got - numpy_path) <= 2 * bound), (case, t)


def test_compiled_kernel_only_where_it_pays(monkeypatch):
    """Below ``MIN_SIZE`` (every claim of the suite is) a run never imports Numba, its import
    and compilation cost nothing there; ``VERIFY_COMPILED=0`` turns the kernel off; above
    ``MIN_SIZE`` the kernel is used when Numba is installed."""
    import subprocess
    import sys

    from verify.flow import compiled

    code = ("import sys; from verify.model import Model, Instance; "
            "from verify.flow.simulate import simulate; "
            "simulate(Instance(Model(V=[[2, 1], [1, 2]]), [[1, 0], [0, 1], [1, 1]]), 2); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
    assert compiled.kernel(32, 32) is None
    monkeypatch.setenv("VERIFY_COMPILED", "0")
    assert compiled.kernel(128, 128) is None and not compiled.available()
    monkeypatch.delenv("VERIFY_COMPILED")
    try:
        import numba  # noqa: F401
    except ImportError:
        assert compiled.kernel(128, 128) is None
    else:
        assert compiled.kernel(128, 128) is not None
