r"""Projections on left eigenvectors of ``V``: Theorem 4.2 and Conjecture 4.3.

* ``hyperplanes_limit`` (Theorem 4.2): :math:`\varphi_1^*(z_i)` converges, :math:`\max_j` is
  non-increasing, :math:`\min_j` non-decreasing, and the limits lie in :math:`\{a, 0, b\}`;
* ``codimension_subspaces`` (Conjecture 4.3): the projections :math:`W z_i` converge to at most
  3 points.

The extreme value of :math:`\varphi_1^*` cannot be decided once the motion falls below the error
estimate; such steps are counted in the evidence (``untestable``) and are neither support nor
violation. Limits come from :func:`verify.limits.projected_limits`; they are grouped by
:func:`~verify.checks.polytopes.certified_clusters` and the verdict is reached by
:func:`~verify.checks._parts.combine`.

``hyperplanes_limit`` attaches ``evidence["figure"]`` (the report's figure protocol,
:mod:`verify.report.html`): the hyperplanes :math:`\{\varphi_1^* = c\}`, ``c`` in
:math:`\{a, 0, b\}`, over the paths, and :math:`\max_i \operatorname{dist}(z_i(t), H)` with
the slowest fitted rate.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import SubCheck, combine, inconclusive
from verify.checks._runs import figure_convergence, fitted_limits, sig6, simulate_and_fit
from verify.checks.polytopes import certified_clusters, identify
from verify.claim import InstanceResult, register_check

__all__ = ["check_hyperplanes_limit", "check_codimension_subspaces"]

_EPS = float(np.finfo(float).eps)


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
    pair = eigenpair(request.instance.model.V)
    phi = pair.left_float
    traj, fits, failure = simulate_and_fit(request, phi, "φ_1*(z_")
    if failure:
        return failure
    Z, t = traj.z, traj.t
    radius = pair.radius * np.max(np.sum(np.abs(Z), axis=2), axis=0)
    values = Z @ phi
    errors = traj.error * float(np.sum(np.abs(phi))) + radius[None, :] + 4 * _EPS * np.abs(values)
    L, E = fitted_limits(fits)
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
        return inconclusive(request, "the limits of φ_1*(z_i) do not form certified clusters.")
    order = sorted(reps, key=lambda r: L[r])
    a, b = order[0], order[-1]
    cands, cand_err = [L[a], 0.0, L[b]], [E[a], 0.0, E[b]]
    middle = [r for r in order[1:-1]]
    value_subs, chosen = _values_in(L[middle], E[middle], cands, cand_err, "middle cluster")
    subs += value_subs
    norm = float(np.linalg.norm(phi))
    evidence = {"lambda_1": str(pair.eigenvalue), "phi_star": phi.tolist(),
                "phi_star_exact": pair.exact, "phi_star_radius": pair.radius,
                "a": sig6(L[a]), "b": sig6(L[b]), "a_error": sig6(E[a]), "b_error": sig6(E[b]),
                "cluster_values": [sig6(L[r]) for r in order],
                "cluster_sizes": [int(np.sum(labels == labels[r])) for r in order],
                "middle_offsets": [["a", "0", "b"][j] for j in chosen],
                "distance_to_H": [sig6(min(abs(v - c) for c in cands) / norm) for v in L],
                "max_monotonicity": up_counts, "min_monotonicity": down_counts,
                "rates": [sig6(f.rate) for f in fits], "error_estimate": traj.error_estimate}
    evidence["figure"] = _figure(t, values, errors, cands, cand_err, phi, fits)
    if not subs:
        subs.append(SubCheck(1.0, 0.0, "at most three offsets (one cluster)"))
    return combine(subs, request, evidence)


def _figure(t, values, errors, cands, cand_err, phi, fits) -> dict:
    r"""``evidence["figure"]``: the hyperplanes and :math:`\max_i \operatorname{dist}(z_i, H)`,
    :math:`H = \bigcup_c \{\varphi_1^* = c\}`, with the error of the maximising token and
    the smallest fitted rate of the :math:`\varphi_1^*(z_i)`."""
    norm = float(np.linalg.norm(phi))
    gaps = np.abs(values[:, :, None] - np.asarray(cands, dtype=float)[None, None, :])
    nearest = np.argmin(gaps, axis=2)
    dist = np.min(gaps, axis=2) / norm
    worst = np.argmax(dist, axis=1)
    rows = np.arange(len(t))
    err = (errors[rows, worst] + np.asarray(cand_err, dtype=float)[nearest[rows, worst]]) / norm
    rates = [f.rate if np.isfinite(f.rate) else np.inf for f in fits]
    slow = int(np.argmin(rates))
    return {"predicted": {"hyperplanes": [[sig6(v) for v in phi],
                                          [sig6(c) for c in cands]],
                          "label": r"$\{\varphi_1^* = a\}, \{\varphi_1^* = 0\}, "
                                   r"\{\varphi_1^* = b\}$"},
            "convergence": figure_convergence(
                t, dist[rows, worst], err, fits[slow].rate, fits[slow].tail_start,
                r"$\max_i \, \mathrm{dist}(z_i(t), H)$")}


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
    V = request.instance.model.V
    W, w_err, k_exact = _dual_rows(V)
    if W.shape[0] != k_exact:
        return inconclusive(request, f"the float eigen-decomposition found {W.shape[0]} "
                            f"eigenvalues with Re > 0, the exact count is {k_exact}.")
    traj, fits, failure = simulate_and_fit(request, W, "W z_")
    if failure:
        return failure
    L, E = fitted_limits(fits)
    E = E + w_err * float(np.max(np.sum(np.abs(traj.z), axis=2)))
    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return inconclusive(request, "the limits of W z_i do not form certified clusters.")
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
    evidence = {"k": k_exact, "W": W.tolist(), "W_error": sig6(w_err), "subspaces": count,
                "offsets": [L[r].tolist() for r in reps],
                "offset_errors": [sig6(E[r]) for r in reps],
                "cluster_sizes": [int(np.sum(labels == labels[r])) for r in reps],
                "min_separation": sig6(separation), "error_estimate": traj.error_estimate}
    return combine(subs, request, evidence)
