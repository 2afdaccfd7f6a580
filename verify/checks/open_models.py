r"""Checks of the open problems of §12 on an MLP after attention and on several heads.

Registered checks (``check = "..."`` in ``claims/``):

* ``mlp_observation`` — ``mlp``: :math:`\dot z_i = W\sigma(V\sum_j P_{ij}(z_j - z_i))`. The
  sub-observation checked depends on the instance's MLP:

  - ReLU with ``W = I`` (*three hyperplanes*): every coordinate of every :math:`z_i` is
    non-decreasing (a consequence of :math:`\sigma \ge 0`, checked one-sidedly against the error
    estimate), :math:`\varphi(z_i(t))` converges for every token and the limits take at most three
    values, :math:`\varphi` the unit left eigenvector of the leading (real) eigenvalue of ``V`` —
    the functional of Theorem 4.2, our reading of "hyperplanes determined by ``V``";
  - tanh with ``W = I``, or ReLU with ``W ≠ I`` (*collapse*): consensus, i.e. the diameter
    :math:`D(t) = \max_{i,j}|z_i(t) - z_j(t)|_\infty` tends to 0, judged from the slope of
    :math:`\log D` fitted on the tail (must be negative beyond :math:`\kappa\sigma`);
  - anything else: inconclusive (the paper reports nothing).

* ``multihead_directions`` — ``multi-head``: the directions :math:`u_i = x_i/|x_i|` of the
  discrete multi-head tokens converge (trend over the checkpoints) and their limits form at most
  ``n·cluster_fraction`` certified clusters.

Every verdict compares a margin with an error derived from the trajectory's error estimate and
the fits' error bars; nothing here is tuned to pass.

Examples
--------
>>> from verify.claim import CHECKS
>>> sorted(n for n in CHECKS if CHECKS[n].__module__ == __name__)
['mlp_observation', 'multihead_directions']
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.checks.polytopes import SubCheck, certified_clusters, combine
from verify.claim import (
    CheckRequest,
    InstanceResult,
    InstanceVerdict,
    judge_instance,
    register_check,
)

__all__ = ["mlp_regime", "leading_left_eigenvector", "diameter_series"]


def _result(request: CheckRequest, verdict: InstanceVerdict, reason: str,
            evidence: dict | None = None) -> InstanceResult:
    return InstanceResult(request.instance.name, request.family.name, request.seed, verdict,
                          reason, evidence or {})


def _param(request: CheckRequest, name: str, default):
    value = request.parameters.get(name, default)
    return float(value) if isinstance(value, Fraction) else value


def _simulate(request: CheckRequest):
    """``((traj, run), None)`` or ``(None, inconclusive result)`` saying why there is none."""
    from verify.simulate import simulate

    traj = simulate(request.instance, request.horizon, checkpoints=request.checkpoints,
                    precision=request.precision)
    run = {"status": traj.status, "precision": traj.precision, "horizon": str(request.horizon),
           "error_estimate": traj.error_estimate}
    if not traj.success:
        return None, _result(request, InstanceVerdict.INCONCLUSIVE, "the integration failed "
                             f"({traj.status}): {traj.message}", {"run": run})
    if traj.error is None:
        return None, _result(request, InstanceVerdict.INCONCLUSIVE, "no error estimate: the "
                             "reference re-run failed, so no number can be trusted.", {"run": run})
    return (traj, run), None


def mlp_regime(model) -> str:
    """``"hyperplanes"`` (ReLU, ``W = I``), ``"collapse"`` (tanh with ``W = I``, or ReLU with
    ``W ≠ I``) or ``"unreported"``; the identity is tested exactly.

    Examples
    --------
    >>> from verify.model import Model
    >>> mlp_regime(Model(V=[[1, 0], [0, 1]], mlp={"W": [[1, 0], [0, 1]], "activation": "tanh"}))
    'collapse'
    """
    if model.mlp is None:
        return "unreported"
    W = model.mlp.W
    identity = all(W[a, b] == (1 if a == b else 0) for a in range(W.shape[0])
                   for b in range(W.shape[1]))
    act = model.mlp.activation
    if act == "relu" and model.mlp.bias is None:
        return "hyperplanes" if identity else "collapse"
    if act == "tanh" and identity and model.mlp.bias is None:
        return "collapse"
    return "unreported"


def leading_left_eigenvector(V) -> tuple[np.ndarray, float, float] | None:
    r"""Unit left eigenvector :math:`\varphi` of the eigenvalue of ``V`` with largest real part,
    its eigenvalue and a first-order error estimate of :math:`\varphi` (float64 residual over
    the spectral gap; tested against SymPy's exact eigenvector in the tests);
    ``None`` when that eigenvalue is not real and simple.

    Examples
    --------
    >>> phi, lam, err = leading_left_eigenvector([[2, 0], [1, 1]])
    >>> np.round(phi, 12).tolist(), lam, err < 1e-12
    ([1.0, 0.0], 2.0, True)
    """
    A = np.array(V, dtype=float)
    w, L = np.linalg.eig(A.T)
    k = int(np.argmax(w.real))
    others = np.delete(w, k)
    gap = float(np.min(np.abs(others - w[k]))) if len(others) else math.inf
    if abs(w[k].imag) > 0 or gap == 0:
        return None
    phi = L[:, k].real
    phi = phi / np.linalg.norm(phi)
    phi = phi if phi[np.argmax(np.abs(phi))] > 0 else -phi
    residual = float(np.linalg.norm(A.T @ phi - w[k].real * phi))
    return phi, float(w[k].real), float(residual / gap + 4 * np.finfo(float).eps)


def diameter_series(state: np.ndarray, error: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`D(t_k) = \max_{i,j}|z_i - z_j|_\infty` and its error bound
    :math:`2\max_i e_i(t_k)`.

    Examples
    --------
    >>> D, e = diameter_series(np.array([[[0.0, 0], [1, 3]]]), np.array([[1e-9, 2e-9]]))
    >>> D.tolist(), e.tolist()
    ([3.0], [4e-09])
    """
    S = np.asarray(state, dtype=float)
    D = np.max(np.abs(S[:, :, None, :] - S[:, None, :, :]), axis=(1, 2, 3))
    return D, 2 * np.max(np.asarray(error, dtype=float), axis=1)


def _tail(traj, request) -> int:
    m = len(traj.times)
    return m - max(4, int(round(_param(request, "tail_fraction", 0.5) * m)))


def _limit_diameter(request, traj, evidence) -> InstanceResult | None:
    r"""When every :math:`z_i` has a stabilised limit: consensus means the limits coincide, i.e.
    :math:`D_\infty = \max_{i,j}|z_i(\infty) - z_j(\infty)|_\infty` is 0 within the sum of
    the two limit error bars (violated when some pair is farther apart). ``None`` otherwise."""
    from verify.limits import token_limits

    fits = token_limits(traj, tail_fraction=_param(request, "tail_fraction", 0.5))
    evidence["limit_fit_kinds"] = [f.kind for f in fits]
    if not all(f.stabilised for f in fits):
        return None
    L = np.array([np.atleast_1d(f.limit) for f in fits])
    e = np.array([f.limit_error for f in fits])
    dist = np.max(np.abs(L[:, None, :] - L[None, :, :]), axis=2)
    gap = dist - (e[:, None] + e[None, :])
    i, j = np.unravel_index(int(np.argmax(gap if gap.max() > 0 else dist)), gap.shape)
    d_inf = float(np.max(np.abs(L[i] - L[j])))
    evidence.update(limits=L, limit_errors=e, limit_diameter=d_inf)
    what = (f"consensus: the limits of z_{i} and z_{j} coincide (every z_i has a stabilised "
            f"limit; |z_{i}(∞) − z_{j}(∞)| = {d_inf:.4g}, error bar {e[i] + e[j]:.2g})")
    if d_inf <= e[i] + e[j]:
        return _result(request, InstanceVerdict.HOLDS, f"{what}: every pair of limits is "
                       "compatible within its error bars.", evidence)
    return judge_instance(-d_inf, float(e[i] + e[j]), instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          evidence=evidence)


def _collapse(request, traj, run, evidence) -> InstanceResult:
    r"""Consensus: from the stabilised limits if there are any, else from the slope of
    :math:`\log D` on the tail (or ``D`` below its error estimate at ``T``)."""
    from verify.numerics import fit_line

    D, De = diameter_series(traj.z, traj.error)
    t = traj.t
    start = _tail(traj, request)
    Z, P = traj.z, traj.attention
    output = np.array([np.max(np.abs(P[k] @ Z[k] - Z[k])) for k in range(len(t))])
    speed = np.max(np.abs(Z[-1] - Z[-2])) / (t[-1] - t[-2])
    evidence.update(diameter=D, diameter_error=De, attention_output=output,
                    mean_speed_last_interval=float(speed))
    limit = _limit_diameter(request, traj, evidence)
    if limit is not None:
        return limit
    keep = np.arange(len(t)) >= start
    resolved = keep & (D > De)
    if not resolved[-1]:
        return judge_instance(float(D[start] - D[-1]), float(De[start] + De[-1]),
                              instance=request.instance.name, family=request.family.name,
                              seed=request.seed, evidence=evidence,
                              what=f"the diameter D fell below its error estimate "
                                   f"({D[-1]:.3g} ≤ {De[-1]:.3g}) at T")
    fit = fit_line(t[resolved], np.log(D[resolved]), De[resolved] / D[resolved])
    if not fit.ok:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"the decay rate of D could not "
                       f"be fitted: {fit.reason}", evidence)
    evidence["fitted_log_diameter_slope"] = {"slope": fit.slope, "std_error": fit.slope_error,
                                             "coverage": fit.coverage, "points": fit.n_points,
                                             "from": float(t[start]), "to": float(t[-1])}
    return judge_instance(-fit.slope, fit.coverage * fit.slope_error,
                          instance=request.instance.name, family=request.family.name,
                          seed=request.seed, evidence=evidence,
                          what=f"consensus: log D(t) decreases on [{t[start]:g}, {t[-1]:g}] "
                               f"(fitted slope {fit.slope:.4g} ± {fit.slope_error:.2g}, "
                               f"D(T) = {D[-1]:.4g})")


def _hyperplanes(request, traj, run, evidence) -> InstanceResult:
    from verify.limits import fit_exponential_convergence

    lead = leading_left_eigenvector(request.instance.model.V)
    if lead is None:
        return _result(request, InstanceVerdict.INCONCLUSIVE, "the leading eigenvalue of V is "
                       "not real and simple: no functional φ to read hyperplanes from.", evidence)
    phi, lam, phi_err = lead
    Z, E = traj.z, traj.error
    d = Z.shape[2]
    steps = np.diff(Z, axis=0)                                     # (m-1, n, d)
    bars = (E[1:] + E[:-1])[:, :, None]
    k, i, c = np.unravel_index(int(np.argmin(steps + bars)), steps.shape)
    subs = [SubCheck(float(steps[k, i, c] + bars[k, i, 0]), 0.0,
                     f"monotonicity: z_{i}[{c}] non-decreasing on [{traj.t[k]:g}, "
                     f"{traj.t[k + 1]:g}] (step {steps[k, i, c]:.3g}, error bar "
                     f"{bars[k, i, 0]:.3g})")]
    values = Z @ phi
    errors = E * math.sqrt(d) + np.max(np.abs(Z), axis=2) * math.sqrt(d) * phi_err
    tail = len(traj.times) - _tail(traj, request)
    fits = [fit_exponential_convergence(traj.t, values[:, j], errors[:, j], tail=tail)
            for j in range(values.shape[1])]
    limits = np.array([float(f.limit) for f in fits])
    lim_err = np.array([f.limit_error for f in fits])
    evidence.update(phi=phi, leading_eigenvalue=lam, phi_error=phi_err,
                    fit_kinds=[f.kind for f in fits], phi_limits=limits, phi_limit_errors=lim_err)
    bad = [j for j, f in enumerate(fits) if not f.stabilised]
    if bad:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"φ(z_i) has no stabilised limit "
                       f"for token(s) {bad[:5]} ({fits[bad[0]].kind}: {fits[bad[0]].reason}).",
                       evidence)
    labels, reps, certified = certified_clusters(limits[:, None], lim_err)
    count = len(reps)
    evidence.update(phi_clusters=count, phi_cluster_values=limits[reps], certified=certified)
    subs.append(SubCheck(3 - count + 0.5, 0.0 if certified else math.inf,
                         f"the limits of φ(z_i) take {count} value(s) (at most 3 predicted)"))
    return combine(subs, request, evidence)


@register_check("mlp_observation")
def mlp_observation(request: CheckRequest) -> InstanceResult:
    r"""``mlp``: the paper's observation for the instance's MLP (see the module docstring).

    Collapse: margin :math:`-s` with ``s`` the slope of :math:`\log D` fitted on the tail, error
    :math:`\kappa\sigma_s` (or ``D`` below its error estimate at ``T``). Hyperplanes: the exact
    count of certified clusters of the limits of :math:`\varphi(z_i)` against 3, plus the
    monotonicity of every coordinate (violated only beyond the error bars).
    """
    regime = mlp_regime(request.instance.model)
    evidence: dict = {"regime": regime}
    if regime == "unreported":
        return _result(request, InstanceVerdict.INCONCLUSIVE, "the paper reports no observation "
                       "for this MLP (activation, W, bias).", evidence)
    ran, failure = _simulate(request)
    if failure:
        failure.evidence.update(evidence)
        return failure
    traj, evidence["run"] = ran
    if regime == "collapse":
        return _collapse(request, traj, evidence["run"], evidence)
    return _hyperplanes(request, traj, evidence["run"], evidence)


@register_check("multihead_directions")
def multihead_directions(request: CheckRequest) -> InstanceResult:
    r"""``multi-head``: the directions :math:`u_i = x_i/|x_i|` converge and cluster.

    Each :math:`u_i(t_k)` is fitted by :func:`verify.limits.fit_exponential_convergence` with
    error :math:`2\sqrt d\, e_i/|x_i|` (``e_i`` the trajectory's error estimate); every limit must
    stabilise (else inconclusive). The limits are grouped into certified clusters
    (:func:`verify.checks.polytopes.certified_clusters`); the statement checked is
    ``clusters ≤ cluster_fraction · n`` (an exact count, error 0; undecided if the clustering
    is not certified). The per-head attention at ``T`` (row maxima, argmax) is recorded.
    """
    from verify.limits import fit_exponential_convergence

    ran, failure = _simulate(request)
    if failure:
        return failure
    traj, run = ran
    X, E = traj.x, traj.error
    if not np.all(np.isfinite(X)):
        return _result(request, InstanceVerdict.INCONCLUSIVE, "the tokens overflow float64.",
                       {"run": run})
    norms = np.linalg.norm(X, axis=2)
    if np.any(norms == 0):
        return _result(request, InstanceVerdict.INCONCLUSIVE, "a token is 0: no direction.",
                       {"run": run})
    d, n = X.shape[2], X.shape[1]
    U = X / norms[:, :, None]
    Ue = 2 * math.sqrt(d) * E / norms
    tail = len(traj.times) - _tail(traj, request)
    fits = [fit_exponential_convergence(traj.t, U[:, i], Ue[:, i], tail=tail) for i in range(n)]
    heads = []
    for _, B in request.instance.model.float_heads():
        S = X[-1] @ B @ X[-1].T
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        heads.append({"row_max_min": float(P.max(axis=1).min()),
                      "argmax": np.argmax(P, axis=1).tolist()})
    evidence = {"run": run, "heads": heads, "fit_kinds": [f.kind for f in fits],
                "norm_growth": [float(norms[0].max()), float(norms[-1].max())]}
    bad = [i for i, f in enumerate(fits) if not f.stabilised]
    if bad:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"the direction of token(s) "
                       f"{bad[:5]} has no stabilised limit ({fits[bad[0]].kind}: "
                       f"{fits[bad[0]].reason}); integrate longer.", evidence)
    limits = np.array([f.limit for f in fits])
    errors = np.array([f.limit_error for f in fits])
    labels, reps, certified = certified_clusters(limits, errors)
    bound = _param(request, "cluster_fraction", 0.5) * n
    rates = [f.rate for f in fits if f.kind == "exponential"]
    evidence.update(direction_limits=limits, limit_errors=errors, clusters=len(reps),
                    cluster_of=labels.tolist(), certified=certified,
                    slowest_rate=min(rates) if rates else None, cluster_bound=bound)
    what = (f"the limiting directions form {len(reps)} cluster(s) ≤ {bound:g} "
            f"(largest limit error {errors.max():.2g})")
    if not certified:
        return _result(request, InstanceVerdict.INCONCLUSIVE, f"{what}, but the clustering is "
                       "not certified (a cluster is not a clique of compatible limits).",
                       evidence)
    return judge_instance(bound - len(reps), 0, instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          strict=False, evidence=evidence)
