r"""Remark 3.4 (``discrete_rescaling_exact``): the discrete dynamics and their rescaling agree
exactly, :math:`z[k] = R^{-k} x[k]` with :math:`R = I + hV`, in rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.claim import InstanceResult, judge_instance, register_check
from verify.exact.inputs import as_float_array

__all__ = ["check_discrete_rescaling"]


@register_check("discrete_rescaling_exact")
def check_discrete_rescaling(request) -> InstanceResult:
    """Remark 3.4 in exact rational arithmetic: ``z[k] = R^{-k} x[k]``, ``R = I + hV``.

    ``x[k+1] = x[k] + h P[k] x[k] Vᵀ`` and ``z[k+1] = z[k] + h (P[k] − I) z[k] (R^{-1}V)ᵀ`` are
    iterated with the same ``P[k]``: the float64 softmax at ``x[k]``, taken at its binary value
    and renormalised to exactly row-stochastic rationals (the identity is algebraic in any
    row-stochastic ``P``). Margin ``−max|z[k] − R^{-k} x[k]|``, error 0. The number of layers is
    ``parameters.layers`` (default 4; rational sizes grow with every layer).
    """
    from verify.dynamics import VectorField, discrete_step_rescaled, discrete_step_tokens
    from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat
    from verify.model import Model
    from verify.numerics import Float64

    model, x = request.instance.model, request.instance.x0.copy()
    h = model.h if model.h is not None else Fraction(request.parameters.get("h", Fraction(1, 10)))
    V = model.V
    d = V.shape[0]
    R = np.vectorize(Fraction, otypes=[object])(np.eye(d, dtype=int)) + h * V
    R_inv = from_fmpq_mat(to_fmpq_mat(R).inv())
    field = VectorField(Model(V=V, Q=model.Q, K=model.K, beta=model.beta, form="x"),
                        request.instance.n, Float64())
    z, R_inv_k = x.copy(), np.vectorize(Fraction, otypes=[object])(np.eye(d, dtype=int))
    layers, worst = int(request.parameters.get("layers", 4)), Fraction(0)
    for _ in range(layers):
        P = np.vectorize(Fraction, otypes=[object])(field.attention(0.0, as_float_array(x)))
        P = P / P.sum(axis=1, keepdims=True)
        x, z = discrete_step_tokens(x, P, V, h), discrete_step_rescaled(z, P, V, h, R_inv)
        R_inv_k = R_inv.dot(R_inv_k)
        worst = max(worst, max(abs(v) for v in (z - x.dot(R_inv_k.T)).ravel()))
    digits = max(len(str(v.denominator)) for v in z.ravel())
    return judge_instance(-worst, 0, instance=request.instance.name, family=request.family.name,
                          seed=request.seed, strict=False,
                          what=f"z[k] = R^(-k) x[k] exactly for k ≤ {layers} (h = {h})",
                          evidence={"layers": layers, "h": str(h), "max_difference": str(worst),
                                    "denominator_digits_of_z": digits,
                                    "arithmetic": "exact rationals (fractions.Fraction)"})


