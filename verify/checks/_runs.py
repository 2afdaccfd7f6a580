"""Trajectories and fitted limits for the checks of §3–§5 and §12 (not the ``d = 1`` checks,
whose runner is :mod:`verify.checks.one_dimensional`).

Two runners are kept because their results differ (wording and evidence) and are recorded in
result files: :func:`simulate_checked` (polytope, hull, hyperplane and codimension checks) and
:func:`simulate_with_run` (Theorem 5.2 and the open problems; it also returns a summary of the
run). Both give ``(trajectory, None)`` or ``(None, inconclusive result)``.

Examples
--------
>>> sig6(1 / 3)
0.333333
"""

from __future__ import annotations

import numpy as np

from verify.checks._parts import inconclusive
from verify.claim import InstanceResult

__all__ = ["simulate_checked", "simulate_and_fit", "simulate_with_run", "float_parameter",
           "unstable_reason", "unstable_result", "fitted_limits", "fits_summary", "hardmax_at",
           "sig6", "figure_convergence", "FIGURE_POINTS", "plain6"]


def simulate_checked(request):
    """(trajectory, None) or (None, inconclusive result) for a failed or error-less run."""
    from verify.simulate import simulate

    traj = simulate(request.instance, request.horizon, checkpoints=request.checkpoints,
                    precision=request.precision)
    if not traj.success:
        return None, inconclusive(request, f"the integration failed ({traj.status}: "
                                  f"{traj.message}).")
    if traj.error is None:
        return None, inconclusive(request, "the trajectory has no error estimate (the "
                                  "reference run failed), so no margin can be judged.",
                                  {"reference": traj.reference})
    return traj, None


def simulate_and_fit(request, rows=None, label: str = "z_", kinds_in_evidence: bool = False):
    """``(trajectory, fits, None)`` or ``(None, None, inconclusive result)``.

    Runs :func:`simulate_checked` and fits the limits of the ``z_i`` (``rows`` None:
    :func:`verify.limits.token_limits`) or of ``rows · z_i``
    (:func:`verify.limits.projected_limits`) over the last ``parameters.tail_fraction`` (default
    0.5) of the checkpoints. A limit that has not stabilised gives an inconclusive result with
    :func:`unstable_reason` (``label`` names the quantity), and the kinds of the fits in its
    evidence when ``kinds_in_evidence``.
    """
    from verify.limits import projected_limits, token_limits

    traj, failure = simulate_checked(request)
    if failure:
        return None, None, failure
    tail = float_parameter(request, "tail_fraction", 0.5)
    fits = token_limits(traj, tail_fraction=tail) if rows is None else \
        projected_limits(traj, rows, tail_fraction=tail)
    why = unstable_reason(fits, label)
    if why:
        return None, None, inconclusive(request, why, {"fits": [f.kind for f in fits]}
                                        if kinds_in_evidence else None)
    return traj, fits, None


def simulate_with_run(request):
    """``((trajectory, run summary), None)``, or ``(None, inconclusive result)`` saying why there
    is no trajectory to judge."""
    from verify.simulate import simulate

    traj = simulate(request.instance, request.horizon, checkpoints=request.checkpoints,
                    precision=request.precision)
    run = {"status": traj.status, "precision": traj.precision, "horizon": str(request.horizon),
           "error_estimate": traj.error_estimate, "symmetry": traj.symmetry is not None}
    if not traj.success:
        return None, inconclusive(request, f"the simulation stopped early ({traj.status}): "
                                  f"{traj.message}", {"run": run})
    if traj.error is None:
        return None, inconclusive(request, "no error estimate: the reference re-run failed, "
                                  "so no number can be trusted.",
                                  {"run": run, "reference": traj.reference})
    return (traj, run), None


def float_parameter(request, name: str, default: float) -> float:
    """``request.parameters[name]`` (or ``default``) as a float."""
    return float(request.parameters.get(name, default))


def unstable_reason(fits, label: str = "z_") -> str | None:
    """Why the limits are not all stabilised (``None`` if they are), for
    :func:`~verify.checks._parts.inconclusive`."""
    bad = [i for i, f in enumerate(fits) if not f.stabilised]
    if not bad:
        return None
    i = bad[0]
    return (f"{len(bad)} of {len(fits)} limits have not stabilised over the checkpoints "
            f"(e.g. {label}{i}: {fits[i].kind}: {fits[i].reason}); integrate longer.")


def unstable_result(request, fits, what, evidence) -> InstanceResult | None:
    """An inconclusive result when some limit of ``what`` is not stabilised, else ``None``."""
    bad = [i for i, f in enumerate(fits) if not f.stabilised]
    if not bad:
        return None
    return inconclusive(request, f"the limit of {what} of token(s) {bad[:5]} is not stabilised "
                        f"({fits[bad[0]].kind}: {fits[bad[0]].reason}); integrate longer.",
                        evidence)


def fitted_limits(fits) -> tuple[np.ndarray, np.ndarray]:
    """The fitted limits (one row per fit, float) and their error bars."""
    L = np.array([np.atleast_1d(np.asarray(f.limit, dtype=float)) for f in fits])
    return L, np.array([f.limit_error for f in fits], dtype=float)


def fits_summary(fits) -> dict:
    """Counts of the fit kinds, the slowest exponential rate and the largest limit error."""
    kinds: dict[str, int] = {}
    for f in fits:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    rates = [f.rate for f in fits if f.kind == "exponential"]
    return {"kinds": kinds, "slowest_rate": min(rates) if rates else None,
            "largest_limit_error": max(f.limit_error for f in fits)}


def hardmax_at(traj, k: int):
    """The certified hardmax graph at checkpoint ``k`` (scores with their radius)."""
    from verify.graph import hardmax_graph

    return hardmax_graph(traj.scaled_scores[k], traj.score_radius(k))


def sig6(x) -> float:
    """``x`` rounded to 6 significant digits (for evidence)."""
    return float(f"{float(x):.6g}")


FIGURE_POINTS = 50  # at most this many checkpoints in a figure's evidence


def plain6(x) -> float | None:
    """6 significant digits, ``None`` for NaN/inf (the evidence is JSON without NaN)."""
    x = float(x)
    return sig6(x) if np.isfinite(x) else None


def figure_convergence(t, distances, errors, rate: float, tail_start: float,
                       label: str) -> dict:
    r"""The ``"convergence"`` entry of ``evidence["figure"]`` from numbers already computed.

    Keeps at most :data:`FIGURE_POINTS` checkpoints (evenly spaced, both ends kept) with finite
    distance and error, rounded to 6 significant digits. The line is
    :math:`\log d(t) \approx \text{intercept} - \text{rate}\cdot t` with the check's own fitted
    ``rate``; only the intercept is chosen here, by least squares on the resolved points
    (distance above its error) with :math:`t \ge` ``tail_start``. No fit (``None``) when the
    rate is not finite or no tail point is resolved.

    Examples
    --------
    >>> t = np.linspace(0, 4, 9)
    >>> c = figure_convergence(t, np.exp(1 - 2 * t), np.full(9, 1e-12), 2.0, 2.0, "d")
    >>> c["fit"], len(c["times"])
    ([2.0, 1.0], 9)
    """
    t, d, e = (np.asarray(v, dtype=float) for v in (t, distances, errors))
    keep = np.flatnonzero(np.isfinite(t) & np.isfinite(d) & np.isfinite(e))
    if len(keep) > FIGURE_POINTS:
        keep = keep[np.unique(np.round(np.linspace(0, len(keep) - 1, FIGURE_POINTS)).astype(int))]
    fit = None
    tail = (t >= tail_start) & np.isfinite(d) & np.isfinite(e) & (d > e) & (d > 0)
    if np.isfinite(rate) and np.any(tail):
        intercept = float(np.mean(np.log(d[tail]) + rate * t[tail]))
        fit = [plain6(rate), plain6(intercept)]
        fit = fit if None not in fit else None
    return {"times": [plain6(x) for x in t[keep]], "distances": [plain6(x) for x in d[keep]],
            "errors": [plain6(x) for x in e[keep]], "fit": fit, "label": label}
