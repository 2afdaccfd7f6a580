r"""Conclusions about the limit ``t → ∞``: ``converges``, ``consensus``, ``limit``, ``approach``
and ``tends`` (``clusters`` and ``attention`` are in their own modules).

Every one of them reduces to a nonnegative distance :math:`D(t)` to what is claimed — the
diameter, the distance of each token to its predicted limit or to a predicted set — computed
on the run and on its reference run (error: :func:`~verify.predict._evaluation.quantity_error`
plus the rounding of the distance and the error of the prediction). Then:

* **holds** when :math:`D(t) \to 0` is supported by the trend over the tail
  (:func:`~verify.judge._trend.tends_to_zero`: a resolved decay);
* **violated** only when the end state has a certificate (:mod:`verify.analysis.end_certificates`)
  and the distance *at the certified limit* exceeds its error bound (the Lipschitz bound of
  :math:`D` times the limit's error, plus the prediction's error); the certificate is attached;
* otherwise **inconclusive**, with the trend (also a trend against the claim, which is evidence
  only) and why there is no certificate; the engine then extends the horizon.

Distances are Euclidean per token, the maximum over tokens. A conclusion may read the tokens
``z`` or ``x`` (``variable``) and apply a linear ``functional`` ``W`` first (``W z_i``: e.g.
the coordinates of :math:`\pi_F z_i` in Theorem 5.2, or :math:`\varphi_1^*(z_i)`).

Examples
--------
>>> from types import SimpleNamespace
>>> from verify.claim import CheckRequest
>>> from verify.vocabulary.conclusions import ConclusionSpec
>>> from verify.predict._evaluation import Evaluation
>>> from verify.model import Instance, Model
>>> from verify.flow.simulate import simulate
>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], ["3/2", "1/2"]], name="f#0")
>>> req = CheckRequest(None, SimpleNamespace(name="f"), inst, None, 8, 17, "float64")
>>> traj = simulate(inst, 8, checkpoints=17)
>>> judge_consensus(Evaluation(req, traj, ConclusionSpec("consensus", {}))).verdict.value
'violated'
"""

from __future__ import annotations

import math

import numpy as np

from verify.analysis.end_certificates import linear_flow
from verify.analysis.evidence import Basis, figure_convergence, sig6
from verify.analysis.observed_limits import fit_exponential_convergence
from verify.digits import plus_minus, trusted
from verify.errors import InvalidArgument
from verify.exact.plain import fail
from verify.judge._decision import decide, inconclusive
from verify.judge._distances import (
    boundary_distance,
    hull_distance,
    hyperplanes_distance,
    nearest_distance,
    subspace_distance,
)
from verify.judge._quantities import check_quantity, quantity_or_reason
from verify.judge._shared import (
    COMMON_KEYS,
    _functional_error,
    _no_reference,
    _tail,
    _tokens,
    formula_or_prediction,
    token_fits,
    validate_common,
)
from verify.judge._trend import resolved_rate, tends_to_zero
from verify.judge._verdicts import InstanceResult
from verify.numerics import ulps
from verify.predict._evaluation import Value, _functional, projected_tokens, quantity_error
from verify.predict._expressions import diameter, evaluate, initial_namespace
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_converges", "judge_consensus", "judge_limit", "judge_approach", "judge_tends",
           "judge_distance", "TREND_RULE"]

TREND_RULE = ("holds when D(t) → 0 is supported by the trend over the tail (a resolved decay, "
              "errors from the reference run); violated only when the end state is certified "
              "(stable equilibrium, invariant point, hardmax leader map) and D at the certified "
              "limit exceeds its error; else inconclusive (a trend against the claim is "
              "evidence, not a violation)")


def _distance_series(ev, distance) -> tuple[np.ndarray, np.ndarray]:
    """``D(t_k)`` on the run and its error (reference run, the distance's own bound, rounding)."""
    Z, R = _tokens(ev)
    run = np.array([distance(z) for z in Z], dtype=float).reshape(len(Z), 2)
    ref = np.array([distance(z) for z in R], dtype=float).reshape(len(Z), 2)
    with np.errstate(invalid="ignore"):
        scale = np.max(np.linalg.norm(Z, axis=2), axis=1)
        err = quantity_error(run[:, 0], ref[:, 0]) + np.maximum(run[:, 1], ref[:, 1]) \
            + ulps(4 * Z.shape[2], scale)  # of the largest norm (DIFFERENCE_ULPS = 8 elsewhere)
    return run[:, 0], err


def judge_distance(ev, distance, what: str, *, pairwise: bool = False,
                   extra_error: float = 0.0, extra_basis: Basis = Basis.EXACT,
                   evidence: dict | None = None) -> InstanceResult:
    """The rule of the module docstring for ``D = distance(tokens)``.

    Parameters
    ----------
    distance : callable
        ``distance(tokens (n×k)) -> (value, its own error bound)``, 1-Lipschitz per token in
        the Euclidean norm (``pairwise``: in each of two tokens, e.g. a diameter).
    what : str
        What ``D → 0`` states, for the reasons.
    extra_error : float
        The error of the prediction the distance is taken to (max-norm).
    extra_basis : Basis
        The basis of that prediction's error: a violation is never stronger.
    """
    missing = _no_reference(ev)
    if missing:
        return missing
    D, err = _distance_series(ev, distance)
    err = err + extra_error * math.sqrt(_width(ev))
    if not (np.all(np.isfinite(D)) and np.all(np.isfinite(err))):
        return inconclusive(ev.request, f"{what}: the distance is not finite at some "
                            "checkpoint (overflow of x = e^(tV) z?); use variable 'z' or a "
                            "shorter horizon.", evidence)
    t = ev.trajectory.t
    trend = tends_to_zero(t, D, err, tail=_tail(ev), name="D")
    record = dict(evidence or {}, D=what)
    record["figure"] = {**record.get("figure", {}), "convergence": figure_convergence(
        t, D, err, trend.evidence.get("rate", math.nan), t[len(t) // 2], f"D(t): {what}")}
    if trend.status == "holds":
        return trend.judge(ev.request, record)
    record["_largest"] = float(np.max(D - err))
    return certified_violation(ev, distance, what, trend, record, pairwise=pairwise,
                               extra_error=extra_error, extra_basis=extra_basis)


def certified_violation(ev, distance, what: str, trend, record: dict, *, pairwise: bool,
                        extra_error: float, extra_basis: Basis = Basis.EXACT) -> InstanceResult:
    """Violated when the end state is certified and ``distance`` at its certified limit
    exceeds the error bound; holds when the end is certified at ``D`` within its bound of 0
    after ``D`` fell by more than that bound (``record["_largest"]``: the largest value of
    ``D`` minus its error over the run); else inconclusive with the trend and the reason. The
    basis is the weakest of the certificate's and the prediction's (``extra_basis``)."""
    cert, why = ev.certificate()
    variable = ev.variable()
    if cert is None or cert.variable != variable:
        why = why if cert is None else (f"the certificate is about {cert.variable}, the "
                                        f"conclusion about {variable}")
        record.pop("_largest", None)
        return inconclusive(ev.request, f"{trend.what}; no certificate that the end will not "
                            f"change ({why}) — integrate longer.", {**record, **trend.evidence},
                            unit=trend.unit)
    limit = projected_tokens(ev, np.asarray(cert.limit, dtype=float))
    value, own = distance(limit)
    W = _functional(ev)
    gain = 1.0 if W is None else float(np.max(np.linalg.norm(W.array, axis=1)))
    k = limit.shape[1]
    bar = (2 if pairwise else 1) * math.sqrt(k) * gain * float(np.max(cert.limit_error)) \
        + own + extra_error * math.sqrt(k) + _functional_error(ev, limit) \
        + ulps(4 * k, float(np.max(np.abs(limit))))  # as in _distance_series
    record = {**record, **trend.evidence, "D_at_certified_limit": sig6(value)}
    basis = Basis.weakest(cert.basis, extra_basis, Basis.EXACT if W is None else W.basis)
    if value > bar:
        record.pop("_largest", None)
        return decide(ev.request, -value, bar, f"{what} (D at the certified limit is "
                      f"{trusted(value, bar)})", unit=f"Euclidean distance ({variable})",
                      evidence=record, certificate=cert.to_dict(), basis=basis)
    largest = float(record.get("_largest", math.nan))
    if largest - value > bar:  # the end is certified at D ≈ 0, after a resolved fall
        return decide(ev.request, largest - value, bar, f"{what} (D fell from "
                      f"{trusted(largest, bar)} to {trusted(value, bar)} at the certified limit)",
                      unit=f"drop of D ({variable})",
                      evidence={k: v for k, v in record.items() if k != "_largest"},
                      certificate=cert.to_dict(), basis=Basis.weakest(basis, Basis.ESTIMATE))
    return inconclusive(ev.request, f"{trend.what}; the certified limit ({cert.kind}) is "
                        f"within its error bound {bar:.2g} of the claim (D = {value:.3g}), but "
                        "the trend does not resolve the approach yet — integrate longer.",
                        record, unit=trend.unit)


def _points(value: np.ndarray, k: int, key: str, rows: int | None = None) -> np.ndarray:
    """``value`` as a ``(m, k)`` float array (a k-vector is one row; ``rows`` = required m)."""
    a = np.atleast_2d(value) if value.ndim == 1 else value
    if a.ndim != 2 or a.shape[1] != k or a.shape[0] == 0 or (rows and a.shape[0] != rows) \
            or not np.all(np.isfinite(a)):
        want = f"({rows}, {k}) or ({k},)" if rows else f"(m, {k}) with m ≥ 1"
        raise InvalidArgument(f"{key}: gives shape {value.shape}; it must be finite with shape "
                              f"{want}.")
    return a


def _width(ev) -> int:
    """Dimension of the (projected) tokens."""
    W = _functional(ev)
    return ev.instance.d if W is None else W.array.shape[0]


def _exactly_one(p: dict, keys: tuple, source: str, where: str) -> str:
    given = [k for k in keys if k in p]
    if len(given) != 1:
        fail(source, f"{where}.{given[1] if len(given) > 1 else keys[0]}", "give exactly one of "
             f"{', '.join(keys)} (found {', '.join(given) or 'none'}).")
    return given[0]


# --------------------------------------------------------------------------- the conclusions
@register_conclusion(
    "converges", summary="every token converges (to a point, or to a point of the set `to`)",
    needs="without `to`: the limit fit of every token (fit_exponential_convergence, errors from "
          "the reference run) must be stabilised and resolve a decay (margin the slowest rate, "
          "error κσ); never violated by a trend. With `to`: D(t) = max_i min_p |z_i − p|; "
          + TREND_RULE + ".",
    asymptotic=True, keys={**COMMON_KEYS, "to": "formula (initial data) or prediction of the "
                                                 "finite set of points every limit is one of"},
    validate=lambda p, s, w: validate_common(p, s, w, {"to": ("points",)}))
def judge_converges(ev) -> InstanceResult:
    """Every token converges; with ``to``, to one of the given points."""

    missing = _no_reference(ev)
    if missing:
        return missing
    if "to" in ev.parameters:
        target = ev.value("to")
        points = _points(target.array, _width(ev), "to")
        return judge_distance(ev, nearest_distance(points), "every token converges to one of "
                              f"the {len(points)} target points p (D = max_i min_p |z_i − p|)",
                              extra_error=target.error, extra_basis=target.basis,
                              evidence=target.evidence)
    fits = token_fits(ev)
    kinds: dict = {}
    for f in fits:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    evidence = {"kinds": kinds, "largest_limit_error": sig6(max(f.limit_error for f in fits))}
    bad = [i for i, f in enumerate(fits) if not (f.stabilised and math.isfinite(f.limit_error))]
    if bad:
        certificate = linear_flow(ev.instance, ev.trajectory)
        if certificate is not None:
            return decide(ev.request, -1, 0, "every token converges (the linear flow keeps "
                          f"it moving: the root {certificate['root']}, exact)",
                          unit="exact decision", evidence=evidence, certificate=certificate,
                          basis=Basis.CERTIFICATE)
        return inconclusive(ev.request, f"{len(bad)} of {len(fits)} token limits have not "
                            f"stabilised (e.g. token {bad[0] + 1}: {fits[bad[0]].kind}: "
                            f"{fits[bad[0]].reason}); integrate longer.", evidence)
    Z, R = _tokens(ev)
    rates = []
    for i, f in enumerate(fits):
        rate = resolved_rate(f)
        if rate is None:  # at the error floor over the tail: the rate of its earlier decay
            err = np.max(quantity_error(Z[:, i], R[:, i]), axis=1)
            rate = resolved_rate(fit_exponential_convergence(ev.trajectory.t, Z[:, i], err,
                                                              tail=1.0))
        if rate is not None:
            rates.append((i, rate))
    if not rates:
        return inconclusive(ev.request, "no token moves beyond its error estimate over the run "
                            "(an equilibrium to within the error): no trend to decide "
                            "convergence from.", evidence)
    i, (rate, half) = min(rates, key=lambda p: p[1][0] - p[1][1])
    evidence.update(slowest_token=i + 1, slowest_rate=sig6(rate))
    return decide(ev.request, rate, half, f"every token converges (all limits stabilised; "
                  f"slowest: token {i + 1} at rate {plus_minus(rate, half)})",
                  unit="rate (1/time)", evidence=evidence, basis=Basis.FIT)


def _diameter(z: np.ndarray) -> tuple[float, float]:
    return diameter(z), 0.0


@register_conclusion(
    "consensus", summary="a single cluster: the diameter max_ij |z_i − z_j| tends to 0",
    needs=f"D(t) = max_ij |z_i − z_j|; {TREND_RULE}. Unlike `converges`, two clusters violate "
          "it.", asymptotic=True, keys=dict(COMMON_KEYS),
    validate=lambda p, s, w: validate_common(p, s, w))
def judge_consensus(ev) -> InstanceResult:
    """All tokens tend to one point."""
    return judge_distance(ev, _diameter, "consensus (D = max_ij |z_i − z_j| → 0)",
                          pairwise=True)


@register_conclusion(
    "limit", summary="the limit of every token equals a formula of the initial data or a "
                     "prediction",
    needs=f"D(t) = max_i |z_i(t) − E_i| for the predicted limits E; {TREND_RULE}.",
    asymptotic=True, required=("equals",),
    validate=lambda p, s, w: validate_common(p, s, w, {"equals": ("targets", "points")}),
    keys={**COMMON_KEYS, "equals": "formula (initial data) or prediction: an n×k array of "
                                   "limits, or a k-vector (the same limit for every token)"})
def judge_limit(ev) -> InstanceResult:
    """Every token tends to its predicted limit."""
    n, k = ev.instance.n, _width(ev)
    target = ev.value("equals")
    value = target.array
    E = np.broadcast_to(value, (n, k)) if value.shape == (k,) else _points(value, k, "equals", n)

    def distance(z):
        return float(np.max(np.linalg.norm(z - E, axis=1))), 0.0
    return judge_distance(ev, distance, "every token tends to its predicted limit "
                          "(D = max_i |z_i − E_i|)", extra_error=target.error,
                          extra_basis=target.basis, evidence=target.evidence)


def _validate_approach(p, source, where):
    kind = _exactly_one(p, ("subspace", "hyperplanes", "polytope", "boundary"), source, where)
    if "offsets" in p and kind != "hyperplanes":
        fail(source, f"{where}.offsets", "only goes with hyperplanes = \"<normals>\".")
    gives = {"subspace": ("rows",), "hyperplanes": ("hyperplanes", "rows"),
             "polytope": ("points", "polytope"), "boundary": ("polytope", "points")}
    validate_common(p, source, where, {kind: gives[kind], "offsets": ()})


@register_conclusion(
    "approach", summary="the tokens approach a subspace, a union of hyperplanes, a polytope or "
                        "the boundary of a polytope together with the origin",
    needs=f"D(t) = max_i dist(z_i, set) (Euclidean; to a polytope with a certified gap between "
          f"an upper and a dual lower bound added to the error); {TREND_RULE}.",
    asymptotic=True, validate=_validate_approach,
    keys={**COMMON_KEYS, "subspace": "formula or prediction: k×d rows spanning the subspace",
          "hyperplanes": "formula or prediction: m×d normals (a prediction may also give the "
                         "offsets); the set is the union of the hyperplanes",
          "offsets": "formula: the m offsets b_j of <n_j, z> = b_j (default 0)",
          "polytope": "formula or prediction: points whose convex hull is the set",
          "boundary": "formula or prediction: points whose convex hull K gives the set "
                      "∂K ∪ {0} (Theorem 5.2)"})
def judge_approach(ev) -> InstanceResult:
    """Every token's distance to the set tends to 0."""
    p, k = ev.parameters, _width(ev)
    key = next(key for key in ("subspace", "hyperplanes", "polytope", "boundary") if key in p)
    given = ev.value(key)
    if key == "subspace":
        distance, what = subspace_distance(_points(given.array, k, key)), "a subspace"
    elif key == "polytope":
        distance, what = hull_distance(_points(given.array, k, key)), "a polytope"
    elif key == "boundary":
        distance, what = boundary_distance(_points(given.array, k, key)), "∂K ∪ {0}"
    else:
        normals, offsets = _hyperplanes(ev, given, k)
        distance, what = hyperplanes_distance(normals, offsets), "a union of hyperplanes"
    functional = _functional(ev)  # its evidence too (e.g. whether F ⊥ G: `safe_case`)
    evidence = {**(functional.evidence if functional is not None else {}), **given.evidence}
    return judge_distance(ev, distance, f"every token approaches {what} (D = max_i dist(z_i, "
                          "set))", extra_error=given.error, extra_basis=given.basis,
                          evidence=evidence)


def _hyperplanes(ev, given: Value, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Normals and offsets: a prediction of hyperplanes gives rows ``[n_j, b_j]``; a formula
    gives the normals and ``offsets`` (default 0) the offsets."""
    if given.source == "prediction" and given.array.shape[-1] == k + 1:
        table = _points(given.array, k + 1, "hyperplanes")
        normals, offsets = table[:, :k], table[:, k]
    else:
        normals = _points(given.array, k, "hyperplanes")
        offsets = np.zeros(len(normals)) if "offsets" not in ev.parameters else \
            evaluate(ev.parameters["offsets"], initial_namespace(ev.instance)).ravel()
    if np.any(np.linalg.norm(normals, axis=1) == 0):
        raise InvalidArgument("hyperplanes: a normal is zero; every row must be a nonzero "
                              "normal vector.")
    if offsets.size not in (1, len(normals)):
        raise InvalidArgument(f"offsets: gives {offsets.size} values; it must give one per "
                              f"hyperplane ({len(normals)}).")
    return normals, np.broadcast_to(offsets.ravel(), (len(normals),))


def _validate_tends(p, source, where):
    check_quantity(p, source, where)
    formula_or_prediction(p, "to", (), source, where)
    if "tail_fraction" in p:
        validate_common({"tail_fraction": p["tail_fraction"]}, source, where)


@register_conclusion(
    "tends", summary="a scalar quantity q(t) tends to a value (default 0)",
    needs="D(t) = |q(t) − value| with q on the run and on its reference run; holds when "
          "D → 0 is supported by the trend; never violated by a trend (no certificate reads "
          "an arbitrary quantity at the limit); else inconclusive.",
    asymptotic=True, required=("quantity",), validate=_validate_tends,
    keys={"quantity": "a named quantity (diameter, spread, max-norm, hull-volume, "
                      "attention-gap) or a scalar formula over t, z, x, P, x0, V, ...",
          "to": "formula (initial data): the limit value (default 0)",
          "variable": COMMON_KEYS["variable"], "tail_fraction": COMMON_KEYS["tail_fraction"]})
def judge_tends(ev) -> InstanceResult:
    """A quantity tends to a value: its distance to the value tends to 0 by the trend rule."""

    p = ev.parameters
    values, errors, reason = quantity_or_reason(ev, p["quantity"], p.get("variable"))
    if reason:
        return inconclusive(ev.request, reason)
    target = 0.0 if "to" not in p else float(
        evaluate(p["to"], initial_namespace(ev.instance)).reshape(()))
    D = np.abs(values - target)
    trend = tends_to_zero(ev.trajectory.t, D, errors, tail=_tail(ev), name="D")
    what = f"{p['quantity']} → {target:.6g}"
    return trend.judge(ev.request, {"quantity": p["quantity"], "value_at_T": sig6(values[-1]),
                                    "D": what})
