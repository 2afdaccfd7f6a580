r"""Checks for Theorem 2.1 (``d = 1``), the lemmas of its proof (§7), the higher-dimensional
remark, well-posedness (§6) and the discrete rescaling (Remark 3.4).

Every check is ``check(request: CheckRequest) -> InstanceResult`` (see
:mod:`verify.claim._checks`). A check splits its claim into *parts*, each judged by
:func:`~verify.claim.judge_instance` (signed margin against an error derived from the
trajectory's error estimate or a fit's error bar); the instance verdict is the worst part
(:func:`combine_parts`): violated if a part is violated, inconclusive if one is, otherwise holds,
reported with the part of smallest ``margin / error``.

* ``boolean_1d_limit`` — Theorem 2.1: rows of :math:`P(t)` converge doubly exponentially to
  :math:`e_1^\top` or :math:`e_n^\top` except at most one; for random (generic) data none;
* ``one_bounded_token`` — at most one token bounded (and it tends to 0), :math:`z_i \to \gamma_i
  \ne 0` otherwise;
* ``escape_threshold`` — :math:`x_n(0) > a`, :math:`a^2 = n^2 e^{-a^2}` ⇒ :math:`x_n \ge c e^t`;
* ``order_preserved`` and ``distances_nondecreasing`` — monotone quantities at checkpoints;
* ``higherdim_remark``, ``wellposed_bounds``, ``discrete_rescaling_exact``.

Examples
--------
>>> escape_threshold_value(1, 10)  # a = sqrt(W(1)), W the Lambert function
'0.753089165'
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.claim import (
    InstanceResult,
    InstanceVerdict,
    PredicateResult,
    judge_instance,
    register_check,
    register_hypothesis,
)
from verify.exact.boolean import boolean_1d_shape
from verify.exact.inputs import as_float_array
from verify.limits import fit_doubly_exponential, fit_exponential_convergence, token_limits
from verify.simulate import simulate

__all__ = ["combine_parts", "escape_threshold_value", "above_escape_threshold",
           "row_log_gaps", "pair_derivative_ball"]

_ORDER = {InstanceVerdict.VIOLATED: 0, InstanceVerdict.INCONCLUSIVE: 1, InstanceVerdict.HOLDS: 2}
SAMPLED = ("checked at the checkpoints only: the flow between two checkpoints is not certified")


# --------------------------------------------------------------------------- shared helpers
def _part(request, margin, error, what, strict=True, **evidence) -> InstanceResult:
    return judge_instance(margin, error, instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          strict=strict, evidence=evidence)


def _undecided(request, reason, **evidence) -> InstanceResult:
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.INCONCLUSIVE, reason, evidence=evidence)


def combine_parts(request, parts: list[InstanceResult], evidence: dict | None = None
                  ) -> InstanceResult:
    """The instance verdict of a conjunction of parts: the worst part decides.

    Violated if some part is violated, inconclusive if some part is, else holds; the margin,
    error and reason are those of the deciding part (for holds: smallest ``margin / error``).
    Every part's verdict, margin, error and reason is kept in ``evidence["parts"]``.
    """
    def key(r):
        ratio = math.inf if not r.error else (r.margin or 0.0) / r.error
        return (_ORDER[r.verdict], ratio)

    worst = min(parts, key=key)
    record = dict(evidence or {})
    record["parts"] = [{"verdict": r.verdict.value, "margin": r.margin, "error": r.error,
                        "reason": r.reason} for r in parts]
    n_ok = sum(r.verdict is InstanceVerdict.HOLDS for r in parts)
    reason = (f"all {len(parts)} parts hold; closest: {worst.reason}"
              if worst.verdict is InstanceVerdict.HOLDS else
              f"{n_ok} of {len(parts)} parts hold; {worst.reason}")
    return InstanceResult(worst.instance, worst.family, worst.seed, worst.verdict, reason,
                          evidence=record, margin=worst.margin, error=worst.error)


def _run(request, **options):
    """Simulate the request's instance; ``(traj, None)`` or ``(None, inconclusive result)``."""
    options.setdefault("precision", request.precision)
    options.setdefault("checkpoints", request.checkpoints)
    traj = simulate(request.instance, request.horizon, **options)
    if not traj.success or traj.error is None:
        why = traj.message if not traj.success else traj.reference.get("message", "")
        return None, _undecided(request, f"the simulation did not give an error-estimated "
                                f"trajectory ({traj.status}: {why}); raise the precision.",
                                run=traj.summary())
    return traj, None


def _run_summary(traj) -> dict:
    digits = traj.digits
    return {"precision": traj.precision, "checkpoints": len(traj.times),
            "horizon": str(traj.times[-1]), "error_estimate": traj.error_estimate,
            "min_agreeing_digits": float(np.min(digits)), "symmetry": traj.symmetry and
            traj.symmetry["description"]}


def _scalar(value) -> float:
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


def _row_error(traj, row: int) -> np.ndarray:
    """Absolute error of the entries of row ``row`` of ``P(t_k)``: ``|ΔP_ij| ≤ P_ij (e^{2δ} − 1)``
    with ``δ = e^{L} max_l r_il`` (``log P_ij`` moves by at most ``2δ``)."""
    out = np.empty(len(traj.times))
    for k in range(len(traj.times)):
        with np.errstate(over="ignore"):
            delta = math.exp(traj.log_scale[k]) * float(np.max(traj.score_radius(k)[row]))
            out[k] = float(np.max(traj.attention[k, row])) * math.expm1(min(2 * delta, 700.0))
    return out


@register_check("boolean_1d_limit")
def check_boolean_1d(request) -> InstanceResult:
    """Theorem 2.1: the rows of ``P(t)`` and their limit ``P*`` (see the module docstring).

    Each row ``i`` is fitted by :func:`fit_doubly_exponential` on ``log(1 − P_{i,ℓ})`` with
    ``ℓ`` its final argmax; the row converges to ``e_ℓᵀ`` when the fitted rate ``a`` is positive
    beyond ``κσ``. The comparison of ``a`` with the paper's ``V`` (bound ``exp(−c e^{Vt})``) is
    evidence only: near-tied tokens keep the fit pre-asymptotic over a finite window. At most
    one row may fail; it must converge (trend of the row) to a probability vector.
    ``P*`` is classified by :func:`boolean_1d_shape`: at most one free row,
    and every Boolean row points at an extreme token. With ``parameters.generic_rank`` and a
    random family, every row must converge doubly exponentially (``P*`` Boolean of rank 1 or 2).
    """
    traj, failed = _run(request)
    if failed:
        return failed
    n, v = traj.n, _scalar(request.instance.model.V)
    order = [int(i) for i in np.argsort(as_float_array(request.instance.x0).ravel())]
    generic = bool(request.parameters.get("generic_rank", False)) and \
        request.family.kind == "random"
    rows, fits = [], []
    for i in range(n):
        target = int(np.argmax(traj.scaled_scores[-1, i]))
        logs, errs = row_log_gaps(traj, i, target)
        fit = fit_doubly_exponential(traj.t, logs, errs, log=True)
        if not fit.ok:
            part = _undecided(request, f"row {i}: no doubly exponential fit ({fit.reason}).")
        else:
            part = _part(request, fit.slope, fit.coverage * fit.slope_error,
                         f"row {i} → e_{target}ᵀ doubly exponentially (fitted rate a > 0 in "
                         "log(-log(1 - P_i,target)) ≈ a t + log c)")
        rows.append((i, target, part))
        fits.append({"row": i, "target": target, "rate": fit.slope,
                     "rate_error": fit.slope_error, "coverage": fit.coverage,
                     "points": fit.n_points, "paper_bound_rate": v,
                     "below_paper_rate": bool(fit.ok and fit.slope < v - fit.coverage *
                                              fit.slope_error)})
    ranked = sorted(rows, key=lambda r: (_ORDER[r[2].verdict], (r[2].margin or 0) /
                                         (r[2].error or math.inf)))
    parts = [r[2] for r in ranked[1:]]
    P_star = [[Fraction(int(j == target)) for j in range(n)] for _, target, _ in rows]
    free_i, free_part, free_fit = ranked[0][0], ranked[0][2], None
    if free_part.verdict is InstanceVerdict.HOLDS:
        parts.append(free_part)
    else:
        free_fit = fit_exponential_convergence(traj.t, traj.attention[:, free_i],
                                               _row_error(traj, free_i))
        if not free_fit.stabilised:
            parts.append(_undecided(request, f"row {free_i} (the candidate free row) has not "
                                    f"converged: {free_fit.reason}"))
        else:
            limit = np.clip(np.asarray(free_fit.limit, dtype=float), 0, None)
            P_star[free_i] = [Fraction(float(p)) for p in limit / limit.sum()]
            parts.append(_part(request, 1, free_fit.limit_error,
                               f"row {free_i} converges (free row, limit ± "
                               f"{free_fit.limit_error:.2g})"))
    tol = 0 if free_fit is None or not free_fit.stabilised else \
        min(Fraction(free_fit.limit_error), Fraction(49, 100))
    shape = boolean_1d_shape(P_star, order, tol=tol)
    allowed = 0 if generic else 1
    parts.append(_part(request, allowed - shape.number_free, 0,
                       f"P* has at most {allowed} free row(s) (found {shape.number_free}) and "
                       "its other rows are e_1ᵀ or e_nᵀ of the extreme tokens", strict=False))
    if generic:
        ok = bool(shape.boolean) and shape.rank in (1, 2)
        parts.append(_part(request, 0 if ok else -1, 0, f"P* Boolean of rank 1 or 2 (boolean: "
                           f"{shape.boolean}, rank {shape.rank})", strict=False))
    return combine_parts(request, parts, {
        "rows": fits, "shape": list(shape.rows), "free_rows": list(shape.free_rows),
        "rank": shape.rank, "boolean": shape.boolean,
        "leaders_predicted": list(shape.leaders),
        "leaders_observed": sorted({t for _, t, _ in rows}),
        "P_star": [[str(p) if p.denominator == 1 else float(p) for p in row] for row in P_star],
        "generic_sentence_checked": generic, "run": _run_summary(traj),
        "free_row_fit": None if free_fit is None else free_fit.to_dict()})


@register_check("one_bounded_token")
def check_one_bounded_token(request) -> InstanceResult:
    """At most one token stays bounded (and tends to 0); the others have ``z_i → γ_i ≠ 0``.

    The limits ``γ_i`` of ``z_i = e^{-Vt} x_i`` come from :func:`token_limits` (trend, error
    bars). All tokens but the one with the least significant ``|γ_i|`` must have
    ``|γ_i| > error``; that one either does too, or its ``x_i(t)`` must converge to 0
    (:func:`fit_exponential_convergence` on ``x_i`` with error ``e^{Vt}·error(z_i)``).
    """
    traj, failed = _run(request)
    if failed:
        return failed
    v = _scalar(request.instance.model.V)
    fits = token_limits(traj)
    gammas = [(float(np.ravel(f.limit)[0]), f.limit_error, f) for f in fits]
    parts = []
    for i, (g, e, f) in enumerate(gammas):
        parts.append(_part(request, abs(g), e, f"γ_{i} ≠ 0 (|γ| = {abs(g):.6g})") if f.stabilised
                     else _undecided(request, f"z_{i} has no stabilised limit: {f.reason}"))
    worst = min(range(len(parts)), key=lambda i: (_ORDER[parts[i].verdict],
                                                  (parts[i].margin or 0) /
                                                  (parts[i].error or math.inf)))
    bounded = None
    if parts[worst].verdict is not InstanceVerdict.HOLDS and fits[worst].stabilised:
        x = traj.z[:, worst, 0] * np.exp(v * traj.t)
        xfit = fit_exponential_convergence(traj.t, x, traj.error[:, worst] * np.exp(v * traj.t))
        bounded = {"token": worst, "x_fit": xfit.to_dict()}
        parts[worst] = (_part(request, -abs(float(xfit.limit)), xfit.limit_error,
                              f"the bounded token {worst}: x_{worst}(t) → 0", strict=False)
                        if xfit.stabilised else
                        _undecided(request, f"token {worst}: neither γ ≠ 0 nor x → 0 could be "
                                   f"decided: {xfit.reason}"))
        if xfit.stabilised and parts[worst].verdict is InstanceVerdict.INCONCLUSIVE and \
                abs(float(xfit.limit)) <= xfit.limit_error:
            parts[worst] = _undecided(request, f"token {worst}: x(t) → {float(xfit.limit):.3g} ±"
                                      f" {xfit.limit_error:.2g}, compatible with 0 but not "
                                      "exactly 0: the limit 0 can only be confirmed exactly.")
    return combine_parts(request, parts, {
        "gamma": [{"token": i, "gamma": g, "error": e, "rate": f.rate, "kind": f.kind}
                  for i, (g, e, f) in enumerate(gammas)],
        "bounded_token": bounded, "run": _run_summary(traj)})


# --------------------------------------------------------------------------- escape threshold
def escape_threshold_value(n: int, digits: int = 30) -> str:
    r"""The ``a > 0`` with ``a² = n² e^{−a²}``: ``a = √W(n²)`` (Lambert W), as a decimal string.

    >>> escape_threshold_value(3, 15)
    '1.29576865982536'
    """
    import mpmath

    with mpmath.workdps(digits + 10):
        a = mpmath.sqrt(mpmath.lambertw(n * n).real)
        return mpmath.nstr(a, digits)


def above_escape_threshold(value: Fraction, n: int) -> bool | None:
    r"""Whether ``value > a`` (certified in ball arithmetic): for ``u = value² > 0``,
    ``value > a ⇔ value > 0 and u e^{u} > n²`` (``u e^u`` is increasing). ``None`` if undecided.

    >>> above_escape_threshold(Fraction(13, 10), 3), above_escape_threshold(Fraction(129, 100), 3)
    (True, False)
    """
    from flint import arb, ctx, fmpq

    if value <= 0:
        return False
    old = ctx.prec
    try:
        ctx.prec = 256
        u = arb(fmpq(value.numerator, value.denominator)) ** 2
        s = u * u.exp() - n * n
        return True if s > 0 else False if s < 0 else None
    finally:
        ctx.prec = old


@register_hypothesis("above_escape_threshold")
def _above_threshold(instance) -> PredicateResult:
    """``d = 1`` and ``max x_i(0) > a`` or ``min x_i(0) < −a`` with ``a² = n² e^{−a²}``."""
    if instance.d != 1:
        return PredicateResult(False, f"d = {instance.d}, not 1.")
    x, n = [row[0] for row in instance.x0], instance.n
    a = escape_threshold_value(n, 12)
    up, down = above_escape_threshold(max(x), n), above_escape_threshold(-min(x), n)
    if up or down:
        return PredicateResult(True, f"max x = {float(max(x)):.6g}, min x = {float(min(x)):.6g}"
                               f": an extreme token lies beyond a = {a}.")
    if up is None or down is None:
        return PredicateResult(None, f"an extreme token is too close to a = {a} to decide.")
    return PredicateResult(False, f"all tokens lie in [-a, a], a = {a}.")


@register_check("escape_threshold")
def check_escape_threshold(request) -> InstanceResult:
    """If ``x_n(0) > a`` then ``x_n(t) ≥ c e^t`` for large ``t`` (and symmetrically ``x_1``).

    Observed: the limit ``γ`` of ``z_n = e^{-t} x_n`` from its trend (:func:`token_limits`) and
    the smallest ``z_n`` over the tail; the claim holds with ``c = γ/2`` when ``γ > error``.
    """
    traj, failed = _run(request)
    if failed:
        return failed
    x0, n = [row[0] for row in request.instance.x0], request.instance.n
    fits, parts, sides = token_limits(traj), [], []
    for sign, index in ((1, int(np.argmax([float(x) for x in x0]))),
                        (-1, int(np.argmin([float(x) for x in x0])))):
        if not above_escape_threshold(sign * x0[index], n):
            continue
        f = fits[index]
        gamma = sign * float(np.ravel(f.limit)[0])
        tail = sign * traj.z[len(traj.t) // 2:, index, 0]
        sides.append({"token": index, "side": "+" if sign > 0 else "-", "x0": str(x0[index]),
                      "gamma": gamma, "gamma_error": f.limit_error, "rate": f.rate,
                      "min_tail": float(np.min(tail)), "kind": f.kind})
        parts.append(_part(request, gamma, f.limit_error, f"{'+' if sign > 0 else '-'}side: "
                           f"e^(-t)|x_{index}(t)| → γ = {gamma:.6g} > 0")
                     if f.stabilised else
                     _undecided(request, f"z_{index} has no stabilised limit: {f.reason}"))
    if not parts:
        return _undecided(request, "no extreme token beyond the threshold a.")
    return combine_parts(request, parts, {"a": escape_threshold_value(n), "sides": sides,
                                          "run": _run_summary(traj)})


# --------------------------------------------------------------------------- monotone quantities
@register_check("order_preserved")
def check_order_preserved(request) -> InstanceResult:
    """The order of the tokens is preserved and they never collide (``d = 1``).

    Margin: the smallest gap ``z_{σ(m+1)} − z_{σ(m)}`` between initially consecutive tokens over
    all checkpoints (the sign of a gap is the same for ``x = e^{Vt} z``), error: the two tokens'
    error estimates at that checkpoint. Sampled at the checkpoints only.
    """
    traj, failed = _run(request)
    if failed:
        return failed
    order = np.argsort(as_float_array(request.instance.x0).ravel())
    z = traj.z[:, order, 0]
    e = traj.error[:, order]
    gap, err = np.diff(z, axis=1), e[:, 1:] + e[:, :-1]
    k, m = np.unravel_index(int(np.argmin(gap - err)), gap.shape)
    return _part(request, float(gap[k, m]), float(err[k, m]),
                 f"tokens keep their initial order (smallest gap at t = {traj.t[k]:.4g} between "
                 f"tokens {int(order[m])} and {int(order[m + 1])})",
                 sampled=SAMPLED, min_gap_per_checkpoint=np.min(gap, axis=1).tolist(),
                 run=_run_summary(traj))


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


@register_check("distances_nondecreasing")
def check_distances_nondecreasing(request) -> InstanceResult:
    """``Q = K = V = I``: every ``|x_i(t) − x_j(t)|`` is non-decreasing.

    Two parts: (1) no sampled decrease: for every pair and checkpoints ``k < l``,
    ``D(t_k) − D(t_l)`` must not exceed the error ``e^{t}√d (e_i + e_j)`` at both ends (a
    decrease within the error is not a violation); (2) the derivative
    ``d/dt |x_i − x_j|² = 2 e^{2t} g`` has ``g ≥ 0`` at every checkpoint, ``g`` evaluated in ball
    arithmetic from the state ± its error (:func:`pair_derivative_ball`); its margin is reported
    relative to ``|g|`` (scale-free: ``g`` can be ``exp(−c e^{t})``).
    """
    from flint import ctx

    traj, failed = _run(request)
    if failed:
        return failed
    z, e, t, (m, n, d) = traj.z, traj.error, traj.t, traj.z.shape
    worst = (-math.inf, 0.0, 0.0, None)  # (decrease − error, decrease, error, where)
    later = np.triu(np.ones((m, m), dtype=bool), 1)
    for i in range(n):
        for j in range(i + 1, n):
            D = np.linalg.norm(z[:, i] - z[:, j], axis=1) * np.exp(t)
            E = math.sqrt(d) * (e[:, i] + e[:, j]) * np.exp(t)
            drop, err = D[:, None] - D[None, :], E[:, None] + E[None, :]
            excess = np.where(later, drop - err, -np.inf)
            k, m2 = np.unravel_index(int(np.argmax(excess)), excess.shape)
            if excess[k, m2] > worst[0]:
                worst = (float(excess[k, m2]), float(drop[k, m2]), float(err[k, m2]),
                         {"pair": [i, j], "t_k": float(t[k]), "t_l": float(t[m2])})
    sampled = {"largest_decrease": worst[1], "its_error": worst[2], "where": worst[3],
               "violations_beyond_error": worst[0] > 0, "note": SAMPLED}
    parts = [_part(request, -worst[1], worst[2], "no sampled decrease of |x_i − x_j| (checkpoints"
                   " k < l) beyond the error estimates")] if worst[0] > 0 else []
    old, items = ctx.prec, []
    try:
        ctx.prec = 160
        for k in range(m):
            for i in range(n):
                for j in range(i + 1, n):
                    g = pair_derivative_ball(z[k], e[k], float(traj.times[k]), i, j)
                    mid, rad = g.mid(), g.rad()
                    size = abs(mid)
                    if size == 0:
                        items.append((0.0, 0.0 if rad == 0 else math.inf, k, i, j))
                    else:
                        items.append((1.0 if mid > 0 else -1.0, float(rad / size), k, i, j))
    finally:
        ctx.prec = old
    sign, rel, k, i, j = min(items, key=lambda it: it[0] - it[1])
    parts.append(_part(request, sign, rel, f"d/dt|x_i − x_j|² ≥ 0 at every checkpoint, in ball "
                       f"arithmetic (closest: pair ({i}, {j}) at t = {t[k]:.4g}; margin "
                       "relative to |g|)", strict=False))
    return combine_parts(request, parts, {"sampled": sampled,
                                          "derivative_sign_certified": sum(
                                              it[0] - it[1] > 0 for it in items),
                                          "derivative_checks": len(items),
                                          "run": _run_summary(traj)})


# --------------------------------------------------------------------------- Remark 3.4
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


# --------------------------------------------------------------------------- remark closing §7
@register_check("higherdim_remark")
def check_higherdim_remark(request) -> InstanceResult:
    r"""``d = n = 2``, ``Q = K = V = I``, ``x_{1,2}(0) = (1, ±ε)``: ``P → I`` while the two
    limits of ``z`` are distinct but only about ``ε e^{−1/(2ε²)}`` apart.

    Parts: (1) the limits are distinct, ``|z_1(∞) − z_2(∞)|_∞ > error``; (2) that separation
    agrees with ``ε e^{−1/(2ε²)}`` to within ``parameters.decades`` orders of magnitude (the
    remark's "about"; default 1); (3) ``P_12(t) → 0`` doubly exponentially (fitted rate > 0).
    Evidence: the time at which ``log(P_11/P_12) = 1``, against ``1/(2ε²)``.
    """
    x0 = request.instance.x0
    if x0.shape != (2, 2) or x0[0, 0] != x0[1, 0] or x0[0, 1] != -x0[1, 1] or x0[0, 1] == 0:
        return _undecided(request, "the remark is about x_{1,2}(0) = (c, ±ε) with ε ≠ 0; this "
                          "instance is not of that form.")
    eps = abs(float(x0[0, 1]) / float(x0[0, 0]))
    traj, failed = _run(request)
    if failed:
        return failed
    fits = token_limits(traj)
    if not all(f.stabilised for f in fits):
        return _undecided(request, "the z-limits have not stabilised: " +
                          "; ".join(f.reason for f in fits), run=_run_summary(traj))
    separation = float(np.max(np.abs(np.asarray(fits[0].limit) - np.asarray(fits[1].limit))))
    sep_error = fits[0].limit_error + fits[1].limit_error
    predicted = eps * math.exp(-1 / (2 * eps * eps))
    decades = float(request.parameters.get("decades", 1))
    parts = [_part(request, separation, sep_error, f"the two z-limits are distinct "
                   f"(separation {separation:.4g})")]
    if separation > sep_error:
        deviation = abs(math.log10(separation / predicted))
        dev_error = sep_error / (separation - sep_error) / math.log(10)
        parts.append(_part(request, decades - deviation, dev_error, f"separation {separation:.4g}"
                           f" within {decades:g} decade(s) of ε e^(-1/(2ε²)) = {predicted:.4g}"))
    logs, errs = row_log_gaps(traj, 0, 0)
    fit = fit_doubly_exponential(traj.t, logs, errs, log=True)
    parts.append(_part(request, fit.slope, fit.coverage * fit.slope_error,
                       "P_12(t) → 0 doubly exponentially (P → I)") if fit.ok else
                 _undecided(request, f"no doubly exponential fit of P_12: {fit.reason}"))
    odds = -logs + np.log1p(-np.exp(logs))            # log(P_11 / P_12)
    above = np.flatnonzero(odds >= 1)
    t_switch = None if not len(above) else float(traj.t[above[0]])
    return combine_parts(request, parts, {
        "epsilon": eps, "separation": separation, "separation_error": sep_error,
        "predicted_separation": predicted, "rate": fit.slope, "rate_error": fit.slope_error,
        "t_log_odds_1": t_switch, "predicted_time": 1 / (2 * eps * eps),
        "z_limits": [np.ravel(f.limit).tolist() for f in fits], "run": _run_summary(traj)})


# --------------------------------------------------------------------------- §6 well-posedness
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
    parts = [_part(request, nV * R - field_max, eV * R + scale * (nV * R + field_max),
                   f"|X[μ](x)| ≤ ‖V‖R = {nV * R:.6g} at {points} points (max {field_max:.6g})"),
             _part(request, 2 * nB * nV * R * R - grad_max,
                   2 * R * R * (eB * nV + eV * nB) + scale * (2 * nB * nV * R * R + grad_max),
                   f"‖∇X[μ](x)‖ ≤ 2‖QᵀK‖‖V‖R² = {2 * nB * nV * R * R:.6g} (max {grad_max:.6g})")]
    delta = float(request.parameters.get("perturbation", 1e-3))
    direction = rng.normal(size=y.shape)
    from verify.model import Instance

    moved = Instance(model, (y + delta * direction / np.max(np.abs(direction))).tolist(),
                     name=inst.name + "-perturbed")
    T = float(request.horizon)
    traj, failed = _run(request)
    if failed:
        return failed
    other = simulate(moved, request.horizon, checkpoints=request.checkpoints,
                     precision=request.precision)
    if not other.success or other.error is None:
        return _undecided(request, f"the perturbed run failed: {other.message}")
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
    parts.append(_part(request, worst[0], worst[1], f"log(e^(Ct) W_2(μ_0, ν_0)) − log W_2(μ_t, "
                       f"ν_t) ≥ 0 at every checkpoint (closest at t = {worst[2]:.4g})"))
    return combine_parts(request, parts, {
        "R": R, "norm_V": nV, "norm_QtK": nB, "field_max": field_max, "gradient_max": grad_max,
        "W2_0": w0, "C": C, "R_T": RT,
        "observed_rate_max_log_W2_ratio_over_t": observed_rate,
        "C_formula": "2‖B‖‖V‖R_T² + ‖V‖e^{2‖B‖R_T²}(1+2‖B‖R_T²)"
        " (Lipschitz of x ↦ X[μ](x) plus of μ ↦ X[μ] in W_1; derived here, the paper's constant "
        "is not in the spec)", "run": _run_summary(traj)})
