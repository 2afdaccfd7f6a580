r"""Existential constants and Θ-statements: ``exists`` and ``theta`` (statements about
``t → ∞``, judged by fits; basis *fit*).

**exists** — "there are constants in their ranges such that ``q(t) <= f(t; c)`` (or ``>=``) for
all ``t ≥ t0``", e.g. ``∃ C > 0, λ > 0: diam(t) ≤ C e^{-λt}``::

    [conclusion]
    type = "exists"
    constants = { C = "(0, inf)", lam = "(0, inf)" }
    quantity = "diameter"
    bound = "C * exp(-lam * t)"

On a finite window *some* constants always work (``λ`` tiny, ``C`` large), so the witness is
not searched for freely; the law is fitted and tested out of sample. At a horizon ``H``, the
checkpoints ``t ≥ t0`` where ``q`` is read (above its error, and before its error floor: the
first step of ``q`` within the errors of its ends) are split into a **fit window** (the first
two thirds of that time span) and a **validation window** (the rest):

1. the constants are fitted by least squares of ``log q − log f`` on the tail of the fit window
   (``tail``, default 1/2), with their covariance from the residuals;
2. each must lie inside its range by more than ``κσ_j`` (``κ`` the coverage factor of
   :mod:`verify.numerics._fits`): the fit *resolves* admissible constants — otherwise
   inconclusive ("the fit does not resolve lam inside (0, inf)");
3. **out of sample**: at every validation checkpoint ``log q`` stays within the fitted law's
   prediction band — ``κ`` × the prediction error (from the covariance, the residual scatter and
   ``q``'s relative error estimate, taken as a standard error as in
   :mod:`verify.numerics._fits`) — on the side the relation allows (``q`` may fall below a
   ``<=`` law, not rise above it);
4. a **witness** bounds ``q`` beyond its error on the whole window: the constants at the safe
   ends of their ``κσ`` intervals (where ``f`` is larger at ``H`` for ``<=``), and a constant
   ``f`` is proportional to (a scale such as ``C``) the smallest that works there (it must stay
   in its range).

*Holds* (basis fit) when all four pass.
The engine re-checks at ``3/2`` of the horizon, as for every statement about ``t → ∞``. A run
never *violates* an existential statement (no window excludes every constant): a witness that
fails out of sample is evidence against it, reported as inconclusive.

**theta** — "``q(t) = Θ(g(t))`` as ``t → ∞``" (there are ``0 < c ≤ C`` with
``c g ≤ q ≤ C g`` for large ``t``), e.g. ``of = "t**-2"``. On the checkpoints
``t ≥ from_time`` where ``q`` is read (above its error, before its error floor), the ratio
``q/g`` is fitted as a power ``t^s`` on the tail
(:func:`verify.analysis.observed_limits.fit_power_law`, with the intrinsic scatter of its
residuals): *holds* (basis fit) when the drift exponent ``s`` is within ``κσ`` of 0 — no resolved
drift, the only reading a finite window allows of a bounded ratio — at ``T`` and at ``3T/2``; a
resolved drift (``q`` decaying faster or slower than ``g``) is evidence against (inconclusive). A
ratio that still converges visibly (``1 + 1/t``) may read as a drift: inconclusive, integrate
longer. Never violated without a certificate.

Examples
--------
>>> parse_range("(0, inf)"), parse_range("[1/2, 3]", "c")
((Fraction(0, 1), None, True, True), (Fraction(1, 2), Fraction(3, 1), False, False))
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np

from verify.analysis.evidence import Basis
from verify.analysis.observed_limits import coverage_factor, fit_power_law
from verify.errors import InvalidArgument
from verify.exact.inputs import to_rational
from verify.exact.plain import fail
from verify.judge._decision import holds, inconclusive
from verify.judge._quantities import _number, check_quantity, check_tail, scalar_quantity
from verify.predict._expressions import (
    CONTEXT_NAMES,
    FUNCTIONS,
    check_expression,
    evaluate,
    initial_namespace,
)
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["parse_range", "judge_exists", "judge_theta"]

_RANGE = re.compile(r"^\s*([\[(])\s*([^,]+?)\s*,\s*([^,]+?)\s*([\])])\s*$")


def parse_range(text: object, name: str = "c") -> tuple:
    """``(low, high, low_open, high_open)`` of an interval written ``"(0, inf)"``,
    ``"[1/2, 3]"``, ``"(-inf, 0]"`` (``None`` for an infinite end); ``ValueError`` says why."""
    match = _RANGE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} must be an interval such as \"(0, inf)\" or \"[1/2, 3]\"")

    ends = []
    for value, infinite in ((match.group(2), "-inf"), (match.group(3), "inf")):
        if value in (infinite, "+inf" if infinite == "inf" else infinite):
            ends.append(None)
            continue
        try:
            ends.append(to_rational(value, name)[0])
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None
    low, high = ends
    if low is not None and high is not None and not low < high:
        raise ValueError(f"{text!r} is empty: the low end must be below the high end")
    return low, high, match.group(1) == "(", match.group(4) == ")"


# --------------------------------------------------------------------------- exists
def _validate_exists(p: dict, source: str, where: str) -> None:
    check_quantity(p, source, where)
    constants = p.get("constants")
    if not isinstance(constants, dict) or not constants:
        fail(source, f"{where}.constants", "must be a table naming each constant and its "
             "range, e.g. { C = \"(0, inf)\", lam = \"(0, inf)\" }.")
    taken = set(CONTEXT_NAMES["state"]) | set(FUNCTIONS)
    for name, text in constants.items():
        if not name.isidentifier() or name.startswith("_") or name in taken:
            fail(source, f"{where}.constants.{name}", f"{name!r} cannot name a constant (it "
                 "must be a new identifier, not a name of the formulas).")
        try:
            parse_range(text, name)
        except ValueError as exc:
            fail(source, f"{where}.constants.{name}", f"{exc}.")
    check_expression(p.get("bound"), "initial", source, f"{where}.bound",
                     extra_names=("t", *constants))
    if p.get("relation", "<=") not in ("<=", ">="):
        fail(source, f"{where}.relation", f"{p['relation']!r} must be '<=' or '>='.")
    for key in ("from_time",):
        if key in p:
            _number(p, key, source, where, nonnegative=True)
    check_tail(p, source, where)


class _Law:
    """The bound ``f(t; c)`` with its constants mapped from unconstrained parameters."""

    def __init__(self, evaluation, formula: str, constants: dict):
        self.formula, self.names = formula, list(constants)
        self.ranges = [parse_range(constants[k], k) for k in self.names]
        self.base = dict(initial_namespace(evaluation.instance))
        self.base.pop("phi1", None)

    def values(self, t: np.ndarray, c) -> np.ndarray:
        names = dict(self.base, t=t, **dict(zip(self.names, (float(v) for v in c),
                                                strict=True)))
        return np.broadcast_to(evaluate(self.formula, names), t.shape).astype(float)

    def constants(self, theta) -> np.ndarray:
        out = []
        for value, (low, high, _, _) in zip(theta, self.ranges, strict=True):
            if low is not None and high is not None:
                out.append(float(low) + float(high - low) / (1 + math.exp(-value)))
            elif low is not None:
                out.append(float(low) + math.exp(value))
            elif high is not None:
                out.append(float(high) - math.exp(value))
            else:
                out.append(value)
        return np.array(out)

    def inside(self, j: int, value: float, slack: float) -> bool:
        low, high, _, _ = self.ranges[j]
        return (low is None or value - slack > low) and (high is None or value + slack < high)


def _fit(law: _Law, t: np.ndarray, q: np.ndarray):
    """Least squares of ``log q − log f`` over the constants: ``(c, cov, s2, dof, "")`` or
    ``(None, None, None, 0, reason)``."""
    from scipy.optimize import least_squares

    def residuals(theta):
        with np.errstate(all="ignore"):
            f = law.values(t, law.constants(theta))
            r = np.log(q) - np.log(f)
        return np.where(np.isfinite(r), r, 1e6)

    m = len(law.names)
    best = None
    for start in (0.0, -2.0, 2.0):
        try:
            found = least_squares(residuals, np.full(m, start), method="trf")
        except (InvalidArgument, ValueError, FloatingPointError):
            continue
        if best is None or found.cost < best.cost:
            best = found
    failed = None, None, None, 0
    if best is None or not np.all(np.abs(best.fun) < 1e5):
        return (*failed, "the law cannot be fitted to the quantity (f ≤ 0 or not finite)")
    c = law.constants(best.x)
    dof = len(t) - m
    if dof < 1:
        return (*failed, f"{len(t)} checkpoints for {m} constants: too few to fit")
    J = _jacobian(law, t, c)
    s2 = float(np.sum(best.fun ** 2)) / dof
    try:
        cov = s2 * np.linalg.inv(J.T @ J)
    except np.linalg.LinAlgError:
        return (*failed, "the constants are not identifiable from the fit (singular)")
    if not np.all(np.isfinite(cov)):
        return (*failed, "the constants are not identifiable from the fit")
    return c, cov, s2, dof, ""


def _jacobian(law: _Law, t: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``∂ log f / ∂ c_j`` at the points ``t`` (central differences)."""
    J = np.empty((len(t), len(c)))
    for j in range(len(c)):
        h = 1e-6 * max(1.0, abs(c[j]))
        up, down = c.copy(), c.copy()
        up[j] += h
        down[j] -= h
        with np.errstate(all="ignore"):
            J[:, j] = (np.log(law.values(t, up)) - np.log(law.values(t, down))) / (2 * h)
    return J


def _witness(law: _Law, c, half_widths, t, q, e, horizon: float, upper: bool):
    """A witness on the whole window: the constants at the safe end of their intervals (where
    ``f`` is larger at the horizon for ``<=``), and a scale constant (``f`` proportional to
    it) the smallest that bounds ``q`` beyond its error everywhere; ``(c, note)`` or
    ``(None, reason)``."""
    c = c.copy()
    at = np.array([horizon])
    for j in range(len(c)):
        probe = c.copy()
        probe[j] += 1e-6 * max(1.0, abs(c[j]))
        with np.errstate(all="ignore"):
            grows = float(law.values(at, probe)[0]) > float(law.values(at, c)[0])
        c[j] += half_widths[j] * (1 if grows == upper else -1)
    for j in range(len(c)):  # a scale constant: f(t; 2c_j) = 2 f(t; c_j)
        doubled = c.copy()
        doubled[j] *= 2
        f, f2 = law.values(t, c), law.values(t, doubled)
        if c[j] != 0 and np.allclose(f2, 2 * f, rtol=1e-12, atol=0):
            g = f / c[j]
            need = (q + e) / g if upper else (q - e) / g
            c[j] = float(np.max(need) * (1 + 1e-12)) if upper else float(np.min(need))
            if not law.inside(j, c[j], 0.0):
                return None, (f"the smallest {law.names[j]} that bounds q on the whole window, "
                              f"{c[j]:.6g}, is outside its range")
            return c, f"{law.names[j]} the smallest that bounds q on [t0, T]"
    margins = (law.values(t, c) - q) if upper else (q - law.values(t, c))
    if np.any(margins <= e):
        k = int(np.argmin(margins - e))
        return None, (f"with the constants at the safe ends of their intervals the bound fails "
                      f"at t = {t[k]:.4g} (add a scale constant, or a later from_time)")
    return c, "the constants at the safe ends of their intervals"


def _usable(t, q, e, t0: float) -> np.ndarray:
    """The checkpoints ``t ≥ t0`` that carry the law: ``q`` above its error, up to the first
    step of ``q`` within the errors of its ends (the error floor: nothing later is read)."""
    idx = np.flatnonzero((t >= t0) & (q > e) & np.isfinite(q))
    keep = []
    for a, b in zip(idx, idx[1:], strict=False):
        keep.append(a)
        if b != a + 1 or abs(q[b] - q[a]) <= e[a] + e[b]:
            break
    else:
        keep.extend(idx[-1:])
    return np.array(keep, dtype=int)


@register_conclusion(
    "exists", asymptotic=True,
    summary="There are constants in stated ranges with q(t) <= f(t; constants) (or >=) for "
            "all t >= from_time, e.g. ∃ C, λ > 0: diameter ≤ C e^(-λt).",
    needs="the checkpoints t >= from_time where q is read (above its error, before its error "
          "floor) split into a fit window (first two thirds) and a validation window; the "
          "constants fitted (least squares of log q − log f) on the tail of the fit window, "
          "each resolved inside its range (beyond κσ); holds (basis fit) when q stays within "
          "the fitted law's prediction band (κ × the prediction error, one-sided) at every "
          "validation checkpoint — out of sample — and a witness bounds q on the whole window "
          "(constants at the safe ends of their intervals, a scale constant the smallest that "
          "works), at T and at 3T/2; never violated by a run.",
    keys={"constants": "a table: each constant's range, e.g. { C = \"(0, inf)\", "
                       "lam = \"(0, inf)\" }",
          "quantity": "a named quantity or a scalar formula of the state (must be > 0 where "
                      "fitted)",
          "bound": "formula f over t, the constants and the initial names, e.g. "
                   "'C * exp(-lam * t)'",
          "relation": "'<=' (default: q ≤ f) or '>='",
          "variable": "the tokens of a named quantity: 'z' or 'x'",
          "from_time": "the statement is for t >= this (default 0)",
          "tail": "fraction of the fit window used to fit (default 1/2)"},
    required=("constants", "quantity", "bound"), validate=_validate_exists)
def judge_exists(evaluation):
    """Judge ``exists`` (module docstring)."""
    p, request = evaluation.parameters, evaluation.request
    upper = p.get("relation", "<=") == "<="
    t, q, e, reason = scalar_quantity(evaluation, p["quantity"], p.get("variable"), "exists")
    if reason:
        return inconclusive(request, reason)
    t0 = float(p.get("from_time", 0))
    law = _Law(evaluation, p["bound"], p["constants"])
    what = f"{p['quantity']} {p.get('relation', '<=')} {p['bound']}"
    usable = _usable(t, q, e, t0)
    if len(usable) < 2 * len(law.names) + 4:
        return inconclusive(request, f"{what}: only {len(usable)} checkpoints where q is read "
                            f"(above its error, before its floor): too few to fit "
                            f"{len(law.names)} constants and check them out of sample.")
    cut = t[usable[0]] + 2 * (t[usable[-1]] - t[usable[0]]) / 3
    fit_idx, check_idx = usable[t[usable] <= cut], usable[t[usable] > cut]
    k = max(len(law.names) + 2, math.ceil(float(p.get("tail", Fraction(1, 2))) * len(fit_idx)))
    tail = fit_idx[-k:]
    try:
        c, cov, s2, dof, why = _fit(law, t[tail], q[tail])
    except InvalidArgument as exc:
        return inconclusive(request, f"{what}: {exc}")
    if why:
        return inconclusive(request, f"{what}: {why}.")
    kappa, sigma = coverage_factor(dof), np.sqrt(np.diag(cov))
    evidence = {"fitted": {name: [float(v), float(s)] for name, v, s in zip(
        law.names, c, sigma, strict=True)}, "coverage": kappa,
        "fit_window": [float(t[tail[0]]), float(t[fit_idx[-1]])],
        "validation_window": [float(t[check_idx[0]]), float(t[check_idx[-1]])]}
    for j, name in enumerate(law.names):
        if not law.inside(j, c[j], kappa * sigma[j]):
            return inconclusive(request, f"{what}: the fit does not resolve {name} "
                                f"inside {p['constants'][name]} ({c[j]:.6g} ± κσ = "
                                f"{kappa * sigma[j]:.3g}).", evidence, basis=Basis.FIT)
    tc = t[check_idx]
    J = _jacobian(law, tc, c)
    relative = e[check_idx] / q[check_idx]  # q's error as a standard error of log q, as the
    band = kappa * np.sqrt(s2 + np.einsum("ij,jk,ik->i", J, cov, J) + relative ** 2)  # fits do
    excess = np.log(q[check_idx]) - np.log(law.values(tc, c))
    excess = excess if upper else -excess
    worst = int(np.argmax(excess - band))
    if excess[worst] > band[worst]:
        return inconclusive(request, f"{what}: at t = {tc[worst]:.4g}, out of sample, "
                            f"log q is {excess[worst]:.3g} {'above' if upper else 'below'}"
                            f" the law fitted on [{evidence['fit_window'][0]:.4g}, "
                            f"{evidence['fit_window'][1]:.4g}], beyond its prediction "
                            f"band {band[worst]:.3g}: evidence against (not a "
                            "violation).", evidence, basis=Basis.FIT)
    window = (t >= t0) & np.isfinite(q)
    witness, note = _witness(law, c, kappa * sigma, t[window], q[window], e[window],
                             float(t[-1]), upper)
    if witness is None:
        return inconclusive(request, f"{what}: {note}.", evidence, basis=Basis.FIT)
    evidence.update(witness=dict(zip(law.names, map(float, witness), strict=True)),
                    witness_note=note)
    fitted = ", ".join(f"{name} = {v:.4g} ± {kappa * s:.2g}" for name, v, s in zip(
        law.names, c, sigma, strict=True))
    shown = ", ".join(f"{name} = {v:.4g}" for name, v in evidence["witness"].items())
    return holds(
        request,
        f"{what} holds on the evidence of a fit: fitted on [{evidence['fit_window'][0]:.4g}, "
        f"{evidence['fit_window'][1]:.4g}] ({fitted}, each inside its range beyond κσ), the "
        f"law predicts q on [{tc[0]:.4g}, {tc[-1]:.4g}] out of sample (worst excess "
        f"{excess[worst]:.3g} ≤ band {band[worst]:.3g}, log units), and {shown} bounds q on "
        f"[{t0:.4g}, {t[-1]:.4g}] ({note}; basis: fit).", evidence=evidence,
        margin=float(band[worst] - excess[worst]), unit="log of the quantity",
        basis=Basis.FIT)


# --------------------------------------------------------------------------- theta
def _validate_theta(p: dict, source: str, where: str) -> None:
    check_quantity(p, source, where)
    check_expression(p.get("of"), "initial", source, f"{where}.of", extra_names=("t",))
    if "from_time" in p:
        _number(p, "from_time", source, where, nonnegative=True)
    check_tail(p, source, where)


@register_conclusion(
    "theta", asymptotic=True,
    summary="q(t) = Θ(g(t)) as t → ∞: c g ≤ q ≤ C g for large t, some 0 < c ≤ C.",
    needs="the ratio q/g on the checkpoints t >= from_time where q is above its error, fitted "
          "as t^s on the tail (with its intrinsic scatter); holds (basis fit) when the drift s "
          "is within κσ of 0, at T and at 3T/2; a resolved drift is evidence against "
          "(inconclusive); never violated by a run.",
    keys={"quantity": "a named quantity or a scalar formula of the state",
          "of": "the formula g(t) > 0 over t and the initial names, e.g. 't**-2'",
          "variable": "the tokens of a named quantity: 'z' or 'x'",
          "from_time": "the statement is about t >= this (default 0; g must be finite there)",
          "tail": "fraction of the checkpoints used (default 1/2)"},
    required=("quantity", "of"), validate=_validate_theta)
def judge_theta(evaluation):
    """Judge ``theta`` (module docstring)."""
    p, request = evaluation.parameters, evaluation.request
    t, q, e, reason = scalar_quantity(evaluation, p["quantity"], p.get("variable"), "theta")
    if reason:
        return inconclusive(request, reason)
    names = dict(initial_namespace(evaluation.instance), t=t)
    names.pop("phi1", None)
    try:
        with np.errstate(all="ignore"):
            g = np.broadcast_to(evaluate(p["of"], names), t.shape).astype(float)
    except InvalidArgument as exc:
        return inconclusive(request, f"g = {p['of']}: {exc}")
    use = _usable(t, q, e, float(p.get("from_time", 0)))
    use = use[np.isfinite(g[use]) & (g[use] > 0)]
    what = f"{p['quantity']} = Θ({p['of']})"
    if len(use) < 5:
        return inconclusive(request, f"{what}: only {len(use)} checkpoints where q is read "
                            "(above its error, before its floor) and g is finite and positive.")
    ratio, ratio_error = q[use] / g[use], e[use] / g[use]
    tail = float(p.get("tail", Fraction(1, 2)))
    try:
        line = fit_power_law(t[use], ratio, ratio_error, tail=tail)
    except InvalidArgument as exc:
        return inconclusive(request, f"{what}: {exc}")
    if not line.ok:
        return inconclusive(request, f"{what}: the ratio q/g could not be fitted on the "
                            f"tail ({line.reason}).", {}, basis=Basis.FIT)
    half = line.coverage * line.slope_error
    evidence = {"ratio_last": float(ratio[-1]), "drift_exponent": line.slope,
                "drift_exponent_error": line.slope_error, "coverage": line.coverage,
                "scatter": line.scatter, "tail_start": float(t[use][-line.n_points])}
    drift = f"q/g ~ t^s with s = {line.slope:.3g} ± κσ = {half:.2g} on the tail"
    if abs(line.slope) > half:
        return inconclusive(request, f"{what}: the ratio drifts ({drift}, resolved "
                            "away from 0): evidence against, not a violation; "
                            "integrate longer.", evidence, unit="exponent s", basis=Basis.FIT)
    return holds(
        request,
        f"{what} holds on the evidence of a fit: no resolved drift of the ratio ({drift}, "
        f"q/g ≈ {ratio[-1]:.4g} at t = {t[use][-1]:.4g}; basis: fit).", evidence=evidence,
        margin=float(half - abs(line.slope)), unit="exponent s", basis=Basis.FIT)
