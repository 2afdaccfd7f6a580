"""Rigorous enclosures (verify.enclosure): every ball must contain the exact solution.

Independent routes: closed forms (one token, a linear flow, β = 0), a reduced scalar ODE solved
by SciPy's DOP853 (two tokens on the circle), the same enclosure at twice the digits, and
the closed-form Jacobian against forward-mode jets of the field.
"""

from fractions import Fraction

import numpy as np
import pytest
from flint import arb, arb_mat, arb_series, ctx
from scipy.integrate import solve_ivp

import verify.enclosure._fields as fields
from verify.enclosure import Enclosure, dyadic_ball
from verify.enclosure._fields import FieldSpec
from verify.enclosure._jacobian import _forms, _series_by_entries, jacobian, jacobian_series
from verify.enclosure._jets import State
from verify.enclosure._taylor import taylor_step
from verify.errors import InvalidArgument
from verify.model import Instance, Model
from verify.proof import _prove


def _exp_tv(V, t):
    with ctx.workprec(300):  # the reference far tighter than the enclosure
        return (arb_mat(V) * arb(t)).exp()


def test_one_token_is_the_linear_flow_e_tv_x0():
    """n = 1: the attention is 1 and x(t) = e^{tV} x(0) (token form; a rotation)."""
    inst = Instance(Model(V=[[0, -1], [1, 0]], form="x"), [[1, 0]])
    enc = Enclosure(inst)
    assert enc.advance(2)
    x = enc.x_at(2)
    with ctx.workprec(300):
        exact = _exp_tv([[0, -1], [1, 0]], 2) * arb_mat([[1], [0]])
        for a in range(2):
            assert x[0, a].contains(exact[a, 0])
    assert enc.radius(2) < 1e-10  # each step keeps its remainder near 2^-40


def test_zero_beta_is_a_linear_flow_in_both_forms():
    """β = 0: uniform attention, x_i(t) = x_i(0) + (e^{tV} - I) m(0) with m the mean; the
    rescaled form encloses z_i = e^{-tV} x_i."""
    V = [[1, 2], [0, -1]]
    x0 = [[1, 0], [0, 1], [-1, "1/2"]]
    mean = [Fraction(0), Fraction(1, 2)]
    for form in ("x", "z"):
        inst = Instance(Model(V=V, beta=0, form=form), x0)
        enc = Enclosure(inst)
        assert enc.advance(1)
        E = _exp_tv(V, 1)
        with ctx.workprec(300):
            m = arb_mat([[arb(float(v))] for v in mean])
            shift = (E - arb_mat([[1, 0], [0, 1]])) * m
            x = enc.x_at(1)
            for i, row in enumerate(x0):
                for a in range(2):
                    assert x[i, a].contains(arb(float(Fraction(row[a]))) + shift[a, 0]), form


def _circle_angle(beta: float, u0: float, t: float) -> float:
    """Two unit tokens on the circle with V = Q = K = I: u = <x1, x2> solves
    u' = 2 (1 - u^2) e^{βu} / (e^β + e^{βu}) (SciPy's DOP853 at rtol 1e-13)."""
    sol = solve_ivp(lambda s, u: 2 * (1 - u * u) * np.exp(beta * u)
                    / (np.exp(beta) + np.exp(beta * u)), (0, t), [u0], method="DOP853",
                    rtol=1e-13, atol=1e-15)
    return float(sol.y[0, -1])


def test_two_tokens_on_the_circle_against_the_reduced_ode():
    inst = Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"),
                    [[1, 0], ["3/5", "4/5"]])
    enc = Enclosure(inst)
    assert enc.advance(Fraction(3, 2))
    x = enc.x_at(Fraction(3, 2))
    inner = x[0, 0] * x[1, 0] + x[0, 1] * x[1, 1]
    reference = _circle_angle(1.0, 0.6, 1.5)  # within ~1e-12 of the truth
    assert abs(float(inner.mid()) - reference) <= float(inner.rad()) + 1e-12
    assert float(inner.rad()) < 1e-9


def test_twice_the_digits_gives_overlapping_and_tighter_balls():
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], ["1/2", "1/3"]])
    low, high = Enclosure(inst, bits=128), Enclosure(inst, bits=256, tol=2.0 ** -70)
    assert low.advance(1) and high.advance(1)
    a, b = low.z_at(1), high.z_at(1)
    for u, v in zip(a.entries(), b.entries(), strict=True):
        assert u.overlaps(v)
        assert float(v.rad()) <= float(u.rad())
    assert high.radius() < 1e-3 * low.radius()


COARSE_TOLS = [setting["tol"] for setting in (_prove.COARSEST, _prove.COARSER, _prove.COARSE)]


@pytest.mark.parametrize("tol", COARSE_TOLS, ids=lambda tol: f"2^{np.log2(tol):.0f}")
def test_the_proofs_coarse_tolerances_still_contain_the_solution(tol):
    """The proof's coarse enclosures (steps aiming at 2^-24 .. 2^-32 of the state): longer
    steps, wider balls, every ball still containing the exact solution — against the closed
    form of β = 0 (x_i(t) = x_i(0) + (e^{tV} - I) m(0)) and against a 256-bit run at 2^-70
    (softmax attention: the balls overlap and the fine ones are narrower)."""
    V = [[1, 2], [0, -1]]
    x0 = [[1, 0], [0, 1], [-1, "1/2"]]
    inst = Instance(Model(V=V, beta=0), x0)
    coarse, fine = Enclosure(inst, tol=tol), Enclosure(inst)
    assert coarse.advance(2) and fine.advance(2) and len(coarse.steps) < len(fine.steps)
    E = _exp_tv(V, 2)
    with ctx.workprec(300):
        shift = (E - arb_mat([[1, 0], [0, 1]])) * arb_mat([[0], ["0.5"]])
        x = coarse.x_at(2)
        for i, row in enumerate(x0):
            for a in range(2):
                assert x[i, a].contains(arb(float(Fraction(row[a]))) + shift[a, 0])
    inst = Instance(Model(V=[[1, 0], [0, Fraction(1, 2)]]), [[1, 0], [0, 1], ["1/2", "1/3"]])
    coarse, reference = Enclosure(inst, tol=tol), Enclosure(inst, bits=256, tol=2.0 ** -70)
    assert coarse.advance(Fraction(3, 2)) and reference.advance(Fraction(3, 2))
    for u, v in zip(coarse.z_at(Fraction(3, 2)).entries(),
                    reference.z_at(Fraction(3, 2)).entries(), strict=True):
        assert u.overlaps(v) and float(v.rad()) < float(u.rad())


def test_a_token_pinned_by_symmetry_stays_exactly_at_zero():
    inst = Instance(Model(V=[[1]]), [[-2], [-1], [0], [1], [2]])
    enc = Enclosure(inst)
    assert enc.group is not None and enc.advance(1)
    middle = enc.z_at(1)[2, 0]
    assert middle.mid() == 0 and middle.rad() == 0


def test_unsupported_variants_and_sizes_are_refused():
    with pytest.raises(InvalidArgument, match="hardmax"):
        Enclosure(Instance(Model(V=[[1]], attention="hardmax"), [[1], [2]]))
    with pytest.raises(InvalidArgument, match="small systems"):
        Enclosure(Instance(Model(V=[[1]]), [[k] for k in range(65)]))


def _forward(spec, times, X, refs):
    """The Jacobian column by column from the jets: F(X + s e_m) has coefficient 1 J e_m."""
    n, d = X.nrows(), X.ncols()
    columns = []
    for m in range(n * d):
        state = State(X)
        state.append(arb_mat(n, d, [1 if k == m else 0 for k in range(n * d)]))
        time = spec._time_value(times) if spec.rescaled else None
        columns.append(spec.graph(state, time, refs).coef(1).entries())
    return [[columns[m][r] for m in range(n * d)] for r in range(n * d)]


#: One model per variant of the field (the jets' node kinds: exp, the power rules, row scalings,
#: Hadamard and matrix products, masks, several heads).
VARIANT_CASES = pytest.mark.parametrize("model", [
    Model(V=[["1/2", 1], [0, "-1/3"]], Q=[[1, 2], [0, 1]], K=[[1, 0], [1, 1]], beta="3/2"),
    Model(V=[[1, 0], [0, 1]], Q=[[1, 2], [0, 1]], K=[[1, 0], [1, 1]], mask="causal"),
    Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere", beta=2),
    Model(V=[[2, 1], [0, 1]], form="x", normalisation="pre-ln"),
    Model(V=[[1, 0], [0, 1]], form="x", attention="unnormalised"),
    Model(heads=[{"V": [[1, 0], [0, 1]]}, {"V": [[0, 1], [-1, 0]], "Q": [[1, 1], [0, 1]]}],
          form="x"),
], ids=["rescaled", "causal", "sphere", "pre-ln", "unnormalised", "two-heads"])


@VARIANT_CASES
def test_closed_form_jacobian_matches_forward_jets(model):
    with ctx.workprec(200):
        spec = FieldSpec(model, 3)
        X = arb_mat([[arb(1), arb("0.25")], [arb("-0.5"), arb("0.75")], [arb("0.6"), arb("0.8")]])
        refs = spec.references(Fraction(1, 3), X)
        times = arb(1) / 3
        J = jacobian(spec, times, X, refs).tolist()
        for row, other in zip(J, _forward(spec, times, X, refs), strict=True):
            for u, v in zip(row, other, strict=True):
                assert abs(float((u - v).mid())) < 1e-50


def _picard_coefficients(model, t, Z: list[list], order: int) -> list[list[list]]:
    """The Taylor coefficients of orders ``0..order`` in ``s`` of the rescaled solution with
    ``z(t) = Z`` (exact balls), by Picard iteration on FLINT's power series at the current
    precision — an independent route: the softmax is taken of the raw scores
    :math:`\\langle e^{tV} z_i, B\\, e^{tV} z_j\\rangle` (no reference column, no centring) and
    normalised by a series division."""
    V = arb_mat([[arb(str(Fraction(v))) for v in row] for row in model.V])
    B = [[arb(str(Fraction(v))) for v in row] for row in model.B]
    n, d = len(Z), len(Z[0])
    old = ctx.cap
    ctx.cap = order + 1
    try:
        # E(t + s) = e^{tV} sum_k V^k s^k / k!, entry by entry as series in s
        powers, term = [], (V * t).exp()
        for k in range(order + 1):
            powers.append(term)
            term = term * V * (arb(1) / (k + 1))
        E = [[arb_series([powers[k][a, b] for k in range(order + 1)]) for b in range(d)]
             for a in range(d)]
        z = [[arb_series([v]) for v in row] for row in Z]
        for _ in range(order + 1):
            y = [[sum((E[a][b] * row[b] for b in range(d)), arb_series([0])) for a in range(d)]
                 for row in z]
            By = [[sum((B[a][b] * row[b] for b in range(d)), arb_series([0])) for a in range(d)]
                  for row in y]
            field = []
            for i in range(n):
                weights = [sum((y[i][a] * By[j][a] for a in range(d)), arb_series([0])).exp()
                           for j in range(n)]
                total = sum(weights, arb_series([0]))
                mean = [sum((w * z[j][a] for j, w in enumerate(weights)), arb_series([0])) / total
                        for a in range(d)]
                field.append([sum((V[a, b] * (mean[b] - z[i][b]) for b in range(d)),
                                  arb_series([0])) for a in range(d)])
            z = [[arb_series([Z[i][a]]) + field[i][a].integral() for a in range(d)]
                 for i in range(n)]
    finally:
        ctx.cap = old
    return [[[row[a].coeffs()[m] if m < len(row[a].coeffs()) else arb(0) for a in range(d)]
             for row in z] for m in range(order + 1)]


#: Steps sampled by the independent-route tests: escape-threshold adversarial-pull#0 at t = 4 (a
#: cluster of three tokens whose scores, scaled by e^{8}, are a few units apart: the regime where
#: the step was held by the remainder's width) and a non-normal V with Q ≠ I.
STEP_CASES = pytest.mark.parametrize("model, x0, t", [
    (Model(V=[[1]]), [["-3/4"], ["-7/10"], ["-13/20"], ["1443/1000"]], 4),
    (Model(V=[["1/2", 1], ["-1/3", "1/4"]], Q=[[1, "1/2"], [0, 1]]),
     [[1, 0], ["9/10", "1/5"], ["-1/2", "3/4"]], 1),
], ids=["adversarial-pull", "non-normal-V"])


@pytest.mark.parametrize("midrad", [False, True], ids=["arb", "midrad"])
@STEP_CASES
def test_remainder_coefficient_encloses_the_coefficients_at_points_of_the_step(model, x0, t,
                                                                                 midrad):
    """The coefficients :math:`c_m(T, B)` that a step uses (over its time interval and its
    a-priori box) contain the coefficients of the solutions through sampled points of
    :math:`T \\times B`, computed by an independent route at twice the digits — in ``arb``
    and in float64 midpoint–radius balls (``midrad``)."""
    inst = Instance(model, x0)
    enc = Enclosure(inst, bits=128)
    assert enc.advance(t)
    step = enc.steps[-1]
    order = enc.order
    rng = np.random.default_rng(7)
    with ctx.workprec(128):
        spec = FieldSpec(model, inst.n, midrad=True) if midrad else enc.field
        refs = spec.references(step.t0, step.box.mid())
        times = dyadic_ball(step.t0, step.t1)
        over = spec.coefficients(times, step.box, order, refs)
    box = step.box.entries()
    with ctx.workprec(256):
        for k in range(4):
            t_point = step.t0 + step.h * Fraction(k, 3)
            u = rng.uniform(-1, 1, size=len(box)) if k else np.sign(rng.uniform(-1, 1, len(box)))
            point = [b.mid() + arb(float(w)) * b.rad() * arb("0.99") for b, w in zip(
                box, u, strict=True)]
            assert all(b.contains(p) for b, p in zip(box, point, strict=True))
            Z = [point[i * inst.d:(i + 1) * inst.d] for i in range(inst.n)]
            exact = _picard_coefficients(model, arb(str(t_point)), Z, order)
            for m in range(order + 1):
                for i in range(inst.n):
                    for a in range(inst.d):
                        assert over[m][i, a].contains(exact[m][i][a]), (k, m, i, a)


def test_a_saturated_cluster_takes_long_steps():
    """adversarial-pull#0 (escape threshold) to t = 5: three tokens whose scores, scaled by
    e^{2t}, are a few units apart. The softmax's mean is formed from the reference token
    (``u_r + Σ_j A_ij (u_j − u_r)``), so the remainder over a step's box is not inflated by the
    attention's width times the tokens: 93 steps here, where the plain mean took 1410 (its
    order-12 coefficient over the box was ~1e18, at the centre 4e-7)."""
    inst = Instance(Model(V=[[1]]), [["-3/4"], ["-7/10"], ["-13/20"], ["1443/1000"]])
    enc = Enclosure(inst)
    assert enc.advance(5)
    assert len(enc.steps) < 300
    assert enc.radius() < 1e-8


def _sum_series(coefficients: list[list[list]], s) -> list[list]:
    """``Σ_m c_m s^m`` entry by entry (the independent route's truncated series)."""
    n, d = len(coefficients[0]), len(coefficients[0][0])
    return [[sum((c[i][a] * s ** m for m, c in enumerate(coefficients)), arb(0))
             for a in range(d)] for i in range(n)]


def test_a_step_from_a_wide_box_holds_the_solutions_through_its_points():
    """One step from a box of radius 1e-6 (rescaled form, non-normal V, Q ≠ I): the a-priori
    box B (the centre's Taylor polynomial over [0, h] and the box's spread under the flow's
    Jacobian, module docstring of ``_taylor``) and the step's enclosure ``over`` contain the
    solutions through corners and interior points of the box at times in [0, h], computed at
    256 bits by the independent route (Picard iteration on FLINT's power series with the raw
    softmax; 30 orders, truncation far below the balls). Fails if the box and its inclusion
    test leave the spread out (checked), or if the flow's Jacobian W is replaced by I."""
    model = Model(V=[["1/2", 1], ["-1/3", "1/4"]], Q=[[1, "1/2"], [0, 1]])
    x0 = [[1, 0], ["9/10", "1/5"], ["-1/2", "3/4"]]
    inst = Instance(model, x0)
    enc = Enclosure(inst, bits=128)
    assert enc.advance(1)
    rng = np.random.default_rng(11)
    with ctx.workprec(128):
        centre = enc.centre
        m = inst.n * inst.d
        identity = arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
        r = arb_mat(m, 1, [arb(0, 1e-6)] * m)
        step = taylor_step(enc.field, enc.t, centre, identity, r, Fraction(1, 4), order=12,
                           tol=2.0 ** -40)
        whole = step.over(Fraction(0), step.h)
        end = step._state(dyadic_ball(step.h, step.h), step.WA_end)
    box = step.box.entries()
    assert step.h > Fraction(1, 1024), step.h
    with ctx.workprec(256):
        for k in range(4):
            u = rng.uniform(-1, 1, size=m) if k else np.sign(rng.uniform(-1, 1, m))
            start = [c + arb(float(w)) * arb("0.999e-6") for c, w in zip(
                centre.entries(), u, strict=True)]
            Z = [start[i * inst.d:(i + 1) * inst.d] for i in range(inst.n)]
            series = _picard_coefficients(model, arb(str(enc.t)), Z, 30)
            for q in range(5):
                s = arb(str(step.h * Fraction(q, 4)))
                exact = _sum_series(series, s)
                for i in range(inst.n):
                    for a in range(inst.d):
                        assert box[i * inst.d + a].contains(exact[i][a]), (k, q, i, a)
                        assert whole[i, a].contains(exact[i][a]), (k, q, i, a)
                        if q == 4:
                            assert end[i, a].contains(exact[i][a]), (k, i, a)


class _Dual:
    """``v + ε e`` with ``ε² = 0`` over FLINT series: forward differentiation of the raw field
    (the independent route of the Jacobian's series)."""

    def __init__(self, v, e=None):
        self.v, self.e = v, arb_series([0]) if e is None else e

    def __add__(self, other):
        return _Dual(self.v + other.v, self.e + other.e)

    def __sub__(self, other):
        return _Dual(self.v - other.v, self.e - other.e)

    def __mul__(self, other):
        return _Dual(self.v * other.v, self.v * other.e + self.e * other.v)

    def __truediv__(self, other):
        return _Dual(self.v / other.v, (self.e * other.v - self.v * other.e) / (other.v * other.v))

    def exp(self):
        value = self.v.exp()
        return _Dual(value, value * self.e)


def _encloses(ours, reference) -> bool:
    """Our ball contains the reference ball (the truth's tighter enclosure); where the
    reference is the wider one (an entry like e^{-4000} that its cancellation cannot resolve),
    the two must overlap (both contain the truth)."""
    if reference.rad() > ours.rad():
        return ours.overlaps(reference)
    return ours.contains(reference)


def _raw_jacobian_series(model, t, Z: list[list], length: int) -> list[list[list]]:
    """The coefficients of orders ``< length`` of :math:`s \\mapsto DF(t + s, z(s))` along the
    rescaled solution with ``z(t) = Z`` (entry ``(i·d + a, k·d + b)``), by an independent
    route: :math:`z(s)` from :func:`_picard_coefficients`, and each column :math:`DF\\, e_{kb}`
    by forward differentiation (:class:`_Dual`) of the raw field :math:`V(\\sum_j w_{ij} z_j /
    \\sum_j w_{ij} - z_i)`, :math:`w_{ij} = \\exp\\langle E z_i, B E z_j\\rangle` (no reference
    column, no centring, no jets, no closed form)."""
    n, d = len(Z), len(Z[0])
    coefficients = _picard_coefficients(model, t, Z, length)
    V = [[arb(str(Fraction(v))) for v in row] for row in model.V]
    B = [[arb(str(Fraction(v))) for v in row] for row in model.B]
    Vm = arb_mat(V)
    old = ctx.cap
    ctx.cap = length
    try:
        powers, term = [], (Vm * t).exp()
        for k in range(length):
            powers.append(term)
            term = term * Vm * (arb(1) / (k + 1))
        E = [[_Dual(arb_series([powers[k][a, b] for k in range(length)])) for b in range(d)]
             for a in range(d)]
        const = [[_Dual(arb_series([v])) for v in row] for row in V]
        Bc = [[_Dual(arb_series([v])) for v in row] for row in B]
        columns = []
        for k in range(n):
            for b in range(d):
                z = [[_Dual(arb_series([coefficients[m][i][a] for m in range(length)]),
                            arb_series([1 if (i, a) == (k, b) else 0]))
                      for a in range(d)] for i in range(n)]
                y = [[sum((E[a][c] * row[c] for c in range(1, d)), E[a][0] * row[0])
                      for a in range(d)] for row in z]
                By = [[sum((Bc[a][c] * row[c] for c in range(1, d)), Bc[a][0] * row[0])
                       for a in range(d)] for row in y]
                column = []
                for i in range(n):
                    w = [sum((y[i][a] * By[j][a] for a in range(1, d)), y[i][0] * By[j][0]).exp()
                         for j in range(n)]
                    total = sum(w[1:], w[0])
                    mean = [sum((w[j] * z[j][a] for j in range(1, n)), w[0] * z[0][a]) / total
                            for a in range(d)]
                    column.extend(sum((const[a][c] * (mean[c] - z[i][c]) for c in range(1, d)),
                                      const[a][0] * (mean[0] - z[i][0])).e for a in range(d))
                columns.append(column)
    finally:
        ctx.cap = old

    def entry(series, m):
        values = series.coeffs()
        return values[m] if m < len(values) else arb(0)

    return [[[entry(columns[col][row], m) for col in range(n * d)] for row in range(n * d)]
            for m in range(length)]


@STEP_CASES
def test_jacobian_series_encloses_the_raw_derivative_at_points_of_the_step(model, x0, t):
    """The Jacobian's Taylor coefficients that a step uses — along the solutions from its
    a-priori box over its time interval (products of coefficient matrices,
    ``_softmax_series``) and along the solution through the centre — contain, entry by entry,
    those along the solutions through sampled points of :math:`T \\times B` (corners by sign and
    random interior points), computed at 256 bits by forward differentiation of the raw
    softmax field along Picard series (:func:`_raw_jacobian_series`); the entry-by-entry
    formulation (``_series_by_entries``, every other variant's) contains them too."""
    inst = Instance(model, x0)
    enc = Enclosure(inst, bits=128)
    assert enc.advance(t)
    step = enc.steps[-1]
    length = 4
    rng = np.random.default_rng(5)
    with ctx.workprec(128):
        spec = enc.field
        refs = spec.references(step.t0, step.box.mid())
        jets = spec.jets(dyadic_ball(step.t0, step.t1), step.box, length, refs,
                         attention=length)
        over = jacobian_series(spec, jets, length)
        by_entries = _series_by_entries(spec, jets, _forms(spec, jets, length), length)
        centre = jacobian_series(spec, spec.jets(step.t0, step.box.mid(), length, refs,
                                                 attention=length), length)
    box = step.box.entries()
    nd = inst.n * inst.d
    with ctx.workprec(256):
        points = [(step.t0, [b.mid() for b in box])]
        for k in range(4):
            u = rng.uniform(-1, 1, size=len(box)) if k else np.sign(rng.uniform(-1, 1, len(box)))
            points.append((step.t0 + step.h * Fraction(k, 3), [
                b.mid() + arb(float(w)) * b.rad() * arb("0.99") for b, w in zip(box, u,
                                                                                 strict=True)]))
        resolved = 0
        for k, (t_point, point) in enumerate(points):
            Z = [point[i * inst.d:(i + 1) * inst.d] for i in range(inst.n)]
            exact = _raw_jacobian_series(model, arb(str(t_point)), Z, length)
            for m in range(length):
                for row in range(nd):
                    for col in range(nd):
                        value = exact[m][row][col]
                        assert _encloses(over[m][row, col], value), (k, m, row, col)
                        assert _encloses(by_entries[m][row, col], value), (k, m, row, col)
                        if k == 0:
                            assert _encloses(centre[m][row, col], value), (m, row, col)
                            resolved += value.rad() <= centre[m][row, col].rad()
    assert resolved >= length * nd * nd // 2  # the reference is the tighter ball mostly


@pytest.mark.parametrize("model", [
    Model(V=[["1/2", 1], [0, "-1/3"]], Q=[[1, 2], [0, 1]], K=[[1, 0], [1, 1]], beta="3/2"),
    Model(V=[[1, 0], [0, 1]], Q=[[1, 2], [0, 1]], K=[[1, 0], [1, 1]], mask="causal"),
    Model(heads=[{"V": [[1, 0], [0, 1]]}, {"V": [[0, 1], [-1, 0]], "Q": [[1, 1], [0, 1]]}],
          form="x"),
], ids=["rescaled", "causal", "two-heads"])
def test_jacobian_series_contains_the_entry_by_entry_series_at_twice_the_digits(model):
    """At a point, the series from products of coefficient matrices (128 bits) contains the
    entry-by-entry formulation's (``_series_by_entries``) at 256 bits — masks (a masked pair's
    attention is an exact 0) and several heads (their blocks summed) included."""
    X = [[1, "1/4"], ["-1/2", "3/4"], ["3/5", "4/5"], ["-1/5", "-9/10"]]
    t0 = Fraction(1, 3)
    values = {}
    for bits in (128, 256):
        with ctx.workprec(bits):
            spec = FieldSpec(model, 4)
            state = arb_mat([[arb(str(Fraction(v))) for v in row] for row in X])
            refs = spec.references(t0, state)
            jets = spec.jets(t0, state, 4, refs, attention=4)
            if bits == 128:
                values[bits] = jacobian_series(spec, jets, 4)
            else:
                values[bits] = _series_by_entries(spec, jets, _forms(spec, jets, 4), 4)
    for ours, reference in zip(values[128], values[256], strict=True):
        for u, v in zip(ours.entries(), reference.entries(), strict=True):
            assert u.contains(v)
            assert float(v.rad()) < 1e-60


@VARIANT_CASES
def test_float64_jets_contain_the_arb_jets_at_twice_the_digits(model):
    """Every variant's jets in float64 midpoint–radius balls (``FieldSpec(midrad=True)``; the
    scalar ``V = λI`` path is in STEP_CASES' adversarial-pull) over a box of states and a time
    interval contain the ``arb`` jets at 256 bits at points of it (its centre and corners by
    sign), state and attention coefficients alike."""
    order, attention = 8, 4
    X = [["1", "0.25"], ["-0.5", "0.75"], ["0.6", "0.8"]]
    with ctx.workprec(128):
        spec = FieldSpec(model, 3, midrad=True)
        centre = arb_mat([[arb(v) for v in row] for row in X])
        refs = spec.references(Fraction(1, 3), centre)
        box = arb_mat([[arb(v) + arb(0, "1e-4") for v in row] for row in X])
        times = dyadic_ball(Fraction(1, 3), Fraction(1, 3) + Fraction(1, 64))
        over = spec.jets(times, box, order, refs, attention=attention)
    assert over["arithmetic"] == "float64"  # not the fallback to arb
    rng = np.random.default_rng(3)
    with ctx.workprec(256):
        exact = FieldSpec(model, 3)
        for k in range(3):
            signs = rng.choice([-1, 1], size=(3, 2)) if k else np.zeros((3, 2), dtype=int)
            point = arb_mat([[arb(v) + int(s) * arb("1e-4") for v, s in zip(row, srow,
                                                                            strict=True)]
                             for row, srow in zip(X, signs, strict=True)])
            t = Fraction(1, 3) + Fraction(k, 128)
            ref = exact.jets(t, point, order, refs, attention=attention)
            for ours, theirs in zip(list(over["state"]) + sum(over["attention"], []),
                                    ref["state"] + sum(ref["attention"], []), strict=True):
                assert all(a.contains(b) for a, b in zip(ours.entries(), theirs.entries(),
                                                         strict=True)), k


def test_float64_jets_only_at_128_bits_coarse_tolerances_and_with_the_compiled_kernels(
        monkeypatch):
    """The policy: float64 balls for the proofs' 128-bit enclosures (2^-32, 2^-40), Arb for the
    256-bit escalation, for finer tolerances and without the compiled kernels; and a step's
    centre (an exact point) keeps Arb even then."""
    monkeypatch.setattr(fields, "compiled", lambda: True)
    assert fields.float64_jets(128, 2.0 ** -32) and fields.float64_jets(128, 2.0 ** -40)
    assert not fields.float64_jets(256, 2.0 ** -56)
    assert not fields.float64_jets(128, 2.0 ** -44)
    monkeypatch.setattr(fields, "compiled", lambda: False)
    assert not fields.float64_jets(128, 2.0 ** -32)
    model = Model(V=[[1]])
    with ctx.workprec(128):
        spec = FieldSpec(model, 3, midrad=True)
        point = arb_mat([[arb("0.5")], [arb("-0.25")], [arb(1)]])
        refs = spec.references(Fraction(0), point)
        assert spec.jets(Fraction(0), point, 4, refs)["arithmetic"] == "arb"
        box = arb_mat([[v + arb(0, "1e-6")] for v in point.entries()])
        assert spec.jets(Fraction(0), box, 4, refs)["arithmetic"] == "float64"


@pytest.mark.parametrize("rows, cols, orthonormal", [(6, 6, True), (36, 36, True),
                                                     (8, 3, True), (7, 4, False)])
def test_the_pseudo_inverse_contains_the_exact_one(rows, cols, orthonormal):
    """Lohner's pseudo-inverse (AᵀA)⁻¹Aᵀ of a float64-orthonormal Q (the Neumann-series
    enclosure) and of a matrix far from orthonormal (Arb's solve) contains the exact one,
    computed in exact rationals (FLINT's fmpq_mat) from the same float entries. Fails when
    the Neumann term η is dropped (the exact inverse differs from Qᵀ in the 16th digit)."""
    from flint import fmpq, fmpq_mat

    from verify.enclosure._enclosure import _pseudo_inverse

    rng = np.random.default_rng(rows * 100 + cols)
    M = rng.standard_normal((rows, cols))
    if orthonormal:
        M = np.linalg.qr(M)[0]
    else:
        M[:, 0] += 3 * M[:, 1]
    exact = fmpq_mat([[fmpq(*Fraction(float(v)).as_integer_ratio()) for v in row] for row in M])
    truth = (exact.transpose() * exact).solve(exact.transpose())
    with ctx.workprec(128):
        Y = _pseudo_inverse(arb_mat(M.tolist()))
    assert (Y.nrows(), Y.ncols()) == (cols, rows)
    with ctx.workprec(512):  # the rationals as (nearly exact) balls
        for i in range(cols):
            for j in range(rows):
                assert Y[i, j].contains(truth[i, j]), (i, j)
