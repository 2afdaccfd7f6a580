"""The linearised global error estimate (verify.flow.global_error), against independent routes:
the local error of a step by step doubling against a linear flow's closed form and a 30-digit
run, the field's derivative against a 50-digit central difference of the z-form field (3.1)
written here with mpmath (its own ``e^{tV}``), the propagation against the closed form of a
linear flow, and the whole estimate against the true error of a two-token run (a 30-digit arb
run)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy.linalg import expm

from verify.errors import InvalidArgument
from verify.flow.fields import EigenRescaledField, VectorField
from verify.flow.global_error import (
    EigenLinearisation,
    LinearisedGlobalError,
    ScreenedDoubling,
    StepDoubling,
    attention_change,
    dop853_step,
)
from verify.flow.simulate import simulate
from verify.flow.solvers import DOP853, StepController, dop853_local_error
from verify.model import Instance, Model
from verify.numerics import Float64

pytestmark = pytest.mark.numerics


def mp_rescaled_field(V, Q, K, t, z):
    """``ż_i = Σ_j P_ij V (z_j − z_i)``, ``P_i· = softmax_j ⟨Q e^{tV} z_i, K e^{tV} z_j⟩``
    (the rescaled form (3.1), β = 1) in mpmath at the current precision."""
    E = mpmath.expm(t * V)
    n = z.rows
    x = [E * z[i, :].T for i in range(n)]
    out = mpmath.matrix(n, z.cols)
    for i in range(n):
        scores = [((Q * x[i]).T * (K * x[j]))[0] for j in range(n)]
        top = max(scores)
        weights = [mpmath.exp(s - top) for s in scores]
        total = mpmath.fsum(weights)
        row = sum(((w / total) * (V * (z[j, :] - z[i, :]).T) for j, w in enumerate(weights)),
                  mpmath.matrix(z.cols, 1))
        out[i, :] = row.T
    return out


@pytest.mark.parametrize("Q, K", [(None, None), ([[1, 0.5], [0, 1]], [[2, 0], [1, 1]])])
def test_jvp_is_the_derivative_of_the_field_at_50_digits(Q, K):
    V = [[1, 0.25], [0.25, -0.5]]
    model = Model(V=V, Q=Q, K=K)
    field = EigenRescaledField(model, 3)
    z = np.array([[0.9, -0.3], [0.1, 0.7], [-0.6, 0.2]])
    dz = np.array([[0.3, 0.1], [-0.2, 0.5], [0.4, -0.1]])
    t = 0.7
    with mpmath.workdps(50):
        mats = [mpmath.matrix(np.eye(2).tolist() if M is None else M) for M in (Q, K)]
        Vm = mpmath.matrix(V)
        eps = mpmath.mpf("1e-20")
        zm, dzm = mpmath.matrix(z.tolist()), mpmath.matrix(dz.tolist())
        fd = (mp_rescaled_field(Vm, *mats, t, zm + eps * dzm)
              - mp_rescaled_field(Vm, *mats, t, zm - eps * dzm)) / (2 * eps)
        value = mp_rescaled_field(Vm, *mats, t, zm)
    fd = np.array(fd.tolist(), dtype=float)
    # the z-form field of the library agrees with the one written here (same model)
    assert np.allclose(VectorField(model, 3, Float64())(t, z), np.array(value.tolist(), float),
                       rtol=0, atol=1e-14)
    jv_w = EigenLinearisation(field).apply(t, field.to_w(z), field.to_w(dz))
    assert np.allclose(field.to_z(jv_w), fd, rtol=0, atol=1e-13 * np.abs(fd).max())
    jv_32 = EigenLinearisation(field, np.float32).apply(t, field.to_w(z), field.to_w(dz))
    assert jv_32.dtype == np.float64
    assert np.allclose(field.to_z(jv_32), fd, rtol=0, atol=1e-5 * np.abs(fd).max())


def test_float32_products_fall_back_where_the_scale_leaves_float32():
    # e^L with L = 2 μ t = 100 is beyond float32 (max ~e^88): the point is done in float64
    field = EigenRescaledField(Model(V=[[1, 0.25], [0.25, -0.5]]), 3)
    w = np.array([[0.9, -0.3], [0.1, 0.7], [-0.6, 0.2]])
    v = np.array([[0.3, 0.1], [-0.2, 0.5], [0.4, -0.1]])
    t = 50.0 / field.mu
    exact = EigenLinearisation(field).apply(t, w, v)
    single = EigenLinearisation(field, np.float32).apply(t, w, v)
    assert np.all(np.isfinite(single)) and np.array_equal(single, exact)


def test_propagation_of_given_local_errors_matches_the_linear_flow():
    # ė = M e on a uniform grid with local errors δ_k added: e_N = Σ_k exp((t_N − t_k) M) δ_k
    M = np.array([[1.0, 2.0], [-1.5, -2.0]])

    class Linear:
        def apply(self, t, y, v):
            return v @ M.T

    rng = np.random.default_rng(1)
    deltas = rng.standard_normal((100, 1, 2)) * 1e-9
    h = 0.02
    exact = sum(d @ expm((100 - (k + 1)) * h * M).T for k, d in enumerate(deltas))
    for method, tolerance in (("heun", 1e-3), ("rk4", 1e-8)):
        estimate = LinearisedGlobalError(Linear(), method)
        y = np.zeros((1, 2))
        for k, d in enumerate(deltas):
            estimate(k * h, y, (k + 1) * h, y, y, y, d)
        assert np.allclose(estimate.error, exact, rtol=0, atol=tolerance * np.abs(exact).max())


def test_linear_flow_estimate_covers_its_true_error():
    # ẏ = M y, a rotation (20 turns), has e^{tM} y0. DOP853's local error
    # estimates propagated by ė = M e (RK4) against the run's true error: they cover it, and
    # not by orders of magnitude; summed without the propagation they fall below it (the phase
    # errors add up along the turning solution while the local errors turn with it).
    M = np.array([[0.0, 2 * np.pi], [-2 * np.pi, 0.0]])

    class Linear:
        def apply(self, t, y, v):
            return v @ M.T

    class Unpropagated:
        def apply(self, t, y, v):
            return 0 * v

    y0 = np.array([[1.0, -0.5]])
    norms = {}
    for linearisation in (Linear(), Unpropagated()):
        estimate = LinearisedGlobalError(linearisation, "rk4")
        segment = DOP853(observer=estimate).segment(lambda t, y: y @ M.T, None, [0.0, 20.0],
                                                    1, 0.0, y0, StepController(1e-9, 1e-11))
        norms[type(linearisation)] = estimate.norms[-1]
        assert estimate.times[-1] == 20.0 and len(estimate.times) == segment.steps > 200
    true = np.abs(segment.states[-1] - y0 @ expm(20.0 * M).T).max()
    assert true <= norms[Linear] <= 100 * true
    assert norms[Unpropagated] < true


def _true_and_estimated(model, z0, field, estimate):
    """At each step end the estimate kept: the run's true error (max-norm, eigen-coordinates,
    against the same instance at 30 digits) and the estimated error ``e``."""
    times = [t for t, _, _ in estimate.kept]
    truth = simulate(Instance(model, z0), times[-1], checkpoints=[0, *times], precision=30,
                     error_estimate=False, continuation=False)
    for (_, w, e), z_true in zip(estimate.kept, truth.z[1:], strict=True):
        yield np.abs(w - field.to_w(np.asarray(z_true, dtype=float))).max(), e


def test_two_token_estimate_against_a_30_digit_run():
    # the eigen-field run of two tokens, its estimate at the step ends at or after t = 1, 2, 3
    # against the same instance at 30 digits (the arb extrapolation run): it covers the true
    # error (measured: by ×9 at t ≈ 1 to ×1000 at t = 3, DOP853's local estimate being of order
    # 8 for a local error of order 9 — an over-estimate, see the module's docstring)
    model = Model(V=[[1, 0.5], [0.5, -1]])
    z0 = [[0.6, -0.2], [-0.1, 0.5]]
    field = EigenRescaledField(model, 2)
    estimate = LinearisedGlobalError(EigenLinearisation(field), "rk4", keep=[1.0, 2.0, 3.0])
    DOP853(observer=estimate).segment(field, None, [0.0, 3.0], 1, 0.0,
                                      field.to_w(np.array(z0)), StepController(1e-10, 1e-12))
    for true, e in _true_and_estimated(model, z0, field, estimate):
        assert true > 1e-13  # far above round-off: the run's own error
        assert true <= np.abs(e).max()


def test_dop853_local_error_is_scipys_estimate():
    from scipy.integrate import DOP853 as SciPyDOP853

    M = np.array([[0.3, 2.0], [-2.0, -0.1]])
    solver = SciPyDOP853(lambda t, y: M @ y, 0.0, np.array([1.0, -0.5]), 3.0, rtol=1e-6)
    for _ in range(5):
        solver.step()
        h = solver.t - solver.t_old
        assert np.allclose(dop853_local_error(solver, h), solver._estimate_error(solver.K, h),
                           rtol=1e-12, atol=0)


def test_an_observer_changes_nothing_in_the_run():
    # the observer only reads the accepted steps: the same states, bit for bit, and the same
    # counts as the run without it (one code path, one process)
    field = EigenRescaledField(Model(V=[[1, 0.5], [0.5, -1]]), 3)
    w0 = field.to_w(np.array([[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]))
    runs = [DOP853(observer=observer).segment(field, None, [0.0, 1.0, 2.0], 1, 0.0, w0,
                                              StepController(1e-9, 1e-11))
            for observer in (None, LinearisedGlobalError(EigenLinearisation(field)))]
    assert runs[0].stats == runs[1].stats
    assert all(np.array_equal(a, b) for a, b in zip(runs[0].states, runs[1].states, strict=True))


class _Recorder:
    """An observer's ``inner`` that keeps the local errors it is handed, per step."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, float, np.ndarray]] = []

    def __call__(self, t0, y0, t1, y1, f0, f1, local_error) -> None:
        self.steps.append((t0, t1, local_error.copy()))


@pytest.mark.parametrize("h", [0.5, 0.25])
def test_step_doubling_is_the_local_error_of_a_linear_flow(h):
    # ẏ = y Λ: the exact flow is y e^{hΛ}, so the true local error of a DOP853 step is known;
    # step doubling recovers it (sign and size) to O(h), DOP853's embedded estimate does not
    lam = np.array([[-1.0, 1.0, 3.0]])

    def fun(t, y):
        return y * lam

    y0 = np.array([[1.0, -0.5, 0.25]])
    y1 = dop853_step(fun, 0.0, y0, fun(0.0, y0), h)
    true = y1 - y0 * np.exp(h * lam)
    assert np.all(np.abs(true) > 1e-13)  # far above round-off (~1e-16 · |y|)
    estimate = StepDoubling(fun, None).local_error(0.0, y0, h, y1, fun(0.0, y0))
    assert np.allclose(estimate, true, rtol=0.1 * h, atol=0)


def test_step_doubling_of_a_two_token_step_against_a_30_digit_run():
    # the z-form field of two tokens (dyadic data, exact in float64): one DOP853 step of h from
    # t = 0 against the same instance at 30 digits (arb extrapolation) is the step's true local
    # error; step doubling recovers it
    model = Model(V=[[1, 0.5], [0.5, -1]])
    z0 = np.array([[0.625, -0.25], [-0.125, 0.5]])
    field = VectorField(model, 2, Float64())
    f0 = field(0.0, z0)
    for h in (0.5, 0.75):
        truth = simulate(Instance(model, z0.tolist()), h, checkpoints=[0, h], precision=30,
                         error_estimate=False, continuation=False)
        y1 = dop853_step(field, 0.0, z0, f0, h)
        true = y1 - np.asarray(truth.z[-1], dtype=float)
        assert np.abs(true).max() > 1e-11  # far above round-off (~1e-16)
        doubled = StepDoubling(field, None).local_error(0.0, z0, h, y1, f0)
        assert np.abs(doubled - true).max() <= 0.05 * np.abs(true).max()


def test_two_token_estimate_with_step_doubling_is_tight():
    # as test_two_token_estimate_against_a_30_digit_run, with the local errors by step doubling:
    # the estimate is within ×2 of the true error both ways (measured: within 0.3 %; DOP853's
    # own local estimate is ×9–×1000 above it on the same run)
    model = Model(V=[[1, 0.5], [0.5, -1]])
    z0 = [[0.6, -0.2], [-0.1, 0.5]]
    field = EigenRescaledField(model, 2)
    estimate = LinearisedGlobalError(EigenLinearisation(field), "rk4", keep=[1.0, 2.0, 3.0])
    segment = DOP853(observer=StepDoubling(field, estimate)).segment(
        field, None, [0.0, 3.0], 1, 0.0, field.to_w(np.array(z0)), StepController(1e-10, 1e-12))
    assert len(estimate.times) == segment.steps
    for true, e in _true_and_estimated(model, z0, field, estimate):
        assert true > 1e-13
        assert 0.5 * true <= np.abs(e).max() <= 2.0 * true


def test_the_products_kept_for_three_points_are_those_of_each_point():
    # a step's start, middle and end are kept; a fourth point evicts the oldest, and a point
    # asked again gives the products a fresh linearisation gives (no stale parts)
    field = EigenRescaledField(Model(V=[[1, 0.25], [0.25, -0.5]], Q=[[1, 0.5], [0, 1]]), 3)
    rng = np.random.default_rng(3)
    points = [(0.1 * k, rng.standard_normal((3, 2))) for k in range(5)]
    v = rng.standard_normal((3, 2))
    kept = EigenLinearisation(field)
    for t, w in [*points, points[2], points[0], points[4]]:
        assert np.array_equal(kept.apply(t, w, v), EigenLinearisation(field).apply(t, w, v))
        assert np.array_equal(kept.weights(t, w), field.attention(t, w))


def test_attention_change_of_hand_made_weights():
    A = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [1.0, 0.0, 0.0]])
    assert attention_change(A, A) == (0.0, 0.0)
    # row 1's leaders cross (gap log(5/3) → log(3/5)): the gap moves by twice its size
    B = np.array([[0.7, 0.2, 0.1], [0.3, 0.5, 0.2], [1.0, 0.0, 0.0]])
    change, crossing = attention_change(A, B)
    assert change == pytest.approx(0.4, abs=1e-15) and crossing == pytest.approx(2.0, rel=1e-12)
    # a row whose second weight stays below 1e-20 does not count, whatever its gap does
    C, D = A.copy(), A.copy()
    C[2], D[2] = [1.0, 1e-25, 0.0], [1.0, 1e-40, 0.0]
    assert attention_change(C, D) == (pytest.approx(1e-25, abs=1e-30), 0.0)
    # a gap that doubles (e^1 → e^2 between the leaders) moves by its size
    E = np.array([[np.e, 1.0], [1.0, 1.0]]) / np.array([[np.e + 1], [2.0]])
    F = np.array([[np.e ** 2, 1.0], [1.0, 1.0]]) / np.array([[np.e ** 2 + 1], [2.0]])
    assert attention_change(E, F)[1] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("added", ["aligned", "entrywise"])
def test_local_errors_added_without_cancellation(added):
    # J = 0: e_N is the sum of the δ_k, here with alternating signs (the signed sum cancels to
    # 0); "entrywise" adds |δ_k| in every entry, "aligned" keeps |e|² ≥ Σ |δ_k|²
    class Zero:
        def apply(self, t, y, v):
            return 0.0 * v

    delta = np.array([[1e-9, -2e-9]])
    deltas = [delta, -delta] * 5
    estimates = {way: LinearisedGlobalError(Zero(), "heun") for way in ("signed", added)}
    y = np.zeros((1, 2))
    for k, d in enumerate(deltas):
        for way, estimate in estimates.items():
            estimate(k * 0.1, y, (k + 1) * 0.1, y, y, y, d, way)
    assert np.array_equal(estimates["signed"].error, np.zeros((1, 2)))
    error = estimates[added].error
    if added == "entrywise":
        assert np.allclose(np.abs(error), 10 * np.abs(delta), rtol=1e-15, atol=0)
    else:
        assert np.sum(error ** 2) >= 10 * np.sum(delta ** 2) * (1 - 1e-15)
    with pytest.raises(InvalidArgument, match="added must be"):
        estimates[added](1.0, y, 1.1, y, y, y, delta, "absolute")


def test_screened_doubling_is_step_doubling_or_dop853_at_its_extremes():
    # thresholds 0 double every step: the estimate is StepDoubling's, bit for bit; thresholds
    # ∞ double none: it is DOP853's estimate added as asked
    field = EigenRescaledField(Model(V=[[1, 0.5], [0.5, -1]]), 3)
    w0 = field.to_w(np.array([[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]))

    def run(observer):
        DOP853(observer=observer).segment(field, None, [0.0, 2.0], 1, 0.0, w0,
                                          StepController(1e-9, 1e-11))
        return observer

    def estimate():
        return LinearisedGlobalError(EigenLinearisation(field), "rk4")

    every = run(ScreenedDoubling(field, estimate(), change=0.0, crossing=0.0))
    assert all(every.doubled)
    assert np.array_equal(every.inner.error, run(StepDoubling(field, estimate())).inner.error)
    none = run(ScreenedDoubling(field, estimate(), change=np.inf, crossing=np.inf,
                                added="entrywise"))
    assert not any(none.doubled)
    plain = estimate()
    run(lambda *step: plain(*step, "entrywise"))
    assert np.array_equal(none.inner.error, plain.error)


def test_screened_estimate_of_a_three_token_run_against_a_30_digit_run():
    # the leaders of the three rows change within the run (screened steps in it): the screened
    # estimate covers the true error at t = 1, 2, 3 and is within ×100 of it
    model = Model(V=[[1, 0.5], [0.5, -1]])
    z0 = [[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]
    field = EigenRescaledField(model, 3)
    estimate = LinearisedGlobalError(EigenLinearisation(field), "heun", keep=[1.0, 2.0, 3.0])
    screened = ScreenedDoubling(field, estimate, change=np.inf, crossing=3.0)
    DOP853(observer=screened).segment(field, None, [0.0, 3.0], 1, 0.0,
                                      field.to_w(np.array(z0)), StepController(1e-10, 1e-12))
    assert 0 < sum(screened.doubled) < len(screened.doubled)
    for true, e in _true_and_estimated(model, z0, field, estimate):
        assert true > 1e-13
        assert true <= np.abs(e).max() <= 100 * true
