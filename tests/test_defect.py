"""The defect-based local error of a DOP853 step (verify.flow.defect), against independent
routes: the quadrature rules against exact integrals of monomials, the dense output's derivative
against the field at the step's ends and a central difference of the interpolant, the local
error of a linear flow's step against its closed form ``y e^{hM}``, of a two-token step against
a 30-digit run, and the global estimate fed with it against the true error of a three-token run
(30 digits)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from verify.errors import InvalidArgument
from verify.flow.defect import DefectLocalError, quadrature
from verify.flow.dop853 import DOP853Stepper
from verify.flow.fields import EigenRescaledField
from verify.flow.global_error import EigenLinearisation, LinearisedGlobalError, StepDoubling
from verify.flow.simulate import simulate
from verify.model import Instance, Model

pytestmark = pytest.mark.numerics

M = np.array([[-1.0, 2.0, 0.3], [-2.0, -1.0, 0.0], [0.5, 0.1, 0.4]])


class _Linear:
    """``J v = v M`` of the linear field ``ẏ = y M``."""

    def apply(self, t, y, v):
        return v @ M


def _linear(t, y):
    return y @ M


@pytest.mark.parametrize("rule, points, degree", [("gauss", 4, 7), ("gauss", 5, 9),
                                                  ("lobatto", 5, 7), ("lobatto", 6, 9)])
def test_quadrature_is_exact_to_its_degree(rule, points, degree):
    # ∫_0^1 x^k dx = 1/(k+1); Gauss–Lobatto's end nodes (weight 2/(m(m−1)) on [−1, 1]) are
    # added back here, since the rule leaves them out
    x, w = quadrature(rule, points)
    ends = 1.0 / (points * (points - 1)) if rule == "lobatto" else 0.0
    assert np.all((0 < x) & (x < 1))
    for k in range(degree + 1):
        integral = float(w @ x**k) + ends * (0.0**k + 1.0)
        assert abs(integral - 1.0 / (k + 1)) <= 1e-14
    assert abs(float(w @ x ** (degree + 1)) + ends - 1.0 / (degree + 2)) > 1e-8


def test_dense_output_and_its_derivative_at_fractions_of_the_step():
    # p at the fractions is the interpolant's (the nested form, evaluated otherwise: to
    # round-off); p' is the field at the step's two ends (the interpolant matches f there) and
    # a central difference of the interpolant inside
    stepper = DOP853Stepper(_linear, 0.0, np.array([[1.0, 0.5, 0.2]]), 3.0, 1e-8, 1e-10)
    stepper.step()
    stepper.step()
    plain = stepper.interpolant()
    t0, t1 = stepper.t_old, stepper.t
    fractions = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    p, dp = stepper.dense_at(fractions)
    assert p.shape == dp.shape == (5, 1, 3)
    assert np.allclose(dp[0].ravel(), stepper.K[0], rtol=1e-13, atol=1e-15)
    assert np.allclose(dp[-1].ravel(), stepper.K[-1], rtol=1e-13, atol=1e-15)
    assert np.array_equal(p[-1], stepper.y) or np.allclose(p[-1], stepper.y, rtol=1e-15)
    for x, value, slope in zip(fractions, p, dp, strict=True):
        t, eps = t0 + x * (t1 - t0), 1e-5 * (t1 - t0)
        assert np.allclose(value, plain(t), rtol=1e-14, atol=0)
        if 0 < x < 1:
            difference = (plain(t + eps) - plain(t - eps)) / (2 * eps)
            assert np.allclose(slope, difference, rtol=1e-7, atol=0)


@pytest.mark.parametrize("rtol", [1e-9, 1e-11])
def test_local_error_of_a_linear_flow_step(rtol):
    # ẏ = y M: the step's true local error is y_{k+1} − y_k e^{hM}; with the J² term the
    # estimate is within 15 % of it (measured: 8–10 % at h ≈ 0.2, h|M| ≈ 0.5; 2.5 % at
    # h ≈ 0.12: the dropped terms are O((h|M|)²) relative; 32–79 % at h ≈ 0.37)
    stepper = DOP853Stepper(_linear, 0.0, np.array([[1.0, 0.5, 0.2]]), 3.0, rtol, 1e-12)
    checked = 0
    for _ in range(3):
        stepper.step()
        true = stepper.y - stepper.y_old @ expm((stepper.t - stepper.t_old) * M)
        if np.abs(true).max() < 1e-13:  # the first, small step: round-off size
            continue
        delta = DefectLocalError(_linear, _Linear(), terms=2).local_error(stepper)
        assert np.abs(delta - true).max() <= 0.15 * np.abs(true).max()
        checked += 1
    assert checked == 2


def test_local_error_of_a_two_token_step_against_a_30_digit_run():
    # the eigen-coordinate field of two tokens, the stepper's first step from t = 0 (its size
    # set to 0.4 before it: a rejection may shrink it) against the same instance at 30 digits:
    # within 5 % (measured: 0.5 %; without the J² term 1.7 %, R_0 alone 11 %)
    model = Model(V=[[1, 0.5], [0.5, -1]])
    field = EigenRescaledField(model, 2)
    z0 = np.array([[0.625, -0.25], [-0.125, 0.5]])
    stepper = DOP853Stepper(field, 0.0, field.to_w(z0), 3.0, 1e-6, 1e-9)
    stepper.h_abs = 0.4
    stepper.step()
    truth = simulate(Instance(model, z0.tolist()), stepper.t, checkpoints=[0, stepper.t],
                     precision=30, error_estimate=False, continuation=False)
    true = stepper.y - field.to_w(np.asarray(truth.z[-1], dtype=float))
    assert np.abs(true).max() > 1e-11  # far above round-off (~1e-16)
    delta = DefectLocalError(field, EigenLinearisation(field), terms=2).local_error(stepper)
    assert np.abs(delta - true).max() <= 0.05 * np.abs(true).max()


def test_the_defect_changes_nothing_in_the_run():
    # the dense output's extra stages have rows of their own: the accepted steps are the same,
    # bit for bit, with the defect computed after each (one code path, one process)
    field = EigenRescaledField(Model(V=[[1, 0.5], [0.5, -1]]), 3)
    w0 = field.to_w(np.array([[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]))
    defect = DefectLocalError(field, EigenLinearisation(field))
    runs = []
    for observe in (False, True):
        stepper = DOP853Stepper(field, 0.0, w0, 2.0, 1e-9, 1e-11)
        steps = []
        while stepper.status == "running":
            stepper.step()
            steps.append((stepper.t, stepper.y.copy()))
            if observe:
                defect.local_error(stepper)
        runs.append(steps)
    assert len(runs[0]) == len(runs[1])
    assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(*runs, strict=True))


def test_three_token_estimate_with_the_defect_is_tight():
    # the linearised global estimate fed with the defect's δ_k (signed) against the true error
    # at t = 1, 2, 3 (30 digits): within ×2 both ways (measured: within 2 %; DOP853's own
    # local estimate is ×9–×1000 above it on two tokens)
    model = Model(V=[[1, 0.5], [0.5, -1]])
    z0 = [[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]
    field = EigenRescaledField(model, 3)
    estimate = LinearisedGlobalError(EigenLinearisation(field), "rk4", keep=[1.0, 2.0, 3.0])
    defect = DefectLocalError(field, estimate.linearisation, terms=2, inner=estimate)
    stepper = DOP853Stepper(field, 0.0, field.to_w(np.array(z0)), 3.0, 1e-10, 1e-12)
    while stepper.status == "running":
        stepper.step()
        defect(stepper)
    times = [t for t, _, _ in estimate.kept]
    truth = simulate(Instance(model, z0), times[-1], checkpoints=[0, *times], precision=30,
                     error_estimate=False, continuation=False)
    for (_, w, e), z_true in zip(estimate.kept, truth.z[1:], strict=True):
        true = np.abs(w - field.to_w(np.asarray(z_true, dtype=float))).max()
        assert true > 1e-13  # far above round-off: the run's own error
        assert 0.5 * true <= np.abs(e).max() <= 2.0 * true


@pytest.mark.parametrize("terms", [0, 1, 2])
def test_local_error_is_the_sum_of_its_parts(terms):
    # local_error applies J_{k+1} once to M_1 + J_{k+1} R_2 (linearity); parts keeps the terms
    # apart: the same sum up to round-off
    field = EigenRescaledField(Model(V=[[1, 0.5], [0.5, -1]]), 3)
    w0 = field.to_w(np.array([[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]))
    stepper = DOP853Stepper(field, 0.0, w0, 2.0, 1e-8, 1e-11)
    defect = DefectLocalError(field, EigenLinearisation(field), terms=terms)
    for _ in range(4):
        stepper.step()
        parts = defect.parts(stepper)
        assert len(parts) == (1, 3, 4)[terms]
        total = sum(parts)
        assert np.abs(defect.local_error(stepper) - total).max() <= 1e-12 * np.abs(total).max()


def test_the_check_falls_back_to_step_doubling_at_its_extremes():
    # converged tiny: every step gets step doubling's δ_k, bit for bit; converged huge: none,
    # the parts' sum (the same terms as local_error, summed apart: round-off)
    field = EigenRescaledField(Model(V=[[1, 0.5], [0.5, -1]]), 3)
    w0 = field.to_w(np.array([[0.6, -0.2], [-0.1, 0.5], [0.3, 0.3]]))
    stepper = DOP853Stepper(field, 0.0, w0, 2.0, 1e-8, 1e-11)
    always = DefectLocalError(field, EigenLinearisation(field), converged=1e-300)
    never = DefectLocalError(field, EigenLinearisation(field), converged=1e300)
    plain = DefectLocalError(field, EigenLinearisation(field))
    for _ in range(4):
        stepper.step()
        doubled = StepDoubling(field).local_error(stepper.t_old, stepper.y_old, stepper.t,
                                                  stepper.y, stepper.K[0].reshape(w0.shape))
        assert np.array_equal(always.local_error(stepper), doubled)
        delta = plain.local_error(stepper)
        assert np.abs(never.local_error(stepper) - delta).max() <= 1e-12 * np.abs(delta).max()
    assert all(always.fell_back) and not any(never.fell_back)
    assert always.evaluations == 4 * (3 + 5 + 23) and never.evaluations == 4 * (3 + 5)


def test_bad_input_is_named():
    with pytest.raises(InvalidArgument, match="rule"):
        quadrature("simpson", 3)
    with pytest.raises(InvalidArgument, match="at least 3"):
        quadrature("lobatto", 2)
    with pytest.raises(InvalidArgument, match="terms"):
        DefectLocalError(_linear, _Linear(), terms=3)
    with pytest.raises(InvalidArgument, match="linearisation"):
        DefectLocalError(_linear, None, terms=1)
    with pytest.raises(InvalidArgument, match="converged"):
        DefectLocalError(_linear, _Linear(), terms=1, converged=0.25)
