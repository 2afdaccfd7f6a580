r"""Observed limits from a trajectory's checkpoints, with fitted rates and error bars.

Claims about :math:`t \to \infty` are decided from the *trend* over checkpoints (paper.md §4,
design.md "Verdicts"). For a sequence :math:`v(t_k)` assumed to behave like

.. math:: v(t) = v_\infty + c\, e^{-r t} + \dots, \qquad r > 0,

the successive differences :math:`\Delta_k = v(t_{k+1}) - v(t_k)` decay at the same rate, so
:math:`\log\|\Delta_k\|_\infty` is fitted by least squares against the midpoints of
:math:`[t_k, t_{k+1}]`, and the limit is the last value plus the geometric tail,
:math:`v_\infty = v(t_m) + \Delta_{m-1}\, q/(1-q)` with :math:`q = e^{-r\,\Delta t}`.

**Decision rules** (no tuned constants; every tolerance comes from an error estimate):

* norms are max-norms over components, like ``Trajectory.error``;
* a difference is *resolved* when :math:`\|\Delta_k\| > e_k + e_{k+1}` (the error estimates of
  its two ends; never below one float64 ulp of the values);
* lines are fitted with the propagated error estimates, plus an intrinsic scatter when the
  residuals exceed them, and decisions use the *coverage factor* :math:`\kappa` (about 3) at
  level :data:`CONFIDENCE`: see :mod:`verify.numerics._fits`, which also holds the other laws
  (:func:`fit_power_law`, :func:`fit_doubly_exponential`; re-exported here);
* the extrapolation error is bounded by the largest correction compatible with the rate's lower
  confidence bound :math:`r_- = r - \kappa\sigma_r`, plus the error estimate of the last value
  (the direction of the correction is not trusted, so the bar covers the whole way from the
  last value);
* an exponential is only accepted when a power law :math:`\|\Delta_k\| \propto t^{-p}`
  (algebraic approach, e.g. :math:`V = -I`) is rejected at level :data:`CONFIDENCE`.

Examples
--------
>>> t = np.linspace(0, 10, 21)
>>> fit = fit_exponential_convergence(t, 2 + 3 * np.exp(-0.7 * t))
>>> fit.kind, fit.stabilised, round(fit.rate, 6), round(fit.limit, 9)
('exponential', True, 0.7, 2.0)
>>> bool(abs(fit.limit - 2) <= fit.limit_error)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from verify.digits import plus_minus, scientific, upper
from verify.errors import InvalidArgument
from verify.numerics._fits import (
    CONFIDENCE,
    LineFit,
    _fit_line,
    check_series,
    coverage_factor,
    fit_doubly_exponential,
    fit_power_law,
    line_rejected,
    log_error,
    tail_count,
)

__all__ = [
    "coincide",
    "CONFIDENCE",
    "MIN_DIFFERENCES",
    "KINDS",
    "LimitFit",
    "LineFit",
    "coverage_factor",
    "fit_exponential_convergence",
    "fit_doubly_exponential",
    "fit_power_law",
    "token_limits",
    "projected_limits",
    "distance_with_error",
    "separated",
    "compatible",
]

#: A rate is fitted from at least this many resolved differences (one residual degree of freedom).
MIN_DIFFERENCES = 3
#: The values :attr:`LimitFit.kind` takes.
KINDS = ("exponential", "converged-to-error", "power-law", "stalled", "diverging", "inconclusive")


def coincide(points: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """``same[i, j]``: points ``i`` and ``j`` may be one point, their max-norm distance being at
    most the sum of their error bars. The library's one test of "points within their errors
    are one point" (merged limits, tokens that are never competitors of each other).

    >>> coincide(np.array([[0.0], [1e-9], [1.0]]), np.array([1e-9, 1e-9, 1e-9])).astype(int)
    array([[1, 1, 0],
           [1, 1, 0],
           [0, 0, 1]])
    """
    P = np.asarray(points, dtype=float).reshape(len(points), -1)
    E = np.asarray(errors, dtype=float)
    if not len(P):
        return np.zeros((0, 0), dtype=bool)
    return np.max(np.abs(P[:, None, :] - P[None, :, :]), axis=2) <= E[:, None] + E[None, :]


@dataclass(frozen=True)
class LimitFit:
    r"""The observed limit of a sequence and how far it can be trusted.

    Attributes
    ----------
    limit : float or ndarray
        Estimate of :math:`v_\infty` (the last value when no limit was found).
    limit_error : float
        Bound on :math:`\|v_\infty - \text{limit}\|_\infty` including the numerical error
        estimate; ``inf`` when no limit was found.
    rate, rate_error : float
        Fitted rate :math:`r` of :math:`\|\Delta_k\| \propto e^{-r t_k}` and its standard error
        (``nan`` when not fitted).
    coverage : float
        Coverage factor :math:`\kappa` of the rate fit (see the module docstring).
    stabilised : bool
        The limit is known: ``kind == "exponential"`` with :math:`r - \kappa\sigma_r > 0` and
        the remaining-distance bound smaller than the movement observed over the tail, or
        ``kind == "converged-to-error"``.
    kind : str
        One of :data:`KINDS`.
    reason : str
        One sentence explaining the verdict.
    last, tail_start : ndarray/float, float
        The last value and the first time of the tail used.
    n_points : int
        Resolved differences used in the rate fit.
    """

    limit: float | np.ndarray
    limit_error: float
    rate: float
    rate_error: float
    coverage: float
    stabilised: bool
    kind: str
    reason: str
    last: float | np.ndarray
    tail_start: float
    n_points: int

    @property
    def rate_interval(self) -> tuple[float, float]:
        """``(rate − κ·rate_error, rate + κ·rate_error)``."""
        half = self.coverage * self.rate_error
        return (self.rate - half, self.rate + half)

    def to_dict(self) -> dict:
        """Plain data for ``results.json``."""
        def plain(v):
            return v.tolist() if isinstance(v, np.ndarray) else float(v)
        return {"limit": plain(self.limit), "limit_error": self.limit_error, "rate": self.rate,
                "rate_error": self.rate_error, "coverage": self.coverage,
                "stabilised": self.stabilised, "kind": self.kind, "reason": self.reason,
                "last": plain(self.last), "tail_start": self.tail_start,
                "n_points": self.n_points}



def _shaped(row: np.ndarray, shape: tuple) -> float | np.ndarray:
    return float(row[0]) if shape == () else row.reshape(shape).copy()


# --------------------------------------------------------------------------- exponential fit
def _rate_fit(mid: np.ndarray, size: np.ndarray, noise: np.ndarray, h: np.ndarray) -> LineFit:
    r"""Fit :math:`\log\|\Delta_k\| = \log|c\,r| - r\,s_k + \log(h_k\,\mathrm{sinhc}(r h_k/2))`.

    For :math:`v = v_\infty + c e^{-rt}` exactly, :math:`\|\Delta_k\| = |c|\,e^{-r s_k}\,
    2\sinh(r h_k/2)` at the midpoint :math:`s_k`; the last factor is constant on a uniform grid
    and is removed by fixed-point iteration on a non-uniform one.
    """
    y0 = np.log(size)
    dy = log_error(size, noise)  # finite: resolved means noise < size
    uniform = np.allclose(h, h[0], rtol=1e-12, atol=0)
    rate, fit = 0.0, _fit_line(mid, y0, dy)
    for _ in range(1 if uniform else 50):
        x = rate * h / 2
        sinhc = np.where(x == 0, 1.0, np.sinh(x) / np.where(x == 0, 1.0, x))
        fit = _fit_line(mid, y0 - np.log(h * sinhc), dy)
        if not fit.ok or abs(-fit.slope - rate) <= 1e-14 * (1 + abs(rate)):
            break
        rate = -fit.slope
    return fit


def _power_law_excluded(mid: np.ndarray, size: np.ndarray, noise: np.ndarray, h: np.ndarray,
                        scatter: float) -> bool:
    r"""Whether :math:`\|\Delta_k\|/h_k \propto s_k^{-p}` (algebraic decay, e.g. the
    :math:`t^{-1/2}` collapse for :math:`V = -I`) is rejected at level :data:`CONFIDENCE`.

    The per-point variances are those that make the exponential model fit (stated errors plus
    its intrinsic scatter); the power law is rejected when, with the same variances, its
    :math:`\chi^2` exceeds the :data:`CONFIDENCE` quantile of :math:`\chi^2_{n-2}`.
    """
    if np.any(mid <= 0):
        return True  # no algebraic law from the time origin to compare with
    return line_rejected(np.log(mid), np.log(size / h), log_error(size, noise), scatter)


def _decay(mid: np.ndarray, size: np.ndarray, noise: np.ndarray, h: np.ndarray,
           use: np.ndarray) -> tuple[LineFit | None, str]:
    """The rate fit on the differences ``use`` (None if there are none) and the law they decay
    by: ``"exponential"`` (rate positive beyond κσ, power law rejected), ``"power-law"``
    (rate positive beyond κσ, power law not rejected) or ``""`` (no significant decay)."""
    if len(use) == 0:
        return None, ""
    diffs = mid[use], size[use], noise[use], h[use]
    fit = _rate_fit(*diffs)
    if not (fit.ok and fit.slope_interval[1] < 0):
        return fit, ""
    return fit, "exponential" if _power_law_excluded(*diffs, fit.scatter) else "power-law"


def fit_exponential_convergence(times: object, values: object, errors: object = None, *,
                                tail: float | int = 0.5) -> LimitFit:
    r"""Limit, rate and error bar of a sequence :math:`v(t_k) \approx v_\infty + c e^{-r t_k}`.

    Parameters
    ----------
    times : array_like, shape (m,)
        Strictly increasing checkpoint times.
    values : array_like, shape (m, ...)
        The sequence; components are compared in the max-norm.
    errors : None, float or array_like, shape (m,) or (m, ...)
        Absolute error estimates of the values (e.g. ``Trajectory.error[:, i]``), ``+inf`` where
        a value has none (the fit is then inconclusive if that is in the tail); ``None`` means
        exact up to float64 rounding (one ulp of each value is always assumed).
    tail : float or int
        Fraction of the checkpoints (float in (0, 1]) or number of checkpoints (int) at the end
        of the sequence that are used.

    Returns
    -------
    fit : LimitFit
        ``kind`` is decided in this order, on the tail:

        * ``"inconclusive"``: fewer than ``MIN_DIFFERENCES + 1`` checkpoints, an infinite
          error estimate, or too few resolved differences to fit a rate;
        * ``"converged-to-error"``: the last difference(s) are unresolved (below the error
          estimates) — either over at least ``MIN_DIFFERENCES`` differences or after a decay
          fitted on the resolved ones. ``limit`` is the last value, ``limit_error`` its error
          plus the spread of the values over that stretch (and the geometric bound from the
          fitted rate, if any);
        * ``"power-law"``: the differences decay, but a power of ``t`` fits them as well
          (no limit bound: see :func:`fit_power_law`);
        * ``"exponential"``: the fitted rate is positive by more than ``κ`` standard errors;
          ``limit_error`` = last error + :math:`(\|\Delta\| + e_{m-1} + e_m)/(e^{r_- h} - 1)`;
        * ``"diverging"``: the differences grow (rate negative by more than ``κ`` errors), or
          some value is infinite;
        * ``"stalled"``: neither decay nor growth is significant.

    Raises
    ------
    InvalidArgument
        Malformed ``times``, ``values``, ``errors`` or ``tail``; NaN values or errors.

    Examples
    --------
    >>> t = np.arange(12.0)
    >>> fit_exponential_convergence(t, 1 + 0.5 * t).kind                  # constant drift
    'stalled'
    >>> fit_exponential_convergence(t, np.exp(0.3 * t)).kind              # growing differences
    'diverging'
    >>> fit = fit_exponential_convergence(t, np.full((12, 2), 0.25), errors=1e-12)
    >>> fit.kind, fit.stabilised, fit.limit.tolist(), fit.limit_error
    ('converged-to-error', True, [0.25, 0.25], 2e-12)
    >>> fit_exponential_convergence(t[:3], t[:3]).reason
    'only 2 checkpoints in the tail; at least 4 are needed to fit a rate (tail=0.5 of 3).'
    """
    t, v, e, shape = check_series(times, values, errors)
    m, k = len(t), tail_count(len(t), tail)
    t, v, e = t[-k:], v[-k:], e[-k:]
    last = _shaped(v[-1], shape)
    nan = math.nan

    def result(kind, reason, limit=last, limit_error=math.inf, fit=None, stabilised=False):
        rate = nan if fit is None or not fit.ok else -fit.slope
        return LimitFit(limit, float(limit_error), rate,
                        nan if fit is None or not fit.ok else fit.slope_error,
                        math.inf if fit is None else fit.coverage, bool(stabilised), kind,
                        reason, last, float(t[0]), 0 if fit is None else fit.n_points)

    if not np.all(np.isfinite(v)):
        return result("diverging", "some values in the tail are infinite (overflow).")
    if not np.all(np.isfinite(e)):
        return result("inconclusive", f"the error estimate is infinite from t = "
                      f"{t[np.flatnonzero(~np.isfinite(e))[0]]:.6g} in the tail (the reference "
                      "has no finite value there): no difference there is resolved.")
    if k < MIN_DIFFERENCES + 1:
        return result("inconclusive", f"only {k} checkpoints in the tail; at least "
                      f"{MIN_DIFFERENCES + 1} are needed to fit a rate (tail={tail} of "
                      f"{m}).")
    delta = np.diff(v, axis=0)
    size = np.max(np.abs(delta), axis=1) if v.shape[1] else np.zeros(k - 1)
    noise = e[:-1] + e[1:]
    h, mid = np.diff(t), (t[:-1] + t[1:]) / 2
    resolved = size > noise
    span = f"[{t[0]:.6g}, {t[-1]:.6g}]"

    if not resolved[-1]:                                   # at the error floor
        floor = len(resolved) - int(np.flatnonzero(resolved)[-1]) - 1 if resolved.any() \
            else len(resolved)
        first = len(resolved) - floor                      # index of the first floor value
        spread = float(np.max(np.max(np.abs(v[first:] - v[-1]), axis=1) + e[first:])) \
            if v.shape[1] else 0.0
        fit, law = _decay(mid, size, noise, h, np.flatnonzero(resolved[:first]))
        decays = law == "exponential"
        bound = spread
        if decays:
            r_low = -fit.slope_interval[1]
            bound = max(spread, 2 * noise[-1] / math.expm1(r_low * h[-1]))
        if floor >= MIN_DIFFERENCES or decays:
            how = "after a fitted exponential decay" if decays else "throughout"
            return result("converged-to-error", f"the last {floor} differences on {span} are "
                          f"below the error estimates ({how}); the limit is the last value to "
                          "within that error.", last, e[-1] + bound, fit, True)
        return result("inconclusive", f"the last {floor} difference(s) on {span} are below the "
                      "error estimates but no decay could be fitted before them; extend the "
                      "tail or the horizon.", fit=fit)

    use = np.flatnonzero(resolved)
    if len(use) < MIN_DIFFERENCES:
        return result("inconclusive", f"only {len(use)} differences on {span} exceed their "
                      f"error estimates; at least {MIN_DIFFERENCES} are needed to fit a rate.")
    fit, law = _decay(mid, size, noise, h, use)
    rate, half = -fit.slope, fit.coverage * fit.slope_error
    if law == "power-law":
        return result("power-law", f"differences on {span} decay, but a power of t fits them as "
                      f"well as e^(-rt) (rate {plus_minus(rate, half)}, κσ); an algebraic "
                      "approach has no exponential tail bound (see fit_power_law).", fit=fit)
    if law == "exponential":
        correction = delta[-1] / math.expm1(rate * h[-1])
        remaining = (size[-1] + noise[-1]) / math.expm1((rate - half) * h[-1])
        movement = float(np.max(np.abs(v[-1] - v[0])))
        stable = remaining < movement
        why = ("the bound on the remaining distance is below the movement observed over the "
               "tail" if stable else f"but the remaining distance (≤ {upper(remaining)}) exceeds "
               f"the movement over the tail ({scientific(movement)}); integrate longer")
        return result("exponential", f"differences on {span} decay at rate "
                      f"{plus_minus(rate, half)} (κσ, κ = {fit.coverage:.3g}); {why}.",
                      _shaped(v[-1] + correction, shape), e[-1] + remaining, fit, stable)
    if rate + half < 0:
        return result("diverging", f"differences on {span} grow at rate {plus_minus(-rate, half)} "
                      "(κσ).", fit=fit)
    return result("stalled", f"differences on {span} neither decay nor grow significantly "
                  f"(rate {plus_minus(rate, half)}, κσ with κ = {fit.coverage:.3g}).", fit=fit)


# --------------------------------------------------------------------------- trajectories
def _token_series(traj, variable: str):
    """(values (m, n, d), errors (m, n) or None, note) for ``variable`` of ``traj``."""
    values = traj.tokens(variable)
    note = ""
    if values is traj.state and traj.error is not None:
        errors = traj.error
    else:
        errors = None
        note = (" No error estimate for this trajectory (simulate with error_estimate=True)"
                if traj.error is None else f" No error estimate for the derived form "
                f"{variable!r} (the integrated form is {traj.form!r})")
        note += "; only float64 rounding was assumed."
    if not traj.success:
        note += f" The run stopped early ({traj.status}: {traj.message})."
    return values, errors, note


def _per_token(traj, series: np.ndarray, errors: np.ndarray | None, note: str,
               tail_fraction: float) -> list[LimitFit]:
    """:func:`fit_exponential_convergence` of ``series[:, i]`` (errors ``errors[:, i]``) for
    every token ``i``, with ``note`` appended to each reason."""
    fits = [fit_exponential_convergence(traj.t, series[:, i], None if errors is None else
                                        errors[:, i], tail=float(tail_fraction))
            for i in range(series.shape[1])]
    return [LimitFit(**{**f.__dict__, "reason": f.reason + note}) if note else f for f in fits]


def token_limits(traj, *, variable: str = "z", tail_fraction: float = 0.5) -> list[LimitFit]:
    r"""The observed limit of every token, :func:`fit_exponential_convergence` per token.

    Parameters
    ----------
    traj : Trajectory
    variable : {"z", "x"}
        Rescaled tokens :math:`z_i(t)` (the clustering theorems) or tokens :math:`x_i(t)`.
        ``Trajectory.error[:, i]`` is used when ``variable`` is the integrated form.
    tail_fraction : float
        Fraction of the checkpoints used (the last ones).

    Returns
    -------
    fits : list of LimitFit
        ``fits[i].limit`` has shape (d,).

    Raises
    ------
    InvalidArgument
        Unknown ``variable`` or a trajectory without it.

    Examples
    --------
    :math:`V = Q = K = I`: tokens (2, 0) and (0, 2) lead, (1, 1/2) follows (2, 0) at rate 1.
    (Without ``error_estimate`` the bars only know float64 rounding, and the reasons say so.)

    >>> from verify.model import Instance, Model
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], [1, "1/2"]])
    >>> fits = token_limits(simulate(inst, 6, checkpoints=13, error_estimate=False))
    >>> [f.kind for f in fits], round(fits[2].rate, 6)
    (['converged-to-error', 'converged-to-error', 'exponential'], 1.0)
    >>> bool(np.max(np.abs(fits[2].limit - fits[0].limit)) <= fits[2].limit_error)
    True
    >>> "No error estimate" in fits[2].reason
    True
    """
    values, errors, note = _token_series(traj, variable)
    return _per_token(traj, values, errors, note, tail_fraction)


def projected_limits(traj, functional: np.ndarray | Callable, *, variable: str = "z",
                     tail_fraction: float = 0.5, lipschitz: float | None = None
                     ) -> list[LimitFit]:
    r"""The observed limit of a functional of each token, e.g. :math:`\varphi_1^*(z_i(t))`.

    Parameters
    ----------
    traj : Trajectory
    functional : array_like, shape (d,) or (k, d), or callable
        A linear functional (rows of a matrix: a vector of functionals) applied to each token,
        or a callable mapping the (n, d) tokens at one checkpoint to shape (n,) or (n, k).
    variable, tail_fraction
        As in :func:`token_limits`.
    lipschitz : float, optional
        For a callable: a bound on :math:`|f(u) - f(w)| / \|u - w\|_\infty`, which turns the
        token error estimates into error estimates of :math:`f`. Required for a callable when
        the trajectory has an error estimate. For an array it is
        :math:`\max_{\text{rows}} \|f\|_1` (exact for the max-norm).

    Returns
    -------
    fits : list of LimitFit

    Raises
    ------
    InvalidArgument
        Bad shapes, complex functionals, or a callable without ``lipschitz``.
    """
    values, errors, note = _token_series(traj, variable)
    d = values.shape[2]
    if callable(functional):
        if errors is not None and lipschitz is None:
            raise InvalidArgument("functional is a callable: pass lipschitz=L (a bound on "
                                  "|f(u) - f(w)| / max|u - w|) so that the trajectory's error "
                                  "estimate carries over, or pass f as a (d,) array.")
        out = np.array([np.asarray(functional(z), dtype=float) for z in values])
        scale = 0.0 if lipschitz is None else float(lipschitz)
    else:
        f = np.asarray(functional)
        if np.iscomplexobj(f) or f.ndim not in (1, 2) or f.shape[-1] != d:
            raise InvalidArgument(f"functional has shape {f.shape} and dtype {f.dtype}; it must "
                                  f"be real with shape ({d},) or (k, {d}) (d = {d}).")
        f = f.astype(float)
        out = values @ f.T
        scale = float(np.max(np.sum(np.abs(np.atleast_2d(f)), axis=1)))
    if out.shape[:2] != values.shape[:2]:
        raise InvalidArgument(f"functional returned shape {out.shape[1:]} per checkpoint; "
                              f"expected (n,) or (n, k) with n = {values.shape[1]}.")
    return _per_token(traj, out, None if errors is None else scale * errors, note,
                      tail_fraction)


# --------------------------------------------------------------------------- decisions
def distance_with_error(candidate: object, candidate_error: float, predicted: object,
                        predicted_error: object = 0.0) -> tuple[float, float]:
    r"""Max-norm distance from an observed limit to a predicted point (or finite set of points),
    with its error bar.

    By the triangle inequality the true distance lies within ``error`` of ``distance``, with
    ``error = candidate_error + max(predicted_error)`` (the distance to a set is 1-Lipschitz).

    Parameters
    ----------
    candidate : float or array_like, shape (...)
    candidate_error : float
        E.g. :attr:`LimitFit.limit_error`.
    predicted : array_like, shape (...) or (k, ...)
        One predicted point, or k of them (the distance is to the nearest).
    predicted_error : float or array_like, shape (k,)

    Examples
    --------
    >>> distance_with_error([1.0, 2.0], 1e-6, [[0.0, 0.0], [1.0, 2.5]], 1e-9)
    (0.5, 1.001e-06)
    """
    c = np.asarray(candidate, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if p.shape == c.shape:
        p = p[None]
    if p.shape[1:] != c.shape or p.shape[0] == 0:
        raise InvalidArgument(f"predicted.shape={p.shape} must be candidate.shape={c.shape} or "
                              f"(k,) + {c.shape} for k ≥ 1 predicted points.")
    pe = np.broadcast_to(np.asarray(predicted_error, dtype=float), p.shape[:1])
    ce = float(candidate_error)
    if math.isnan(ce) or ce < 0 or np.any(np.isnan(pe)) or np.any(pe < 0):
        raise InvalidArgument(f"candidate_error={candidate_error!r} and predicted_error must be "
                              "≥ 0 (inf is allowed: unknown).")
    gaps = np.abs(c - p).reshape(len(p), -1)
    distance = float(np.min(np.max(gaps, axis=1))) if gaps.shape[1] else 0.0
    return distance, ce + float(np.max(pe))


def separated(distance: float, error: float, *, factor: float = 1.0) -> bool:
    r"""True when the observed value is certainly away from the prediction:
    ``distance > factor · error`` with a finite error.

    ``error`` is a bar at the wanted confidence: :attr:`LimitFit.limit_error` already is one
    (``factor=1``); for a standard error such as ``rate_error`` pass ``factor=fit.coverage``.

    >>> separated(1e-3, 1e-6), separated(1e-3, 1e-2), separated(1.0, float("inf"))
    (True, False, False)
    """
    return bool(math.isfinite(error) and distance > factor * error)


def compatible(distance: float, error: float, *, factor: float = 1.0) -> bool:
    r"""True when the observed value is consistent with the prediction:
    ``distance ≤ factor · error`` with a finite error (an infinite error decides nothing, so
    neither :func:`separated` nor :func:`compatible` holds; otherwise exactly one does).

    >>> compatible(1e-7, 1e-6), compatible(1e-3, 1e-6), compatible(0.0, float("inf"))
    (True, False, False)
    """
    return bool(math.isfinite(error) and distance <= factor * error)
