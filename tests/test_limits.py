"""Observed limits and fitted rates (verify.analysis.observed_limits, verify.numerics._fits),
against closed forms.

Synthetic sequences have known limits, rates and exponents; noise is uniform in [-σ, σ] and
passed as the error estimate σ (a bound, as for a trajectory's error estimate). Weighted lines
are checked against the least-squares formulas in exact rational arithmetic. The end-to-end
test compares the limit fitted on a run to T = 12 with a run to T = 25 and its own error
estimate (an independent route: a different horizon, not an extrapolation).
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import verify.analysis.observed_limits
from verify.analysis.observed_limits import (
    KINDS,
    compatible,
    coverage_factor,
    distance_with_error,
    fit_doubly_exponential,
    fit_exponential_convergence,
    fit_power_law,
    projected_limits,
    separated,
    token_limits,
)
from verify.errors import InvalidArgument
from verify.flow.trajectory import Trajectory
from verify.numerics import _fits
from verify.numerics._fits import fit_line, line_rejected, log_error

T = np.linspace(0.0, 12.0, 25)
V_INF = np.array([1.0, -2.0])
AMP = np.array([0.8, 0.3])


def _exp_series(rate=1.0, sigma=0.0, seed=0, t=T):
    rng = np.random.default_rng(seed)
    clean = V_INF + AMP * np.exp(-rate * t)[:, None]
    return clean + sigma * rng.uniform(-1, 1, clean.shape)


# ----------------------------------------------------------------------- exponential fits
@pytest.mark.parametrize("sigma", [0.0, 1e-10, 1e-8, 1e-7])
def test_exponential_recovers_rate_and_limit_within_bars(sigma):
    rate = 0.9
    rate_dev, rate_err = [], []
    for seed in range(20):
        v = _exp_series(rate, sigma, seed)
        fit = fit_exponential_convergence(T, v, errors=sigma or None)
        assert fit.kind == "exponential" and fit.stabilised, fit.reason
        lo, hi = fit.rate_interval
        assert lo <= rate <= hi
        assert np.max(np.abs(fit.limit - V_INF)) <= fit.limit_error
        # the bar covers the whole way from the last value (the correction's direction is not
        # trusted), and is not absurdly larger than that way
        last_distance = np.max(np.abs(v[-1] - V_INF))
        assert last_distance <= fit.limit_error <= 10 * (last_distance + sigma)
        rate_dev.append(abs(fit.rate - rate))
        rate_err.append(fit.rate_error)
    if sigma > 0:  # calibration of the standard error (noise-free deviations are round-off)
        assert np.mean(rate_err) <= 10 * np.mean(rate_dev)


def test_exponential_nonuniform_grid_and_subleading_mode():
    t = np.sort(np.concatenate([[0.0, 12.0], np.random.default_rng(1).uniform(0, 12, 30)]))
    fit = fit_exponential_convergence(t, 3 - 2 * np.exp(-0.7 * t))
    assert fit.kind == "exponential" and abs(fit.rate - 0.7) < 1e-9
    assert abs(fit.limit - 3) <= fit.limit_error <= 10 * 2 * math.exp(-0.7 * 12)
    v = V_INF + AMP * np.exp(-T)[:, None] + 0.5 * np.exp(-2 * T)[:, None]
    fit = fit_exponential_convergence(T, v)
    assert fit.kind == "exponential" and fit.stabilised
    # the rate is the effective rate over the tail [6, 12]: the e^{-2t} mode biases it upwards
    # by about (0.5/0.8) e^{-7}, more than its (residual-based) error bar
    assert 1.0 < fit.rate < 1.0 + 0.625 * math.exp(-7)
    assert np.max(np.abs(fit.limit - V_INF)) <= fit.limit_error


def test_reaching_the_error_floor():
    t = np.linspace(0, 40, 81)
    v = 1 + np.exp(-t)
    fit = fit_exponential_convergence(t, v, errors=1e-12)
    assert fit.kind == "converged-to-error" and fit.stabilised
    assert abs(fit.limit - 1) <= fit.limit_error <= 1e-11
    fit = fit_exponential_convergence(t, v)  # float64 resolution only
    assert fit.kind == "converged-to-error" and abs(fit.limit - 1) <= fit.limit_error <= 1e-14
    fit = fit_exponential_convergence(t, np.zeros((81, 3)))  # exactly at the limit
    assert fit.kind == "converged-to-error" and fit.limit_error == 0.0
    assert fit.limit.tolist() == [0.0, 0.0, 0.0]


def test_infinite_error_in_the_tail_is_inconclusive():
    """A reference with no finite value (its ball lost every digit) gives an error of +inf: the
    fit says so instead of raising, and it uses only the tail (multi-head
    three-heads-generic-qk#2 of seed 7: the arb reference was NaN from t = 26.5 on, and the
    instance turned into an error)."""
    t = np.linspace(0, 20, 41)
    v = 1 + np.exp(-t)
    e = np.full(41, 1e-12)
    e[35:] = np.inf
    fit = fit_exponential_convergence(t, v, errors=e)
    assert fit.kind == "inconclusive" and not fit.stabilised and fit.limit_error == math.inf
    assert "infinite from t = 17.5" in fit.reason
    e[35:], e[:5] = 1e-12, np.inf  # before the tail: the fit is the one without it
    assert fit_exponential_convergence(t, v, errors=e) == fit_exponential_convergence(
        t, v, errors=np.full(41, 1e-12))
    e[-1] = np.inf  # a power law drops the point, as any point below its error
    power = fit_power_law(t[1:], v[1:], errors=e[1:])  # the tail: 20 points
    assert power.n_points == 19 and "1 of 20 points dropped" in power.reason


def test_constant_within_errors_is_converged_to_error():
    rng = np.random.default_rng(2)
    v = 0.5 + 1e-9 * rng.uniform(-1, 1, (20, 2))
    fit = fit_exponential_convergence(np.arange(20.0), v, errors=1e-9)
    assert fit.kind == "converged-to-error" and fit.stabilised
    assert np.max(np.abs(fit.limit - 0.5)) <= fit.limit_error <= 4e-9
    assert math.isnan(fit.rate)


def test_diverging_and_stalled():
    t = np.arange(12.0)
    fit = fit_exponential_convergence(t, np.exp(0.3 * t))
    assert fit.kind == "diverging" and not fit.stabilised and fit.limit_error == math.inf
    assert abs(-fit.rate - 0.3) < 1e-9
    fit = fit_exponential_convergence(t, np.where(t > 9, np.inf, t))
    assert fit.kind == "diverging" and "infinite" in fit.reason
    fit = fit_exponential_convergence(t, np.stack([1 + 0.5 * t, -t], axis=1))
    assert fit.kind == "stalled" and not fit.stabilised and fit.limit_error == math.inf
    fit = fit_exponential_convergence(np.linspace(0, 20, 41), np.cos(3 * np.linspace(0, 20, 41)))
    assert fit.kind == "stalled" and not fit.stabilised


def test_slow_exponential_is_not_stabilised():
    t = np.linspace(0, 12, 25)
    fit = fit_exponential_convergence(t, np.exp(-0.02 * t))
    assert fit.kind == "exponential" and not fit.stabilised
    assert "integrate longer" in fit.reason
    assert abs(fit.limit) <= fit.limit_error  # the bound still holds


def test_power_law_is_not_taken_for_exponential():
    t = np.linspace(1, 12, 25)
    fit = fit_exponential_convergence(t, 1 / np.sqrt(t))
    assert fit.kind == "power-law" and not fit.stabilised and fit.limit_error == math.inf
    assert set(KINDS) >= {fit.kind}


def test_too_few_points_is_inconclusive():
    fit = fit_exponential_convergence([0, 1, 2, 3, 4], np.exp(-np.arange(5.0)))
    assert fit.kind == "inconclusive" and not fit.stabilised
    assert "only 3 checkpoints" in fit.reason and "at least 4" in fit.reason
    fit = fit_exponential_convergence(np.arange(6.0), np.exp(-np.arange(6.0)), tail=6)
    assert fit.kind == "exponential"
    # resolved differences too few: the tail hits the error floor right away
    v = np.array([1.0, 0.5, 0.3, 0.3, 0.3, 0.3])
    fit = fit_exponential_convergence(np.arange(6.0), v, errors=1e-3, tail=6)
    assert fit.kind == "converged-to-error"  # three unresolved differences at the end
    fit = fit_exponential_convergence(np.arange(6.0), [1.0, 0.5, 0.3, 0.2, 0.15, 0.15],
                                      errors=1e-3, tail=6)
    assert fit.kind == "inconclusive" and "no decay could be fitted" in fit.reason


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (([0, 1, 1, 2], np.ones(4)), {}, "strictly increasing"),
    (([0, 1, 2], np.ones(4)), {}, "must start with m"),
    (([0, 1, 2, 3], [1, np.nan, 1, 1]), {}, "NaN"),
    (([0, 1, 2, 3], np.ones(4), -1.0), {}, "errors must be ≥ 0"),
    (([0, 1, 2, 3], np.ones(4), [0, np.nan, 0, 0]), {}, "errors must be ≥ 0"),
    (([0, 1, 2, 3], np.ones(4), np.ones(3)), {}, "errors.shape"),
    (([0, 1, 2, 3], np.ones(4)), {"tail": 1.5}, "fraction in"),
    (([0, 1, 2, 3], np.ones(4)), {"tail": True}, "tail=True"),
    (([0, 1, 2, 3], np.ones(4)), {"tail": 1}, "at least 2"),
])
def test_invalid_input(args, kwargs, match):
    with pytest.raises(InvalidArgument, match=match):
        fit_exponential_convergence(*args, **kwargs)


# ----------------------------------------------------------------------- other laws
def test_doubly_exponential_slope_one():
    t = np.linspace(0, 5, 21)
    fit = fit_doubly_exponential(t, np.exp(-2 * np.exp(t)))
    assert fit.ok and abs(fit.slope - 1) <= fit.coverage * fit.slope_error + 1e-12
    assert abs(fit.intercept - math.log(2)) < 1e-9
    # beyond float64: log-gaps (as from scaled scores); the gaps themselves underflow
    t = np.linspace(0, 12, 25)
    fit = fit_doubly_exponential(t, -2 * np.exp(t), log=True)
    assert abs(fit.slope - 1) < 1e-12 and fit.n_points == 13
    fit = fit_doubly_exponential(t, np.exp(-2 * np.exp(t)))
    assert not fit.ok and "dropped" in fit.reason
    # relative noise 1e-3 on the gaps: slope still within its bar
    rng = np.random.default_rng(3)
    g = np.exp(-2 * np.exp(np.linspace(0, 5, 21))) * (1 + 1e-3 * rng.uniform(-1, 1, 21))
    fit = fit_doubly_exponential(np.linspace(0, 5, 21), g, errors=1e-3 * np.abs(g))
    assert abs(fit.slope - 1) <= fit.coverage * fit.slope_error


def test_power_law_exponent():
    t = np.linspace(1, 100, 60)
    fit = fit_power_law(t, 3 / np.sqrt(t))
    assert abs(fit.slope + 0.5) < 1e-12 and abs(math.exp(fit.intercept) - 3) < 1e-9
    rng = np.random.default_rng(4)
    v = (2 * t ** -0.5)[:, None] * np.array([1.0, 0.3]) + 1e-4 * rng.uniform(-1, 1, (60, 2))
    fit = fit_power_law(t, v, errors=1e-4)
    assert abs(fit.slope + 0.5) <= fit.coverage * fit.slope_error
    assert fit.slope_error < 0.01
    with pytest.raises(InvalidArgument, match="t > 0"):
        fit_power_law(np.arange(4.0), np.ones(4), tail=1.0)


def test_coverage_factor():
    assert abs(coverage_factor(10**7) - 3) < 1e-4
    assert coverage_factor(1) > coverage_factor(5) > coverage_factor(50) > 3
    assert coverage_factor(0) == math.inf
    # closed forms of the Student-t quantile at p = (1 + CONFIDENCE)/2 for 1 and 2 degrees
    with mpmath.workdps(30):
        conf = mpmath.erf(3 / mpmath.sqrt(2))
        p = (1 + conf) / 2
        t1 = float(mpmath.tan(mpmath.pi * conf / 2))
        t2 = float((2 * p - 1) / mpmath.sqrt(2 * p * (1 - p)))
    assert coverage_factor(1) == pytest.approx(t1, rel=1e-9)
    assert coverage_factor(2) == pytest.approx(t2, rel=1e-9)


# ----------------------------------------------------------------------- weighted lines
def _exact_wls(x, y, var):
    """(slope, intercept, var slope, var intercept, chi²) of the weighted line, in rationals."""
    xs, ys, ws = ([Fraction(float(a)) for a in x], [Fraction(float(b)) for b in y],
                  [1 / Fraction(float(v)) for v in var])
    sw = sum(ws)
    xbar = sum(w * a for w, a in zip(ws, xs, strict=True)) / sw
    ybar = sum(w * b for w, b in zip(ws, ys, strict=True)) / sw
    sxx = sum(w * (a - xbar) ** 2 for w, a in zip(ws, xs, strict=True))
    slope = sum(w * (a - xbar) * (b - ybar) for w, a, b in zip(ws, xs, ys, strict=True)) / sxx
    intercept = ybar - slope * xbar
    chi2 = sum(w * (b - slope * a - intercept) ** 2 for w, a, b in zip(ws, xs, ys, strict=True))
    return slope, intercept, 1 / sxx, 1 / sw + xbar**2 / sxx, chi2


@pytest.mark.parametrize("seed", range(5))
def test_fit_line_matches_exact_weighted_least_squares(seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, 12))
    dy = 10.0 ** rng.uniform(-3, -1, 12)                   # unequal errors
    y = 0.7 * x - 2 + dy * rng.uniform(-1, 1, 12)          # residuals explained by the errors
    fit = fit_line(x, y, dy)
    slope, intercept, var_slope, var_intercept, chi2 = _exact_wls(x, y, dy**2)
    assert chi2 <= 10 and fit.scatter == 0.0 and fit.ok and fit.n_points == 12
    assert fit.slope == pytest.approx(float(slope), rel=1e-13)
    assert fit.intercept == pytest.approx(float(intercept), rel=1e-13)
    assert fit.slope_error == pytest.approx(math.sqrt(var_slope), rel=1e-13)
    assert fit.intercept_error == pytest.approx(math.sqrt(var_intercept), rel=1e-13)
    assert fit.coverage == coverage_factor(10)
    lo, hi = fit.slope_interval
    assert lo == fit.slope - fit.coverage * fit.slope_error and hi > fit.slope > lo
    assert lo <= 0.7 <= hi


def test_fit_line_intrinsic_scatter():
    x = np.arange(8.0)
    y = 2 * x + 1 + (-1) ** x                               # misfit ±1 ≫ the stated 0.1
    fit = fit_line(x, y, 0.1)
    tau2 = fit.scatter**2
    # τ is the smallest scatter giving χ² ≤ n − 2 (to the bisection's relative 1e-9 in τ²)
    assert _exact_wls(x, y, np.full(8, 0.01 + tau2))[4] <= 6
    assert _exact_wls(x, y, np.full(8, 0.01 + tau2 * (1 - 1e-8)))[4] > 6
    # exact data with a misfit get the ordinary least-squares standard error s/√Sxx
    fit = fit_line(x, y, 0.0)
    slope, _, inv_sxx, _, rss = _exact_wls(x, y, np.ones(8))   # unit weights: χ² is the RSS
    assert fit.slope == pytest.approx(float(slope), rel=1e-13)
    # (to the bisection's relative 1e-9 in τ²)
    assert fit.slope_error == pytest.approx(math.sqrt(rss / 6 * inv_sxx), rel=1e-9)


def test_fit_line_few_points_and_invalid_input():
    fit = fit_line([0.0, 1.0], [1.0, 2.0], 0.1, "3 of 5 points dropped")
    assert not fit.ok and math.isnan(fit.slope) and fit.coverage == math.inf
    assert fit.reason.startswith("3 of 5 points dropped; only 2 usable point(s)")
    with pytest.raises(InvalidArgument, match="x.shape"):
        fit_line([0.0, 1.0, 2.0], [1.0, 2.0], 0.1)
    with pytest.raises(InvalidArgument, match="dy finite and ≥ 0"):
        fit_line([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0.1, -0.1, 0.1])
    with pytest.raises(InvalidArgument, match="x, y must be finite"):
        fit_line([0.0, 1.0, 2.0], [1.0, np.nan, 3.0], 0.1)
    with pytest.raises(InvalidArgument, match="arrays of numbers"):
        fit_line("abc", [1.0, 2.0, 3.0], 0.1)


def test_quantiles_are_scipy_stats_bit_for_bit_without_importing_it():
    # coverage_factor and line_rejected compute the Student-t and χ² quantiles with the
    # scipy.special functions scipy.stats' t.ppf and chi2.ppf call: the same floats (so the same
    # decisions), without the ~0.5 CPU s import of scipy.stats in every worker of a run
    from scipy.stats import chi2, t

    for dof in [*range(1, 200), 10**3, 10**6]:
        assert coverage_factor(dof) == float(t.ppf(0.5 + _fits.CONFIDENCE / 2, dof))
    q = [float(chi2.ppf(_fits.CONFIDENCE, n - 2)) for n in range(3, 60)]
    x = np.arange(60.0)
    for n, quantile in zip(range(3, 60), q, strict=True):
        # residuals orthogonal to lines on x = 0..n-1 with χ² just below / above the quantile
        pattern = x[:n] - x[:n].mean()
        pattern = pattern**2 - (pattern**2).mean() - pattern * (pattern**3).sum() \
            / (pattern**2).sum()
        scale = math.sqrt(quantile / float((pattern**2).sum()))
        assert not line_rejected(x[:n], 0.3 * x[:n] + scale * (1 - 1e-9) * pattern, 1.0)
        assert line_rejected(x[:n], 0.3 * x[:n] + scale * (1 + 1e-9) * pattern, 1.0)
    code = ("import sys; from verify.analysis.observed_limits import coverage_factor; "
            "from verify.numerics._fits import line_rejected; coverage_factor(5); "
            "line_rejected([0., 1, 2, 3], [0., 1, 0, 1], 1.0); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_line_rejected_at_the_chi_square_quantile():
    # residual pattern (1, -1, -1, 1) is orthogonal to lines on x = 0..3, so χ² = 4c²/σ²;
    # with 2 degrees of freedom the quantile is closed-form: q = −2 log(1 − CONFIDENCE)
    q = -2 * math.log1p(-_fits.CONFIDENCE)
    x, pattern = np.arange(4.0), np.array([1.0, -1.0, -1.0, 1.0])
    for factor, expected in [(1 - 1e-6, False), (1 + 1e-6, True)]:
        c = math.sqrt(q / 4) * factor
        assert line_rejected(x, 0.3 * x + c * pattern, 1.0) is expected
        # a scatter τ divides χ² by 1 + τ²
        assert line_rejected(x, 0.3 * x + 2 * c * pattern, 1.0, scatter=math.sqrt(3)) is expected
    assert not line_rejected(x[:2], x[:2] ** 2, 1e-9)       # two points reject nothing


def test_log_error_against_mpmath():
    rng = np.random.default_rng(5)
    value = rng.uniform(-3, 3, 50)
    error = np.abs(value) * 10.0 ** rng.uniform(-12, -0.01, 50)
    got = log_error(value, error)
    with mpmath.workdps(40):
        exact = [float(-mpmath.log(1 - mpmath.mpf(e) / abs(mpmath.mpf(v))))
                 for v, e in zip(value, error, strict=True)]
    assert np.all(np.abs(got - exact) <= 4 * np.finfo(float).eps * np.array(exact))
    assert log_error(0.0, 0.0) == math.inf and log_error(1.0, 1.0) == math.inf


def test_limits_reexports_the_fits():
    for name in verify.analysis.observed_limits.__all__:
        assert hasattr(verify.analysis.observed_limits, name)
    for name in ("CONFIDENCE", "LineFit", "coverage_factor", "fit_power_law",
                 "fit_doubly_exponential"):
        assert getattr(verify.analysis.observed_limits, name) is getattr(_fits, name)


# ----------------------------------------------------------------------- decisions
def test_distance_and_decisions():
    d, e = distance_with_error([1.0, 2.0], 1e-6, [1.0, 2.0 + 5e-6])
    assert (d, e) == (pytest.approx(5e-6), 1e-6)
    assert separated(d, e) and not compatible(d, e)
    d, e = distance_with_error([1.0, 2.0], 1e-6, [[0.0, 0.0], [1.0, 2.0]], [1e-3, 2e-3])
    assert d == 0.0 and e == pytest.approx(1e-6 + 2e-3)
    assert compatible(d, e) and not separated(d, e)
    d, e = distance_with_error(0.3, math.inf, [0.0, 1.0])  # scalar candidate, set {0, 1}
    assert d == pytest.approx(0.3) and not separated(d, e) and not compatible(d, e)
    assert separated(0.1, 0.02, factor=3) and not separated(0.1, 0.04, factor=3)
    with pytest.raises(InvalidArgument, match="predicted.shape"):
        distance_with_error([1.0, 2.0], 0.0, [1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgument, match="≥ 0"):
        distance_with_error([1.0], -1.0, [1.0])


# ----------------------------------------------------------------------- trajectories
def _fake_trajectory(error_level=1e-10):
    t = np.linspace(0, 12, 25)
    z = np.empty((25, 2, 2))
    z[:, 0] = [2.0, 0.5]                                       # a leader at rest
    z[:, 1] = [2.0, 0.5] + np.array([-1.0, 0.25]) * np.exp(-t)[:, None]
    m = len(t)
    return Trajectory(times=[Fraction(v) for v in t], form="z", state=z,
                      scaled_scores=np.zeros((m, 2, 2)), log_scale=np.zeros(m),
                      attention=np.zeros((m, 2, 2)), margins=np.zeros((m, 2)), precision={},
                      tolerances={}, model={},
                      error=None if error_level is None else np.full((m, 2), error_level))


def test_token_and_projected_limits():
    traj = _fake_trajectory()
    fits = token_limits(traj)
    assert [f.kind for f in fits] == ["converged-to-error", "exponential"]
    for f in fits:
        assert np.max(np.abs(f.limit - [2.0, 0.5])) <= f.limit_error
    phi = np.array([3.0, -1.0])  # |phi|_1 = 4 scales the error estimate 1e-10
    fits = projected_limits(traj, phi)
    assert fits[0].limit == pytest.approx(5.5) and fits[0].limit_error == pytest.approx(8e-10)
    assert abs(fits[1].limit - 5.5) <= fits[1].limit_error
    fits_c = projected_limits(traj, lambda z: z @ phi, lipschitz=4.0)
    assert fits_c[0].limit_error == fits[0].limit_error
    both = projected_limits(traj, np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert both[1].limit.shape == (2,)
    with pytest.raises(InvalidArgument, match="lipschitz"):
        projected_limits(traj, lambda z: z @ phi)
    with pytest.raises(InvalidArgument, match="shape"):
        projected_limits(traj, np.ones(3))
    with pytest.raises(InvalidArgument, match="no such array"):
        token_limits(traj, variable="x")
    with pytest.raises(InvalidArgument, match="variable="):
        token_limits(traj, variable="y")
    fits = token_limits(_fake_trajectory(None))
    assert "No error estimate" in fits[0].reason


# ----------------------------------------------------------------------- end to end
def test_follower_converges_to_its_leader_at_rate_one():
    """V = Q = K = I, n = 3, d = 2: tokens (2, 0), (0, 2) lead; (1, 1/2) follows (2, 0)
    (<z3, z1> = 2 > <z3, z3> = 5/4 > <z3, z2> = 1). After the hardmax onset
    dz3/dt = z1 − z3 with z1 frozen (up to doubly exponentially small terms): rate exactly 1.
    The fit uses T = 12 (tail [6, 12]); the independent route is a run to T = 25 with its own
    error estimate (arb reference), plus the way left after t = 25 at the theoretical rate 1."""
    from verify.flow.simulate import simulate
    from verify.model import Instance, Model

    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], [1, "1/2"]])
    traj = simulate(inst, 12, checkpoints=25)
    long = simulate(inst, 25, checkpoints=51)
    for run in (traj, long):
        assert run.success and run.error is not None and run.reference["status"] == "success"
    leader, _, follower = token_limits(traj)
    assert follower.kind == "exponential" and follower.stabilised, follower.reason
    assert "No error estimate" not in follower.reason
    assert compatible(abs(follower.rate - 1.0), follower.rate_error, factor=follower.coverage)
    assert leader.kind == "converged-to-error" and leader.stabilised
    # the follower's limit is its leader's
    assert compatible(*distance_with_error(follower.limit, follower.limit_error,
                                           leader.limit, leader.limit_error))
    # z3(25) with its error estimate; z3(t) − z3(∞) = c e^{−t} gives the way left after t = 25
    # as |z3(25) − z3(24.5)| / (e^{1/2} − 1), the difference widened by its two error estimates
    far = long.z[-1, 2]
    step = float(np.max(np.abs(far - long.z[-2, 2]))) + long.error[-1, 2] + long.error[-2, 2]
    far_error = long.error[-1, 2] + step / math.expm1(0.5)
    distance, error = distance_with_error(follower.limit, follower.limit_error, far, far_error)
    assert compatible(distance, error)
    # the bar is about the distance of z3(12) from the limit, not absurdly larger (the
    # correction's direction is not trusted) ...
    last_distance = float(np.max(np.abs(traj.z[-1, 2] - far)))
    assert far_error < 1e-3 * last_distance
    assert last_distance <= follower.limit_error <= 10 * last_distance
    # ... while the extrapolated limit itself is far closer than z3(12) (measured: 2e-6 of it)
    assert distance <= 1e-4 * last_distance
    # the long run, fitted on [12.5, 25], agrees: rate 1, limit the leader's
    leader_far, _, follower_far = token_limits(long)
    assert follower_far.kind == "exponential" and follower_far.stabilised, follower_far.reason
    assert compatible(abs(follower_far.rate - 1.0), follower_far.rate_error,
                      factor=follower_far.coverage)
    assert compatible(*distance_with_error(follower_far.limit, follower_far.limit_error,
                                           leader_far.limit, leader_far.limit_error))
    assert follower_far.limit_error < 1e-4 * follower.limit_error
