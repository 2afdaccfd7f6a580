r"""Proposition 6.1 as two conclusions: ``field-bounds`` (bounds on the field of an empirical
measure and on its gradient) and ``stability`` (:math:`W_2` stability of two runs, with the
constant derived here). Statements about finite times: a margin beyond its error decides.
"""

from __future__ import annotations

import math

import numpy as np

from verify.analysis.evidence import Basis
from verify.exact.inputs import as_float_array
from verify.exact.plain import require_positive_int
from verify.flow.simulate import simulate
from verify.judge._decision import combine, decide, inconclusive
from verify.judge._verdicts import InstanceResult
from verify.model import Instance
from verify.numerics import SUM_ULPS, SVD_ULPS, ulps
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_field_bounds", "judge_stability"]


def _norm2(M: np.ndarray) -> tuple[float, float]:
    """Spectral norm in float64 and an error bar (``4 d ε ‖M‖_F``, a bound for the SVD)."""
    value = float(np.linalg.norm(M, 2))
    return value, ulps(SVD_ULPS * M.shape[0], float(np.linalg.norm(M)))


@register_conclusion(
    "field-bounds", asymptotic=False,
    summary="|X[μ](x)| ≤ ‖V‖R and ‖∇X[μ](x)‖ ≤ 2‖QᵀK‖‖V‖R² on B(0, R) for the empirical "
            "measure μ of the initial tokens, R = max_j |x_j|",
    needs="the field and its gradient ∇X = V Cov_p(y) Bᵀ at `points` seeded random x in "
          "B(0, R), in float64 with a rounding bound; each bound's margin against its error.",
    keys={"points": "number of sample points in B(0, R) (default 64)"},
    validate=lambda p, s, w: require_positive_int(p, "points", s, w))
def judge_field_bounds(ev) -> InstanceResult:
    r"""Proposition 6.1 (bounds) on the empirical measure :math:`\mu = \frac1n\sum\delta_{x_j}`
    of the initial tokens, at ``points`` seeded random :math:`x \in B(0, R)`."""
    request = ev.request
    model, inst = request.instance.model, request.instance
    Vf, Bf = (as_float_array(m) for m in (model.V, model.B))
    y = inst.x0_float()
    rng = np.random.default_rng(0 if request.seed is None else request.seed)
    R = float(np.max(np.linalg.norm(y, axis=1)))
    nV, eV = _norm2(Vf)
    nB, eB = _norm2(Bf)
    points = int(ev.parameters.get("points", 64))
    u = rng.normal(size=(points, inst.d))
    xs = u / np.linalg.norm(u, axis=1, keepdims=True) * R * rng.uniform(0, 1, (points, 1))
    field_max, grad_max = 0.0, 0.0
    for x in xs:
        s = y @ Bf.T @ x                                     # <Bᵀ x, y_j> = <Qx, Ky_j>
        p = np.exp(s - s.max())
        p /= p.sum()
        mean = p @ y
        field_max = max(field_max, float(np.linalg.norm(Vf @ mean)))
        cov = (y - mean).T @ ((y - mean) * p[:, None])
        grad_max = max(grad_max, _norm2(Vf @ cov @ Bf.T)[0])
    scale = ulps(SUM_ULPS * inst.n * inst.d)  # the field: sums over n tokens of d terms
    bound_field, bound_grad = nV * R, 2 * nB * nV * R * R
    evidence = {"R": R, "norm_V": nV, "norm_QtK": nB, "field_max": field_max,
                "gradient_max": grad_max, "points": points}
    return combine(request, [
        decide(request, bound_field - field_max, eV * R + scale * (bound_field + field_max),
               f"|X[μ](x)| ≤ ‖V‖R = {bound_field:.6g} at {points} points (max {field_max:.6g})",
               unit="field norm", basis=Basis.EVIDENCE),
        decide(request, bound_grad - grad_max,
               2 * R * R * (eB * nV + eV * nB) + scale * (bound_grad + grad_max),
               f"‖∇X[μ](x)‖ ≤ 2‖QᵀK‖‖V‖R² = {bound_grad:.6g} (max {grad_max:.6g})",
               unit="gradient norm", basis=Basis.EVIDENCE)], evidence)


@register_conclusion(
    "stability", asymptotic=False,
    summary="W_2(μ_t, ν_t) ≤ e^{Ct} W_2(μ_0, ν_0) on [0, T] for the run and a perturbed run",
    needs="a second run from the tokens moved by `perturbation` in a seeded direction, W_2 by "
          "optimal assignment at every checkpoint, the constant "
          "C = 2‖B‖‖V‖R_T² + ‖V‖e^{2‖B‖R_T²}(1 + 2‖B‖R_T²), R_T = R_0 e^{‖V‖T}; compared in "
          "logarithms with the errors of both runs.",
    keys={"perturbation": "size of the perturbation of the initial tokens (default 1/1000)"})
def judge_stability(ev) -> InstanceResult:
    """Proposition 6.1 (stability) between the run and a perturbed run."""
    from scipy.optimize import linear_sum_assignment


    request, traj = ev.request, ev.trajectory
    model, inst = request.instance.model, request.instance
    if traj.x is None or not np.all(np.isfinite(traj.x)):
        return inconclusive(request, "the tokens x are not available (finite) on this run.")
    Vf, Bf = (as_float_array(m) for m in (model.V, model.B))
    y = inst.x0_float()
    rng = np.random.default_rng(1 if request.seed is None else request.seed + 1)
    R = float(np.max(np.linalg.norm(y, axis=1)))
    nV, nB = _norm2(Vf)[0], _norm2(Bf)[0]
    delta = float(ev.parameters.get("perturbation", 1e-3))
    direction = rng.normal(size=y.shape)
    moved = Instance(model, (y + delta * direction / np.max(np.abs(direction))).tolist(),
                     name=inst.name + "-perturbed")
    T = float(traj.times[-1])
    other = simulate(moved, traj.times[-1], checkpoints=list(traj.times),
                     precision=request.precision)
    if not other.success or other.error is None:
        return inconclusive(request, f"the perturbed run failed: {other.message}")
    RT = R * 1.001 * math.exp(nV * T)
    C = 2 * nB * nV * RT ** 2 + nV * math.exp(2 * nB * RT ** 2) * (1 + 2 * nB * RT ** 2)

    def w2(a, b):
        cost = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=2)
        r, c = linear_sum_assignment(cost)
        return math.sqrt(float(cost[r, c].mean()))

    xa, xb = traj.x, other.x
    w0 = w2(xa[0], xb[0])
    worst, observed_rate = None, -math.inf
    for k, t in enumerate(traj.t[1:], start=1):              # t = 0: equality
        wt = w2(xa[k], xb[k])
        observed_rate = max(observed_rate, math.log(wt / w0) / t)
        err = math.sqrt(inst.d) * math.exp(nV * t) * float(np.max(traj.error[k]) +
                                                           np.max(other.error[k]))
        margin = C * t + math.log(w0) - math.log(wt)        # log of bound / observed
        error = err / max(wt - err, np.finfo(float).tiny) if wt > err else math.inf
        if worst is None or margin - error < worst[0] - worst[1]:
            worst = (margin, error, float(t), wt)
    return decide(request, worst[0], worst[1], "log(e^(Ct) W_2(μ_0, ν_0)) − log W_2(μ_t, ν_t) "
                  f"≥ 0 at every checkpoint (closest at t = {worst[2]:.4g})",
                  unit="log of a W_2 ratio", basis=Basis.ESTIMATE, evidence={
                      "R": R, "W2_0": w0, "C": C, "R_T": RT,
                      "observed_rate_max_log_W2_ratio_over_t": observed_rate,
                      "C_formula": "2‖B‖‖V‖R_T² + ‖V‖e^{2‖B‖R_T²}(1+2‖B‖R_T²) (Lipschitz of "
                                   "x ↦ X[μ](x) plus of μ ↦ X[μ] in W_1; derived here, the "
                                   "paper's constant is not in the spec)"})
