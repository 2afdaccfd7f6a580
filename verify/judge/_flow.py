r"""Conclusions about the flow: ``monotone``, ``inequality``, ``rate`` and ``events`` (the
escape hatch ``predicate`` is in :mod:`verify.judge._predicate`).

``monotone``, ``inequality`` and ``events`` are statements about finite times, checked at the
checkpoints: a step (or a value) beyond its error decides, either way. ``rate`` is about
``t → ∞``: a fitted rate supports it (re-checked at a longer horizon by the engine), and it is
violated only with a certificate — an exponential rate is refuted by a *degenerate
equilibrium* at the end state (:func:`verify.analysis.end_certificates.degenerate_equilibrium`: a
zero eigenvalue of the linearisation on directions that are not a family of equilibria, along
which the state still has a resolved component), where the approach is algebraic.

Every number that decides comes with the error estimate of the *second route*: the quantity is
evaluated on the run and on its ``reference_run`` (a re-run at tighter tolerance and higher
precision, same checkpoints), and :func:`~verify.predict._evaluation.quantity_error` of the two
is its error (:func:`quantity_series`).

A *quantity* (key ``quantity``) is one of the named quantities of :data:`NAMED_QUANTITIES`,
computed from the tokens :math:`z_i(t_k)` (or :math:`x_i`, key ``variable``) — a number per
checkpoint, or a vector (``monotone`` and ``inequality`` then hold for every component):

* ``diameter`` :math:`\max_{i,j}|z_i - z_j|`, ``spread`` :math:`\max_i|z_i - \bar z|` with
  :math:`\bar z` the mean token, ``max-norm`` :math:`\max_i|z_i|` (Euclidean norms);
* ``hull-volume``: the volume of :math:`\mathrm{conv}\{z_i\}` (length for ``d = 1``; 0 for a
  degenerate hull);
* ``attention-gap``: :math:`\max_i \sum_{j \ne j^*(i)} P_{ij}` with :math:`j^*(i)` the largest
  entry of row :math:`i` (the distance of :math:`P(t)` from a Boolean matrix, summed from the
  small entries so that it keeps its relative accuracy);
* ``decided-attention-gap``: the same over the rows whose hardmax target is certified at the
  last checkpoint (the rows of Theorem 2.1 that tend to a Boolean row);
* ``pairwise-distances`` (vector) :math:`|z_i - z_j|` for :math:`i < j`;
* ``consecutive-gaps`` (vector, ``d = 1``) :math:`z_{\sigma(k+1)} - z_{\sigma(k)}` for the order
  :math:`\sigma` of the initial tokens;
* ``coordinates`` (vector): every coordinate of every token;
* ``log-boolean-gap``: :math:`\max_i \log(1 - P_{i\ell(i)})` over the rows with a certified
  target :math:`\ell(i)` at the last checkpoint, from the scaled scores (the rows of Theorem
  2.1 that tend to a Boolean row, doubly exponentially: a ``rate`` with law
  ``doubly-exponential`` reads it as a logarithm);

or a scalar formula in the ``"state"`` context of :mod:`verify.predict._expressions`
(``"max(norm(z))"``, ``"P[0, 1]"``; ``variable`` is then ignored, the formula names ``z``/``x``).

Examples
--------
With :math:`Q = 0` the attention is uniform and, for :math:`V = I`, every
:math:`z_i(t) = \bar z + (z_i(0) - \bar z)e^{-t}`: the diameter is :math:`3e^{-t}` exactly.

>>> from types import SimpleNamespace
>>> from verify.claim import CheckRequest
>>> from verify.vocabulary.conclusions import CONCLUSIONS, ConclusionSpec
>>> from verify.predict._evaluation import Evaluation
>>> from verify.model import Instance, Model
>>> from verify.flow.simulate import simulate
>>> inst = Instance(Model(V=[[1]], Q=[[0]], K=[[1]]), [[0], [1], [3]], name="u#0")
>>> req = CheckRequest(None, SimpleNamespace(name="u"), inst, None, 4, 9, "float64")
>>> ev = Evaluation(req, simulate(inst, 4, checkpoints=9), ConclusionSpec("monotone", {}))
>>> from verify.judge._quantities import quantity_series
>>> values, errors = quantity_series(ev, "diameter")
>>> bool(np.all(np.abs(values - 3 * np.exp(-ev.trajectory.t)) < 1e-8)), bool(errors.max() < 1e-8)
(True, True)
>>> CONCLUSIONS["monotone"].judge(Evaluation(req, ev.trajectory, ConclusionSpec(
...     "monotone", {"quantity": "diameter", "direction": "decreasing"}))).verdict.value
'holds'
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Real

import numpy as np

from verify.analysis.end_certificates import degenerate_equilibrium
from verify.analysis.evidence import Basis
from verify.analysis.observed_limits import (
    fit_doubly_exponential,
    fit_exponential_convergence,
    fit_power_law,
)
from verify.digits import plus_minus
from verify.errors import InvalidArgument
from verify.exact.plain import fail
from verify.judge._decision import (
    beyond_the_run,
    combine,
    decide,
    inconclusive,
    noted_violation,
)
from verify.judge._quantities import (
    LOG_QUANTITIES,
    _bound_series,
    _choice,
    _number,
    check_quantity,
    check_tail,
    check_window,
    checkpoint_window,
    quantity_columns,
    quantity_or_reason,
)
from verify.numerics._coverage import estimate_bound
from verify.predict._evaluation import quantity_error
from verify.predict._expressions import (
    check_expression,
    default_variable,
    diameter,
    evaluate,
    initial_namespace,
)
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["DIRECTIONS", "LAWS", "RELATIONS", "judge_monotone", "judge_inequality", "judge_rate",
           "judge_events"]

DIRECTIONS = ("nonincreasing", "nondecreasing", "increasing", "decreasing")
LAWS = ("exponential", "doubly-exponential", "power-law")
RELATIONS = (">=", "<=", "==", ">", "<")
_SAMPLED = "checked at the {m} checkpoints only; the flow between them is not examined"


# --------------------------------------------------------------------------- monotone
def _validate_monotone(p: dict, source: str, where: str) -> None:
    check_quantity(p, source, where)
    _choice(p, "direction", DIRECTIONS, source, where)


@register_conclusion(
    "monotone", asymptotic=False,
    summary="A quantity q(t) is monotone along the flow (non-increasing, non-decreasing, "
            "increasing or decreasing).",
    needs="q at every checkpoint with its error |q(run) − q(reference run)|; margin = the worst "
          "signed step q(t_k+1) − q(t_k) (sign flipped for decreasing), error = the errors at "
          "both ends: holds if every step's margin exceeds its error, violated if one step goes "
          "the wrong way by more than its error. Checkpoints only.",
    keys={"quantity": "a named quantity (diameter, spread, max-norm, hull-volume, "
                      "attention-gap) or a scalar formula over t, z, x, P, x0, V, ...",
          "direction": "nonincreasing, nondecreasing, increasing or decreasing",
          "variable": "the tokens of a named quantity: 'z' or 'x' (default: the variable the "
                      "run integrates)"},
    required=("quantity", "direction"), validate=_validate_monotone)
def judge_monotone(evaluation):
    """Judge ``monotone``: the worst step against the direction beyond its error decides
    (violated). Otherwise, for a strict direction every step must move the right way beyond
    its error; for a non-strict one a step that stays within its error is consistent with the
    claim but no evidence (counted as *unresolved*), and the resolved step with the smallest
    ``margin − error`` decides (no resolved step: inconclusive)."""
    p, request = evaluation.parameters, evaluation.request
    quantity, direction = p["quantity"], p["direction"]
    values, errors, reason = quantity_or_reason(evaluation, quantity, p.get("variable"))
    if reason:
        return inconclusive(request, reason)
    t = evaluation.trajectory.t
    values, errors = values.reshape(len(t), -1), errors.reshape(len(t), -1)
    sign = 1.0 if direction in ("nondecreasing", "increasing") else -1.0
    margin, error = sign * np.diff(values, axis=0), errors[:-1] + errors[1:]
    if len(margin) == 0:
        return inconclusive(request, "only one checkpoint: no step to compare.")
    strict = direction in ("increasing", "decreasing")
    bound = estimate_bound(error)  # what decide compares with (an estimate, times κ)
    resolved = np.abs(margin) > bound
    evidence = {"sampled": _SAMPLED.format(m=len(t)), "steps": int(margin.size),
                "resolved_steps": int(np.sum(resolved))}
    partial = ""
    if np.any(-margin > bound):
        flat = int(np.argmin(margin + bound))
    elif strict or not np.any(resolved):
        flat = int(np.argmin(margin - bound))
    else:
        flat = int(np.argmin(np.where(resolved, margin - bound, np.inf)))
        evidence["unresolved_steps"] = int(np.sum(~resolved))
        if evidence["unresolved_steps"]:
            partial = (f"on {int(np.sum(resolved))} of {margin.size} steps; "
                       f"{evidence['unresolved_steps']} within the error (undecided): ")
    k, c = np.unravel_index(flat, margin.shape)
    component = f" (component {c + 1})" if values.shape[1] > 1 else ""
    evidence.update(worst_step=[float(t[k]), float(t[k + 1])],
                    values_at_worst_step=[float(values[k, c]), float(values[k + 1, c])])
    return decide(request, float(margin[k, c]), float(error[k, c]),
                  f"{partial}{quantity}{component} is {direction} at the checkpoints (deciding "
                  f"step t = {t[k]:.4g} → {t[k + 1]:.4g})", unit=f"step of {quantity}",
                  evidence=evidence, strict=strict, basis=Basis.ESTIMATE)


# --------------------------------------------------------------------------- inequality
def _validate_inequality(p: dict, source: str, where: str) -> None:
    check_quantity(p, source, where)
    _choice(p, "relation", ("<=", "<", ">=", ">"), source, where)
    if "relation" not in p:
        fail(source, f"{where}.relation", "missing: one of <=, <, >=, >.")
    check_expression(p.get("value"), "state", source, f"{where}.value")
    check_window(p, source, where)


@register_conclusion(
    "inequality", asymptotic=False,
    summary="A quantity q(t) satisfies q(t) <relation> value at every time (value: a formula "
            "of the initial data, or of t and the state).",
    needs="q and the value at every checkpoint, q's error |q(run) − q(reference run)| + "
          "rounding; margin = the signed gap (value − q for '<=', q − value for '>='), error = "
          "q's error there (plus the value's, when it reads the state): violated when one "
          "checkpoint is on the wrong side beyond its error; for '<=' and '>=' a checkpoint "
          "within its error of equality is consistent but no evidence. Checkpoints only.",
    keys={"quantity": "a named quantity (vector quantities: every component) or a scalar "
                      "formula over t, z, x, P, x0, V, ...",
          "relation": "'<=', '<', '>=' or '>'",
          "value": "formula: the bound (over x0, V, n, d, ... or t, z, x, P)",
          "variable": "the tokens of a named quantity: 'z' or 'x' (default: the variable the "
                      "run integrates)",
          "from_time": "check only the checkpoints with t >= this (default 0)",
          "until": "check only the checkpoints with t <= this (default: the horizon; beyond "
                   "the run's end it cannot hold)"},
    required=("quantity", "relation", "value"), validate=_validate_inequality)
def judge_inequality(evaluation):
    """Judge ``inequality``: the checkpoint (and component) with the smallest
    ``margin − error`` decides."""
    p, request = evaluation.parameters, evaluation.request
    t, values, errors, reason = quantity_columns(evaluation, p["quantity"], p.get("variable"))
    if reason:
        return inconclusive(request, reason)
    bound, bound_error = _bound_series(evaluation, p["value"])
    keep = checkpoint_window(t, p)
    if not np.any(keep):
        return inconclusive(request, "no checkpoint between from_time and until.")
    upper = p["relation"] in ("<=", "<")
    margin = (bound[:, None] - values) if upper else (values - bound[:, None])
    error = errors + bound_error[:, None]
    margin, error = margin[keep], error[keep]
    strict = p["relation"] in ("<", ">")
    bound = estimate_bound(error)  # what decide compares with (an estimate, times κ)
    resolved = margin > bound
    within = int(np.sum(~resolved & (margin >= -bound)))
    partial = ""
    if np.any(-margin > bound) or strict or not np.any(resolved):
        flat = int(np.argmin(margin - bound))
    else:  # non-strict: a checkpoint within its error of equality is consistent, no evidence
        flat = int(np.argmin(np.where(resolved, margin - bound, np.inf)))
        if within:
            partial = (f"on {int(np.sum(resolved))} of {margin.size} checkpoint values; "
                       f"{within} within the error of equality (undecided): ")
    k, c = np.unravel_index(flat, margin.shape)
    tk = t[keep][k]
    component = f" (component {c + 1})" if values.shape[1] > 1 else ""
    result = decide(request, float(margin[k, c]), float(error[k, c]),
                    f"{partial}{p['quantity']}{component} {p['relation']} {p['value']} at every "
                    f"checkpoint (deciding: t = {tk:.4g})", unit=p["quantity"], strict=strict,
                    basis=Basis.ESTIMATE,
                    evidence={"sampled": _SAMPLED.format(m=int(np.sum(keep))),
                              "at_equality_within_error": within})
    if "until" in p:
        return beyond_the_run(request, result, float(p["until"]), t[-1])
    return result


# --------------------------------------------------------------------------- rate
def _validate_rate(p: dict, source: str, where: str) -> None:
    _choice(p, "law", LAWS, source, where)
    check_quantity(p, source, where, required=False)
    _number(p, "value", source, where)
    _choice(p, "relation", RELATIONS, source, where)
    if p.get("relation", ">=") == "==":
        if "tolerance" not in p:
            fail(source, f"{where}.tolerance", "missing: relation '==' needs the allowed "
                 "|fitted − value|, e.g. tolerance = 0.05.")
    if "tolerance" in p:
        _number(p, "tolerance", source, where, nonnegative=True)
    check_tail(p, source, where)


def _fit_rate(evaluation, law: str, quantity: str | None, variable: str | None, tail: float):
    """``(fitted, sigma, kappa, description, reason)``; ``reason`` non-empty when unresolved."""
    traj = evaluation.trajectory
    t = traj.t
    if quantity is None and law != "doubly-exponential":
        variable = variable or default_variable(traj)
        if traj.reference_run is None:
            return None, None, None, "", "the run has no reference run (no error estimate)."
        try:
            values = traj.tokens(variable)
            ref = traj.reference_run.tokens(variable)
        except InvalidArgument as exc:
            return None, None, None, "", str(exc)
        errors = quantity_error(values, ref)
        what = f"the tokens {variable}_i(t)"
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(errors))):
            return None, None, None, what, f"{what} are not finite at some checkpoint."
    else:
        quantity = quantity or "attention-gap"
        values, errors, reason = quantity_or_reason(evaluation, quantity, variable)
        if reason:
            return None, None, None, quantity, reason
        what = quantity
    try:
        if law == "exponential":
            fit = fit_exponential_convergence(t, values, errors, tail=tail)
            if fit.kind in ("power-law", "inconclusive") or not np.isfinite(
                    fit.rate * fit.rate_error * fit.coverage):
                return None, None, None, what, f"no exponential rate ({fit.kind}): {fit.reason}"
            return fit.rate, fit.rate_error, fit.coverage, what, ""
        if law == "power-law":
            line = fit_power_law(t, values, errors, tail=tail)
            fitted = -line.slope
        else:
            line = fit_doubly_exponential(t, values, errors, tail=tail,
                                          log=quantity in LOG_QUANTITIES)
            fitted = line.slope
    except InvalidArgument as exc:
        return None, None, None, what, str(exc)
    if not line.ok or not math.isfinite(line.coverage * line.slope_error):
        return None, None, None, what, f"the {law} fit is unresolved: {line.reason}"
    return fitted, line.slope_error, line.coverage, what, ""


@register_conclusion(
    "rate", asymptotic=True,
    summary="A quantity approaches its limit by a stated law at a stated rate: e^(-rt) "
            "(exponential), t^(-p) (power-law) or exp(-C e^(ct)) (doubly-exponential).",
    needs="a fitted rate with standard error σ and coverage factor κ (verify.numerics._fits) "
          "from the checkpoints of the tail and their errors |q(run) − q(reference run)|; "
          "margin = fitted − value ('>='), value − fitted ('<=') or tolerance − |fitted − value| "
          "('=='), error = κσ. An unresolved fit is inconclusive.",
    keys={"law": "exponential, doubly-exponential or power-law",
          "value": "the rate r of e^(-rt), the exponent p of t^(-p), or the rate c of "
                   "log(-log gap) ~ c t",
          "relation": "'>=' (default), '<=', '==' or the strict '>', '<' between the fitted "
                      "and the stated value (e.g. '>' with value 0: some positive rate)",
          "tolerance": "the allowed |fitted − value| (required for '==')",
          "quantity": "what converges (default: exponential — the tokens, by their successive "
                      "differences; power-law — the tokens' size, which must tend to 0; "
                      "doubly-exponential — attention-gap)",
          "variable": "the tokens used: 'z' or 'x' (default: the variable the run integrates)",
          "tail": "fraction of the last checkpoints used in the fit (default 1/2)"},
    required=("law", "value"), validate=_validate_rate)
def judge_rate(evaluation):
    r"""Judge ``rate``. Exponential:
    :func:`~verify.analysis.observed_limits.fit_exponential_convergence` (rate of the successive
    differences, so the limit need not be known; with the tokens, the slowest one decides);
    power-law: :func:`~verify.analysis.observed_limits.fit_power_law` (exponent
    :math:`p = -\text{slope}`); doubly-exponential:
    :func:`~verify.analysis.observed_limits.fit_doubly_exponential` (:math:`c` = slope of
    :math:`\log(-\log g)`)."""
    p, request = evaluation.parameters, evaluation.request
    law, value, relation = p["law"], float(p["value"]), p.get("relation", ">=")
    refuted = _algebraic(evaluation, law, value, relation)
    if refuted is not None:
        return refuted
    fitted, sigma, kappa, what, reason = _fit_rate(evaluation, law, p.get("quantity"),
                                                   p.get("variable"), float(p.get("tail", 0.5)))
    if reason:
        return inconclusive(request, f"rate of {what or 'the quantity'}: {reason}",
                            {"law": law, "value": value})
    if relation in (">=", ">"):
        margin = fitted - value
    elif relation in ("<=", "<"):
        margin = value - fitted
    else:
        margin = float(p["tolerance"]) - abs(fitted - value)
    name = {"exponential": "rate r", "power-law": "exponent p", "doubly-exponential": "rate c"}
    stated = f"{value:.6g}" + (f" ± {float(p['tolerance']):.3g}" if relation == "==" else "")
    evidence = {"law": law, "fitted": fitted, "standard_error": sigma, "coverage": kappa,
                "value": value, "relation": relation, "of": what}
    result = decide(request, margin, kappa * sigma, f"the {law} {name[law]} of {what} (fitted "
                    f"{plus_minus(fitted, kappa * sigma)}, κσ) {relation} {stated}",
                    unit=name[law], evidence=evidence, strict=relation in (">", "<"),
                    basis=Basis.FIT)
    return noted_violation(result, "a rate fitted on [t_start, T] is a trend, not a "
                           "certificate (it may change later)")


def _algebraic(evaluation, law: str, value: float, relation: str):
    """A certified refutation of an exponential rate ``r >= value > 0`` (or ``== value``): the
    end state is at a degenerate equilibrium (:func:`~verify.analysis.end_certificates.
    degenerate_equilibrium`), so the approach is algebraic and the exponential rate is 0."""
    if law != "exponential" or relation in ("<=", "<") or not value > 0:
        return None

    certificate = evaluation.cache.get("degenerate")
    if "degenerate" not in evaluation.cache:
        certificate = evaluation.cache["degenerate"] = degenerate_equilibrium(
            evaluation.instance, evaluation.trajectory)
    if certificate is None:
        return None
    tolerance = float(evaluation.parameters.get("tolerance", 0)) if relation == "==" else 0.0
    return decide(evaluation.request, tolerance - value, certificate["rate_error"],
                  f"an exponential rate {relation} {value:.6g}: the end state seems to be at a "
                  "degenerate equilibrium, where the approach is algebraic (exponential rate 0)",
                  unit="rate r", certificate=certificate, basis=Basis.EVIDENCE)


# --------------------------------------------------------------------------- events
def _validate_events(p: dict, source: str, where: str) -> None:
    threshold = p.get("threshold")
    if isinstance(threshold, str):
        try:
            p["threshold"] = Fraction(threshold.strip())
        except (ValueError, ZeroDivisionError):  # a formula of the initial data
            check_expression(threshold, "initial", source, f"{where}.threshold")
    if not isinstance(p["threshold"], str):
        _number(p, "threshold", source, where, positive=True)
    groups = p.get("merge_order")
    ok = isinstance(groups, list) and groups and all(
        isinstance(g, list) and len(g) >= 2 and len(set(g)) == len(g) and all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in g) for g in groups)
    if not ok:
        fail(source, f"{where}.merge_order", f"{groups!r} must be a list of groups of at least "
             "two distinct token indices (from 1, as in the paper), in the claimed order, e.g. "
             "[[1, 2], [3, 4]].")
    if len(groups) < 2 and "times" not in p:
        fail(source, f"{where}.merge_order", "one group states no order: give at least two "
             "groups, or the merge time with times = [...] and time_tolerance.")
    _choice(p, "variable", ("z", "x"), source, where)
    if ("times" in p) != ("time_tolerance" in p):
        fail(source, f"{where}.{'time_tolerance' if 'times' in p else 'times'}", "times and "
             "time_tolerance go together (the stated merge times and the allowed deviation).")
    if "times" in p:
        times = p["times"]
        if not isinstance(times, list) or len(times) != len(groups) or not all(
                isinstance(v, Real) and not isinstance(v, bool) and v >= 0 for v in times):
            fail(source, f"{where}.times", f"{times!r} must list one time ≥ 0 per group of "
                 f"merge_order ({len(groups)}).")
        _number(p, "time_tolerance", source, where, nonnegative=True)


def _crossing(t: np.ndarray, y: np.ndarray, level: float) -> float | None:
    """First time the piecewise-linear interpolant of ``(t_k, y_k)`` is ≤ ``level`` (None if
    never).

    >>> _crossing(np.array([0.0, 1.0, 2.0]), np.array([3.0, 2.0, 0.0]), 1.0), _crossing(
    ...     np.array([0.0, 1.0]), np.array([3.0, 2.0]), 1.0)
    (1.5, None)
    """
    below = np.flatnonzero(y <= level)
    if len(below) == 0:
        return None
    k = int(below[0])
    if k == 0:
        return float(t[0])
    return float(t[k - 1] + (y[k - 1] - level) / (y[k - 1] - y[k]) * (t[k] - t[k - 1]))


def _interpolation_error(t: np.ndarray, y: np.ndarray, level: float, T: float) -> float:
    """Error estimate of the linearly interpolated crossing ``T``: its distance to the crossings
    of the quadratics through three neighbouring checkpoints (the next order, a second route),
    plus their spread (the quadratics' own error); the whole step when no quadratic crosses in
    the same step.

    >>> t = np.linspace(0, 1, 11)
    >>> T = _crossing(t, np.exp(-t), np.exp(-0.55))
    >>> bool(abs(T - 0.55) <= _interpolation_error(t, np.exp(-t), np.exp(-0.55), T) < 2e-3)
    True
    """
    k = max(1, int(np.searchsorted(t, T)))
    if len(t) < 3 or t[k - 1] == T:
        return 0.0
    crossings = []
    for idx in ([k - 2, k - 1, k], [k - 1, k, k + 1]):
        if idx[0] < 0 or idx[-1] >= len(t):
            continue
        a, b, c = np.polyfit(t[idx], y[idx], 2)
        inside = [r.real for r in np.roots([a, b, c - level])
                  if abs(r.imag) < 1e-12 and t[k - 1] <= r.real <= t[k]]
        if not inside:
            return float(t[k] - t[k - 1])
        crossings.append(min(inside, key=lambda r: abs(r - T)))
    spread = max(crossings) - min(crossings)
    return max(abs(r - T) for r in crossings) + spread


def _merge(t, D, e, delta) -> dict:
    """Merge time ``T`` of one group (interpolated), its bracket ``[lo, hi]`` from the bands
    ``D ∓ e``, the interpolation error and the checkpoints where it has certainly / certainly
    not merged; ``u`` (the time uncertainty) covers the bracket and the interpolation."""
    T, lo, hi = (_crossing(t, y, delta) for y in (D, D - e, D + e))
    step = None if T is None else float(np.diff(t)[max(0, min(int(np.searchsorted(t, T)) - 1,
                                                               len(t) - 2))])
    return {"T": T, "lo": lo, "hi": hi, "merged": hi is not None,
            "u": None if hi is None else max(T - lo, hi - T) + _interpolation_error(
                t, D, delta, T),
            "step": step,
            "surely": np.maximum.accumulate(D + e <= delta),
            "surely_not": np.logical_and.accumulate(D - e > delta)}


@register_conclusion(
    "events", asymptotic=False,
    summary="Groups of tokens merge (diameter ≤ threshold) in a stated order, optionally at "
            "stated times.",
    needs="each group's diameter at every checkpoint with its error |run − reference run|; the "
          "merge time is where the interpolated diameter first reaches the threshold, its "
          "uncertainty where |diameter − threshold| ≤ error plus the interpolation error "
          "(linear vs quadratic crossing); margin = T_next − T (error: both "
          "uncertainties, plus the checkpoint spacing when no checkpoint separates the two "
          "merges) and tolerance − |T − stated time|. Checkpoints only.",
    keys={"threshold": "δ > 0: a group has merged when its diameter is ≤ δ; a number or a "
                       "formula of the initial data (e.g. 'diameter(x0) / 100')",
          "merge_order": "groups of token indices (from 1) in the claimed order of merging, "
                         "e.g. [[1, 2], [3, 4]]",
          "times": "the stated merge time of each group (optional)",
          "time_tolerance": "the allowed |merge time − stated time| (with times)",
          "variable": "the tokens: 'z' or 'x' (default: the variable the run integrates)"},
    required=("threshold", "merge_order"), validate=_validate_events)
def judge_events(evaluation):
    """Judge ``events``: one part per consecutive pair of groups (and per stated time); a group
    that has not surely merged by the horizon makes its parts inconclusive, unless the next
    group provably merged before it could have (violated)."""
    p, request, traj = evaluation.parameters, evaluation.request, evaluation.trajectory
    groups = p["merge_order"]
    delta = float(evaluate(p["threshold"], initial_namespace(request.instance)).reshape(())) \
        if isinstance(p["threshold"], str) else float(p["threshold"])
    if not (math.isfinite(delta) and delta > 0):
        return inconclusive(request, f"the threshold {p['threshold']!r} is {delta:.6g} on this "
                            "instance; it must be a positive number.")
    variable = p.get("variable") or default_variable(traj)
    n, t = request.instance.n, traj.t
    if max(max(g) for g in groups) > n:
        return inconclusive(request, f"merge_order {groups} names a token > n = {n} (indices "
                            "start at 1); this instance has too few tokens.")
    if traj.reference_run is None:
        return inconclusive(request, "the run has no reference run (no error estimate).")
    try:
        run, ref = traj.tokens(variable), traj.reference_run.tokens(variable)
    except InvalidArgument as exc:
        return inconclusive(request, str(exc))
    merges = []
    for g in groups:
        rows = [i - 1 for i in g]
        D = np.array([diameter(z[rows]) for z in run])
        e = quantity_error(D, np.array([diameter(z[rows]) for z in ref]))
        if not (np.all(np.isfinite(D)) and np.all(np.isfinite(e))):
            return inconclusive(request, f"the diameter of group {g} is not finite at some "
                                "checkpoint; use variable 'z' or a shorter horizon.")
        merges.append(_merge(t, D, e, delta))
    parts = []
    for a, b, ga, gb in zip(merges, merges[1:], groups, groups[1:], strict=False):
        what = f"group {ga} merges before group {gb}"
        if a["merged"] and b["merged"]:
            separated = bool(np.any(a["surely"] & b["surely_not"]) or np.any(
                b["surely"] & a["surely_not"]))
            error = a["u"] + b["u"] + (0.0 if separated else max(a["step"], b["step"]))
            parts.append(decide(request, b["T"] - a["T"], error, what, unit="time",
                                basis=Basis.ESTIMATE))
        elif b["merged"]:
            earliest = a["lo"] if a["lo"] is not None else float(t[-1])
            if earliest - b["T"] > estimate_bound(b["u"]):
                parts.append(decide(request, b["T"] - earliest, b["u"], what + " (group "
                                    f"{ga} has not merged by t = {earliest:.4g})", unit="time",
                                    basis=Basis.ESTIMATE))
            else:
                parts.append(inconclusive(request, f"{what}: group {ga} does not surely merge "
                                          f"before t = {t[-1]:.4g}."))
        else:
            parts.append(inconclusive(request, f"{what}: group {gb if a['merged'] else ga} "
                                      f"does not surely merge before t = {t[-1]:.4g}."))
    for g, m, stated in zip(groups, merges, p.get("times", []), strict=False):
        what = f"group {g} merges at t = {float(stated):.6g} ± {float(p['time_tolerance']):.3g}"
        if m["merged"]:
            parts.append(decide(request, float(p["time_tolerance"]) - abs(
                m["T"] - float(stated)), m["u"], what, unit="time", strict=False,
                basis=Basis.ESTIMATE))
        else:
            parts.append(inconclusive(request, f"{what}: it does not surely merge before "
                                      f"t = {t[-1]:.4g}."))
    evidence = {"sampled": _SAMPLED.format(m=len(t)) + " (merge times interpolated linearly)",
                "threshold": delta, "variable": variable,
                "merges": [{"group": g, "time": m["T"], "earliest": m["lo"], "latest": m["hi"]}
                           for g, m in zip(groups, merges, strict=True)]}
    return combine(request, parts, evidence)
