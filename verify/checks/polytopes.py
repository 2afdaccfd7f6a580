r"""Checks for hull monotonicity, the polytope theorem, hyperplanes and the codimension conjecture.

Registered checks (claim files in ``claims/``):

* ``hull_nonincreasing`` (Proposition 8.2): :math:`z_i(t_{k+1}) \in \operatorname{conv}\{z_j(t_k)\}`
  and :math:`z_i(t) \in \operatorname{conv}\{z_j(0)\}`;
* ``polytope_limit`` (Theorem 3.1): every :math:`z_i` converges to a point of :math:`\mathcal S`;
* ``polytope_vertices_generic``: every :math:`z_i` converges to a vertex of :math:`\mathcal K`,
  the vertices are the leaders and :math:`P(t)` tends to the Boolean leader matrix;
* ``collapse_negative_identity``: :math:`V = -I`, :math:`Q^\top K = I`: :math:`x_i(t) \to 0`,
  :math:`P \to \tfrac1n \mathbf 1\mathbf 1^\top`,
  :math:`|x_i(t)| \le \max(\max_i|x_i(0)|, \sqrt{2n})`;
* ``hyperplanes`` (Theorem 4.2): :math:`\varphi_1^*(z_i)` converges, :math:`\max_j` non-increasing,
  :math:`\min_j` non-decreasing, limits in :math:`\{a, 0, b\}`;
* ``codimension`` (Conjecture 4.3): the projections :math:`W z_i` converge to at most 3 points.

**How a verdict is reached.** Every check reduces the claim to *sub-checks*, each a signed margin
with its error estimate (trajectory error estimate, fit error bars, exact or certified
predictions). The instance is *violated* if some sub-check is violated beyond its error, *holds*
if every sub-check holds beyond its error, and is *inconclusive* otherwise (the reason names the
undecided sub-check). Limits come from :func:`verify.limits.token_limits` /
:func:`~verify.limits.projected_limits` (trend over the checkpoints); a limit that has not
stabilised makes the instance inconclusive. Observed limits are grouped into *clusters* of
mutually compatible limits (max-norm distance within the sum of the error bars); a clustering
is *certified* when each cluster is a clique and limits of different clusters are separated.
Counting and identification facts read off a certified clustering are exact (error 0).

Inclusions that become equalities in the limit (a leader at a vertex of the hull, the extreme
value of :math:`\varphi_1^*`) cannot be decided once the motion falls below the error estimate;
such pairs are counted in the evidence (``boundary_*``, ``untestable``) and are neither support
nor violation; a violation beyond the error always counts.

Examples
--------
>>> from verify.claim import CHECKS
>>> for name in sorted(n for n in CHECKS if CHECKS[n].__module__ == __name__):
...     print(name)
codimension_subspaces
collapse_negative_identity
hull_nonincreasing
hyperplanes_limit
polytope_limit
polytope_vertices_generic
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.claim import InstanceResult, InstanceVerdict, judge_instance, register_check
from verify.errors import InvalidArgument

__all__ = ["SubCheck", "combine", "certified_clusters", "identify"]

_EPS = float(np.finfo(float).eps)


# --------------------------------------------------------------------------- shared machinery
@dataclass(frozen=True)
class SubCheck:
    """One signed margin (positive: the claim is satisfied) with its error estimate."""

    margin: float
    error: float
    what: str

    @property
    def status(self) -> str:
        """``"holds"``, ``"violated"`` or ``"undecided"`` (as in ``judge_instance``)."""
        m, e = self.margin, self.error
        if math.isnan(m) or not math.isfinite(e):
            return "undecided"
        if e == 0:
            return "holds" if m >= 0 else "violated"
        return "holds" if m > e else "violated" if -m > e else "undecided"


def combine(subs: list[SubCheck], request, evidence: dict) -> InstanceResult:
    """The instance result from its sub-checks: the worst violation, else the first undecided
    sub-check, else the tightest holding one with a numerical error (exact facts, error 0, are
    reported only when there is nothing else); all are counted in ``evidence["sub_checks"]``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> req = SimpleNamespace(instance=SimpleNamespace(name="f#0"), family=SimpleNamespace(
    ...     name="f"), seed=0)
    >>> r = combine([SubCheck(1.0, 0.1, "a"), SubCheck(0.5, 0.1, "b")], req, {})
    >>> r.verdict.value, r.reason
    ('holds', 'b holds with margin 0.5 > error estimate 0.1.')
    """
    counts = {"holds": 0, "violated": 0, "undecided": 0}
    for s in subs:
        counts[s.status] += 1
    evidence = dict(evidence, sub_checks=counts)
    base = {"instance": request.instance.name, "family": request.family.name,
            "seed": request.seed}
    if not subs:
        return _inconclusive(request, "no sub-check could be formed (nothing to compare).",
                             evidence)
    violated = [s for s in subs if s.status == "violated"]
    undecided = [s for s in subs if s.status == "undecided"]
    if violated:
        pick = max(violated, key=lambda s: -s.margin - s.error)
    elif undecided:
        pick = undecided[0]
    else:
        numeric = [s for s in subs if s.error > 0] or subs  # exact facts have margin ±1
        pick = min(numeric, key=lambda s: s.margin - s.error)
    return judge_instance(pick.margin, pick.error, what=pick.what, strict=False,
                          evidence=evidence, **base)


def _inconclusive(request, reason: str, evidence: dict | None = None) -> InstanceResult:
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.INCONCLUSIVE, reason, evidence=evidence or {})


def _simulate(request):
    """(trajectory, None) or (None, inconclusive result) for a failed or error-less run."""
    from verify.simulate import simulate

    traj = simulate(request.instance, request.horizon, checkpoints=request.checkpoints,
                    precision=request.precision)
    if not traj.success:
        return None, _inconclusive(request, f"the integration failed ({traj.status}: "
                                   f"{traj.message}).")
    if traj.error is None:
        return None, _inconclusive(request, "the trajectory has no error estimate (the "
                                   "reference run failed), so no margin can be judged.",
                                   {"reference": traj.reference})
    return traj, None


def _parameter(request, name: str, default: float) -> float:
    return float(request.parameters.get(name, default))


def _unstable(fits, label: str = "z_") -> str | None:
    bad = [i for i, f in enumerate(fits) if not f.stabilised]
    if not bad:
        return None
    i = bad[0]
    return (f"{len(bad)} of {len(fits)} limits have not stabilised over the checkpoints "
            f"(e.g. {label}{i}: {fits[i].kind}: {fits[i].reason}); integrate longer.")


def certified_clusters(points: np.ndarray, errors: np.ndarray):
    """Group limits by compatibility (max-norm distance ≤ sum of error bars).

    Returns ``(labels, reps, certified)``: a cluster label per point, one representative per
    cluster (its member with the smallest error bar), and whether the clustering is certified
    (each cluster a clique of compatible limits; different clusters separated by construction).

    Examples
    --------
    >>> labels, reps, ok = certified_clusters(np.array([[0.0], [1e-9], [1.0]]),
    ...                                       np.array([1e-8, 1e-8, 1e-8]))
    >>> labels.tolist(), reps, ok
    ([0, 0, 1], [0, 2], True)
    """
    P = np.asarray(points, dtype=float).reshape(len(points), -1)
    E = np.asarray(errors, dtype=float)
    n = len(P)
    dist = np.max(np.abs(P[:, None, :] - P[None, :, :]), axis=2) if n else np.zeros((0, 0))
    close = dist <= E[:, None] + E[None, :]
    labels = -np.ones(n, dtype=int)
    count = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        stack, labels[i] = [i], count
        while stack:
            j = stack.pop()
            for k in np.flatnonzero(close[j] & (labels < 0)):
                labels[k] = count
                stack.append(int(k))
        count += 1
    certified = all(np.all(close[np.ix_(labels == c, labels == c)]) for c in range(count))
    reps = [int(np.flatnonzero(labels == c)[np.argmin(E[labels == c])]) for c in range(count)]
    return labels, reps, bool(certified)


def identify(value, error: float, candidates, cand_errors, what: str) -> tuple[int, SubCheck]:
    r"""Identify an observed limit with one of finitely many predicted points.

    With :math:`\delta_j` the max-norm distance to candidate ``j`` and :math:`e_j` the error bar
    (``error + cand_errors[j]``): **violated** when every :math:`\delta_j > e_j` (the limit is
    certainly none of them; margin :math:`-\delta_{j^*}`); otherwise the margin is
    :math:`\min_{j \ne j^*}\delta_j - \delta_{j^*}` (how much closer it is to its candidate than
    to any other), with error :math:`2\max_j e_j`: **holds** when the identification is unique.

    Examples
    --------
    >>> j, sub = identify([0.0], 1e-9, [[1.0], [1e-10]], [0.0, 0.0], "x in S")
    >>> j, sub.status
    (1, 'holds')
    >>> identify([0.5], 1e-9, [[1.0], [0.0]], [0.0, 0.0], "x in S")[1].status
    'violated'
    """
    c = np.asarray(candidates, dtype=float).reshape(len(candidates), -1)
    v = np.asarray(value, dtype=float).reshape(-1)
    delta = np.max(np.abs(c - v), axis=1)
    errs = float(error) + np.asarray(cand_errors, dtype=float)
    j = int(np.argmin(delta - errs))
    if delta[j] > errs[j]:
        return j, SubCheck(-float(delta[j]), float(errs[j]), what)
    others = np.delete(delta, j)
    second = float(np.min(others)) if others.size else math.inf
    return j, SubCheck(second - float(delta[j]), 2 * float(np.max(errs)), what)


def _limits(fits) -> tuple[np.ndarray, np.ndarray]:
    L = np.array([np.atleast_1d(np.asarray(f.limit, dtype=float)) for f in fits])
    return L, np.array([f.limit_error for f in fits], dtype=float)


def _f(x) -> float:
    return float(f"{float(x):.6g}")


# --------------------------------------------------------------------------- hull monotonicity
def _affine_coordinates(x0) -> list[int]:
    """Pivot coordinates of the exact affine hull of the initial tokens (an injective
    projection of that hull; the dynamics never leave it)."""
    from verify.exact._common import rref

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


@register_check("hull_nonincreasing")
def check_hull_nonincreasing(request) -> InstanceResult:
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
    from verify.exact import hull_certificate
    from verify.exact.inputs import rational_array

    traj, failure = _simulate(request)
    if failure:
        return failure
    x0, _ = rational_array("x0", request.instance.x0)
    piv = _affine_coordinates(x0)
    if not piv:
        return _inconclusive(request, "all initial tokens coincide: the hull is a point.")
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
            first_undecided = first_undecided or SubCheck(
                math.nan, math.inf, f"the inclusion at t={traj.t[l]:.4g} (Qhull failed on a "
                "degenerate hull)")
            continue
        scale = float(np.max(np.abs(Y))) + float(np.max(np.abs(P)))
        err = math.sqrt(r) * (E[l] + float(np.max(E[k]))) + 64 * _EPS * r * scale
        moved = np.max(np.abs(P - Y), axis=1)
        for i in range(P.shape[0]):
            what = (f"z_{i}(t={traj.t[l]:.4g}) in conv{{z_j(t={traj.t[k]:.4g})}}")
            if depth[i] > err[i]:
                counts["inside"] += 1
                if tightest is None or depth[i] - err[i] < tightest.margin - tightest.error:
                    tightest = SubCheck(float(depth[i]), float(err[i]), what)
            elif -depth[i] > err[i]:
                exact = hull_certificate(np.vstack([traj.z[k], traj.z[l][i:i + 1]]))
                if len(Y) in exact.vertices:
                    counts["outside"] += 1
                    sub = SubCheck(float(depth[i]), float(err[i]), what + " (outside, certified"
                                   " exactly on the float values)")
                    if worst is None or -sub.margin - sub.error > -worst.margin - worst.error:
                        worst = sub
                else:
                    counts["undecided"] += 1
                    first_undecided = first_undecided or SubCheck(
                        math.nan, math.inf, what + " (float and exact membership disagree)")
            elif moved[i] <= E[k, i] + E[l, i] + 64 * _EPS * scale:
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
        evidence["smallest_depth"] = {"at": tightest.what, "depth": tightest.margin,
                                      "error": tightest.error}
    subs = [s for s in (worst, first_undecided, tightest) if s is not None]
    return combine(subs, request, evidence)


# --------------------------------------------------------------------------- polytope
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
    from verify.limits import token_limits

    traj, failure = _simulate(request)
    if failure:
        return failure
    fits = token_limits(traj, tail_fraction=_parameter(request, "tail_fraction", 0.5))
    why = _unstable(fits)
    if why:
        return _inconclusive(request, why, {"fits": [f.kind for f in fits]})
    L, E = _limits(fits)
    pol = _polytope(L, E, request.instance.model.B)
    if isinstance(pol, str):
        return _inconclusive(request, pol, {"limits": L.tolist(), "limit_errors": E.tolist()})
    subs, tokens = [], []
    for i in range(len(L)):
        j, sub = identify(L[i], E[i], pol.S_points, pol.S_errors,
                          f"z_{i} → a unique point of 𝒮")
        subs.append(sub)
        tokens.append({"token": i, "limit": L[i].tolist(), "limit_error": _f(E[i]),
                       "rate": _f(fits[i].rate), "S_point": j, "S_point_is_vertex":
                       pol.S_is_vertex[j], "distance": _f(np.max(np.abs(L[i] - pol.S_points[j])))})
    S = pol.S
    evidence = {
        "K_vertices": [L[pol.reps[c]].tolist() for c in pol.vertex_clusters],
        "S_points": pol.S_points.tolist(), "S_point_errors": pol.S_errors.tolist(),
        "S_is_vertex": pol.S_is_vertex, "S_is_origin": list(S.is_origin),
        "V_subset_S": S.vertices_in_S(), "S_in_boundary_or_origin": S.in_boundary_or_origin(),
        "clusters": len(pol.reps), "tokens": tokens, "error_estimate": traj.error_estimate,
        "symmetry": traj.symmetry is not None,
    }
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
    from verify.limits import token_limits

    traj, failure = _simulate(request)
    if failure:
        return failure
    fits = token_limits(traj, tail_fraction=_parameter(request, "tail_fraction", 0.5))
    why = _unstable(fits)
    if why:
        return _inconclusive(request, why)
    m = len(traj.t)
    tail = list(range(m // 2, m))
    graphs = [hardmax_graph(traj.scaled_scores[k], traj.score_radius(k)) for k in tail]
    history = leader_history(graphs, traj.t[tail])
    if history.undecided[-1]:
        return _inconclusive(request, f"the hardmax graph at t={traj.t[-1]:.4g} is not certified"
                             f" for tokens {sorted(history.undecided[-1])} (margins within the "
                             "score error).")
    if history.stable_since is None:
        return _inconclusive(request, "the leader set changed at the last checkpoint; integrate "
                             "longer.", {"leaders": [sorted(s) for s in history.leaders]})
    G = graphs[-1]
    leader_of = {i: ld for ld, tokens in followers(G).items() for i in tokens}
    L, E = _limits(fits)
    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return _inconclusive(request, "the observed limits do not form certified clusters.")
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
                "min_certified_margin_at_T": _f(np.min(traj.margins[-1])),
                "error_estimate": traj.error_estimate}
    return combine(subs, request, evidence)


# --------------------------------------------------------------------------- V = -I
@register_check("collapse_negative_identity")
def check_collapse_negative_identity(request) -> InstanceResult:
    r""":math:`V = -I`, :math:`Q^\top K = I`: :math:`x_i(t) \to 0`, :math:`P(t) \to \frac1n
    \mathbf 1\mathbf 1^\top`, and :math:`|x_i(t)| \le \max(\max_i|x_i(0)|, \sqrt{2n})`.

    Convergence is algebraic (about :math:`t^{-1/2}`), so the decay is judged by a power law
    fitted over the tail (:func:`verify.limits.fit_power_law`): the exponent must be negative
    beyond its coverage interval, both for :math:`\max_i|x_i(t)|` and for
    :math:`\max_{ij}|P_{ij}(t) - 1/n|` (whose error is bounded by twice the score error,
    softmax being 2-Lipschitz from scores in the max-norm to entries). The bound is checked at
    every checkpoint ``t > 0`` against the Euclidean norms, with error
    :math:`\sqrt d` times the state error estimate.
    """
    from verify.limits import fit_power_law

    traj, failure = _simulate(request)
    if failure:
        return failure
    X, t, E = traj.x, traj.t, traj.error
    n, d = X.shape[1], X.shape[2]
    if traj.x is not traj.state:
        return _inconclusive(request, "the family must integrate x (model.form = \"x\"): the "
                             "claim is about the unrescaled tokens.")
    tail = _parameter(request, "tail_fraction", 0.5)
    subs = []
    size = np.max(np.abs(X), axis=(1, 2))
    fit_x = fit_power_law(t[1:], size[1:], np.max(E, axis=1)[1:], tail=tail)
    P = traj.attention
    dev = np.max(np.abs(P - 1.0 / n), axis=(1, 2))
    dev_err = np.array([2 * math.exp(float(traj.log_scale[k])) * float(
        np.max(traj.score_radius(k))) for k in range(len(t))])
    fit_p = fit_power_law(t[1:], dev[1:], dev_err[1:], tail=tail)
    for name, fit in (("max_i |x_i(t)|", fit_x), ("max_ij |P_ij(t) - 1/n|", fit_p)):
        if not fit.ok:
            subs.append(SubCheck(math.nan, math.inf, f"{name} → 0 ({fit.reason})"))
        else:
            subs.append(SubCheck(-fit.slope, fit.coverage * fit.slope_error,
                                 f"{name} → 0 (power-law exponent {fit.slope:.3g} < 0)"))
    x0 = np.array(request.instance.x0_float(), dtype=float)
    R = max(float(np.max(np.linalg.norm(x0, axis=1))), math.sqrt(2 * n))
    norms = np.linalg.norm(X[1:], axis=2)
    k, i = np.unravel_index(int(np.argmax(norms)), norms.shape)
    subs.append(SubCheck(R - float(norms[k, i]), math.sqrt(d) * float(E[k + 1, i])
                         + 4 * _EPS * R, f"|x_{i}(t={t[k + 1]:.4g})| <= max(max_i|x_i(0)|, "
                         f"sqrt(2n)) = {R:.6g}"))
    evidence = {"x_power_law_exponent": _f(fit_x.slope), "x_exponent_error":
                _f(fit_x.slope_error), "P_power_law_exponent": _f(fit_p.slope),
                "P_exponent_error": _f(fit_p.slope_error), "coverage": _f(fit_x.coverage),
                "max_abs_x_at_T": _f(size[-1]), "max_abs_P_minus_uniform_at_T": _f(dev[-1]),
                "bound_R": _f(R), "max_norm_t_positive": _f(norms[k, i]),
                "error_estimate": traj.error_estimate}
    return combine(subs, request, evidence)


# --------------------------------------------------------------------------- hyperplanes
def _monotone_subchecks(values: np.ndarray, errors: np.ndarray, t: np.ndarray, sign: int,
                        label: str) -> tuple[list[SubCheck], dict]:
    """Sub-checks that ``sign * values`` is non-increasing over the checkpoints: resolved
    decreases hold, increases beyond the error are violations, the rest are untestable."""
    counts = {"decreasing": 0, "increasing": 0, "untestable": 0}
    tightest, worst = None, None
    for k in range(len(t) - 1):
        drop = sign * (values[k] - values[k + 1])
        err = errors[k] + errors[k + 1]
        sub = SubCheck(float(drop), float(err), f"{label} non-"
                       f"{'increasing' if sign > 0 else 'decreasing'} on "
                       f"[{t[k]:.4g}, {t[k + 1]:.4g}]")
        if sub.status == "holds":
            counts["decreasing"] += 1
            if tightest is None or drop - err < tightest.margin - tightest.error:
                tightest = sub
        elif sub.status == "violated":
            counts["increasing"] += 1
            if worst is None or -drop - err > -worst.margin - worst.error:
                worst = sub
        else:
            counts["untestable"] += 1
    return [s for s in (worst, tightest) if s is not None], counts


def _values_in(limits: np.ndarray, errors: np.ndarray, candidates: list, cand_errors: list,
               label: str) -> tuple[list[SubCheck], list]:
    """Identify each certified cluster value with the candidate offsets."""
    subs, chosen = [], []
    for i, (v, e) in enumerate(zip(limits, errors, strict=True)):
        j, sub = identify([v], e, [[c] for c in candidates], cand_errors,
                          f"{label}_{i} → one of the offsets {{a, 0, b}}")
        subs.append(sub)
        chosen.append(j)
    return subs, chosen


@register_check("hyperplanes_limit")
def check_hyperplanes_limit(request) -> InstanceResult:
    r"""Theorem 4.2 (good triple): :math:`\varphi_1^*(z_i(t))` converges for each ``i``,
    :math:`\max_j\varphi_1^*(z_j)` is non-increasing, :math:`\min_j` non-decreasing, and each
    limit is one of :math:`a = \lim\min_j`, :math:`0`, :math:`b = \lim\max_j`.

    :math:`\varphi_1^*` is the exact (or certified) left eigenvector of :math:`\lambda_1`
    (:func:`verify.exact.eigenpair`), used through its float64 value with the enclosure radius
    added to the error bars. The limits are grouped into certified clusters; each cluster's value
    must be identified with one of :math:`a, 0, b` (:func:`identify`), so the middle clusters
    must sit at 0. Distances to :math:`H` are the offsets divided by :math:`\|\varphi_1^*\|_2`.
    """
    from verify.exact import eigenpair
    from verify.limits import projected_limits

    pair = eigenpair(request.instance.model.V)
    phi = pair.left_float
    traj, failure = _simulate(request)
    if failure:
        return failure
    fits = projected_limits(traj, phi, tail_fraction=_parameter(request, "tail_fraction", 0.5))
    why = _unstable(fits, "φ_1*(z_")
    if why:
        return _inconclusive(request, why)
    Z, t = traj.z, traj.t
    radius = pair.radius * np.max(np.sum(np.abs(Z), axis=2), axis=0)
    values = Z @ phi
    errors = traj.error * float(np.sum(np.abs(phi))) + radius[None, :] + 4 * _EPS * np.abs(values)
    L, E = _limits(fits)
    L, E = L[:, 0], E + radius
    subs = []
    imax, imin = np.argmax(values, axis=1), np.argmin(values, axis=1)
    rows = np.arange(len(t))
    up, up_counts = _monotone_subchecks(values[rows, imax], errors[rows, imax], t, 1,
                                        "max_j φ_1*(z_j)")
    down, down_counts = _monotone_subchecks(values[rows, imin], errors[rows, imin], t, -1,
                                            "min_j φ_1*(z_j)")
    subs += up + down
    labels, reps, certified = certified_clusters(L[:, None], E)
    if not certified:
        return _inconclusive(request, "the limits of φ_1*(z_i) do not form certified clusters.")
    order = sorted(reps, key=lambda r: L[r])
    a, b = order[0], order[-1]
    cands, cand_err = [L[a], 0.0, L[b]], [E[a], 0.0, E[b]]
    middle = [r for r in order[1:-1]]
    value_subs, chosen = _values_in(L[middle], E[middle], cands, cand_err, "middle cluster")
    subs += value_subs
    norm = float(np.linalg.norm(phi))
    evidence = {"lambda_1": str(pair.eigenvalue), "phi_star": phi.tolist(),
                "phi_star_exact": pair.exact, "phi_star_radius": pair.radius,
                "a": _f(L[a]), "b": _f(L[b]), "a_error": _f(E[a]), "b_error": _f(E[b]),
                "cluster_values": [_f(L[r]) for r in order],
                "cluster_sizes": [int(np.sum(labels == labels[r])) for r in order],
                "middle_offsets": [["a", "0", "b"][j] for j in chosen],
                "distance_to_H": [_f(min(abs(v - c) for c in cands) / norm) for v in L],
                "max_monotonicity": up_counts, "min_monotonicity": down_counts,
                "rates": [_f(f.rate) for f in fits], "error_estimate": traj.error_estimate}
    if not subs:
        subs.append(SubCheck(1.0, 0.0, "at most three offsets (one cluster)"))
    return combine(subs, request, evidence)


# --------------------------------------------------------------------------- codimension
def _dual_rows(V) -> tuple[np.ndarray, float, int]:
    """Rows spanning the left invariant subspace of the eigenvalues with Re > 0, orthonormal,
    with an error estimate (residual over the spectral gap), and the exact count ``k``."""
    from verify.exact import positive_real_part_count

    Vf = np.array(V, dtype=float)
    check = positive_real_part_count(V)
    lam, W = np.linalg.eig(Vf.T)
    keep = lam.real > 0
    k = int(np.sum(keep))
    rows = []
    for j in np.flatnonzero(keep):
        if abs(lam[j].imag) == 0:
            rows.append(W[:, j].real)
        elif lam[j].imag > 0:
            rows += [W[:, j].real, W[:, j].imag]
    Qm, _ = np.linalg.qr(np.array(rows).T)
    basis = Qm.T
    resid = float(np.max(np.abs(Vf.T @ W[:, keep] - W[:, keep] * lam[keep]))) if k else 0.0
    gap = float(np.min(np.abs(lam[keep][:, None] - lam[~keep][None, :]))) if k and k < len(lam) \
        else 1.0
    return basis, resid / gap + 8 * _EPS, int(check.value) if check.value is not None else -1


@register_check("codimension_subspaces")
def check_codimension_subspaces(request) -> InstanceResult:
    r"""Conjecture 4.3 (evidence): with ``k`` eigenvalues of ``V`` of positive real part, the
    :math:`z_i` approach at most three parallel affine subspaces of codimension ``k``.

    ``W`` (``k×d``, orthonormal rows) spans the left invariant subspace of those eigenvalues
    (float64 eigenvectors, error estimate = residual / spectral gap, times :math:`|z|_1`). The
    limits of :math:`W z_i` are fitted and grouped into certified clusters; the observed number
    of subspaces is then an exact count, compared with 3.
    """
    from verify.limits import projected_limits

    V = request.instance.model.V
    W, w_err, k_exact = _dual_rows(V)
    if W.shape[0] != k_exact:
        return _inconclusive(request, f"the float eigen-decomposition found {W.shape[0]} "
                             f"eigenvalues with Re > 0, the exact count is {k_exact}.")
    traj, failure = _simulate(request)
    if failure:
        return failure
    fits = projected_limits(traj, W, tail_fraction=_parameter(request, "tail_fraction", 0.5))
    why = _unstable(fits, "W z_")
    if why:
        return _inconclusive(request, why)
    L, E = _limits(fits)
    E = E + w_err * float(np.max(np.sum(np.abs(traj.z), axis=2)))
    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return _inconclusive(request, "the limits of W z_i do not form certified clusters.")
    count = len(reps)
    sub = SubCheck(3 - count, 0.0, f"number of parallel affine subspaces of codimension "
                   f"{k_exact} ({count}) <= 3")
    subs = [sub]
    pairs = [(p, q) for p in reps for q in reps if p < q]
    separation = math.nan
    if pairs:
        p, q = min(pairs, key=lambda pq: float(np.max(np.abs(L[pq[0]] - L[pq[1]])))
                   - E[pq[0]] - E[pq[1]])
        separation = float(np.max(np.abs(L[p] - L[q])))
        subs.append(SubCheck(separation, float(E[p] + E[q]), f"the {count} subspaces are "
                             f"distinct (offsets of W z_{p} and W z_{q} separated)"))
    evidence = {"k": k_exact, "W": W.tolist(), "W_error": _f(w_err), "subspaces": count,
                "offsets": [L[r].tolist() for r in reps],
                "offset_errors": [_f(E[r]) for r in reps],
                "cluster_sizes": [int(np.sum(labels == labels[r])) for r in reps],
                "min_separation": _f(separation), "error_estimate": traj.error_estimate}
    return combine(subs, request, evidence)
