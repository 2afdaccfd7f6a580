r"""The conclusion ``hull-shrinks`` (Proposition 8.2): the convex hull of the tokens does not
grow.

:math:`z_i(t_{k+1}) \in \operatorname{conv}\{z_j(t_k)\}` and
:math:`z_i(t) \in \operatorname{conv}\{z_j(0)\}`. Inclusions that become equalities in the limit
(a leader at a vertex of the hull) cannot be decided once the motion falls below the error
estimate; such pairs are counted in the evidence (``boundary_*``) and are neither support nor
violation; a violation beyond the error always counts. A statement about finite times: the
deciding pair (a violation, else the first undecided pair, else the shallowest inclusion) is
judged by :func:`~verify.judge._decision.decide` on the *estimate* basis (the depths are read
off the run; errors from the reference run, compared after the safety factor κ). A hold with
undecided pairs says so in its reason: "holds on 409 of 499 inclusions; 90 undecided".
"""

from __future__ import annotations

import math

import numpy as np

from verify.analysis.evidence import Basis
from verify.exact import hull_certificate
from verify.exact._common import rref
from verify.exact.inputs import rational_array
from verify.judge._decision import decide, inconclusive
from verify.judge._verdicts import InstanceResult
from verify.numerics import HULL_ULPS, ulps
from verify.numerics._coverage import estimate_bound
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_hull_shrinks"]



def _affine_coordinates(x0) -> list[int]:
    """Pivot coordinates of the exact affine hull of the initial tokens (an injective
    projection of that hull; the dynamics never leave it)."""

    rows = [[a - b for a, b in zip(row, x0[0], strict=True)] for row in x0[1:]]
    return list(rref(rows)[1]) if rows else []


def _depths(Y: np.ndarray, P: np.ndarray) -> np.ndarray | None:
    """Signed depth of each row of ``P`` in ``conv(Y)`` (positive inside: the distance to the
    boundary; negative outside: minus a lower bound on the distance), None if Qhull fails."""
    r = Y.shape[1]
    if r == 1:
        return np.minimum(P[:, 0] - Y[:, 0].min(), Y[:, 0].max() - P[:, 0])
    from scipy.spatial import ConvexHull, QhullError

    try:
        eq = ConvexHull(Y).equations
    except (QhullError, ValueError):
        return None
    return np.min(-(P @ eq[:, :r].T + eq[:, r]), axis=1)


@register_conclusion(
    "hull-shrinks", asymptotic=False,
    summary="conv{z_i(t)} is non-increasing: z_i(t_l) ∈ conv{z_j(t_k)} for t_k ≤ t_l",
    needs="signed depths of each token in the hull of the previous checkpoint and of the "
          "initial tokens (affine coordinates of the exact initial hull), errors √r × the "
          "state's error estimates + rounding; outside beyond the error (re-decided exactly on "
          "the float values) → violated; within the error of the boundary → not counted.",
    keys={})
def judge_hull_shrinks(ev) -> InstanceResult:
    r"""Proposition 8.2: :math:`z_i(t_{k+1}) \in \operatorname{conv}\{z_j(t_k)\}` and
    :math:`z_i(t_l) \in \operatorname{conv}\{z_j(0)\}` for all checkpoints.

    Depths are measured in the pivot coordinates of the exact affine hull of the initial tokens;
    the error of a depth is :math:`\sqrt r` times the error estimates of the point and of the
    hull's generators, plus float64 rounding. A point outside by more than its error is a
    violation, and it is re-decided exactly (:func:`verify.exact.hull_certificate` on the float
    values at their exact binary value). A point within its error of the boundary cannot be
    decided at this precision: it is counted in the evidence (``boundary_stationary`` when it
    has not moved beyond its error either, e.g. a leader at a vertex; ``boundary_moving``
    otherwise) and is neither support nor violation. No inside pair at all: inconclusive.
    """

    request, traj = ev.request, ev.trajectory
    x0, _ = rational_array("x0", request.instance.x0)
    piv = _affine_coordinates(x0)
    if not piv:
        return inconclusive(request, "all initial tokens coincide: the hull is a point.")
    if traj.z is None:
        return inconclusive(request, "the run has no rescaled tokens z (the hull statement is "
                            "about z).")
    Z, E, m = traj.z[:, :, piv], traj.error, len(traj.t)
    r = len(piv)
    counts = {"inside": 0, "outside": 0, "boundary_stationary": 0, "boundary_moving": 0,
              "undecided": 0}
    tightest, worst, first_undecided = None, None, None
    pairs = [(k, k + 1) for k in range(m - 1)] + [(0, j) for j in range(2, m)]
    for k, l in pairs:  # noqa: E741
        Y, P = Z[k], Z[l]
        depth = _depths(Y, P)
        if depth is None:
            counts["undecided"] += P.shape[0]
            first_undecided = first_undecided or (
                f"the inclusion at t={traj.t[l]:.4g} is undecided (Qhull failed on a "
                "degenerate hull)")
            continue
        scale = float(np.max(np.abs(Y))) + float(np.max(np.abs(P)))
        err = math.sqrt(r) * (E[l] + float(np.max(E[k]))) + ulps(HULL_ULPS * r, scale)
        bound = estimate_bound(err)  # what decide compares with
        moved = np.max(np.abs(P - Y), axis=1)
        for i in range(P.shape[0]):
            what = (f"z_{i + 1}(t={traj.t[l]:.4g}) in conv{{z_j(t={traj.t[k]:.4g})}}")  # from 1
            if depth[i] > bound[i]:
                counts["inside"] += 1
                if tightest is None or depth[i] - bound[i] < tightest[0] - estimate_bound(
                        tightest[1]):
                    tightest = (float(depth[i]), float(err[i]), what)
            elif -depth[i] > bound[i]:
                exact = hull_certificate(np.vstack([traj.z[k], traj.z[l][i:i + 1]]))
                if len(Y) in exact.vertices:
                    counts["outside"] += 1
                    sub = (float(depth[i]), float(err[i]), what + " (outside, re-decided "
                           "exactly on the float values)")
                    if worst is None or -sub[0] - sub[1] > -worst[0] - worst[1]:
                        worst = sub
                else:
                    counts["undecided"] += 1
                    first_undecided = first_undecided or (
                        what + " is undecided (float and exact membership disagree)")
            elif moved[i] <= E[k, i] + E[l, i] + ulps(HULL_ULPS, scale):
                counts["boundary_stationary"] += 1
            else:
                counts["boundary_moving"] += 1
    evidence = {"pairs": counts, "affine_dimension": r,
                "error_estimate": traj.error_estimate,
                "note": "boundary: within the error estimate of the hull's boundary, so the "
                        "inclusion is undecidable at this precision (neither support nor "
                        "violation); stationary: not moved beyond the error either (a leader at "
                        "a vertex)"}
    if tightest is not None:
        evidence["smallest_depth"] = {"at": tightest[2], "depth": tightest[0],
                                      "error": tightest[1]}
    unit = "depth in the hull (distance)"
    if worst is not None:
        return decide(request, worst[0], worst[1], worst[2], unit=unit, evidence=evidence,
                      basis=Basis.ESTIMATE)
    if first_undecided is not None:
        return inconclusive(request, first_undecided, evidence, unit=unit)
    if tightest is None:
        return inconclusive(request, "no token is inside a hull beyond its error: every "
                            "inclusion is within the error of the boundary.", evidence, unit=unit)
    total = sum(counts.values())
    boundary = counts["boundary_stationary"] + counts["boundary_moving"]
    partial = "" if not boundary else (
        f"holds on {counts['inside']} of {total} inclusions; {boundary} undecided (within the "
        f"error of the hull's boundary: {counts['boundary_stationary']} stationary, "
        f"{counts['boundary_moving']} moving); tightest: ")
    return decide(request, tightest[0], tightest[1], partial + tightest[2], unit=unit,
                  evidence=evidence, basis=Basis.ESTIMATE)
