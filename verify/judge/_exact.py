r"""Conclusions decided in exact arithmetic: ``rescaling-identity`` (Remark 3.4) and
``remainder-bound`` (the bound :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` of the proof
of Theorem 5.2, ``boundrj-step``).

``remainder-bound`` is a statement about all :math:`t`, decided from the **exact** exponential
polynomial :math:`r_j(t)` (:func:`verify.exact.remainder.boundrj_bound_violated`) when the
configuration is exactly stationary — an exact certificate — and confirmed by the growth rate of
:math:`r_j` evaluated along the simulated trajectory (rigorous ``arb`` values of
:math:`e^{tV}`, fitted with an error bar: evidence).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.analysis.evidence import Basis
from verify.errors import InvalidArgument
from verify.exact import paranormal, qk_positive_definite
from verify.exact.inputs import as_float_array
from verify.exact.linalg import from_fmpq_mat, to_fmpq_mat
from verify.exact.plain import fail, require_positive_int
from verify.exact.precision import working_precision
from verify.exact.remainder import boundrj_bound_violated, boundrj_remainder
from verify.exact.splitting import f_coordinates
from verify.flow.fields import VectorField, discrete_step_rescaled, discrete_step_tokens
from verify.judge._decision import decide, inconclusive
from verify.judge._verdicts import InstanceResult
from verify.model import Model
from verify.numerics import Float64, fit_line
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_rescaling_identity", "judge_remainder_bound"]



@register_conclusion(
    "rescaling-identity", asymptotic=False,
    summary="Remark 3.4: the rescaled discrete layers z[k] = R^{-k} x[k], R = I + hV, follow "
            "the rescaled recursion exactly",
    needs="both recursions iterated in exact rational arithmetic with the same (rational, "
          "row-stochastic) attention; margin −max|z[k] − R^{-k} x[k]|, error 0.",
    keys={"layers": "number of layers (default 4)",
          "h": "the step when the model is not discrete (default 1/10)"},
    validate=lambda p, s, w: require_positive_int(p, "layers", s, w))
def judge_rescaling_identity(ev) -> InstanceResult:
    """Remark 3.4 in exact rational arithmetic: ``z[k] = R^{-k} x[k]``, ``R = I + hV``.

    ``x[k+1] = x[k] + h P[k] x[k] Vᵀ`` and ``z[k+1] = z[k] + h (P[k] − I) z[k] (R^{-1}V)ᵀ`` are
    iterated with the same ``P[k]``: the float64 softmax at ``x[k]``, taken at its binary value
    and renormalised to exactly row-stochastic rationals (the identity is algebraic in any
    row-stochastic ``P``). Margin ``−max|z[k] − R^{-k} x[k]|``, error 0. The number of layers is
    ``parameters.layers`` (default 4; rational sizes grow with every layer).
    """

    request = ev.request
    model, x = request.instance.model, request.instance.x0.copy()
    h = model.h if model.h is not None else Fraction(ev.parameters.get("h", Fraction(1, 10)))
    V = model.V
    d = V.shape[0]
    R = np.vectorize(Fraction, otypes=[object])(np.eye(d, dtype=int)) + h * V
    R_inv = from_fmpq_mat(to_fmpq_mat(R).inv())
    field = VectorField(Model(V=V, Q=model.Q, K=model.K, beta=model.beta, form="x"),
                        request.instance.n, Float64())
    z, R_inv_k = x.copy(), np.vectorize(Fraction, otypes=[object])(np.eye(d, dtype=int))
    layers, worst = int(ev.parameters.get("layers", 4)), Fraction(0)
    for _ in range(layers):
        P = np.vectorize(Fraction, otypes=[object])(field.attention(0.0, as_float_array(x)))
        P = P / P.sum(axis=1, keepdims=True)
        x, z = discrete_step_tokens(x, P, V, h), discrete_step_rescaled(z, P, V, h, R_inv)
        R_inv_k = R_inv.dot(R_inv_k)
        worst = max(worst, max(abs(v) for v in (z - x.dot(R_inv_k.T)).ravel()))
    digits = max(len(str(v.denominator)) for v in z.ravel())
    return decide(request, -worst, 0, f"z[k] = R^(-k) x[k] exactly for k ≤ {layers} (h = {h})",
                  unit="max |z[k] − R^(-k) x[k]| (exact)", strict=False, basis=Basis.EXACT,
                  evidence={"layers": layers, "h": str(h), "max_difference": str(worst),
                            "denominator_digits_of_z": digits,
                            "arithmetic": "exact rationals (fractions.Fraction)"})




def _exact_root(model) -> np.ndarray | None:
    r""":math:`A = (\beta Q^\top K)^{1/2}` when it is rational and found here: ``I`` for
    :math:`B = I`, ``Q`` for ``Q = K`` symmetric positive definite (and β = 1); else ``None``."""

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


def _power_factor(degree: int) -> str:
    """How the leading term ``t^p e^{μt}`` of ``r_j`` departs from a pure exponential."""
    return "" if degree == 0 else f" (with a factor t^{degree})"


def _validate_remainder(p, source, where):
    for key in ("i", "j"):
        if key in p and (not isinstance(p[key], int) or isinstance(p[key], bool) or p[key] < 1):
            fail(source, f"{where}.{key}", f"{p[key]!r} must be a token index (from 1).")


@register_conclusion(
    "remainder-bound", asymptotic=True,
    summary="the bound |r_j(t)| ≤ C e^{t(λ + |λ_2|)} of the proof of Theorem 5.2 (boundrj-step)",
    needs="for an exactly stationary configuration, the exact exponential polynomial r_j(t) "
          "and its exact growth rate (certificate: exact arithmetic); otherwise the growth "
          "rate of r_j fitted along the run (rigorous arb values of e^{tV}) — evidence only.",
    keys={"i": "the token z_i of the bound (from 1, default 1)",
          "j": "the token z_j (from 1, default 2)",
          "fit_from": "the numerical growth rate of |r_j| is fitted on [fit_from, T]"},
    validate=_validate_remainder)
def judge_remainder_bound(ev) -> InstanceResult:
    r"""``boundrj-step``: :math:`|r_j(t)| \le C e^{t(\lambda+|\lambda_2|)}` (proof of Thm 5.2).

    Margin: :math:`(\lambda+|\lambda_2|) - \mu`, with :math:`\mu` the exponential growth rate of
    :math:`r_j`. For an exactly stationary configuration (:math:`V(z_j - z_i) = 0` for all
    tokens, so :math:`z(t) = z(0)`), :math:`\mu` and the margin are exact (error 0); otherwise
    :math:`\mu` is the slope of :math:`\log|r_j(t_k)|` along the trajectory on
    ``[fit_from, T]`` and the error is :math:`\kappa\sigma` of that fit. The fit is recorded in
    both cases as the numerical confirmation.
    """

    request = ev.request
    inst, model = request.instance, request.instance.model
    i, j = int(ev.parameters.get("i", 1)) - 1, int(ev.parameters.get("j", 2)) - 1
    if not (0 <= i < inst.n and 0 <= j < inst.n):
        raise InvalidArgument(f"i={i + 1}, j={j + 1} must be token indices from 1 to "
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
    traj, fit = ev.trajectory, None
    if traj.z is not None:
        bits = max(int(traj.precision.get("bits", 53)), 64) + 64
        series = _remainder_along(traj, V, A, Pi, lam, i, j, bits)
        start = float(ev.parameters.get("fit_from", 0))
        keep = (series[:, 0] >= start) & (np.abs(series[:, 1]) > series[:, 2])
        t, r, rad = series[keep].T if keep.any() else (np.array([]),) * 3
        evidence["r_j along the trajectory"] = {"t": series[:, 0], "r": series[:, 1],
                                                "radius": series[:, 2]}
        if len(t) >= 3:
            fit = fit_line(t, np.log(np.abs(r)), rad / np.abs(r))
            evidence["fitted_growth_rate"] = {"rate": fit.slope, "std_error": fit.slope_error,
                                              "coverage": fit.coverage, "points": fit.n_points,
                                              "from": float(t[0]), "to": float(t[-1])}
    unit = "growth rate (1/time)"
    if stationary and zero:
        return decide(request, bound, 0, "r_j ≡ 0 exactly, so the bound", unit=unit,
                      evidence=evidence, basis=Basis.EXACT)
    if stationary and exact is not None:
        mu = Fraction(str(exact.growth_rate))
        certificate = {"kind": "exact", "basis": Basis.EXACT.value,
                       "statement": f"the configuration is exactly stationary "
                       f"(V(z_j − z_i) = 0), so r_j(t) = {exact.remainder} for all t, exactly: "
                       f"its growth rate is {mu}{_power_factor(exact.degree)}"}
        return decide(request, bound - mu, 0, f"growth rate of r_j = {mu}"
                      f"{_power_factor(exact.degree)} ≤ λ + |λ_2| = {bound}", unit=unit,
                      evidence=evidence, basis=Basis.EXACT,
                      strict=mu == bound and exact.degree > 0, certificate=certificate)
    if fit is None or not fit.ok:
        return inconclusive(request, "the configuration is not stationary and the growth rate "
                            "of r_j along the trajectory could not be fitted (too few resolved "
                            "values).", evidence)
    return decide(request, float(bound) - fit.slope, fit.coverage * fit.slope_error,
                  f"fitted growth rate of r_j = {fit.slope:.6g} ≤ λ + |λ_2| = {bound}",
                  unit=unit, evidence=evidence, basis=Basis.FIT)

