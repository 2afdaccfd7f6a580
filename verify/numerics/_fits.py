r"""Straight lines through points with error bars, and the laws fitted as such lines.

A law that becomes a line after a change of variables is fitted by weighted least squares
(:func:`fit_line`), with an intrinsic scatter added when the residuals exceed the stated errors,
so that standard errors reflect both noise and misfit:

* :func:`fit_power_law` — :math:`\|v(t)\|_\infty \approx C\, t^{p}`: :math:`\log\|v\|` against
  :math:`\log t` (the :math:`t^{-1/2}` collapse for :math:`V = -I`);
* :func:`fit_doubly_exponential` — :math:`|g(t)| = \exp(-c\, e^{a t})`:
  :math:`\log(-\log|g|)` against :math:`t` (attention entries tending to 0/1 for :math:`V = 1`);
* :func:`line_rejected` — the :math:`\chi^2` test of a line, for comparing two laws;
* :func:`coverage_factor` — decisions use :math:`\kappa`, the Student-t quantile with the fit's
  residual degrees of freedom at the two-sided level :data:`CONFIDENCE` of :math:`3\sigma`
  (:math:`\kappa = 3` for many points, larger for few).

Errors in :math:`\log|v|` come from absolute errors by :func:`log_error`; every error is at
least the float64 resolution of the value it belongs to. :func:`check_times`,
:func:`check_series` and :func:`tail_count` are the input checks shared with
:mod:`verify.analysis.observed_limits`.

Examples
--------
>>> t = np.linspace(1, 100, 50)
>>> fit = fit_power_law(t, 3 / np.sqrt(t)[:, None] * np.array([1.0, -0.5]))
>>> round(fit.slope, 9), round(float(np.exp(fit.intercept)), 9)
(-0.5, 3.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.errors import InvalidArgument
from verify.numerics._rounding import RESOLUTION_ULPS, ulps

__all__ = [
    "CONFIDENCE",
    "LineFit",
    "coverage_factor",
    "fit_line",
    "line_rejected",
    "log_error",
    "fit_power_law",
    "fit_doubly_exponential",
    "check_times",
    "check_series",
    "tail_count",
]

#: Two-sided coverage of the error bars used for decisions: that of ±3σ for a normal law.
CONFIDENCE = math.erf(3 / math.sqrt(2))


def coverage_factor(dof: int) -> float:
    r"""Multiple of a standard error covering :data:`CONFIDENCE` (Student-t, ``dof`` degrees).

    >>> round(coverage_factor(10**6), 3), round(coverage_factor(4), 2), coverage_factor(0)
    (3.0, 6.62, inf)
    """
    if dof < 1:
        return math.inf
    # the function scipy.stats' t.ppf calls: scipy.stats costs a worker ~0.5 CPU s to import,
    # scipy.special nothing beyond the integrators' import of it (and `verify --help` none)
    from scipy.special import stdtrit

    return float(stdtrit(float(dof), 0.5 + CONFIDENCE / 2))


@dataclass(frozen=True)
class LineFit:
    r"""Weighted least-squares line ``y = slope·x + intercept`` with standard errors.

    ``scatter`` is the intrinsic scatter :math:`\tau` added to every point's error so that the
    reduced :math:`\chi^2` is at most 1 (0 when the stated errors explain the residuals);
    ``coverage`` is :func:`coverage_factor` of the residual degrees of freedom; ``reason`` says
    why points were dropped or the line could not be fitted.
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

    @property
    def slope_interval(self) -> tuple[float, float]:
        """``(slope − κ·slope_error, slope + κ·slope_error)`` with κ = ``coverage``."""
        half = self.coverage * self.slope_error
        return (self.slope - half, self.slope + half)


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


def _variances(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``dy²``, never below the float64 resolution of ``y``."""
    return np.maximum(dy, ulps(RESOLUTION_ULPS, 1 + np.abs(y))) ** 2


def _points(x: object, y: object, dy: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    try:
        x, y, dy = (np.asarray(a, dtype=float) for a in (x, y, dy))
    except (TypeError, ValueError):
        raise InvalidArgument("x, y and dy must be arrays of numbers (dy may be one number)."
                              ) from None
    if x.ndim != 1 or y.shape != x.shape or dy.shape not in ((), x.shape):
        raise InvalidArgument(f"x.shape={x.shape}, y.shape={y.shape}, dy.shape={dy.shape}: x "
                              "and y must be 1-D of one length, dy one number or like x.")
    dy = np.broadcast_to(dy, x.shape)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(np.isfinite(dy))
            and np.all(dy >= 0)):
        raise InvalidArgument("x, y must be finite and dy finite and ≥ 0 (standard errors); "
                              "drop the points where they are not.")
    return x, y, dy


def fit_line(x: object, y: object, dy: object, reason: str = "") -> LineFit:
    r"""Fit a line to points with standard errors ``dy``, adding an intrinsic scatter
    :math:`\tau` (Paule–Mandel) when the residuals exceed the stated errors.

    The weights are :math:`1/(dy_k^2 + \tau^2)` with the smallest :math:`\tau \ge 0` giving
    :math:`\chi^2 \le n - 2`. Exact data with a misfit thus get the ordinary least-squares
    errors; noisy data get the errors propagated from ``dy``. Each ``dy`` is taken to be at
    least the float64 resolution of its ``y``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Finite coordinates.
    dy : float or array_like, shape (n,)
        Standard errors of ``y`` (≥ 0).
    reason : str
        Carried into :attr:`LineFit.reason` (e.g. how many points the caller dropped).

    Returns
    -------
    fit : LineFit
        ``fit.ok`` is False (slopes ``nan``, ``reason`` says why) when ``n < 3``.

    Raises
    ------
    InvalidArgument
        Shapes that differ, non-finite values or negative ``dy``.

    Examples
    --------
    >>> x = np.arange(6.0)
    >>> fit = fit_line(x, 2 * x + 1 + 0.05 * (-1) ** x, 0.1)   # explained by the errors
    >>> round(fit.slope, 12), round(fit.slope_error, 6), fit.scatter
    (1.99, 0.023905, 0.0)
    >>> fit = fit_line(x, 2 * x + 1 + (-1) ** x, 0.1)          # residuals ≫ errors
    >>> round(fit.slope, 12), bool(fit.scatter > 1), fit.coverage > 3
    (1.828571428571, True, True)
    """
    return _fit_line(*_points(x, y, dy), reason)


def _fit_line(x: np.ndarray, y: np.ndarray, dy: np.ndarray, reason: str = "") -> LineFit:
    """:func:`fit_line` on float arrays known to be valid (no checks: non-finite points give a
    ``nan`` line, as the fixed-point iteration of :mod:`verify.analysis.observed_limits`
    expects)."""
    n = len(x)
    if n < 3:
        why = f"only {n} usable point(s); a line with an error bar needs at least 3"
        return LineFit(math.nan, math.nan, math.nan, math.nan, n, math.inf, 0.0,
                       f"{reason}; {why}" if reason else why)
    base = _variances(y, dy)
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


def line_rejected(x: object, y: object, dy: object, scatter: float = 0.0) -> bool:
    r"""Whether a straight line through the points is rejected at level :data:`CONFIDENCE`.

    With variances :math:`dy_k^2 + \tau^2` (``scatter`` :math:`= \tau`, e.g. the scatter that
    made a competing law fit the same points), the weighted least-squares line is rejected when
    its :math:`\chi^2` exceeds the :data:`CONFIDENCE` quantile of :math:`\chi^2_{n-2}`. Fewer
    than 3 points reject nothing.

    >>> x = np.arange(8.0)
    >>> line_rejected(x, 0.5 * x, 0.01), line_rejected(x, 0.5 * x**2, 0.01)
    (False, True)
    """
    x, y, dy = _points(x, y, dy)
    if len(x) < 3:
        return False
    chi2 = _wls(x, y, _variances(y, dy) + float(scatter) ** 2)[4]
    from scipy.special import gammaincinv  # what scipy.stats' chi2.ppf calls (as above)

    return bool(chi2 > 2 * gammaincinv((len(x) - 2) / 2, CONFIDENCE))  # the χ²_{n-2} quantile


def log_error(value: object, error: object) -> np.ndarray:
    r"""Error of :math:`\log|v|` implied by an absolute error :math:`e` of :math:`v`:
    :math:`\log|v| - \log(|v| - e) = -\log(1 - e/|v|)` (the larger side), ``inf`` where
    :math:`e \ge |v|`.

    >>> log_error([1.0, 2.0, 1.0], [0.5, 1e-8, 1.0]).tolist()
    [0.6931471805599453, 5.000000012500001e-09, inf]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.asarray(error, dtype=float)) / np.abs(np.asarray(value, dtype=float))
        return np.where(ratio < 1, -np.log1p(-np.minimum(ratio, 1)), np.inf)


# --------------------------------------------------------------------------- input checks
def check_times(times: object) -> np.ndarray:
    """Checkpoint times as a finite, strictly increasing float array (else InvalidArgument)."""
    try:
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgument(f"times={times!r} ({type(times).__name__}) is not an array of "
                              "numbers; pass the checkpoint times, e.g. traj.t.") from None
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise InvalidArgument(f"times (shape {t.shape}) must be a finite, strictly increasing "
                              "1-D array; pass the checkpoint times, e.g. traj.t.")
    return t


def check_series(times: object, values: object, errors: object):
    """(t (m,), v (m, p), e (m,), shape of one value); ``e`` is the max-norm of the errors of
    each value, at least one ulp of ``v``, and ``+inf`` where a value has no error estimate (its
    reference is not finite there: nothing below it is resolved)."""
    t = check_times(times)
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
        if np.any(np.isnan(e)) or np.any(e < 0):
            raise InvalidArgument("errors must be ≥ 0 (absolute error estimates; +inf where a "
                                  "value has none); use errors=None when there is no estimate.")
    with np.errstate(invalid="ignore"):
        ulp = ulps(RESOLUTION_ULPS, np.max(np.abs(v), axis=1)) if v.shape[1] else np.zeros(len(t))
    return t, v, np.maximum(e, np.nan_to_num(ulp, posinf=0.0)), shape


def tail_count(m: int, tail: object) -> int:
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


# --------------------------------------------------------------------------- laws
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
        As in :func:`verify.analysis.observed_limits.fit_exponential_convergence`.

    Returns
    -------
    fit : LineFit
        Points with :math:`g = 0` (underflow), :math:`|g| \ge 1` or error ≥ gap are dropped;
        ``fit.ok`` is False (and ``reason`` says why) when fewer than 3 remain.

    Raises
    ------
    InvalidArgument
        Malformed ``times`` or ``tail``; ``gaps`` not shaped like ``times``; NaN; errors < 0.

    Examples
    --------
    >>> t = np.linspace(0, 5, 11)
    >>> fit = fit_doubly_exponential(t, np.exp(-2 * np.exp(t)), tail=1.0)
    >>> round(fit.slope, 9), round(float(np.exp(fit.intercept)), 9)
    (1.0, 2.0)
    """
    t = check_times(times)
    g = np.abs(np.asarray(gaps, dtype=float)) if not log else np.asarray(gaps, dtype=float)
    e = np.zeros(len(t)) if errors is None else np.broadcast_to(
        np.asarray(errors, dtype=float), t.shape)
    if g.shape != t.shape or np.any(np.isnan(g)) or np.any(np.isnan(e)) or np.any(e < 0):
        raise InvalidArgument(f"gaps.shape={g.shape} must equal times.shape={t.shape}, with "
                              "no NaN and errors ≥ 0.")
    k = tail_count(len(t), tail)
    t, g, e = t[-k:], g[-k:], e[-k:]
    with np.errstate(divide="ignore", invalid="ignore"):
        L = g if log else np.log(g)                        # log|g|
        rel = (e if log else log_error(g, e)) / np.abs(L)  # error of log(-log|g|)
    ok = np.isfinite(L) & (L < 0) & np.isfinite(rel) & (log | (e < g))
    reason = (f"{int(np.sum(~ok))} of {k} points dropped (underflow, |g| ≥ 1 or error ≥ gap)"
              if np.any(~ok) else "")
    return _fit_line(t[ok], np.log(-L[ok]), rel[ok], reason)


def fit_power_law(times: object, values: object, errors: object = None, *,
                  tail: float | int = 0.5) -> LineFit:
    r"""Fit :math:`\|v(t)\|_\infty \approx C\, t^{p}`: a line through :math:`\log\|v\|` vs
    :math:`\log t` (``slope`` is the exponent :math:`p`, ``intercept`` is :math:`\log C`).

    For the collapse of ``collapse-negative-identity`` (:math:`V = -I`, like :math:`t^{-1/2}`).

    Parameters
    ----------
    times, values, errors, tail
        As in :func:`verify.analysis.observed_limits.fit_exponential_convergence`; the tail's times
        must be > 0.

    Returns
    -------
    fit : LineFit
        Points whose norm does not exceed its error estimate are dropped (``reason`` counts
        them); ``fit.ok`` is False when fewer than 3 remain.

    Raises
    ------
    InvalidArgument
        As in :func:`verify.analysis.observed_limits.fit_exponential_convergence`, or a tail time ≤
        0.

    Examples
    --------
    >>> t = np.linspace(1, 100, 50)
    >>> fit = fit_power_law(t, 3 * t ** -0.5, errors=1e-3)
    >>> lo, hi = fit.slope_interval
    >>> bool(lo <= -0.5 <= hi), fit.n_points
    (True, 25)
    """
    t, v, e, _ = check_series(times, values, errors)
    k = tail_count(len(t), tail)
    t, v, e = t[-k:], v[-k:], e[-k:]
    if np.any(t <= 0):
        raise InvalidArgument(f"the tail starts at t={t[0]:.6g}; a power law in t needs t > 0 "
                              "(use a smaller tail or drop t = 0).")
    size = np.max(np.abs(v), axis=1)
    ok = (size > e) & np.isfinite(size)
    reason = f"{int(np.sum(~ok))} of {k} points dropped (norm ≤ error)" if np.any(~ok) else ""
    return _fit_line(np.log(t[ok]), np.log(size[ok]), log_error(size[ok], e[ok]), reason)
