r"""Monotone quantities of the ``d = 1`` and ``Q = K = V = I`` dynamics, at the checkpoints:
``order_preserved`` (the tokens keep their order and never collide) and
``distances_nondecreasing`` (every :math:`|x_i(t) - x_j(t)|` is non-decreasing).
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import combine_parts, judge_part
from verify.checks.one_dimensional import (
    SAMPLED,
    pair_derivative_ball,
    run_checked,
    run_summary,
)
from verify.claim import InstanceResult, register_check
from verify.exact.inputs import as_float_array
from verify.exact.precision import working_precision

__all__ = ["check_order_preserved", "check_distances_nondecreasing"]


@register_check("order_preserved")
def check_order_preserved(request) -> InstanceResult:
    """The order of the tokens is preserved and they never collide (``d = 1``).

    Margin: the smallest gap ``z_{σ(m+1)} − z_{σ(m)}`` between initially consecutive tokens over
    all checkpoints (the sign of a gap is the same for ``x = e^{Vt} z``), error: the two tokens'
    error estimates at that checkpoint. Sampled at the checkpoints only.
    """
    traj, failed = run_checked(request)
    if failed:
        return failed
    order = np.argsort(as_float_array(request.instance.x0).ravel())
    z = traj.z[:, order, 0]
    e = traj.error[:, order]
    gap, err = np.diff(z, axis=1), e[:, 1:] + e[:, :-1]
    k, m = np.unravel_index(int(np.argmin(gap - err)), gap.shape)
    return judge_part(request, float(gap[k, m]), float(err[k, m]),
                      f"tokens keep their initial order (smallest gap at t = {traj.t[k]:.4g} "
                      f"between tokens {int(order[m])} and {int(order[m + 1])})",
                      {"sampled": SAMPLED, "min_gap_per_checkpoint": np.min(gap, axis=1).tolist(),
                       "run": run_summary(traj)})


@register_check("distances_nondecreasing")
def check_distances_nondecreasing(request) -> InstanceResult:
    """``Q = K = V = I``: every ``|x_i(t) − x_j(t)|`` is non-decreasing.

    Two parts: (1) no sampled decrease: for every pair and checkpoints ``k < l``,
    ``D(t_k) − D(t_l)`` must not exceed the error ``e^{t}√d (e_i + e_j)`` at both ends (a
    decrease within the error is not a violation); (2) the derivative
    ``d/dt |x_i − x_j|² = 2 e^{2t} g`` has ``g ≥ 0`` at every checkpoint, ``g`` evaluated in ball
    arithmetic from the state ± its error (:func:`pair_derivative_ball`); its margin is reported
    relative to ``|g|`` (scale-free: ``g`` can be ``exp(−c e^{t})``).
    """

    traj, failed = run_checked(request)
    if failed:
        return failed
    z, e, t, (m, n, d) = traj.z, traj.error, traj.t, traj.z.shape
    worst = (-math.inf, 0.0, 0.0, None)  # (decrease − error, decrease, error, where)
    later = np.triu(np.ones((m, m), dtype=bool), 1)
    for i in range(n):
        for j in range(i + 1, n):
            D = np.linalg.norm(z[:, i] - z[:, j], axis=1) * np.exp(t)
            E = math.sqrt(d) * (e[:, i] + e[:, j]) * np.exp(t)
            drop, err = D[:, None] - D[None, :], E[:, None] + E[None, :]
            excess = np.where(later, drop - err, -np.inf)
            k, m2 = np.unravel_index(int(np.argmax(excess)), excess.shape)
            if excess[k, m2] > worst[0]:
                worst = (float(excess[k, m2]), float(drop[k, m2]), float(err[k, m2]),
                         {"pair": [i, j], "t_k": float(t[k]), "t_l": float(t[m2])})
    sampled = {"largest_decrease": worst[1], "its_error": worst[2], "where": worst[3],
               "violations_beyond_error": worst[0] > 0, "note": SAMPLED}
    parts = [judge_part(request, -worst[1], worst[2], "no sampled decrease of |x_i − x_j| "
                        "(checkpoints k < l) beyond the error estimates")] if worst[0] > 0 else []
    items = []
    with working_precision(160):
        for k in range(m):
            for i in range(n):
                for j in range(i + 1, n):
                    g = pair_derivative_ball(z[k], e[k], float(traj.times[k]), i, j)
                    mid, rad = g.mid(), g.rad()
                    size = abs(mid)
                    if size == 0:
                        items.append((0.0, 0.0 if rad == 0 else math.inf, k, i, j))
                    else:
                        items.append((1.0 if mid > 0 else -1.0, float(rad / size), k, i, j))
    sign, rel, k, i, j = min(items, key=lambda it: it[0] - it[1])
    parts.append(judge_part(request, sign, rel, f"d/dt|x_i − x_j|² ≥ 0 at every checkpoint, in "
                            f"ball arithmetic (closest: pair ({i}, {j}) at t = {t[k]:.4g}; "
                            "margin relative to |g|)", strict=False))
    return combine_parts(request, parts, {"sampled": sampled,
                                          "derivative_sign_certified": sum(
                                              it[0] - it[1] > 0 for it in items),
                                          "derivative_checks": len(items),
                                          "run": run_summary(traj)})


