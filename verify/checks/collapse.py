r"""``collapse_negative_identity``: for :math:`V = -I`, :math:`Q^\top K = I` the tokens collapse.

:math:`x_i(t) \to 0`, :math:`P \to \tfrac1n \mathbf 1\mathbf 1^\top` and
:math:`|x_i(t)| \le \max(\max_i|x_i(0)|, \sqrt{2n})`; the verdict is reached by
:func:`~verify.checks._parts.combine`.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import SubCheck, combine, inconclusive
from verify.checks._runs import float_parameter, sig6, simulate_checked
from verify.claim import InstanceResult, register_check

__all__ = ["check_collapse_negative_identity"]

_EPS = float(np.finfo(float).eps)


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

    traj, failure = simulate_checked(request)
    if failure:
        return failure
    X, t, E = traj.x, traj.t, traj.error
    n, d = X.shape[1], X.shape[2]
    if traj.x is not traj.state:
        return inconclusive(request, "the family must integrate x (model.form = \"x\"): the "
                            "claim is about the unrescaled tokens.")
    tail = float_parameter(request, "tail_fraction", 0.5)
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
    evidence = {"x_power_law_exponent": sig6(fit_x.slope), "x_exponent_error":
                sig6(fit_x.slope_error), "P_power_law_exponent": sig6(fit_p.slope),
                "P_exponent_error": sig6(fit_p.slope_error), "coverage": sig6(fit_x.coverage),
                "max_abs_x_at_T": sig6(size[-1]), "max_abs_P_minus_uniform_at_T": sig6(dev[-1]),
                "bound_R": sig6(R), "max_norm_t_positive": sig6(norms[k, i]),
                "error_estimate": traj.error_estimate}
    return combine(subs, request, evidence)
