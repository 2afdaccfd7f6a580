r"""The central rule of the limit conclusions: does a nonnegative series :math:`D(t_k)` tend to 0?

Decided from the trend over the tail of the checkpoints (:func:`tends_to_zero`, returning a
:class:`Trend`), never from the final value alone. A trend can **support** "D → 0" (a resolved
decay, confirmed later at a longer horizon) but never refute it: a series that levels off at a
positive value or grows is *undecided*, with the trend recorded as evidence against
(``Trend.against``) — a metastable state looks exactly like that for exponentially long times.
Refuting needs a certificate that the end will not change (:mod:`verify.analysis.end_certificates`).

Examples
--------
>>> t = np.linspace(0, 10, 21)
>>> tends_to_zero(t, 2 * np.exp(-t), np.full(21, 1e-14)).status
'holds'
>>> trend = tends_to_zero(t, 1 + np.exp(-t), np.full(21, 1e-14))
>>> trend.status, trend.against
('undecided', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from verify.analysis.evidence import Basis, sig6
from verify.analysis.observed_limits import fit_exponential_convergence, fit_power_law
from verify.digits import plus_minus, upper
from verify.judge._decision import decide, inconclusive
from verify.judge._verdicts import InstanceResult
from verify.numerics._coverage import estimate_bound
from verify.numerics._fits import tail_count

__all__ = ["Trend", "tends_to_zero", "resolved_rate"]

# --------------------------------------------------------------------------- the central rule
@dataclass(frozen=True)
class Trend:
    """The support for "D(t) → 0": a ``margin`` (the resolved decay rate, or the drop to the
    error floor) with its ``error``, in ``unit``; ``margin`` NaN when undecided (``what`` then
    says why). ``against`` is True when the trend goes against the claim (D levels off at a
    positive value or grows): evidence only, never a violation. ``basis``: *fit* for a fitted
    rate or exponent (its error is the fit's coverage interval), *estimate* for a drop to the
    error floor (its error is the run's estimate)."""

    margin: float
    error: float
    what: str
    evidence: dict = field(default_factory=dict)
    unit: str = "rate (1/time)"
    against: bool = False
    basis: Basis = Basis.FIT

    @property
    def status(self) -> str:
        """``"holds"`` (``margin`` above its error, times κ on the estimate basis: the rule of
        :func:`~verify.judge.decide`) or ``"undecided"``."""
        bound = estimate_bound(self.error) if self.basis.estimated else self.error
        if math.isnan(self.margin) or not self.margin > bound:
            return "undecided"
        return "holds"

    def judge(self, request, evidence: dict | None = None) -> InstanceResult:
        """The instance result: holds when the decay is resolved, else inconclusive (with the
        trend against the claim in the evidence, if any)."""
        record = dict(evidence or {}, **self.evidence)
        if self.status != "holds":
            return inconclusive(request, self.what, record, unit=self.unit)
        return decide(request, self.margin, self.error, self.what, unit=self.unit,
                      evidence=record, basis=self.basis)


def resolved_rate(fit) -> tuple[float, float] | None:
    """``(rate, κσ)`` when the fit resolved a decay (rate > κσ), else None."""
    if not math.isfinite(fit.rate) or not math.isfinite(fit.coverage):
        return None
    half = fit.coverage * fit.rate_error
    return (fit.rate, half) if fit.rate > half else None


def _secant_power_fit(t, slope, noise):
    r""":func:`fit_power_law` of the secant slopes :math:`|\Delta_k|/h_k`, each placed at the
    point :math:`s_k` where :math:`|D'| \propto s^{q-1}` equals the secant of
    :math:`t^{q}` on :math:`[t_k, t_{k+1}]` (fixed-point iteration on :math:`q`, as the
    exponential fit does for its rate), so a pure power law is fitted without bias."""
    a, b = t[:-1], t[1:]
    s = (a + b) / 2
    fit = fit_power_law(s, slope, noise, tail=1.0)
    for _ in range(50):
        if not fit.ok:
            break
        q = fit.slope + 1
        secant = np.log(b / a) / (b - a) if abs(q) < 1e-12 else (b**q - a**q) / (q * (b - a))
        s_new = secant ** (1 / (q - 1)) if abs(q - 1) > 1e-12 else s
        refit = fit_power_law(s_new, slope, noise, tail=1.0)
        done = abs(refit.slope - fit.slope) <= 1e-14 * (1 + abs(fit.slope))
        fit = refit
        if done:
            break
    return fit


def _known(fit) -> bool:
    """The fitted limit is stabilised with a finite error bar."""
    return fit.stabilised and math.isfinite(fit.limit_error)


def _extrapolate(t, D, e, k):
    """``(fit, q, half, low, high)``: the power law of the differences over the last ``k``
    checkpoints and the interval of the limit from the remaining movement (``fit`` not ok:
    the rest is None)."""
    t, D, e = t[-k:], D[-k:], e[-k:]
    h, delta = np.diff(t), np.diff(D)
    noise = e[1:] + e[:-1]
    fit = _secant_power_fit(t, np.abs(delta) / h, noise / h)
    if not fit.ok:
        return fit, None, None, None, None
    q, half = fit.slope + 1, fit.coverage * fit.slope_error
    if not q + half < 0:
        return fit, q, half, None, None
    rho, last, nz = t[-1] / t[-2], abs(delta[-1]), noise[-1]
    r_max = (last + nz) / math.expm1(-(q + half) * math.log(rho))
    r_min = max(last - nz, 0.0) / math.expm1(-(q - half) * math.log(rho))
    sign = 1.0 if delta[-1] > 0 else -1.0
    ends = sorted((D[-1] + sign * r_min, D[-1] + sign * r_max))
    return fit, q, half, ends[0] - e[-1], ends[1] + e[-1]


def _power_tail(t, D, e, tail, name) -> Trend:
    r"""Algebraic decay: fit :math:`|\Delta_k|/h_k \propto s_k^{q-1}` and bound the limit by the
    remaining movement :math:`|\Delta_{m-1}|/(\rho^{|q|} - 1)`, :math:`\rho = t_m/t_{m-1}` (exact
    for :math:`D = L + c\,t^{q}`), with :math:`|q|` over its coverage interval. The law is a
    model: the same extrapolation from the later half of the tail is a second route, and the
    distance between the two intervals is added to both ends (the model's error)."""
    k = tail_count(len(t), tail)
    if t[-k] <= 0:
        return Trend(math.nan, math.inf, f"{name}(t) decays algebraically but the tail starts "
                     "at t = 0; no power law can be fitted (use a smaller tail_fraction).")
    fit, q, half, low, high = _extrapolate(t, D, e, k)
    if not fit.ok:
        return Trend(math.nan, math.inf, f"{name}(t): no power law fitted to its differences "
                     f"({fit.reason}).")
    ev = {"kind": "power-law", "exponent": sig6(q), "exponent_error": sig6(fit.slope_error),
          "coverage": sig6(fit.coverage)}
    if low is None:
        return Trend(math.nan, math.inf, f"{name}(t) moves like t^({plus_minus(q, half)}): not "
                     "resolved to decay faster than log t, so its limit cannot be bounded.", ev)
    later = _extrapolate(t, D, e, max(4, k // 2)) if k // 2 >= 4 else None
    if later is not None and later[3] is not None:
        model = abs((later[3] + later[4]) - (low + high)) / 2
        low, high = low - model, high + model
        ev["model_error"] = sig6(model)
    ev.update(limit_interval=[sig6(low), sig6(high)])
    if not high < float(np.max(D[-tail_count(len(t), tail):])):
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: the extrapolated limit "
                     f"interval [{low:.3g}, {high:.3g}] is no smaller than {name} itself over "
                     "the tail: the fit says nothing about the limit yet.", ev)
    if low > 0:  # an extrapolated power law is a model, not a bound: never a violation
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: a power law fitted to "
                     f"its tail extrapolates to [{low:.4g}, {high:.4g}], away from 0, but a slow "
                     "(pre-asymptotic) approach to 0 looks the same; integrate longer.", ev,
                     against=True)
    return Trend(-q, half, f"{name}(t) → 0 ({name} ~ t^({plus_minus(q, half)}), κσ; "
                 f"extrapolated limit in [{low:.3g}, {high:.3g}], not above 0)", ev,
                 unit="power-law exponent")


def tends_to_zero(times: object, series: object, errors: object, *, tail: float = 0.5,
                  name: str = "D") -> Trend:
    r"""Decide whether a nonnegative series :math:`D(t_k)` tends to 0, from its trend.

    The tail is fitted by :func:`verify.analysis.observed_limits.fit_exponential_convergence`; by
    its ``kind``:

    * ``"exponential"`` / ``"converged-to-error"`` and stabilised (the limit :math:`L` is known
      within a bar :math:`e`; an exponential fit whose remaining distance exceeds the movement
      over the tail is *not* stabilised and stays undecided): :math:`L > e` — undecided, with
      the trend *against* the claim in the evidence (:math:`D` seems to level off at a positive
      value). Otherwise :math:`|D_\infty| \le L + e` and the decay must be
      resolved: margin the fitted rate :math:`r`, error :math:`\kappa\sigma_r` (**holds** when
      :math:`r > \kappa\sigma_r`). A series already at its error floor over the whole tail
      takes its rate from the whole series; failing that, the drop from its largest value to
      its last one is the margin, with the sum of their errors as error (as for a collapse that
      ended before the tail); a series within its error of 0 at every checkpoint is undecided.
    * ``"power-law"``: the differences are fitted by :math:`t^{q-1}` (:func:`fit_power_law`);
      with :math:`q < 0` beyond :math:`\kappa\sigma_q` the limit lies in an interval from the
      remaining movement (:func:`_power_tail`): above 0 — undecided (an extrapolated law is a
      model, and a pre-asymptotic approach to 0 looks the same); else margin
      :math:`-q`, error :math:`\kappa\sigma_q` (an interval below 0 is accepted: for
      :math:`D \ge 0` it means the law overshoots, i.e. :math:`D` reaches 0 at least as fast;
      in the same way a fitted limit :math:`L < -e` is accepted above).
    * ``"diverging"`` with a fitted rate: the differences grow — undecided, *against*.
    * otherwise (``"stalled"``, ``"inconclusive"``, overflow): undecided, with the reason.

    Parameters
    ----------
    times : array_like, shape (m,)
    series : array_like, shape (m,)
        :math:`D(t_k) \ge 0`.
    errors : array_like, shape (m,)
        Error estimates of ``series`` (finite, ≥ 0).
    tail : float
        Fraction of the checkpoints used (the last ones).
    name : str
        How :math:`D` is named in the sentence.

    Returns
    -------
    Trend

    Examples
    --------
    >>> t = np.linspace(1, 400, 40)
    >>> trend = tends_to_zero(t, 1 / np.sqrt(t), np.full(40, 1e-13))      # V = −I collapse
    >>> trend.status, trend.evidence["kind"], round(trend.margin, 3)
    ('holds', 'power-law', 0.5)
    >>> tends_to_zero(t, 1 + 1 / t, np.full(40, 1e-13)).status   # a law, not a bound
    'undecided'
    >>> tends_to_zero(t, 1 + np.exp(-t / 10), np.full(40, 1e-13)).status   # against: evidence
    'undecided'
    >>> tends_to_zero(t, np.zeros(40), np.zeros(40)).status
    'undecided'
    """
    t = np.asarray(times, dtype=float)
    D, e = np.asarray(series, dtype=float), np.asarray(errors, dtype=float)
    if not (np.all(np.isfinite(D)) and np.all(np.isfinite(e))):
        return Trend(math.nan, math.inf, f"{name}(t) is not finite at some checkpoint "
                     "(overflow, or no error estimate).")
    fit = fit_exponential_convergence(t, D, e, tail=float(tail))
    ev = {"kind": fit.kind, f"{name}_at_T": sig6(D[-1]), f"{name}_error_at_T": sig6(e[-1]),
          "tail_start": sig6(fit.tail_start)}
    if fit.kind == "power-law":
        trend = _power_tail(t, D, e, tail, name)
        return Trend(trend.margin, trend.error, trend.what, {**ev, **trend.evidence})
    if fit.kind == "diverging" and math.isfinite(fit.rate):
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: its differences grow "
                     f"at rate {plus_minus(-fit.rate, fit.rate_error)} on [{fit.tail_start:.4g}, "
                     f"{t[-1]:.4g}] — a trend, not a certificate (a metastable state escaping "
                     "looks the same)", ev, against=True)
    if fit.kind not in ("exponential", "converged-to-error") or not fit.stabilised:
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: {fit.reason}", ev)
    L, bar = float(fit.limit), float(fit.limit_error)
    ev.update(limit=sig6(L), limit_error=sig6(bar))
    if L > bar:
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: its trend levels off at "
                     f"{plus_minus(L, bar)} — a trend, not a certificate that it stays there",
                     ev, against=True)
    start = float(np.max(D[t >= fit.tail_start])) if np.any(t >= fit.tail_start) else D[0]
    if fit.kind == "exponential" and not L + bar < start:
        return Trend(math.nan, math.inf, f"{name}(t) → 0 is undecided: the extrapolated limit "
                     f"{plus_minus(L, bar)} is no smaller than {name} itself over the tail "
                     f"({start:.3g}): the fit says nothing about the limit yet.", ev)
    rate = resolved_rate(fit)
    if rate is None:
        rate = resolved_rate(fit_exponential_convergence(t, D, e, tail=1.0))
        ev["rate_from"] = "whole run"
    if rate is not None:
        ev.update(rate=sig6(rate[0]), rate_bar=sig6(rate[1]))
        return Trend(rate[0], rate[1], f"{name}(t) → 0 (decays at rate "
                     f"{plus_minus(*rate)}; |{name}_∞| ≤ {upper(L + bar)})", ev)
    k = int(np.argmax(D))
    drop, drop_error = float(D[k] - D[-1]), float(e[k] + e[-1])
    if not drop > estimate_bound(drop_error):
        return Trend(math.nan, math.inf, f"{name}(t) stays within its error estimate of 0 at "
                     f"every checkpoint (≤ {upper(np.max(D))}): no trend to decide from.", ev)
    return Trend(drop, drop_error, f"{name}(t) → 0 (it fell from {D[k]:.4g} at t = {t[k]:.4g} "
                 f"to its error floor, {plus_minus(D[-1], e[-1])})", ev, unit=f"drop of {name}",
                 basis=Basis.ESTIMATE)


