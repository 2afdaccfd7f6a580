r"""The polytope theorem: limits of the tokens for ``V = I`` and ``QᵀK ≻ 0``.

* ``polytope_limit`` (Theorem 3.1): every :math:`z_i` converges to a point of :math:`\mathcal S`;
* ``polytope_vertices_generic``: every :math:`z_i` converges to a vertex of :math:`\mathcal K`,
  the vertices are the leaders and :math:`P(t)` tends to the Boolean leader matrix.

Limits come from :func:`verify.limits.token_limits` (trend over the checkpoints); a limit that
has not stabilised makes the instance inconclusive. :math:`\mathcal K` is the hull of the
certified clusters of limits (:func:`~verify.checks.polytopes.certified_clusters`); the verdict
is reached by :func:`~verify.checks._parts.combine`.

Both checks' evidence carries ``"figure"`` (the report's figure protocol,
:mod:`verify.report.html`): :math:`\mathcal K` and :math:`\mathcal S` (or the vertices) drawn
over the paths and, for ``polytope_limit``, the slowest token's distance to its limit with the
fitted rate (:func:`figure_convergence`, shared with the other limit checks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.checks._parts import SubCheck, combine, inconclusive
from verify.checks._runs import (
    figure_convergence,
    fitted_limits,
    plain6,
    sig6,
    simulate_and_fit,
)
from verify.checks.polytopes import certified_clusters, identify
from verify.claim import InstanceResult, register_check
from verify.errors import InvalidArgument

__all__ = ["check_polytope_limit", "check_polytope_vertices_generic"]

def _slowest(fits) -> int:
    """The token whose fitted rate is smallest (finite rates first; else token 0)."""
    rates = [f.rate if np.isfinite(f.rate) else np.inf for f in fits]
    return int(np.argmin(rates))


def _face_point(VJ: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Float B-orthogonal projection of 0 onto aff(rows of VJ) (as in polytope_S)."""
    v0 = VJ[0]
    if len(VJ) == 1:
        return v0.copy()
    W = VJ[1:] - v0
    alpha = np.linalg.solve(W @ B @ W.T, -(W @ B.T @ v0))
    return v0 + W.T @ alpha


def _face_error(VJ: np.ndarray, errs: np.ndarray, B: np.ndarray) -> float:
    """First-order error of :func:`_face_point` when vertex ``j`` moves by ``errs[j]`` in the
    max-norm (central finite differences of the Jacobian)."""
    if len(VJ) == 1:
        return float(errs[0])
    scale = max(float(np.max(np.abs(VJ))), 1.0)
    h, total = 1e-6 * scale, 0.0
    for j in range(VJ.shape[0]):
        for a in range(VJ.shape[1]):
            up, down = VJ.copy(), VJ.copy()
            up[j, a] += h
            down[j, a] -= h
            total += float(np.max(np.abs(_face_point(up, B) - _face_point(down, B)))) / (2 * h) \
                * float(errs[j])
    return total


@dataclass
class _Polytope:
    """The observed clusters of limits and the exact prediction built on them."""

    labels: np.ndarray
    reps: list[int]
    vertex_clusters: list[int]
    S_points: np.ndarray
    S_errors: np.ndarray
    S_is_vertex: list[bool]
    S_cluster: list[int | None]
    S: object


def _polytope(L: np.ndarray, E: np.ndarray, B) -> _Polytope | str:
    """Cluster the limits, take 𝒦 = conv(cluster representatives) and compute 𝒮 exactly."""
    from verify.exact import hull_certificate, polytope_S
    from verify.exact.inputs import rational_array

    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return ("the observed limits do not form certified clusters (a chain of limits each "
                "compatible with the next but not with each other); raise the horizon.")
    R, _ = rational_array("limits", L[reps])
    cert = hull_certificate(R)
    try:
        S = polytope_S(R, B)
    except InvalidArgument as exc:
        return f"𝒮 could not be computed: {exc}"
    index = {tuple(R[c]): c for c in range(len(reps))}
    Bf, Re = np.array(B, dtype=float), E[reps]
    pts, errs, cluster = [], [], []
    for x, weights in zip(S.points, S.weights, strict=True):
        face = [index[S.vertices[j]] for j in sorted(weights)]
        VJ = np.array([[float(v) for v in R[c]] for c in face])
        pts.append([float(v) for v in x])
        errs.append(_face_error(VJ, Re[face], Bf))
        cluster.append(index.get(tuple(x)))
    return _Polytope(labels, reps, sorted(index[tuple(cert.points[i])] for i in cert.vertices),
                     np.array(pts), np.array(errs), list(S.is_vertex), cluster, S)


@register_check("polytope_limit")
def check_polytope_limit(request) -> InstanceResult:
    r"""Theorem 3.1: every :math:`z_i` converges to a point of :math:`\mathcal S`.

    The limits :math:`z_i^\infty` are fitted with error bars; :math:`\mathcal K` is the hull
    of the (certified) clusters of limits, :math:`\mathcal S` is computed exactly for it
    (:func:`verify.exact.polytope_S`, on the float limits at their exact binary value), and
    each point of :math:`\mathcal S` carries the first-order error induced by the error bars of
    the vertices. Each limit must be identified with a unique point of :math:`\mathcal S`
    (:func:`identify`); :math:`\mathcal V \subseteq \mathcal S` and
    :math:`\mathcal S \subseteq \partial\mathcal K \cup \{0\}` are reported.
    """
    traj, fits, failure = simulate_and_fit(request, kinds_in_evidence=True)
    if failure:
        return failure
    L, E = fitted_limits(fits)
    pol = _polytope(L, E, request.instance.model.B)
    if isinstance(pol, str):
        return inconclusive(request, pol, {"limits": L.tolist(), "limit_errors": E.tolist()})
    subs, tokens = [], []
    for i in range(len(L)):
        j, sub = identify(L[i], E[i], pol.S_points, pol.S_errors,
                          f"z_{i} → a unique point of 𝒮")
        subs.append(sub)
        tokens.append({"token": i, "limit": L[i].tolist(), "limit_error": sig6(E[i]),
                       "rate": sig6(fits[i].rate), "S_point": j, "S_point_is_vertex":
                       pol.S_is_vertex[j],
                       "distance": sig6(np.max(np.abs(L[i] - pol.S_points[j])))})
    S = pol.S
    evidence = {
        "K_vertices": [L[pol.reps[c]].tolist() for c in pol.vertex_clusters],
        "S_points": pol.S_points.tolist(), "S_point_errors": pol.S_errors.tolist(),
        "S_is_vertex": pol.S_is_vertex, "S_is_origin": list(S.is_origin),
        "V_subset_S": S.vertices_in_S(), "S_in_boundary_or_origin": S.in_boundary_or_origin(),
        "clusters": len(pol.reps), "tokens": tokens, "error_estimate": traj.error_estimate,
        "symmetry": traj.symmetry is not None,
    }
    i = _slowest(fits)
    distance = np.max(np.abs(traj.z[:, i, :] - L[i]), axis=1)
    evidence["figure"] = {
        "predicted": {"polytope_vertices": [[plain6(v) for v in x]
                                            for x in evidence["K_vertices"]],
                      "points": [[plain6(v) for v in x] for x in pol.S_points],
                      "label": r"$\mathcal{K}$ and $\mathcal{S}$"},
        "convergence": figure_convergence(
            traj.t, distance, traj.error[:, i] + E[i], fits[i].rate, fits[i].tail_start,
            rf"$\|z_{{{i}}}(t) - z_{{{i}}}^\infty\|_\infty$ (slowest token)")}
    return combine(subs, request, evidence)


@register_check("polytope_vertices_generic")
def check_polytope_vertices_generic(request) -> InstanceResult:
    r"""Generic data: every :math:`z_i` converges to a vertex of :math:`\mathcal K`, the vertices
    are the leaders, and :math:`P(t)` tends to the Boolean matrix of each token's leader.

    Leaders come from the certified hardmax graphs (:func:`verify.graph.hardmax_graph` with the
    trajectory's score radius) over the last half of the checkpoints; the graph must be decided
    and stable there (:func:`verify.graph.leader_history`). With a certified clustering of the
    limits, the remaining statements are exact facts: each leader's cluster is a vertex cluster
    of :math:`\mathcal K`, each vertex cluster holds exactly one leader, and each token's limit
    lies in its leader's cluster (:func:`identify` against the vertex limits).
    """
    from verify.graph import boolean_limit, followers, hardmax_graph, leader_history

    traj, fits, failure = simulate_and_fit(request)
    if failure:
        return failure
    m = len(traj.t)
    tail = list(range(m // 2, m))
    graphs = [hardmax_graph(traj.scaled_scores[k], traj.score_radius(k)) for k in tail]
    history = leader_history(graphs, traj.t[tail])
    if history.undecided[-1]:
        return inconclusive(request, f"the hardmax graph at t={traj.t[-1]:.4g} is not certified"
                            f" for tokens {sorted(history.undecided[-1])} (margins within the "
                            "score error).")
    if history.stable_since is None:
        return inconclusive(request, "the leader set changed at the last checkpoint; integrate "
                            "longer.", {"leaders": [sorted(s) for s in history.leaders]})
    G = graphs[-1]
    leader_of = {i: ld for ld, tokens in followers(G).items() for i in tokens}
    L, E = fitted_limits(fits)
    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return inconclusive(request, "the observed limits do not form certified clusters.")
    from verify.exact import hull_certificate
    from verify.exact.inputs import rational_array

    cert = hull_certificate(rational_array("limits", L[reps])[0])
    vertex_clusters = set(cert.vertices)
    leaders = sorted(set(leader_of.values()))
    subs = []
    for ld in leaders:
        subs.append(SubCheck(1.0 if labels[ld] in vertex_clusters else -1.0, 0.0,
                             f"leader {ld}'s limit is a vertex of 𝒦"))
    for c in vertex_clusters:
        k = sum(1 for ld in leaders if labels[ld] == c)
        subs.append(SubCheck(1.0 if k == 1 else -1.0, 0.0,
                             f"vertex cluster {c} of 𝒦 holds exactly one leader (found {k})"))
    verts = sorted(vertex_clusters)
    for i in range(len(L)):
        if i not in leader_of:
            subs.append(SubCheck(-1.0, 0.0, f"token {i} follows a leader"))
            continue
        j, sub = identify(L[i], E[i], L[[reps[c] for c in verts]], E[[reps[c] for c in verts]],
                          f"z_{i} → the vertex of its leader {leader_of[i]}")
        same = verts[j] == labels[leader_of[i]]
        subs.append(sub if same or sub.status == "violated" else
                    SubCheck(-1.0, 0.0, f"z_{i} → the vertex of its leader {leader_of[i]} "
                             f"(it converges to the vertex of cluster {verts[j]})"))
    P_star = boolean_limit(G, len(L))
    deviation = float(np.max(np.abs(traj.attention[-1] - P_star)))
    evidence = {"leaders": leaders, "leader_of": {str(k): v for k, v in leader_of.items()},
                "stable_since": history.stable_since, "K_vertices":
                [L[reps[c]].tolist() for c in verts], "P_star": P_star.tolist(),
                "max_abs_P_minus_P_star_at_T": deviation,
                "min_certified_margin_at_T": sig6(np.min(traj.margins[-1])),
                "error_estimate": traj.error_estimate}
    evidence["figure"] = {"predicted": {
        "polytope_vertices": [[plain6(v) for v in x] for x in evidence["K_vertices"]],
        "label": r"$\mathcal{K}$ (its vertices: the leaders' limits)"}}
    return combine(subs, request, evidence)
