"""Observed limits and fitted rates (verify.limits), against closed forms.

Synthetic sequences have known limits, rates and exponents; noise is uniform in [-σ, σ] and
passed as the error estimate σ (a bound, as for a trajectory's error estimate). The end-to-end
test compares the limit fitted on a short run with a float64 run to T = 25 (an independent
route: a different horizon, not an extrapolation).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

from verify.errors import InvalidArgument
from verify.limits import (
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
from verify.trajectory import Trajectory

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
    (([0, 1, 2, 3], np.ones(4), -1.0), {}, "errors must be finite"),
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
    The reference run's cost grows quickly with T (arb, 106 bits), so the fit uses T = 6."""
    from verify.model import Instance, Model
    from verify.simulate import simulate

    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], [1, "1/2"]])
    start = time.perf_counter()
    traj = simulate(inst, 6, checkpoints=13)
    elapsed = time.perf_counter() - start
    assert traj.success and traj.error is not None
    leader, _, follower = token_limits(traj)
    assert follower.kind == "exponential" and follower.stabilised, follower.reason
    assert compatible(abs(follower.rate - 1.0), follower.rate_error, factor=follower.coverage)
    assert leader.kind == "converged-to-error" and leader.stabilised
    # the follower's limit is its leader's
    assert compatible(*distance_with_error(follower.limit, follower.limit_error,
                                           leader.limit, leader.limit_error))
    # long horizon, float64 without the (slow) reference; its error from a tighter re-run
    far = simulate(inst, 25, checkpoints=51, error_estimate=False).z[-1, 2]
    tight = simulate(inst, 25, checkpoints=51, error_estimate=False, rtol=1e-13,
                     atol=1e-15).z[-1, 2]
    far_error = float(np.max(np.abs(far - tight))) + 2 * math.exp(-25)  # + remaining e^{-t}
    distance, error = distance_with_error(follower.limit, follower.limit_error, far, far_error)
    assert compatible(distance, error)
    # the bar is about the distance of z3(6) from the limit, not absurdly larger
    last_distance = float(np.max(np.abs(traj.z[-1, 2] - far)))
    assert last_distance <= follower.limit_error <= 10 * last_distance
    assert elapsed < 60  # measured ~3 s idle, ~7 s on a loaded 2-core machine
