r"""Which tokens escape in ``d = 1`` (lemmas of §7): ``one_bounded_token`` and
``escape_threshold`` (its hypothesis ``above_escape_threshold`` is in the claim layer).

At most one token stays bounded (and tends to 0), the others have
:math:`z_i \to \gamma_i \ne 0`; a token beyond :math:`a`, :math:`a^2 = n^2 e^{-a^2}`, grows like
:math:`c e^t`. The verdict is the worst part (:func:`~verify.checks._parts.combine_parts`).
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import VERDICT_ORDER, combine_parts, inconclusive, judge_part
from verify.checks.one_dimensional import (
    run_checked,
    run_summary,
    scalar_value,
)
from verify.claim import (
    InstanceResult,
    InstanceVerdict,
    register_check,
)
from verify.exact.escape import above_escape_threshold, escape_threshold_value
from verify.limits import fit_exponential_convergence, token_limits

__all__ = ["check_one_bounded_token", "check_escape_threshold"]


@register_check("one_bounded_token")
def check_one_bounded_token(request) -> InstanceResult:
    """At most one token stays bounded (and tends to 0); the others have ``z_i → γ_i ≠ 0``.

    The limits ``γ_i`` of ``z_i = e^{-Vt} x_i`` come from :func:`token_limits` (trend, error
    bars). All tokens but the one with the least significant ``|γ_i|`` must have
    ``|γ_i| > error``; that one either does too, or its ``x_i(t)`` must converge to 0
    (:func:`fit_exponential_convergence` on ``x_i`` with error ``e^{Vt}·error(z_i)``).
    """
    traj, failed = run_checked(request)
    if failed:
        return failed
    v = scalar_value(request.instance.model.V)
    fits = token_limits(traj)
    gammas = [(float(np.ravel(f.limit)[0]), f.limit_error, f) for f in fits]
    parts = []
    for i, (g, e, f) in enumerate(gammas):
        parts.append(judge_part(request, abs(g), e, f"γ_{i} ≠ 0 (|γ| = {abs(g):.6g})")
                     if f.stabilised else
                     inconclusive(request, f"z_{i} has no stabilised limit: {f.reason}"))
    worst = min(range(len(parts)), key=lambda i: (VERDICT_ORDER[parts[i].verdict],
                                                  (parts[i].margin or 0) /
                                                  (parts[i].error or math.inf)))
    bounded = None
    if parts[worst].verdict is not InstanceVerdict.HOLDS and fits[worst].stabilised:
        x = traj.z[:, worst, 0] * np.exp(v * traj.t)
        xfit = fit_exponential_convergence(traj.t, x, traj.error[:, worst] * np.exp(v * traj.t))
        bounded = {"token": worst, "x_fit": xfit.to_dict()}
        parts[worst] = (judge_part(request, -abs(float(xfit.limit)), xfit.limit_error,
                                   f"the bounded token {worst}: x_{worst}(t) → 0", strict=False)
                        if xfit.stabilised else
                        inconclusive(request, f"token {worst}: neither γ ≠ 0 nor x → 0 could be "
                                     f"decided: {xfit.reason}"))
        if xfit.stabilised and parts[worst].verdict is InstanceVerdict.INCONCLUSIVE and \
                abs(float(xfit.limit)) <= xfit.limit_error:
            parts[worst] = inconclusive(request, f"token {worst}: x(t) → {float(xfit.limit):.3g} ±"
                                        f" {xfit.limit_error:.2g}, compatible with 0 but not "
                                        "exactly 0: the limit 0 can only be confirmed exactly.")
    return combine_parts(request, parts, {
        "gamma": [{"token": i, "gamma": g, "error": e, "rate": f.rate, "kind": f.kind}
                  for i, (g, e, f) in enumerate(gammas)],
        "bounded_token": bounded, "run": run_summary(traj)})


@register_check("escape_threshold")
def check_escape_threshold(request) -> InstanceResult:
    """If ``x_n(0) > a`` then ``x_n(t) ≥ c e^t`` for large ``t`` (and symmetrically ``x_1``).

    Observed: the limit ``γ`` of ``z_n = e^{-t} x_n`` from its trend (:func:`token_limits`) and
    the smallest ``z_n`` over the tail; the claim holds with ``c = γ/2`` when ``γ > error``.
    """
    traj, failed = run_checked(request)
    if failed:
        return failed
    x0, n = [row[0] for row in request.instance.x0], request.instance.n
    fits, parts, sides = token_limits(traj), [], []
    for sign, index in ((1, int(np.argmax([float(x) for x in x0]))),
                        (-1, int(np.argmin([float(x) for x in x0])))):
        if not above_escape_threshold(sign * x0[index], n):
            continue
        f = fits[index]
        gamma = sign * float(np.ravel(f.limit)[0])
        tail = sign * traj.z[len(traj.t) // 2:, index, 0]
        sides.append({"token": index, "side": "+" if sign > 0 else "-", "x0": str(x0[index]),
                      "gamma": gamma, "gamma_error": f.limit_error, "rate": f.rate,
                      "min_tail": float(np.min(tail)), "kind": f.kind})
        parts.append(judge_part(request, gamma, f.limit_error, f"{'+' if sign > 0 else '-'}side: "
                                f"e^(-t)|x_{index}(t)| → γ = {gamma:.6g} > 0")
                     if f.stabilised else
                     inconclusive(request, f"z_{index} has no stabilised limit: {f.reason}"))
    if not parts:
        return inconclusive(request, "no extreme token beyond the threshold a.")
    return combine_parts(request, parts, {"a": escape_threshold_value(n), "sides": sides,
                                          "run": run_summary(traj)})


