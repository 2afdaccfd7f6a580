r"""``boundrj_inequality``: the bound :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` of the proof
of Theorem 5.2 (``boundrj-step``).

Decided from the **exact** exponential polynomial :math:`r_j(t)`
(:func:`verify.exact.remainder.boundrj_bound_violated`) when the configuration is exactly
stationary, and confirmed by the growth rate of :math:`r_j` evaluated along the simulated
trajectory (rigorous ``arb`` values of :math:`e^{tV}`, fitted with an error bar).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.checks._parts import inconclusive, judge_part
from verify.checks._runs import float_parameter, simulate_with_run
from verify.checks.extensions import f_coordinates
from verify.claim import CheckRequest, InstanceResult, register_check
from verify.errors import InvalidArgument
from verify.exact.precision import working_precision

__all__ = ["boundrj_inequality"]


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
    from flint import arb, arb_mat, fmpq

    def num(x):
        if isinstance(x, str):
            return arb(str(x))
        x = Fraction(x)
        return arb(fmpq(x.numerator, x.denominator))

    def mat(a):
        return arb_mat([[num(x) for x in row] for row in a])
    with working_precision(bits):
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
        return inconclusive(request, "needs a paranormal V with rational λ and rational F, G: "
                            f"{para.explanation}")
    A = _exact_root(model)
    if A is None:
        return inconclusive(request, "A = (QᵀK)^(1/2) is not known in rational form "
                            "(supported: QᵀK = I, or Q = K symmetric positive definite); the "
                            "exact remainder r_j needs it.")
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
    ran, failure = simulate_with_run(request)
    fit = None
    if ran is not None:
        traj, evidence["run"] = ran
        bits = max(int(traj.precision.get("bits", 53)), 64) + 64
        series = _remainder_along(traj, V, A, Pi, lam, i, j, bits)
        start = float_parameter(request, "fit_from", 0.0)
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
        return judge_part(request, bound, 0, "r_j ≡ 0 exactly, so the bound", evidence)
    if stationary and exact is not None:
        mu = Fraction(str(exact.growth_rate))
        return judge_part(request, bound - mu, 0, f"growth rate of r_j = {mu} "
                          f"(t^{exact.degree}) ≤ λ + |λ_2| = {bound}", evidence,
                          strict=mu == bound and exact.degree > 0)
    if fit is None or not fit.ok:
        return inconclusive(request, "the configuration is not stationary and the growth rate "
                            "of r_j along the trajectory could not be fitted (too few resolved "
                            "values).", evidence)
    return judge_part(request, float(bound) - fit.slope, fit.coverage * fit.slope_error,
                      f"fitted growth rate of r_j = {fit.slope:.6g} ≤ λ + |λ_2| = {bound}",
                      evidence)

