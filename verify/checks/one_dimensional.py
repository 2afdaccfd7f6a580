r"""What the ``d = 1`` checks (§6–§7, Remark 3.4) measure, and how they get a trajectory.

The checks themselves, each ``check(request: CheckRequest) -> InstanceResult`` (see
:mod:`verify.claim._checks`), are in:

* :mod:`verify.checks.boolean_1d` — ``boolean_1d_limit`` (Theorem 2.1: rows of :math:`P(t)`
  converge doubly exponentially to :math:`e_1^\top` or :math:`e_n^\top` except at most one; for
  random (generic) data none) and ``higherdim_remark`` (the remark closing §7);
* :mod:`verify.checks.escape` — ``one_bounded_token`` (at most one token bounded, and it tends
  to 0, :math:`z_i \to \gamma_i \ne 0` otherwise) and ``escape_threshold`` (:math:`x_n(0) > a`,
  :math:`a^2 = n^2 e^{-a^2}` ⇒ :math:`x_n \ge c e^t`; the threshold itself is in
  :mod:`verify.exact.escape`);
* :mod:`verify.checks.monotone` — ``order_preserved`` and ``distances_nondecreasing``
  (monotone quantities at checkpoints);
* :mod:`verify.checks.wellposed` — ``wellposed_bounds`` (§6);
* :mod:`verify.checks.rescaling` — ``discrete_rescaling_exact`` (Remark 3.4).

A check splits its claim into *parts*, each judged by :func:`~verify.claim.judge_instance`
(signed margin against an error derived from the trajectory's error estimate or a fit's error
bar); the instance verdict is the worst part (:func:`combine_parts`): violated if a part is
violated, inconclusive if one is, otherwise holds, reported with the part of smallest
``margin / error``.

"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import combine_parts, inconclusive
from verify.exact.inputs import as_float_array
from verify.simulate import simulate

__all__ = ["combine_parts", "row_log_gaps", "row_error", "pair_derivative_ball", "run_checked",
           "run_summary", "scalar_value", "SAMPLED"]

SAMPLED = ("checked at the checkpoints only: the flow between two checkpoints is not certified")


# --------------------------------------------------------------------------- trajectories
def run_checked(request, **options):
    """Simulate the request's instance; ``(traj, None)`` or ``(None, inconclusive result)``."""
    options.setdefault("precision", request.precision)
    options.setdefault("checkpoints", request.checkpoints)
    traj = simulate(request.instance, request.horizon, **options)
    if not traj.success or traj.error is None:
        why = traj.message if not traj.success else traj.reference.get("message", "")
        return None, inconclusive(request, f"the simulation did not give an error-estimated "
                                  f"trajectory ({traj.status}: {why}); raise the precision.",
                                  {"run": traj.summary()})
    return traj, None


def run_summary(traj) -> dict:
    digits = traj.digits
    return {"precision": traj.precision, "checkpoints": len(traj.times),
            "horizon": str(traj.times[-1]), "error_estimate": traj.error_estimate,
            "min_agreeing_digits": float(np.min(digits)), "symmetry": traj.symmetry and
            traj.symmetry["description"]}


def scalar_value(value) -> float:
    return float(as_float_array(np.asarray(value, dtype=object)).ravel()[0])


# --------------------------------------------------------------------------- Theorem 2.1
def row_log_gaps(traj, row: int, target: int) -> tuple[np.ndarray, np.ndarray]:
    r"""``log(1 − P_{i,target}(t_k))`` at every checkpoint, from the scaled scores, and its error.

    With :math:`a_j = e^{L}(\tilde S_{ij} - \tilde S_{i,t})`,
    :math:`\log(1 - P_{it}) = \operatorname{LSE}_{j \ne t} a_j - \operatorname{LSE}_j a_j`; each
    :math:`a_j` is off by at most :math:`e^{L}(r_{ij} + r_{it})` (``score_radius``) and LSE is
    1-Lipschitz in the max-norm, so the error is twice the largest of these.
    """
    m = len(traj.times)
    logs, errors = np.empty(m), np.empty(m)
    others = [j for j in range(traj.n) if j != target]
    for k in range(m):
        S, scale = traj.scaled_scores[k, row], math.exp(traj.log_scale[k])
        a = scale * (S - S[target])
        r = traj.score_radius(k)[row]
        with np.errstate(over="ignore"):
            errors[k] = 2.0 * float(np.max(scale * (r + r[target])))
        top = float(np.max(a))
        lse_all = top + math.log(float(np.sum(np.exp(a - top))))
        sub = a[others]
        top_o = float(np.max(sub))
        logs[k] = top_o + math.log(float(np.sum(np.exp(sub - top_o)))) - lse_all
    return np.minimum(logs, -np.finfo(float).tiny), errors


def row_error(traj, row: int) -> np.ndarray:
    """Absolute error of the entries of row ``row`` of ``P(t_k)``: ``|ΔP_ij| ≤ P_ij (e^{2δ} − 1)``
    with ``δ = e^{L} max_l r_il`` (``log P_ij`` moves by at most ``2δ``)."""
    out = np.empty(len(traj.times))
    for k in range(len(traj.times)):
        with np.errstate(over="ignore"):
            delta = math.exp(traj.log_scale[k]) * float(np.max(traj.score_radius(k)[row]))
            out[k] = float(np.max(traj.attention[k, row])) * math.expm1(min(2 * delta, 700.0))
    return out


# --------------------------------------------------------------------------- escape threshold
def pair_derivative_ball(z: np.ndarray, radius: np.ndarray, t: float, i: int, j: int):
    r"""``g = <z_i − z_j, (Pz)_i − (Pz)_j>`` for ``Q = K = V = I`` as an ``arb`` ball, from the
    state ``z`` (``n×d``) with per-token radii; ``d/dt |x_i − x_j|² = 2 e^{2t} g``.

    Rows of ``P`` sum to 1, so with ``ℓ_i`` the argmax of row ``i``:
    ``g = <z_i − z_j, z_{ℓ_i} − z_{ℓ_j}> + Σ_k P_ik c^i_k − Σ_k P_jk c^j_k``,
    ``c^i_k = <z_i − z_j, z_k − z_{ℓ_i}>`` (exactly 0 for ``k = ℓ_i``), written so that equal
    leaders cancel exactly and tiny ``P_ik`` keep their relative accuracy
    (``log P_ik = e^{2t}<z_i, z_k − z_ℓ> − LSE``).
    """
    from flint import arb

    n, d = z.shape
    Z = [[arb(float(z[p, c]), float(radius[p])) for c in range(d)] for p in range(n)]
    scale = arb(2 * t).exp()

    def dot(u, w):
        return sum((a * b for a, b in zip(u, w, strict=True)), arb(0))

    def sub(p, q):
        return [arb(0)] * d if p == q else [a - b for a, b in zip(Z[p], Z[q], strict=True)]

    def log_row(p):
        lead = int(np.argmax(z[p] @ z.T))
        a = [arb(0) if k == lead else scale * dot(Z[p], sub(k, lead)) for k in range(n)]
        lse = sum((x.exp() for x in a), arb(0)).log()
        return lead, [x - lse for x in a]

    (li, Li), (lj, Lj) = log_row(i), log_row(j)
    dz = sub(i, j)
    total = arb(0) if li == lj else dot(dz, sub(li, lj))
    for k in range(n):
        if li == lj:
            if k != li:
                total += (Li[k].exp() - Lj[k].exp()) * dot(dz, sub(k, li))
            continue
        if k != li:
            total += Li[k].exp() * dot(dz, sub(k, li))
        if k != lj:
            total -= Lj[k].exp() * dot(dz, sub(k, lj))
    return total


