r"""``polytope_subspace_limit`` (Theorem 5.2): the projections :math:`\pi_F z_i(t)` (onto ``F``
along ``G``) converge to :math:`\partial\mathcal K \cup \{0\}`, :math:`\mathcal K` the polytope
spanned by the projected limits; each instance records whether it is in the *safe case*
(:math:`F \perp G` and :math:`Q^\top K` block-diagonal in :math:`F \oplus G`).

The evidence carries ``"figure"`` (the report's figure protocol, :mod:`verify.report.html`): the
affine subspaces :math:`c + G` through the clusters ``c`` of projected limits (mapped back into
:math:`\mathbb R^d`), their hull :math:`\mathcal K`, and the slowest projection's distance to
its limit with the fitted rate.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import inconclusive, judge_part
from verify.checks._runs import figure_convergence, float_parameter
from verify.checks.extensions import boundary_depths, projected_run
from verify.checks.polytopes import cluster_groups
from verify.claim import CheckRequest, InstanceResult, register_check

__all__ = ["polytope_subspace_limit"]


def _boundary_margins(limits: np.ndarray, errors: np.ndarray, fraction: float):
    r"""Per token: :math:`q_i = \min(\mathrm{depth}_i, \|c_i\|)` (distance to
    :math:`\partial\mathcal K \cup \{0\}`), the resolution ``s`` (smallest distance between two
    distinct limit clusters or between a cluster and 0) and the margins
    ``fraction·s − q_i`` with their error bars."""
    p = limits.shape[1]
    groups = cluster_groups(limits, errors)
    centres = np.array([limits[g].mean(axis=0) for g in groups])
    depth, dim = boundary_depths(limits)
    norm = np.linalg.norm(limits, axis=1)
    q = np.minimum(depth, norm)
    candidates = list(centres)
    if not any(np.max(np.abs(c)) <= errors[g].max() for c, g in zip(centres, groups,
                                                                     strict=True)):
        candidates.append(np.zeros(p))
    gaps = [np.linalg.norm(a - b) for k, a in enumerate(candidates) for b in candidates[:k]]
    s = min(gaps) if gaps else math.inf
    # Euclidean errors from max-norm bars: √p per point; depth and s move with every limit.
    e_max = math.sqrt(p) * float(errors.max())
    error = math.sqrt(p) * errors + (1 + 2 * fraction) * e_max
    return fraction * s - q, error, {"clusters": len(groups), "affine_dimension_of_K": dim,
                                     "resolution_s": s, "depth": depth, "distance_to_0": norm,
                                     "cluster_sizes": [len(g) for g in groups]}


@register_check("polytope_subspace_limit")
def polytope_subspace_limit(request: CheckRequest) -> InstanceResult:
    r"""Theorem 5.2: :math:`\pi_F z_i(t) \to \partial\mathcal K \cup \{0\}`.

    The projections (in coordinates of the exact basis of ``F``) are fitted per token
    (:func:`verify.limits.projected_limits`); :math:`\mathcal K` is the convex hull of their
    limits. Per token the observed quantity is :math:`q_i`, the distance of its limit to
    :math:`\partial\mathcal K \cup \{0\}`; the statement checked is
    :math:`q_i < \tau s` with ``τ = separation_fraction`` and ``s`` the distance between the two
    nearest distinct limit points (0 included), i.e. every limit is on the boundary or at 0 to
    within a fraction of the resolution of the picture; an interior limit at depth ≥ τ s is a
    violation. Margin ``τ s − q_i``, error from the limit error bars.
    """
    ran, failure = projected_run(request, float_parameter(request, "tail_fraction", 0.5),
                                 info_on_failure=True)
    if failure:
        return failure
    C, info, traj, fits, evidence = ran
    limits = np.array([np.atleast_1d(f.limit) for f in fits])
    errors = np.array([f.limit_error for f in fits])
    fraction = float_parameter(request, "separation_fraction", 0.25)
    margins, errs, geometry = _boundary_margins(limits, errors, fraction)
    g_size = np.max(np.abs(traj.z[:, :, :] - traj.z[:, :, :] @ (
        np.array(info["F_basis"], dtype=float).T @ C).T), axis=(1, 2))
    evidence.update(geometry, projected_limits=limits, limit_errors=errors,
                    G_component_max=[float(g_size[0]), float(g_size[-1])])
    evidence["figure"] = _figure(C, info, traj, fits, limits, errors)
    if not math.isfinite(geometry["resolution_s"]):
        return inconclusive(request, "every projected limit is 0 within its error bar: no "
                            "polytope to compare with.", evidence)
    k = int(np.argmin(margins - errs))
    evidence["worst_token"] = k
    what = (f"π_F z_{k}(∞) lies on ∂K ∪ {{0}} (distance {abs(geometry['depth'][k]):.3g} to ∂K, "
            f"{geometry['distance_to_0'][k]:.3g} to 0, below {fraction:g}·s = "
            f"{fraction * geometry['resolution_s']:.3g})")
    case = "safe case" if info["safe_case"] else "outside the safe case"
    return judge_part(request, float(margins[k]), float(errs[k]), f"[{case}] {what}", evidence)



def _figure(C, info, traj, fits, limits, errors) -> dict:
    r"""``evidence["figure"]``: lines through the cluster points of :math:`\pi_F z(\infty)` in
    :math:`\mathbb R^d` along ``G``, their hull, and
    :math:`\|\pi_F z_i(t) - \pi_F z_i(\infty)\|_\infty` (``F``-coordinates) of the slowest
    token."""
    from verify.checks._runs import sig6

    F = np.array([[float(v) for v in row] for row in info["F_basis"]], dtype=float)
    G = np.array([[float(v) for v in row] for row in info["G_basis"]], dtype=float)
    centres = np.array([limits[g].mean(axis=0) for g in cluster_groups(limits, errors)])
    anchors = [[sig6(v) for v in x] for x in centres @ F]
    predicted = {"polytope_vertices": anchors, "anchors": anchors,
                 "label": r"$\mathcal{K} + G$ ($\mathcal{K}$: hull of the limits of "
                          r"$\pi_F z_i$)"}
    if G.size:
        predicted["subspace"] = [[sig6(v) for v in g] for g in G]
    rates = [f.rate if np.isfinite(f.rate) else np.inf for f in fits]
    i = int(np.argmin(rates))
    distance = np.max(np.abs(traj.z[:, i, :] @ C.T - limits[i]), axis=1)
    error = traj.error[:, i] * float(np.max(np.sum(np.abs(C), axis=1))) + errors[i]
    return {"predicted": predicted, "convergence": figure_convergence(
        traj.t, distance, error, fits[i].rate, fits[i].tail_start,
        rf"$\|\pi_F z_{{{i}}}(t) - \pi_F z_{{{i}}}(\infty)\|_\infty$ (slowest token)")}
