r"""Theorem 2.1 (``boolean_1d_limit``) and the remark closing §7 (``higherdim_remark``).

Rows of :math:`P(t)` converge doubly exponentially to :math:`e_1^\top` or :math:`e_n^\top`
except at most one (for random, generic data: none); for ``d = n = 2`` and ``Q = K = V = I`` the
two limits are distinct but only about :math:`\varepsilon e^{-1/(2\varepsilon^2)}` apart. The
verdict is the worst part (:func:`~verify.checks._parts.combine_parts`).

``boolean_1d_limit`` attaches ``evidence["figure"]`` (the report's figure protocol,
:mod:`verify.report.html`) for the row with the smallest fitted rate: its gap
:math:`1 - P_{i\ell}(t)` on a log scale (``"convergence"``, no exponential fit: the decay is
faster) and :math:`\log(-\log(1 - P_{i\ell}(t)))` with the fitted line
(``"doubly_exponential"``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.checks._parts import VERDICT_ORDER, combine_parts, inconclusive, judge_part
from verify.checks._runs import FIGURE_POINTS, sig6
from verify.checks.one_dimensional import (
    row_error,
    row_log_gaps,
    run_checked,
    run_summary,
    scalar_value,
)
from verify.claim import InstanceResult, InstanceVerdict, register_check
from verify.exact.boolean import boolean_1d_shape
from verify.exact.inputs import as_float_array
from verify.limits import fit_doubly_exponential, fit_exponential_convergence, token_limits

__all__ = ["check_boolean_1d", "check_higherdim_remark"]


@register_check("boolean_1d_limit")
def check_boolean_1d(request) -> InstanceResult:
    """Theorem 2.1: the rows of ``P(t)`` and their limit ``P*`` (see the module docstring).

    Each row ``i`` is fitted by :func:`fit_doubly_exponential` on ``log(1 − P_{i,ℓ})`` with
    ``ℓ`` its final argmax; the row converges to ``e_ℓᵀ`` when the fitted rate ``a`` is positive
    beyond ``κσ``. The comparison of ``a`` with the paper's ``V`` (bound ``exp(−c e^{Vt})``) is
    evidence only: near-tied tokens keep the fit pre-asymptotic over a finite window. At most
    one row may fail; it must converge (trend of the row) to a probability vector.
    ``P*`` is classified by :func:`boolean_1d_shape`: at most one free row,
    and every Boolean row points at an extreme token. With ``parameters.generic_rank`` and a
    random family, every row must converge doubly exponentially (``P*`` Boolean of rank 1 or 2).
    """
    traj, failed = run_checked(request)
    if failed:
        return failed
    n, v = traj.n, scalar_value(request.instance.model.V)
    order = [int(i) for i in np.argsort(as_float_array(request.instance.x0).ravel())]
    generic = bool(request.parameters.get("generic_rank", False)) and \
        request.family.kind == "random"
    rows, fits, gaps = [], [], []
    for i in range(n):
        target = int(np.argmax(traj.scaled_scores[-1, i]))
        logs, errs = row_log_gaps(traj, i, target)
        fit = fit_doubly_exponential(traj.t, logs, errs, log=True)
        gaps.append((logs, errs, fit))
        if not fit.ok:
            part = inconclusive(request, f"row {i}: no doubly exponential fit ({fit.reason}).")
        else:
            part = judge_part(request, fit.slope, fit.coverage * fit.slope_error,
                              f"row {i} → e_{target}ᵀ doubly exponentially (fitted rate a > 0 in "
                              "log(-log(1 - P_i,target)) ≈ a t + log c)")
        rows.append((i, target, part))
        fits.append({"row": i, "target": target, "rate": fit.slope,
                     "rate_error": fit.slope_error, "coverage": fit.coverage,
                     "points": fit.n_points, "paper_bound_rate": v,
                     "below_paper_rate": bool(fit.ok and fit.slope < v - fit.coverage *
                                              fit.slope_error)})
    ranked = sorted(rows, key=lambda r: (VERDICT_ORDER[r[2].verdict], (r[2].margin or 0) /
                                         (r[2].error or math.inf)))
    parts = [r[2] for r in ranked[1:]]
    P_star = [[Fraction(int(j == target)) for j in range(n)] for _, target, _ in rows]
    free_i, free_part, free_fit = ranked[0][0], ranked[0][2], None
    if free_part.verdict is InstanceVerdict.HOLDS:
        parts.append(free_part)
    else:
        free_fit = fit_exponential_convergence(traj.t, traj.attention[:, free_i],
                                               row_error(traj, free_i))
        if not free_fit.stabilised:
            parts.append(inconclusive(request, f"row {free_i} (the candidate free row) has not "
                                      f"converged: {free_fit.reason}"))
        else:
            limit = np.clip(np.asarray(free_fit.limit, dtype=float), 0, None)
            P_star[free_i] = [Fraction(float(p)) for p in limit / limit.sum()]
            parts.append(judge_part(request, 1, free_fit.limit_error,
                                    f"row {free_i} converges (free row, limit ± "
                                    f"{free_fit.limit_error:.2g})"))
    tol = 0 if free_fit is None or not free_fit.stabilised else \
        min(Fraction(free_fit.limit_error), Fraction(49, 100))
    shape = boolean_1d_shape(P_star, order, tol=tol)
    allowed = 0 if generic else 1
    parts.append(judge_part(request, allowed - shape.number_free, 0,
                            f"P* has at most {allowed} free row(s) (found {shape.number_free}) and "
                            "its other rows are e_1ᵀ or e_nᵀ of the extreme tokens", strict=False))
    if generic:
        ok = bool(shape.boolean) and shape.rank in (1, 2)
        parts.append(judge_part(request, 0 if ok else -1, 0, f"P* Boolean of rank 1 or 2 (boolean: "
                                f"{shape.boolean}, rank {shape.rank})", strict=False))
    return combine_parts(request, parts, {
        "rows": fits, "shape": list(shape.rows), "free_rows": list(shape.free_rows),
        "rank": shape.rank, "boolean": shape.boolean,
        "leaders_predicted": list(shape.leaders),
        "leaders_observed": sorted({t for _, t, _ in rows}),
        "P_star": [[str(p) if p.denominator == 1 else float(p) for p in row] for row in P_star],
        "generic_sentence_checked": generic, "run": run_summary(traj),
        "free_row_fit": None if free_fit is None else free_fit.to_dict(),
        "figure": _figure(traj.t, gaps, [r[1] for r in rows])})


def _finite6(values) -> list | None:
    """6 significant digits, or ``None`` if some value is NaN/inf (JSON without NaN)."""
    values = np.asarray(values, dtype=float)
    return [sig6(v) for v in values] if np.all(np.isfinite(values)) else None


def _figure(t, gaps, targets) -> dict:
    r"""``evidence["figure"]`` for the row with the smallest fitted doubly exponential rate
    (among the rows with a fit; row 0 when none has one)."""
    slopes = [g[2].slope if g[2].ok and np.isfinite(g[2].slope) else np.inf for g in gaps]
    i = int(np.argmin(slopes))
    logs, errs, fit = gaps[i]
    keep = np.unique(np.round(np.linspace(0, len(t) - 1, min(len(t), FIGURE_POINTS)))
                     .astype(int))
    logs, errs, times = logs[keep], errs[keep], _finite6(np.asarray(t)[keep])
    with np.errstate(over="ignore", invalid="ignore"):
        gap = np.exp(logs)
        gap_err = gap * np.expm1(errs)
    name = f"1 - P_{{{i},{targets[i]}}}(t)"
    line = [sig6(fit.slope), sig6(fit.intercept)] if fit.ok and np.isfinite(fit.slope) and \
        np.isfinite(fit.intercept) else None
    return {"convergence": {"times": times, "distances": _finite6(gap),
                            "errors": _finite6(gap_err), "fit": None,
                            "label": f"${name}$ (slowest row)"},
            "doubly_exponential": {"times": times, "gaps": _finite6(logs),
                                   "errors": _finite6(errs), "fit": line,
                                   "label": rf"$\log(-\log({name}))$"}}


# --------------------------------------------------------------------------- remark closing §7
@register_check("higherdim_remark")
def check_higherdim_remark(request) -> InstanceResult:
    r"""``d = n = 2``, ``Q = K = V = I``, ``x_{1,2}(0) = (1, ±ε)``: ``P → I`` while the two
    limits of ``z`` are distinct but only about ``ε e^{−1/(2ε²)}`` apart.

    Parts: (1) the limits are distinct, ``|z_1(∞) − z_2(∞)|_∞ > error``; (2) ``P_12(t) → 0``
    doubly exponentially (fitted rate > 0). The remark's "about ``ε e^{−1/(2ε²)}``" fixes no
    constant, so by default the separation is compared with it as evidence only (the ratio is
    recorded); a claim file that wants a quantitative reading sets ``parameters.decades`` and the
    separation must then agree to within that many orders of magnitude. Evidence: the time at
    which ``log(P_11/P_12) = 1``, against ``1/(2ε²)``.
    """
    x0 = request.instance.x0
    if x0.shape != (2, 2) or x0[0, 0] != x0[1, 0] or x0[0, 1] != -x0[1, 1] or x0[0, 1] == 0:
        return inconclusive(request, "the remark is about x_{1,2}(0) = (c, ±ε) with ε ≠ 0; this "
                            "instance is not of that form.")
    eps = abs(float(x0[0, 1]) / float(x0[0, 0]))
    traj, failed = run_checked(request)
    if failed:
        return failed
    fits = token_limits(traj)
    if not all(f.stabilised for f in fits):
        return inconclusive(request, "the z-limits have not stabilised: " +
                            "; ".join(f.reason for f in fits), {"run": run_summary(traj)})
    separation = float(np.max(np.abs(np.asarray(fits[0].limit) - np.asarray(fits[1].limit))))
    sep_error = fits[0].limit_error + fits[1].limit_error
    predicted = eps * math.exp(-1 / (2 * eps * eps))
    decades = request.parameters.get("decades")
    parts = [judge_part(request, separation, sep_error, f"the two z-limits are distinct "
                        f"(separation {separation:.4g})")]
    if decades is not None and separation > sep_error:
        decades = float(decades)
        deviation = abs(math.log10(separation / predicted))
        dev_error = sep_error / (separation - sep_error) / math.log(10)
        parts.append(judge_part(request, decades - deviation, dev_error,
                                f"separation {separation:.4g} within {decades:g} decade(s) of "
                                f"ε e^(-1/(2ε²)) = {predicted:.4g}"))
    logs, errs = row_log_gaps(traj, 0, 0)
    fit = fit_doubly_exponential(traj.t, logs, errs, log=True)
    parts.append(judge_part(request, fit.slope, fit.coverage * fit.slope_error,
                            "P_12(t) → 0 doubly exponentially (P → I)") if fit.ok else
                 inconclusive(request, f"no doubly exponential fit of P_12: {fit.reason}"))
    odds = -logs + np.log1p(-np.exp(logs))            # log(P_11 / P_12)
    above = np.flatnonzero(odds >= 1)
    t_switch = None if not len(above) else float(traj.t[above[0]])
    return combine_parts(request, parts, {
        "epsilon": eps, "separation": separation, "separation_error": sep_error,
        "predicted_separation": predicted, "separation_ratio": separation / predicted,
        "rate": fit.slope, "rate_error": fit.slope_error,
        "t_log_odds_1": t_switch, "predicted_time": 1 / (2 * eps * eps),
        "z_limits": [np.ravel(f.limit).tolist() for f in fits], "run": run_summary(traj)})


