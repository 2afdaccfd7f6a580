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
* lines are fitted by weighted least squares with the propagated error estimates, plus an
  intrinsic scatter when the residuals exceed them (so standard errors reflect both noise and
  misfit); decisions use the *coverage factor* :math:`\kappa`, the Student-t quantile with
  the fit's residual degrees of freedom at the two-sided level :data:`CONFIDENCE` of
  :math:`3\sigma` (:math:`\kappa = 3` for many points, larger for few);
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
from scipy.stats import chi2 as chi_square
from scipy.stats import t as student_t

from verify.errors import InvalidArgument

__all__ = [
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

#: Two-sided coverage of the error bars used for decisions: that of ±3σ for a normal law.
CONFIDENCE = math.erf(3 / math.sqrt(2))
#: A rate is fitted from at least this many resolved differences (one residual degree of freedom).
MIN_DIFFERENCES = 3
#: The values :attr:`LimitFit.kind` takes.
KINDS = ("exponential", "converged-to-error", "power-law", "stalled", "diverging", "inconclusive")
_EPS = float(np.finfo(float).eps)


def coverage_factor(dof: int) -> float:
    r"""Multiple of a standard error covering :data:`CONFIDENCE` (Student-t, ``dof`` degrees).

    >>> round(coverage_factor(10**6), 3), round(coverage_factor(4), 2)
    (3.0, 6.62)
    """
    if dof < 1:
        return math.inf
    return float(student_t.ppf(0.5 + CONFIDENCE / 2, dof))


@dataclass(frozen=True)
class LineFit:
    r"""Weighted least-squares line ``y = slope·x + intercept`` with standard errors.

    ``scatter`` is the intrinsic scatter :math:`\tau` added to every point's error so that the
    reduced :math:`\chi^2` is at most 1 (0 when the stated errors explain the residuals);
    ``coverage`` is :func:`coverage_factor` of the residual degrees of freedom.
    """

    slope: float
    slope_error: float
    intercept: float
    intercept_error: float
    n_points: int
    coverage: float
    scatter: float = 0.0
    reason: str = ""

    @property
    def ok(self) -> bool:
        """True when the line was fitted (at least 3 usable points)."""
        return self.n_points >= 3


def _wls(x: np.ndarray, y: np.ndarray, var: np.ndarray) -> tuple[float, ...]:
    """Weighted line: (slope, intercept, var slope, var intercept, chi²)."""
    w = 1.0 / var
    sw = float(np.sum(w))
    xbar, ybar = float(np.sum(w * x)) / sw, float(np.sum(w * y)) / sw
    dx = x - xbar
    sxx = float(np.sum(w * dx * dx))
    slope = float(np.sum(w * dx * (y - ybar))) / sxx
    intercept = ybar - slope * xbar
    chi2 = float(np.sum(w * (y - slope * x - intercept) ** 2))
    return slope, intercept, 1.0 / sxx, 1.0 / sw + xbar**2 / sxx, chi2


def _line(x: np.ndarray, y: np.ndarray, dy: np.ndarray, reason: str = "") -> LineFit:
    r"""Fit a line to points with standard errors ``dy``, adding an intrinsic scatter
    :math:`\tau` (Paule–Mandel) when the residuals exceed the stated errors: the weights are
    :math:`1/(dy_k^2 + \tau^2)` with the smallest :math:`\tau \ge 0` giving
    :math:`\chi^2 \le n - 2`. Exact data with a misfit thus get the ordinary least-squares
    errors; noisy data get the errors propagated from ``dy``."""
    n = len(x)
    if n < 3:
        why = f"only {n} usable point(s); a line with an error bar needs at least 3"
        return LineFit(math.nan, math.nan, math.nan, math.nan, n, math.inf, 0.0,
                       f"{reason}; {why}" if reason else why)
    base = np.maximum(dy, _EPS * (1 + np.abs(y))) ** 2    # never below y's float resolution
    tau2 = 0.0
    if _wls(x, y, base)[4] > n - 2:
        lo, hi = float(np.min(base)), max(float(np.var(y)), float(np.max(base)))
        while _wls(x, y, base + hi)[4] > n - 2:
            hi *= 4
        for _ in range(200):                               # bisection in log τ²
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if _wls(x, y, base + mid)[4] > n - 2 else (lo, mid)
            if hi <= lo * (1 + 1e-9):
                break
        tau2 = hi
    slope, intercept, var_slope, var_intercept, _ = _wls(x, y, base + tau2)
    return LineFit(slope, math.sqrt(var_slope), intercept, math.sqrt(var_intercept), n,
                   coverage_factor(n - 2), math.sqrt(tau2), reason)


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


# --------------------------------------------------------------------------- input checks
def _times(times: object) -> np.ndarray:
    try:
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgument(f"times={times!r} ({type(times).__name__}) is not an array of "
                              "numbers; pass the checkpoint times, e.g. traj.t.") from None
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise InvalidArgument(f"times (shape {t.shape}) must be a finite, strictly increasing "
                              "1-D array; pass the checkpoint times, e.g. traj.t.")
    return t


def _series(times: object, values: object, errors: object):
    """(t (m,), v (m, p), e (m,), shape of one value); ``e`` is at least one ulp of ``v``."""
    t = _times(times)
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgument(f"values ({type(values).__name__}) is not a numeric array; pass "
                              "an array of shape (m, ...) with m = len(times).") from None
    if v.ndim == 0 or v.shape[0] != len(t):
        raise InvalidArgument(f"values.shape={v.shape} must start with m = len(times) = "
                              f"{len(t)}; values[k] is the value at times[k].")
    if np.any(np.isnan(v)):
        raise InvalidArgument("values contain NaN; the sequence is undefined there (check the "
                              "trajectory's status and message).")
    shape = v.shape[1:]
    v = v.reshape(len(t), -1)
    if errors is None:
        e = np.zeros(len(t))
    else:
        e = np.asarray(errors, dtype=float)
        if e.ndim == 0:
            e = np.full(len(t), float(e))
        elif e.shape[0] == len(t) and (e.ndim == 1 or e.shape[1:] == shape):
            e = e.reshape(len(t), -1).max(axis=1)
        else:
            raise InvalidArgument(f"errors.shape={e.shape} must be (), ({len(t)},) or "
                                  f"values.shape={(len(t),) + shape}.")
        if np.any(np.isnan(e)) or np.any(e < 0) or not np.all(np.isfinite(e)):
            raise InvalidArgument("errors must be finite and ≥ 0 (absolute error estimates); "
                                  "use errors=None when there is no estimate.")
    with np.errstate(invalid="ignore"):
        ulp = _EPS * np.max(np.abs(v), axis=1) if v.shape[1] else np.zeros(len(t))
    return t, v, np.maximum(e, np.nan_to_num(ulp, posinf=0.0)), shape


def _tail(m: int, tail: object) -> int:
    """Number of checkpoints in the tail: a fraction in (0, 1] or a count ≥ 2."""
    if isinstance(tail, bool) or not isinstance(tail, (int, float)):
        raise InvalidArgument(f"tail={tail!r} ({type(tail).__name__}) must be a fraction in "
                              "(0, 1] (float) or a number of checkpoints (int), e.g. tail=0.5.")
    if isinstance(tail, int):
        if tail < 2:
            raise InvalidArgument(f"tail={tail} (int) must be at least 2 checkpoints.")
        return min(tail, m)
    if not 0 < tail <= 1:
        raise InvalidArgument(f"tail={tail} (float) must be a fraction in (0, 1].")
    return max(2, min(m, math.ceil(tail * m)))


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
    dy = -np.log1p(-noise / size)  # log-error of each size (finite: resolved means noise < size)
    uniform = np.allclose(h, h[0], rtol=1e-12, atol=0)
    rate, fit = 0.0, _line(mid, y0, dy)
    for _ in range(1 if uniform else 50):
        x = rate * h / 2
        sinhc = np.where(x == 0, 1.0, np.sinh(x) / np.where(x == 0, 1.0, x))
        fit = _line(mid, y0 - np.log(h * sinhc), dy)
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
    y = np.log(size / h)
    dy = np.maximum(-np.log1p(-noise / size), _EPS * (1 + np.abs(y)))
    chi2 = _wls(np.log(mid), y, dy**2 + scatter**2)[4]
    return bool(chi2 > chi_square.ppf(CONFIDENCE, len(mid) - 2))


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
        Absolute error estimates of the values (e.g. ``Trajectory.error[:, i]``); ``None``
        means exact up to float64 rounding (one ulp of each value is always assumed).
    tail : float or int
        Fraction of the checkpoints (float in (0, 1]) or number of checkpoints (int) at the end
        of the sequence that are used.

    Returns
    -------
    fit : LimitFit
        ``kind`` is decided in this order, on the tail:

        * ``"inconclusive"``: fewer than ``MIN_DIFFERENCES + 1`` checkpoints, or too few
          resolved differences to fit a rate;
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
        Malformed ``times``, ``values``, ``errors`` or ``tail``; NaN values.

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
    t_all, v_all, e_all, shape = _series(times, values, errors)
    k = _tail(len(t_all), tail)
    t, v, e = t_all[-k:], v_all[-k:], e_all[-k:]
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
    if k < MIN_DIFFERENCES + 1:
        return result("inconclusive", f"only {k} checkpoints in the tail; at least "
                      f"{MIN_DIFFERENCES + 1} are needed to fit a rate (tail={tail} of "
                      f"{len(t_all)}).")
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
        use = np.flatnonzero(resolved[:first])
        fit = _rate_fit(mid[use], size[use], noise[use], h[use]) if len(use) else None
        decays = (fit is not None and fit.ok and -fit.slope - fit.coverage * fit.slope_error > 0
                  and _power_law_excluded(mid[use], size[use], noise[use], h[use], fit.scatter))
        bound = spread
        if decays:
            r_low = -fit.slope - fit.coverage * fit.slope_error
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
    fit = _rate_fit(mid[use], size[use], noise[use], h[use])
    rate, half = -fit.slope, fit.coverage * fit.slope_error
    if rate - half > 0 and not _power_law_excluded(mid[use], size[use], noise[use], h[use],
                                                   fit.scatter):
        return result("power-law", f"differences on {span} decay, but a power of t fits them as "
                      f"well as e^(-rt) (rate {rate:.3g} ± {fit.slope_error:.2g}); an algebraic "
                      "approach has no exponential tail bound (see fit_power_law).", fit=fit)
    if rate - half > 0:
        correction = delta[-1] / math.expm1(rate * h[-1])
        remaining = (size[-1] + noise[-1]) / math.expm1((rate - half) * h[-1])
        movement = float(np.max(np.abs(v[-1] - v[0])))
        stable = remaining < movement
        why = ("the bound on the remaining distance is below the movement observed over the "
               "tail" if stable else f"but the remaining distance (≤ {remaining:.3g}) exceeds "
               f"the movement over the tail ({movement:.3g}); integrate longer")
        return result("exponential", f"differences on {span} decay at rate {rate:.6g} ± "
                      f"{fit.slope_error:.2g} (positive beyond {fit.coverage:.3g}σ); {why}.",
                      _shaped(v[-1] + correction, shape), e[-1] + remaining, fit, stable)
    if rate + half < 0:
        return result("diverging", f"differences on {span} grow at rate {-rate:.6g} ± "
                      f"{fit.slope_error:.2g}.", fit=fit)
    return result("stalled", f"differences on {span} neither decay nor grow significantly "
                  f"(rate {rate:.3g} ± {fit.slope_error:.2g}, κ={fit.coverage:.3g}).", fit=fit)


# --------------------------------------------------------------------------- other laws
def fit_doubly_exponential(times: object, gaps: object, errors: object = None, *,
                           log: bool = False, tail: float | int = 0.5) -> LineFit:
    r"""Fit :math:`|g(t)| = \exp(-c\, e^{a t})`: a line through :math:`\log(-\log|g|)` vs ``t``.

    Used for the rows of :math:`P(t)` that converge to 0/1 (``boolean-1d``:
    :math:`|P_{ij} - \delta| \le \exp(-c e^{t})` for :math:`V = 1`). ``slope`` is :math:`a`,
    ``intercept`` is :math:`\log c`.

    Parameters
    ----------
    times : array_like, shape (m,)
    gaps : array_like, shape (m,)
        :math:`|g(t_k)|`, computed with *relative* accuracy (e.g. off-diagonal attention entries,
        not ``1 − P_ii``); with ``log=True``, :math:`\log|g(t_k)|` (from scaled scores, when
        :math:`g` underflows float64).
    errors : array_like, shape (m,), optional
        Absolute error estimates of the gaps (of the log-gaps with ``log=True``).
    log : bool
    tail : float or int
        As in :func:`fit_exponential_convergence`.

    Returns
    -------
    fit : LineFit
        Points with :math:`g = 0` (underflow), :math:`|g| \ge 1` or error ≥ gap are dropped;
        ``fit.ok`` is False (and ``reason`` says why) when fewer than 3 remain.

    Examples
    --------
    >>> t = np.linspace(0, 5, 11)
    >>> fit = fit_doubly_exponential(t, np.exp(-2 * np.exp(t)), tail=1.0)
    >>> round(fit.slope, 9), round(float(np.exp(fit.intercept)), 9)
    (1.0, 2.0)
    """
    t = _times(times)
    g = np.abs(np.asarray(gaps, dtype=float)) if not log else np.asarray(gaps, dtype=float)
    e = np.zeros(len(t)) if errors is None else np.broadcast_to(
        np.asarray(errors, dtype=float), t.shape)
    if g.shape != t.shape or np.any(np.isnan(g)) or np.any(np.isnan(e)) or np.any(e < 0):
        raise InvalidArgument(f"gaps.shape={g.shape} must equal times.shape={t.shape}, with "
                              "no NaN and errors ≥ 0.")
    k = _tail(len(t), tail)
    t, g, e = t[-k:], g[-k:], e[-k:]
    with np.errstate(divide="ignore", invalid="ignore"):
        L = g if log else np.log(g)                        # log|g|
        rel = e / np.abs(L) if log else -np.log1p(-np.minimum(e / g, 1)) / np.abs(L)
    ok = np.isfinite(L) & (L < 0) & np.isfinite(rel) & (log | (e < g))
    reason = (f"{int(np.sum(~ok))} of {k} points dropped (underflow, |g| ≥ 1 or error ≥ gap)"
              if np.any(~ok) else "")
    return _line(t[ok], np.log(-L[ok]), rel[ok], reason)


def fit_power_law(times: object, values: object, errors: object = None, *,
                  tail: float | int = 0.5) -> LineFit:
    r"""Fit :math:`\|v(t)\|_\infty \approx C\, t^{p}`: a line through :math:`\log\|v\|` vs
    :math:`\log t` (``slope`` is the exponent :math:`p`, ``intercept`` is :math:`\log C`).

    For the collapse of ``collapse-negative-identity`` (:math:`V = -I`, like :math:`t^{-1/2}`).

    Parameters
    ----------
    times, values, errors, tail
        As in :func:`fit_exponential_convergence`; the tail's times must be > 0.

    Returns
    -------
    fit : LineFit
        Points whose norm does not exceed its error estimate are dropped (``reason`` counts
        them); ``fit.ok`` is False when fewer than 3 remain.

    Raises
    ------
    InvalidArgument
        As in :func:`fit_exponential_convergence`, or a tail time ≤ 0.

    Examples
    --------
    >>> t = np.linspace(1, 100, 50)
    >>> fit = fit_power_law(t, 3 / np.sqrt(t)[:, None] * np.array([1.0, -0.5]))
    >>> round(fit.slope, 9), round(float(np.exp(fit.intercept)), 9)
    (-0.5, 3.0)
    """
    t, v, e, _ = _series(times, values, errors)
    k = _tail(len(t), tail)
    t, v, e = t[-k:], v[-k:], e[-k:]
    if np.any(t <= 0):
        raise InvalidArgument(f"the tail starts at t={t[0]:.6g}; a power law in t needs t > 0 "
                              "(use a smaller tail or drop t = 0).")
    size = np.max(np.abs(v), axis=1)
    ok = (size > e) & np.isfinite(size)
    with np.errstate(divide="ignore", invalid="ignore"):
        dy = -np.log1p(-e / size)
    reason = f"{int(np.sum(~ok))} of {k} points dropped (norm ≤ error)" if np.any(~ok) else ""
    return _line(np.log(t[ok]), np.log(size[ok]), dy[ok], reason)


# --------------------------------------------------------------------------- trajectories
def _token_series(traj, variable: str):
    """(values (m, n, d), errors (m, n) or None, note) for ``variable`` of ``traj``."""
    if variable not in ("z", "x"):
        raise InvalidArgument(f"variable={variable!r} ({type(variable).__name__}) must be 'z' "
                              "(rescaled tokens) or 'x' (tokens).")
    values = getattr(traj, variable)
    if values is None:
        raise InvalidArgument(f"variable={variable!r}: this trajectory (form={traj.form!r}) has "
                              "no such array; use variable='x' or simulate in form 'z'.")
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


def _with_note(fit: LimitFit, note: str) -> LimitFit:
    if not note:
        return fit
    return LimitFit(**{**fit.__dict__, "reason": fit.reason + note})


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
    >>> from verify.simulate import simulate
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
    return [_with_note(fit_exponential_convergence(
        traj.t, values[:, i, :], None if errors is None else errors[:, i],
        tail=float(tail_fraction)), note) for i in range(values.shape[1])]


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
    return [_with_note(fit_exponential_convergence(
        traj.t, out[:, i], None if errors is None else scale * errors[:, i],
        tail=float(tail_fraction)), note) for i in range(values.shape[1])]


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
