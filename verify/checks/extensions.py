r"""Checks of Theorem 5.2 (polytope × subspace), of the refuted bound of §10, and of the open
problems of §12 (paper.md §2).

Registered checks (``check = "..."`` in ``claims/``):

* ``boundrj_inequality`` — the bound :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` of the
  proof of Theorem 5.2 (``boundrj-step``): decided from the **exact** exponential polynomial
  :math:`r_j(t)` (:func:`verify.exact.remainder.boundrj_bound_violated`) when the configuration is
  exactly stationary, and confirmed by the growth rate of :math:`r_j` evaluated along the
  simulated trajectory (rigorous ``arb`` values of :math:`e^{tV}`, fitted with an error bar);
* ``polytope_subspace_limit`` — Theorem 5.2: the projections :math:`\pi_F z_i(t)` (onto ``F``
  along ``G``) converge to :math:`\partial\mathcal K \cup \{0\}`, :math:`\mathcal K` the
  polytope spanned by the projected limits; each instance records whether it is in the *safe
  case* (:math:`F \perp G` and :math:`Q^\top K` block-diagonal in :math:`F \oplus G`);
* ``leader_clustering`` — ``generic-qk``: every (projected) token converges, the attention tends
  to a certified Boolean matrix, and each limit coincides with its leader's limit;
* ``no_clustering`` — ``complex-leading``: the certified hardmax pattern keeps changing in the
  second half of the horizon (no Boolean limit reached by ``T``).

The ``mlp`` and ``multi-head`` open problems have no check yet.

Every verdict compares a margin with an error derived from the trajectory's error estimate and
the fits' error bars (:mod:`verify.limits`); nothing here is tuned to pass.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.claim import (
    CheckRequest,
    InstanceResult,
    InstanceVerdict,
    judge_instance,
    register_check,
)
from verify.errors import InvalidArgument

__all__ = ["boundrj_inequality", "polytope_subspace_limit", "leader_clustering",
           "no_clustering", "f_coordinates", "boundary_depths"]


# ------------------------------------------------------------------------------ shared helpers
def _result(request: CheckRequest, verdict: InstanceVerdict, reason: str,
            evidence: dict | None = None) -> InstanceResult:
    return InstanceResult(request.instance.name, request.family.name, request.seed, verdict,
                          reason, evidence or {})


def _judge(request: CheckRequest, margin, error, what: str, evidence: dict,
           strict: bool = True) -> InstanceResult:
    return judge_instance(margin, error, instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          strict=strict, evidence=evidence)


def _param(request: CheckRequest, name: str, default):
    value = request.parameters.get(name, default)
    return float(value) if isinstance(value, Fraction) else value


def _simulate(request: CheckRequest):
    """The trajectory of the request, or an inconclusive result saying why there is none."""
    from verify.simulate import simulate

    traj = simulate(request.instance, request.horizon, checkpoints=request.checkpoints,
                    precision=request.precision)
    run = {"status": traj.status, "precision": traj.precision, "horizon": str(request.horizon),
           "error_estimate": traj.error_estimate, "symmetry": traj.symmetry is not None}
    if not traj.success:
        return None, _result(request, InstanceVerdict.INCONCLUSIVE, f"the simulation stopped "
                             f"early ({traj.status}): {traj.message}", {"run": run})
    if traj.error is None:
        return None, _result(request, InstanceVerdict.INCONCLUSIVE, "no error estimate: the "
                             "reference re-run failed, so no number can be trusted.",
                             {"run": run, "reference": traj.reference})
    return (traj, run), None


def f_coordinates(F_basis, G_basis) -> np.ndarray:
    r"""The exact linear map :math:`z \mapsto c` with :math:`\pi_F z = \sum_s c_s f_s`.

    Parameters
    ----------
    F_basis, G_basis : sequences of rational vectors (rows) spanning ``F`` and ``G``,
        with :math:`F \oplus G = \mathbb R^d`.

    Returns
    -------
    ndarray of Fraction, shape (dim F, d)

    Examples
    --------
    >>> f_coordinates([[1, 0]], [[1, 1]]).tolist()      # z = (3, 5) = -2·(1, 0) + 5·(1, 1)
    [[Fraction(1, 1), Fraction(-1, 1)]]
    """
    from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat

    rows = [list(v) for v in F_basis] + [list(v) for v in G_basis]
    M = np.array([[Fraction(x) for x in row] for row in rows], dtype=object)
    if M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise InvalidArgument(f"F_basis and G_basis give {M.shape[0]} vectors of length "
                              f"{M.shape[1] if M.ndim == 2 else '?'}; they must form a basis.")
    inverse = from_fmpq_mat(to_fmpq_mat(M.T).inv())  # c = (Mᵀ)⁻¹ z
    return inverse[:len(F_basis)]


def boundary_depths(points: np.ndarray) -> tuple[np.ndarray, int]:
    r"""Depth of each point inside :math:`\mathcal K = \mathrm{conv}(\text{points})`: the
    Euclidean distance to :math:`\partial\mathcal K` (0 on the boundary; 0 for every point when
    :math:`\mathcal K` is lower-dimensional, whose boundary in the ambient space is itself).

    Returns the depths and the affine dimension found (Qhull fails on a flat set).

    Examples
    --------
    >>> depth, dim = boundary_depths(np.array([[0., 0], [2, 0], [0, 2], [2, 2], [1, 1]]))
    >>> depth.tolist(), dim
    ([0.0, 0.0, 0.0, 0.0, 1.0], 2)
    """
    pts = np.asarray(points, dtype=float)
    p = pts.shape[1]
    if p == 1:
        lo, hi = pts[:, 0].min(), pts[:, 0].max()
        return np.minimum(pts[:, 0] - lo, hi - pts[:, 0]), int(hi > lo)
    from scipy.spatial import ConvexHull, QhullError

    unique = np.unique(pts, axis=0)
    try:
        hull = ConvexHull(unique)
    except (QhullError, ValueError):
        return np.zeros(len(pts)), int(np.linalg.matrix_rank(unique - unique[0]))
    signed = pts @ hull.equations[:, :-1].T + hull.equations[:, -1]  # ≤ 0 inside
    return np.maximum(0.0, -np.max(signed, axis=1)), p


def _clusters(limits: np.ndarray, errors: np.ndarray) -> list[list[int]]:
    """Tokens whose limits are within their combined error bars, grouped (single linkage)."""
    n = len(limits)
    label = list(range(n))

    def root(i):
        while label[i] != i:
            i = label[i]
        return i
    for i in range(n):
        for j in range(i):
            if np.max(np.abs(limits[i] - limits[j])) <= errors[i] + errors[j]:
                label[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _fits_summary(fits) -> dict:
    kinds: dict[str, int] = {}
    for f in fits:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    rates = [f.rate for f in fits if f.kind == "exponential"]
    return {"kinds": kinds, "slowest_rate": min(rates) if rates else None,
            "largest_limit_error": max(f.limit_error for f in fits)}


def _unstable(request, fits, what, evidence) -> InstanceResult | None:
    bad = [i for i, f in enumerate(fits) if not f.stabilised]
    if not bad:
        return None
    return _result(request, InstanceVerdict.INCONCLUSIVE, f"the limit of {what} of token(s) "
                   f"{bad[:5]} is not stabilised ({fits[bad[0]].kind}: {fits[bad[0]].reason}); "
                   "integrate longer.", evidence)


# ------------------------------------------------------------------------------ boundrj-step
def _exact_root(model) -> np.ndarray | None:
    r""":math:`A = (\beta Q^\top K)^{1/2}` when it is rational and found here: ``I`` for
    :math:`B = I`, ``Q`` for ``Q = K`` symmetric positive definite (and β = 1); else ``None``."""
    from verify.exact import qk_positive_definite

    head, d = model.heads[0], model.d
    eye = np.array([[Fraction(int(a == b)) for b in range(d)] for a in range(d)], dtype=object)
    B = model.beta * head.B
    if np.array_equal(B, eye):
        return eye
    Q, K = head.Q, head.K
    if model.beta == 1 and Q.shape == (d, d) and np.array_equal(Q, K) \
            and np.array_equal(Q, Q.T) and qk_positive_definite(Q, eye).holds is True \
            and np.array_equal(Q.dot(Q), B):
        return Q.copy()
    return None


def _remainder_along(traj, V, A, Pi, lam: Fraction, i: int, j: int, bits: int):
    """``(t, r, radius)`` of :math:`r_j(t_k)` evaluated on the simulated tokens ``z(t_k)`` in
    ``arb`` (rigorous :math:`e^{tV}`); the radius adds the trajectory's error estimate times a
    bound on the derivative of ``r`` in the tokens."""
    from flint import arb, arb_mat, ctx, fmpq

    def num(x):
        if isinstance(x, str):
            return arb(str(x))
        x = Fraction(x)
        return arb(fmpq(x.numerator, x.denominator))

    def mat(a):
        return arb_mat([[num(x) for x in row] for row in a])
    saved = ctx.prec
    ctx.prec = bits
    try:
        Vm, Am, PiA = mat(V), mat(A), mat(Pi.dot(A))
        An, PAn = np.linalg.norm(A.astype(float), 2), np.linalg.norm(Pi.dot(A).astype(float), 2)
        text = traj.state_text
        out = []
        for k, t in enumerate(traj.times):
            rows = text[k] if text is not None else [[Fraction(float(v)) for v in row]
                                                     for row in traj.state[k]]
            zi = arb_mat([[num(v)] for v in rows[i]])
            dz = arb_mat([[num(v)] for v in rows[j]]) - zi
            E = (Vm * num(t)).exp()
            growth = (num(2 * lam) * num(t)).exp()
            u, w = Am * E * zi, Am * E * dz
            pu, pw = PiA * zi, PiA * dz
            r = sum((u[a, 0] * w[a, 0] for a in range(u.nrows())), arb(0)) - growth * sum(
                (pu[a, 0] * pw[a, 0] for a in range(pu.nrows())), arb(0))
            e_norm = np.linalg.norm(np.array(E.mid().tolist(), dtype=float), 2)
            size = np.linalg.norm(traj.state[k, i]) + np.linalg.norm(traj.state[k, j]) + 1.0
            err = traj.error[k, i] + traj.error[k, j]
            prop = 3 * (An**2 * e_norm**2 + PAn**2 * float(growth.mid())) * size * err
            out.append((float(t), float(r.mid()), float(r.rad()) + prop))
        return np.array(out)
    finally:
        ctx.prec = saved


@register_check("boundrj_inequality")
def boundrj_inequality(request: CheckRequest) -> InstanceResult:
    r"""``boundrj-step``: :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` (proof of Thm 5.2).

    Margin: :math:`(\lambda+|\lambda_2|) - \mu`, with :math:`\mu` the exponential growth rate of
    :math:`r_j`. For an exactly stationary configuration (:math:`V(z_j - z_i) = 0` for all
    tokens, so :math:`z(t) = z(0)`), :math:`\mu` and the margin are exact (error 0); otherwise
    :math:`\mu` is the slope of :math:`\log|r_j(t_k)|` along the trajectory on
    ``[fit_from, T]`` and the error is :math:`\kappa\sigma` of that fit. The fit is recorded in
    both cases as the numerical confirmation.
    """
    from verify.exact import paranormal
    from verify.exact.remainder import boundrj_bound_violated, boundrj_remainder
    from verify.numerics import fit_line

    inst, model = request.instance, request.instance.model
    i, j = int(request.parameters.get("i", 0)), int(request.parameters.get("j", 1))
    if not (0 <= i < inst.n and 0 <= j < inst.n):
        raise InvalidArgument(f"parameters i={i}, j={j} must be 0-based token indices < "
                              f"n = {inst.n}.")
    para = paranormal(model.V)
    if para.holds is not True or para.data.get("field") is not None \
            or para.data.get("F_basis") is None:
        return _result(request, InstanceVerdict.INCONCLUSIVE, "needs a paranormal V with "
                       f"rational λ and rational F, G: {para.explanation}")
    A = _exact_root(model)
    if A is None:
        return _result(request, InstanceVerdict.INCONCLUSIVE, "A = (QᵀK)^(1/2) is not known "
                       "in rational form (supported: QᵀK = I, or Q = K symmetric positive "
                       "definite); the exact remainder r_j needs it.")
    F, G = para.data["F_basis"], para.data["G_basis"]
    lam = Fraction(para.value)
    C = f_coordinates(F, G)
    Pi = np.array(F, dtype=object).T.dot(C)                 # π_F as a d×d matrix
    V, Z = model.V, inst.x0
    stationary = all(not any(V.dot(Z[b] - Z[a])) for a in range(inst.n) for b in range(inst.n))
    evidence: dict = {"i": i, "j": j, "lambda": str(lam), "stationary": stationary,
                      "F_basis": F, "G_basis": G, "A": A, "orthogonal": para.data["orthogonal"]}
    try:
        zero = boundrj_remainder(V, A, Z, i, j, F, G or None) == 0
        exact = None if zero else boundrj_bound_violated(V, A, Z, i, j, F, G or None)
    except InvalidArgument as exc:
        zero, exact = False, None
        evidence["exact"] = f"not available: {exc}"
    if zero:
        evidence["exact"] = {"r_j(t) at the initial tokens": "0"}
    if exact is not None:
        evidence["exact"] = {"r_j(t) at the initial tokens": str(exact.remainder),
                             "growth_rate": None if exact.growth_rate is None
                             else str(exact.growth_rate), "t_power": exact.degree,
                             "leading_coefficient": str(exact.leading_coefficient),
                             "bound_rate": str(exact.bound_rate)}
        bound = Fraction(str(exact.bound_rate))
    else:
        bound = lam + Fraction(str(para.data["spectral_radius_G"]))  # rational here
    evidence["bound_rate"] = str(bound)
    # numerical confirmation along the trajectory
    ran, failure = _simulate(request)
    fit = None
    if ran is not None:
        traj, evidence["run"] = ran
        bits = max(int(traj.precision.get("bits", 53)), 64) + 64
        series = _remainder_along(traj, V, A, Pi, lam, i, j, bits)
        start = _param(request, "fit_from", 0.0)
        keep = (series[:, 0] >= start) & (np.abs(series[:, 1]) > series[:, 2])
        t, r, rad = series[keep].T if keep.any() else (np.array([]),) * 3
        evidence["r_j along the trajectory"] = {"t": series[:, 0], "r": series[:, 1],
                                                "radius": series[:, 2]}
        if len(t) >= 3:
            fit = fit_line(t, np.log(np.abs(r)), rad / np.abs(r))
            evidence["fitted_growth_rate"] = {"rate": fit.slope, "std_error": fit.slope_error,
                                              "coverage": fit.coverage, "points": fit.n_points,
                                              "from": float(t[0]), "to": float(t[-1])}
    else:
        evidence["run"] = failure.evidence.get("run")
    if stationary and zero:
        return _judge(request, bound, 0, "r_j ≡ 0 exactly, so the bound", evidence)
    if stationary and exact is not None:
        mu = Fraction(str(exact.growth_rate))
        return _judge(request, bound - mu, 0, f"growth rate of r_j = {mu} (t^{exact.degree}) "
                      f"≤ λ + |λ_2| = {bound}", evidence, strict=mu == bound and exact.degree > 0)
    if fit is None or not fit.ok:
        return _result(request, InstanceVerdict.INCONCLUSIVE, "the configuration is not "
                       "stationary and the growth rate of r_j along the trajectory could not be "
                       "fitted (too few resolved values).", evidence)
    return _judge(request, float(bound) - fit.slope, fit.coverage * fit.slope_error,
                  f"fitted growth rate of r_j = {fit.slope:.6g} ≤ λ + |λ_2| = {bound}", evidence)


# ------------------------------------------------------------------------------ Theorem 5.2
def _splitting(request: CheckRequest):
    """``(paranormal check, F-coordinates C (float), exact data)`` or an inconclusive result."""
    from verify.exact import good_triple_with_multiplicity, paranormal

    model = request.instance.model
    para = paranormal(model.V)
    if para.holds is not True or para.data.get("F_basis") is None \
            or para.data.get("field") is not None:
        return None, _result(request, InstanceVerdict.INCONCLUSIVE, "the splitting F ⊕ G is "
                             f"needed in rational form: {para.explanation}")
    gtm = good_triple_with_multiplicity(model.beta * model.Q, model.K, model.V)
    C = f_coordinates(para.data["F_basis"], para.data["G_basis"])
    safe = gtm.data.get("orthogonal") is True and gtm.data.get("block_diagonal") is True
    info = {"lambda": str(para.value), "dim_F": para.data["dim_F"],
            "F_basis": para.data["F_basis"], "G_basis": para.data["G_basis"],
            "F_orthogonal_to_G": gtm.data.get("orthogonal"),
            "QK_block_diagonal": gtm.data.get("block_diagonal"), "safe_case": safe,
            "good_triple_with_multiplicity": gtm.explanation}
    return (C.astype(float), info), None


def _boundary_margins(limits: np.ndarray, errors: np.ndarray, fraction: float):
    r"""Per token: :math:`q_i = \min(\mathrm{depth}_i, \|c_i\|)` (distance to
    :math:`\partial\mathcal K \cup \{0\}`), the resolution ``s`` (smallest distance between two
    distinct limit clusters or between a cluster and 0) and the margins
    ``fraction·s − q_i`` with their error bars."""
    p = limits.shape[1]
    groups = _clusters(limits, errors)
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
    from verify.limits import projected_limits

    split, failure = _splitting(request)
    if failure:
        return failure
    C, info = split
    ran, failure = _simulate(request)
    if failure:
        failure.evidence.update(info)
        return failure
    traj, run = ran
    fits = projected_limits(traj, C, tail_fraction=_param(request, "tail_fraction", 0.5))
    evidence = dict(info, run=run, fits=_fits_summary(fits))
    bad = _unstable(request, fits, "π_F z", evidence)
    if bad:
        return bad
    limits = np.array([np.atleast_1d(f.limit) for f in fits])
    errors = np.array([f.limit_error for f in fits])
    fraction = _param(request, "separation_fraction", 0.25)
    margins, errs, geometry = _boundary_margins(limits, errors, fraction)
    g_size = np.max(np.abs(traj.z[:, :, :] - traj.z[:, :, :] @ (
        np.array(info["F_basis"], dtype=float).T @ C).T), axis=(1, 2))
    evidence.update(geometry, projected_limits=limits, limit_errors=errors,
                    G_component_max=[float(g_size[0]), float(g_size[-1])])
    if not math.isfinite(geometry["resolution_s"]):
        return _result(request, InstanceVerdict.INCONCLUSIVE, "every projected limit is 0 "
                       "within its error bar: no polytope to compare with.", evidence)
    k = int(np.argmin(margins - errs))
    evidence["worst_token"] = k
    what = (f"π_F z_{k}(∞) lies on ∂K ∪ {{0}} (distance {abs(geometry['depth'][k]):.3g} to ∂K, "
            f"{geometry['distance_to_0'][k]:.3g} to 0, below {fraction:g}·s = "
            f"{fraction * geometry['resolution_s']:.3g})")
    case = "safe case" if info["safe_case"] else "outside the safe case"
    return _judge(request, float(margins[k]), float(errs[k]), f"[{case}] {what}", evidence)


# ------------------------------------------------------------------------------ generic-qk
def _hardmax_at(traj, k: int):
    from verify.graph import hardmax_graph

    return hardmax_graph(traj.scaled_scores[k], traj.score_radius(k))


@register_check("leader_clustering")
def leader_clustering(request: CheckRequest) -> InstanceResult:
    r"""``generic-qk``: clustering around leaders without :math:`Q^\top K \succ 0`.

    Observed: the limits of :math:`\pi_F z_i(t)` (all of ``z`` when ``V = I``), the certified
    hardmax graph at the horizon, its leaders and the leader each token follows. Statement
    checked: every token's limit is within ``τ s`` of its leader's limit, ``s`` the smallest
    distance between two leaders' limits (with one leader: the diameter of the initial
    projections), so the limits form at most as many clusters as there are leaders. Margin
    ``τ s − max_i dist_i``; error from the limit error bars. Undecided hardmax rows, tokens that
    reach no leader, or limits that have not stabilised give ``inconclusive``.
    """
    from verify.graph import followers, leader_history, undecided_nodes
    from verify.limits import projected_limits

    split, failure = _splitting(request)
    if failure:
        return failure
    C, info = split
    ran, failure = _simulate(request)
    if failure:
        return failure
    traj, run = ran
    tail = _param(request, "tail_fraction", 0.5)
    fits = projected_limits(traj, C, tail_fraction=tail)
    evidence = dict(info, run=run, fits=_fits_summary(fits))
    bad = _unstable(request, fits, "π_F z", evidence)
    if bad:
        return bad
    m = len(traj.times)
    start = m - max(2, int(round(tail * m)))
    graphs = [_hardmax_at(traj, k) for k in range(start, m)]
    G = graphs[-1]
    undecided = undecided_nodes(G)
    history = leader_history(graphs, traj.t[start:])
    evidence["leader_history"] = {"times": history.times,
                                  "leaders": [sorted(x) for x in history.leaders],
                                  "stable_since": history.stable_since}
    if undecided:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"the hardmax target of tokens "
                       f"{sorted(undecided)[:5]} at t = {traj.t[-1]:g} is not certified by the "
                       "score error bars; raise the precision.", evidence)
    leader_of: dict[int, int] = {}
    for leader, tokens in followers(G).items():
        for i in tokens:
            leader_of.setdefault(i, leader)
    orphans = sorted(set(range(request.instance.n)) - set(leader_of))
    P = traj.attention[-1]
    P_star = np.zeros_like(P)
    for i, leader in leader_of.items():
        P_star[i, leader] = 1.0
    evidence.update(leaders=sorted(set(leader_of.values())), leader_of=leader_of,
                    boolean_distance=float(np.max(np.abs(P - P_star))))
    if orphans:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"tokens {orphans[:5]} reach no "
                       "leader in the certified hardmax graph at the horizon (an attracting "
                       "cycle without self-loop).", evidence)
    limits = np.array([np.atleast_1d(f.limit) for f in fits])
    errors = np.array([f.limit_error for f in fits])
    lead = sorted(set(leader_of.values()))
    gaps = [np.max(np.abs(limits[a] - limits[b])) for k, a in enumerate(lead) for b in lead[:k]]
    start_proj = request.instance.x0_float() @ C.T
    s = min(gaps) if gaps else float(np.max(np.ptp(start_proj, axis=0)))
    gap_error = 2 * float(errors.max()) if gaps else 0.0
    fraction = _param(request, "separation_fraction", 0.25)
    dist = np.array([np.max(np.abs(limits[i] - limits[leader_of[i]])) for i in range(len(fits))])
    k = int(np.argmax(dist + errors + errors[[leader_of[i] for i in range(len(fits))]]))
    evidence.update(resolution_s=s, distance_to_leader_limit=dist, projected_limits=limits,
                    limit_errors=errors, clusters=len(_clusters(limits, errors)))
    return _judge(request, fraction * s - float(dist[k]),
                  float(errors[k] + errors[leader_of[k]]) + fraction * gap_error,
                  f"token {k} converges to the limit of its leader {leader_of[k]} "
                  f"({len(lead)} leader(s); distance {dist[k]:.3g} < {fraction:g}·s = "
                  f"{fraction * s:.3g})", evidence)


# ------------------------------------------------------------------------------ complex-leading
@register_check("no_clustering")
def no_clustering(request: CheckRequest) -> InstanceResult:
    r"""``complex-leading``: no clustering when the leading eigenvalues of ``V`` are complex.

    Observed: the certified hardmax targets (argmax of each row of the scores, certified from
    the score error bars) at the checkpoints of the tail ``[t_start, T]``; a *switch* is a row
    whose certified target set differs between two consecutive checkpoints (rows undecided at
    either end are not counted). Statement checked: at least one switch on the tail, i.e. no
    Boolean limit has been reached by ``T`` (margin ``switches − 1``, exact: a count of
    certified facts, so error 0). No switch counts as a violation only if, in addition, every
    ``z_i`` has a stabilised limit (clustering observed); otherwise the instance is inconclusive.
    """
    from verify.limits import token_limits

    ran, failure = _simulate(request)
    if failure:
        return failure
    traj, run = ran
    tail = _param(request, "tail_fraction", 0.5)
    m = len(traj.times)
    start = m - max(2, int(round(tail * m)))
    graphs = [_hardmax_at(traj, k) for k in range(start, m)]
    switches, undecided, when = 0, 0, []
    for k in range(1, len(graphs)):
        a, b = graphs[k - 1], graphs[k]
        for i in range(request.instance.n):
            if a.nodes[i]["undecided"] or b.nodes[i]["undecided"]:
                undecided += 1
            elif set(a.successors(i)) != set(b.successors(i)):
                switches += 1
                when.append(float(traj.t[start + k]))
    evidence = {"run": run, "tail": [float(traj.t[start]), float(traj.t[-1])],
                "switches": switches, "switch_times": sorted(set(when)),
                "undecided_rows": undecided,
                "attention_row_max_min": float(traj.attention[-1].max(axis=1).min())}
    what = f"the certified hardmax pattern changes on [{traj.t[start]:g}, {traj.t[-1]:g}]"
    if switches:
        return _judge(request, switches - 1, 0, f"{what} ({switches} switches)", evidence,
                      strict=False)
    fits = token_limits(traj, tail_fraction=tail)
    evidence["fits"] = _fits_summary(fits)
    if all(f.stabilised for f in fits) and not undecided:
        return _judge(request, -1, 0, f"{what} (no switch and every z_i has a stabilised "
                      "limit: clustering observed)", evidence, strict=False)
    return _result(request, InstanceVerdict.INCONCLUSIVE, f"no certified switch on the tail, "
                   f"but {undecided} undecided rows or unstabilised limits: neither clustering "
                   "nor its absence is established by T.", evidence)
