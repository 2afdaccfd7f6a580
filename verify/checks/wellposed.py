r"""Proposition 6.1 (``wellposed_bounds``): bounds on the field of an empirical measure and
stability in :math:`W_2`, derived constant included. The verdict is the worst part
(:func:`~verify.checks._parts.combine_parts`).
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import combine_parts, inconclusive, judge_part
from verify.checks.one_dimensional import run_checked, run_summary
from verify.claim import InstanceResult, register_check
from verify.exact.inputs import as_float_array
from verify.simulate import simulate

__all__ = ["check_wellposed"]


def _norm2(M: np.ndarray) -> tuple[float, float]:
    """Spectral norm in float64 and an error bar (``4 d ε ‖M‖_F``, a bound for the SVD)."""
    value = float(np.linalg.norm(M, 2))
    return value, 4 * M.shape[0] * np.finfo(float).eps * float(np.linalg.norm(M))


@register_check("wellposed_bounds")
def check_wellposed(request) -> InstanceResult:
    r"""Proposition 6.1 on empirical measures ``μ = (1/n) Σ δ_{x_j}`` (``x_j`` the tokens).

    Parts: (1) ``|X[μ](x)| ≤ ‖V‖R`` and (2) ``‖∇X[μ](x)‖ ≤ 2‖QᵀK‖‖V‖R²`` at
    ``parameters.points`` (default 64) seeded random ``x ∈ B(0, R)``, ``R = max_j |x_j|``, with
    ``∇X = V Cov_p(y) Bᵀ`` (``B = QᵀK``, ``p`` the softmax weights); (3) stability:
    ``W_2(μ_t, ν_t) ≤ e^{Ct} W_2(μ_0, ν_0)`` at every checkpoint for ``ν_0`` the tokens moved by
    ``parameters.perturbation`` (default 1e-3) in a seeded random direction, ``W_2`` by optimal
    assignment, with the constant derived in the evidence:
    ``C = 2‖B‖‖V‖R_T² + ‖V‖e^{2‖B‖R_T²}(1 + 2‖B‖R_T²)``, ``R_T = R_0 e^{‖V‖T}`` (a priori bound on
    the tokens of both runs). Compared in logarithms; error from the runs' error estimates.
    """
    from scipy.optimize import linear_sum_assignment

    model, inst = request.instance.model, request.instance
    Vf, Bf = (as_float_array(m) for m in (model.V, model.B))
    y = inst.x0_float()
    rng = np.random.default_rng(0 if request.seed is None else request.seed)
    R = float(np.max(np.linalg.norm(y, axis=1)))
    nV, eV = _norm2(Vf)
    nB, eB = _norm2(Bf)
    eps = np.finfo(float).eps
    points = int(request.parameters.get("points", 64))
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
    scale = inst.n * inst.d * eps
    bound_field, bound_grad = nV * R, 2 * nB * nV * R * R
    parts = [judge_part(request, bound_field - field_max,
                        eV * R + scale * (bound_field + field_max),
                        f"|X[μ](x)| ≤ ‖V‖R = {bound_field:.6g} at {points} points "
                        f"(max {field_max:.6g})"),
             judge_part(request, bound_grad - grad_max,
                        2 * R * R * (eB * nV + eV * nB) + scale * (bound_grad + grad_max),
                        f"‖∇X[μ](x)‖ ≤ 2‖QᵀK‖‖V‖R² = {bound_grad:.6g} (max {grad_max:.6g})")]
    delta = float(request.parameters.get("perturbation", 1e-3))
    direction = rng.normal(size=y.shape)
    from verify.model import Instance

    moved = Instance(model, (y + delta * direction / np.max(np.abs(direction))).tolist(),
                     name=inst.name + "-perturbed")
    T = float(request.horizon)
    traj, failed = run_checked(request)
    if failed:
        return failed
    other = simulate(moved, request.horizon, checkpoints=request.checkpoints,
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
    parts.append(judge_part(request, worst[0], worst[1], "log(e^(Ct) W_2(μ_0, ν_0)) − "
                            f"log W_2(μ_t, ν_t) ≥ 0 at every checkpoint (closest at "
                            f"t = {worst[2]:.4g})"))
    return combine_parts(request, parts, {
        "R": R, "norm_V": nV, "norm_QtK": nB, "field_max": field_max, "gradient_max": grad_max,
        "W2_0": w0, "C": C, "R_T": RT,
        "observed_rate_max_log_W2_ratio_over_t": observed_rate,
        "C_formula": "2‖B‖‖V‖R_T² + ‖V‖e^{2‖B‖R_T²}(1+2‖B‖R_T²)"
        " (Lipschitz of x ↦ X[μ](x) plus of μ ↦ X[μ] in W_1; derived here, the paper's constant "
        "is not in the spec)", "run": run_summary(traj)})
