r"""Conclusions about the limit ``t → ∞``: ``converges``, ``clusters``, ``consensus``,
``limit``, ``attention`` and ``approach``.

Every conclusion here reduces to one of two decisions, both taken from the *trend* over the
checkpoints of the tail (the last ``tail_fraction`` of them, default 1/2), never from the final
time alone (design.md, "Verdicts"):

* the fitted limit of every token (:func:`token_fits`: :func:`verify.limits.
  fit_exponential_convergence` per token, with error estimates ``|z_i − z_i^{ref}|`` from the
  reference run) — ``converges`` and ``clusters``;
* a nonnegative distance :math:`D(t)` to the predicted object tends to 0
  (:func:`tends_to_zero`) — ``consensus`` (the diameter), ``limit``, ``approach``, the ``to``
  form of ``converges`` and the Boolean form of ``attention``. :math:`D` is computed on the
  run and on its reference run; its error estimate is :func:`~verify.conclusions._base.
  quantity_error` of the two plus the rounding of the distance.

Distances are Euclidean per token and the maximum over tokens. Facts read off a certified
hardmax graph or a certified clustering (counts, ranks, leader sets) are exact (error 0).

Examples
--------
>>> t = np.linspace(0, 10, 21)
>>> trend = tends_to_zero(t, 2 * np.exp(-t), np.full(21, 1e-14))
>>> trend.status, round(trend.margin, 6)
('holds', 1.0)
>>> tends_to_zero(t, 1 + np.exp(-t), np.full(21, 1e-14)).status     # tends to 1, not 0
'violated'
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.checks._parts import inconclusive, judge_part
from verify.checks._runs import hardmax_at, sig6
from verify.claim import InstanceResult
from verify.claim._plain import fail
from verify.conclusions._base import quantity_error, register_conclusion
from verify.conclusions._distances import _hull, _hyperplanes, _nearest, _subspace, hull_distance
from verify.conclusions._expressions import (
    check_expression,
    default_variable,
    diameter,
    evaluate,
    initial_namespace,
)
from verify.conclusions._trend import Trend, _known, _rate, tends_to_zero
from verify.errors import InvalidArgument
from verify.limits import fit_exponential_convergence
from verify.numerics._fits import tail_count

__all__ = ["Trend", "tends_to_zero", "token_fits", "hull_distance", "distance_series"]

_EPS = float(np.finfo(float).eps)
_COMMON = {"variable": "'z' (rescaled tokens, the default when the run has them) or 'x'",
           "tail_fraction": "fraction of the checkpoints (the last ones) used for the trend "
                            "(default 1/2)"}


# --------------------------------------------------------------------------- inputs of a judge
def _options(ev) -> tuple[str, float]:
    """``(variable, tail_fraction)`` of the conclusion, with the defaults."""
    p, traj = ev.parameters, ev.trajectory
    return (p.get("variable", default_variable(traj)),
            float(p.get("tail_fraction", Fraction(1, 2))))


def _no_reference(ev) -> InstanceResult | None:
    """Inconclusive when the run has no usable reference run (no error estimate)."""
    ref = ev.trajectory.reference_run
    if ref is None or ref.state.shape != ev.trajectory.state.shape:
        return inconclusive(ev.request, "the run has no reference run with the same checkpoints"
                            ", so no quantity has an error estimate.")
    return None


def _tokens(ev) -> tuple[np.ndarray, np.ndarray]:
    """The tokens ``(m, n, d)`` of the chosen variable on the run and on its reference run."""
    variable, _ = _options(ev)
    return (np.asarray(ev.trajectory.tokens(variable), dtype=float),
            np.asarray(ev.trajectory.reference_run.tokens(variable), dtype=float))


def token_fits(ev) -> list:
    """The limit fit of every token (:func:`~verify.limits.fit_exponential_convergence`, error
    ``max_c |z_ic − z_ic^{ref}|`` per checkpoint), cached in ``ev.cache``."""
    variable, tail = _options(ev)
    key = ("token_fits", variable, tail)
    if key not in ev.cache:
        Z, R = _tokens(ev)
        with np.errstate(invalid="ignore"):
            err = np.max(quantity_error(Z, R), axis=2)
        err = np.where(np.isfinite(err), err, np.inf)
        t = ev.trajectory.t
        ev.cache[key] = [fit_exponential_convergence(t, Z[:, i], err[:, i], tail=tail)
                         for i in range(Z.shape[1])]
    return ev.cache[key]


def distance_series(ev, distance) -> tuple[np.ndarray, np.ndarray]:
    """``D(t_k)`` and its error: ``distance(tokens) -> (value, solver error)`` on the run and
    on the reference run; error = :func:`quantity_error` + solver error + ``4 d ε max|z|``
    (rounding of the distance)."""
    Z, R = _tokens(ev)
    run = np.array([distance(z) for z in Z], dtype=float).reshape(len(Z), 2)
    ref = np.array([distance(z) for z in R], dtype=float).reshape(len(Z), 2)
    with np.errstate(invalid="ignore"):
        scale = np.max(np.linalg.norm(Z, axis=2), axis=1)
        err = quantity_error(run[:, 0], ref[:, 0]) + np.maximum(run[:, 1], ref[:, 1]) \
            + 4 * Z.shape[2] * _EPS * scale
    return run[:, 0], err


def _judge_distance(ev, distance, name: str, evidence: dict | None = None) -> InstanceResult:
    missing = _no_reference(ev)
    if missing:
        return missing
    D, err = distance_series(ev, distance)
    return tends_to_zero(ev.trajectory.t, D, err, tail=_options(ev)[1], name=name).judge(
        ev.request, evidence)


def _formula(ev, key: str) -> np.ndarray:
    return evaluate(ev.parameters[key], initial_namespace(ev.request.instance))


def _points(value: np.ndarray, d: int, key: str, rows: int | None = None) -> np.ndarray:
    """``value`` as a ``(k, d)`` float array (a d-vector is one row; ``rows`` = required k)."""
    a = np.atleast_2d(value) if value.ndim == 1 else value
    if a.ndim != 2 or a.shape[1] != d or a.shape[0] == 0 or (rows and a.shape[0] != rows) \
            or not np.all(np.isfinite(a)):
        want = f"({rows}, {d}) or ({d},)" if rows else f"(k, {d}) with k ≥ 1"
        raise InvalidArgument(f"{key}: the formula gives shape {value.shape}; it must be "
                              f"finite with shape {want} (d = {d}).")
    return a


# --------------------------------------------------------------------------- validation
def _number(value) -> bool:
    return isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)


def _positive_int(p: dict, key: str, source: str, where: str, low: int = 1) -> None:
    if key in p and (not isinstance(p[key], int) or isinstance(p[key], bool) or p[key] < low):
        fail(source, f"{where}.{key}", f"{p[key]!r} must be an integer ≥ {low}, e.g. {key} = 2.")


def _validate_common(p: dict, source: str, where: str, formulas: tuple = ()) -> None:
    if "variable" in p and p["variable"] not in ("z", "x"):
        fail(source, f"{where}.variable", f"{p['variable']!r} must be 'z' (rescaled tokens) or "
             "'x' (tokens).")
    if "tail_fraction" in p and not (_number(p["tail_fraction"]) and
                                     0 < p["tail_fraction"] <= 1):
        fail(source, f"{where}.tail_fraction", f"{p['tail_fraction']!r} must be a number in "
             "(0, 1], e.g. tail_fraction = 0.5.")
    for key in formulas:
        if key in p:
            check_expression(p[key], "initial", source, f"{where}.{key}")


def _exactly_one(p: dict, keys: tuple, source: str, where: str) -> str:
    given = [k for k in keys if k in p]
    if len(given) != 1:
        fail(source, f"{where}.{given[1] if len(given) > 1 else keys[0]}", "give exactly one of "
             f"{', '.join(keys)} (found {', '.join(given) or 'none'}).")
    return given[0]


def _validate_converges(p, source, where):
    _validate_common(p, source, where, ("to",))


def _validate_clusters(p, source, where):
    _validate_common(p, source, where)
    _positive_int(p, _exactly_one(p, ("equal", "at_most"), source, where), source, where)


def _validate_limit(p, source, where):
    _validate_common(p, source, where, ("equals",))


def _validate_attention(p, source, where):
    _validate_common(p, source, where)
    if not any(k in p for k in ("boolean", "rank_at_most", "leaders")):
        fail(source, f"{where}.boolean", "give at least one of boolean = true, rank_at_most = r,"
             " leaders = [indices].")
    if "boolean" in p and p["boolean"] is not True:
        fail(source, f"{where}.boolean", f"{p['boolean']!r} must be true (the limit of P is "
             "Boolean); omit the key otherwise.")
    _positive_int(p, "rank_at_most", source, where)
    leaders = p.get("leaders")
    if isinstance(leaders, str):
        check_expression(leaders, "initial", source, f"{where}.leaders")
    elif leaders is not None and not (isinstance(leaders, list) and leaders and all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in leaders)):
        fail(source, f"{where}.leaders", f"{leaders!r} must be a non-empty list of token indices "
             "(integers ≥ 0, from 0) or a formula, e.g. leaders = [0, 3].")


def _validate_approach(p, source, where):
    kind = _exactly_one(p, ("subspace", "hyperplanes", "polytope"), source, where)
    if "offsets" in p and kind != "hyperplanes":
        fail(source, f"{where}.offsets", "only goes with hyperplanes = \"<normals>\".")
    _validate_common(p, source, where, (kind, "offsets"))


# --------------------------------------------------------------------------- the conclusions
_FIT = ("the token limits are fitted over the tail (fit_exponential_convergence, errors from "
        "the reference run)")
_TREND = ("D(t) → 0 is decided by tends_to_zero: fitted limit L above its bar → violated; else "
          "holds when the decay is resolved (rate > κσ, or a power law in t), with error bars "
          "from the reference run")


@register_conclusion(
    "converges", summary="every token converges (to a point, or to the set of points `to`)",
    needs=f"{_FIT}: all stabilised → holds (margin the slowest rate, error κσ; a token at its "
          "error floor takes the rate of its earlier decay); a token whose differences grow "
          "beyond κσ → violated; else (also: nothing moves) inconclusive. With `to`: "
          f"D(t) = max_i min_p |z_i − p|; {_TREND}.",
    final_state=True, validate=_validate_converges,
    keys={**_COMMON, "to": "formula (initial data) of a k×d array of points every limit is one "
                           "of"})
def judge_converges(ev) -> InstanceResult:
    """Every token converges; with ``to``, to one of the given points."""
    missing = _no_reference(ev)
    if missing:
        return missing
    if "to" in ev.parameters:
        points = _points(_formula(ev, "to"), ev.request.instance.d, "to")
        return _judge_distance(ev, _nearest(points), "D", {"D": "max_i min_p |z_i - p|"})
    fits = token_fits(ev)
    kinds: dict = {}
    for f in fits:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    evidence = {"kinds": kinds, "largest_limit_error": sig6(max(f.limit_error for f in fits))}
    growing = [(i, f) for i, f in enumerate(fits) if f.kind == "diverging"
               and math.isfinite(f.rate)]
    if growing:
        i, f = max(growing, key=lambda p: -p[1].rate - p[1].coverage * p[1].rate_error)
        return judge_part(ev.request, f.rate, f.coverage * f.rate_error, f"every token "
                          f"converges (the differences of token {i} grow at rate {-f.rate:.4g})",
                          evidence)
    bad = [i for i, f in enumerate(fits) if not _known(f)]
    if bad:
        return inconclusive(ev.request, f"{len(bad)} of {len(fits)} token limits have not "
                            f"stabilised (e.g. token {bad[0]}: {fits[bad[0]].kind}: "
                            f"{fits[bad[0]].reason}); integrate longer.", evidence)
    variable, _ = _options(ev)
    Z, R = _tokens(ev)
    rates = []
    for i, f in enumerate(fits):
        rate = _rate(f)
        if rate is None:      # at the error floor over the tail: the rate of its earlier decay
            err = np.max(quantity_error(Z[:, i], R[:, i]), axis=1)
            rate = _rate(fit_exponential_convergence(ev.trajectory.t, Z[:, i], err, tail=1.0))
        if rate is not None:
            rates.append((i, rate))
    if not rates:
        return inconclusive(ev.request, "no token moves beyond its error estimate over the run "
                            "(an equilibrium to within the error): no trend to decide "
                            "convergence from.", evidence)
    i, (rate, half) = min(rates, key=lambda p: p[1][0] - p[1][1])
    evidence.update(slowest_token=i, slowest_rate=sig6(rate))
    return judge_part(ev.request, rate, half, f"every token converges (all limits stabilised; "
                      f"slowest {variable}_{i} at rate {rate:.4g})", evidence)


@register_conclusion(
    "clusters", summary="the number of distinct limits (clusters) equals k / is at most k",
    needs=f"{_FIT}, all stabilised; limits compatible within their bars are grouped, the "
          "grouping must be certified (groups are cliques, pairwise separated). More than k "
          "groups → violated (margin −distance of the closest separated pair, error its bar); "
          f"otherwise each group's diameter must tend to 0 ({_TREND}), the weakest group "
          "giving margin and error (all groups single tokens: the count is exact, error 0).",
    final_state=True, validate=_validate_clusters,
    keys={**_COMMON, "equal": "the number of clusters is exactly this",
          "at_most": "the number of clusters is at most this"})
def judge_clusters(ev) -> InstanceResult:
    """The number of clusters of limits (``equal`` or ``at_most``)."""
    from verify.checks._runs import fitted_limits
    from verify.checks.polytopes import certified_clusters

    missing = _no_reference(ev)
    if missing:
        return missing
    fits = token_fits(ev)
    bad = [i for i, f in enumerate(fits) if not _known(f)]
    if bad:
        return inconclusive(ev.request, f"the limits of tokens {bad[:5]} have not stabilised "
                            f"({fits[bad[0]].kind}: {fits[bad[0]].reason}); integrate longer.")
    L, E = fitted_limits(fits)
    labels, reps, certified = certified_clusters(L, E)
    evidence = {"groups": [[int(i) for i in np.flatnonzero(labels == c)]
                           for c in range(len(reps))][:20],
                "limits": [[sig6(v) for v in L[r]] for r in reps][:20],
                "limit_errors": [sig6(E[r]) for r in reps][:20]}
    if not certified:
        return inconclusive(ev.request, "the limits do not group into certified clusters (a "
                            "chain of limits each compatible with the next but not with each "
                            "other); integrate longer or at higher precision.", evidence)
    c = len(reps)
    exact, k = ("equal", ev.parameters["equal"]) if "equal" in ev.parameters else \
        ("at_most", ev.parameters["at_most"])
    said = "exactly" if exact == "equal" else "at most"
    if c > k:
        dist = np.max(np.abs(L[:, None] - L[None]), axis=2)
        bars = E[:, None] + E[None]
        gap = np.where(labels[:, None] != labels[None], dist - bars, np.inf)
        i, j = np.unravel_index(int(np.argmin(gap)), gap.shape)
        evidence.update(closest_pair=[int(i), int(j)], separation=sig6(dist[i, j]))
        return judge_part(ev.request, -float(dist[i, j]), float(bars[i, j]), f"{said} {k} "
                          f"clusters ({c} groups of limits, pairwise separated: the closest, "
                          f"tokens {i} and {j}, are {dist[i, j]:.4g} apart)", evidence)
    # Limits compatible within their bars are not yet one cluster: each group's diameter must
    # tend to 0 by the same trend rule as consensus; the weakest group decides.
    weakest = None
    for c_index in range(c):
        group = np.flatnonzero(labels == c_index)
        if len(group) < 2:
            continue
        D, err = distance_series(ev, lambda z, g=group: (diameter(z[g]), 0.0))
        trend = tends_to_zero(ev.trajectory.t, D, err, tail=_options(ev)[1],
                              name=f"D_{c_index}")
        if trend.status != "holds":
            return inconclusive(ev.request, f"the limits of tokens {group.tolist()[:10]} agree "
                                "within their error bars, but that they form one cluster is "
                                f"not decided: {trend.what}", evidence)
        if weakest is None or trend.margin - trend.error < weakest.margin - weakest.error:
            weakest = trend
    what = f"{said} {k} clusters ({c} groups of limits, each tending to one point)"
    if weakest is None:  # every limit is separated from every other: the count is certified
        margin = k - c if exact == "at_most" else (0 if c == k else c - k)
        return judge_part(ev.request, margin, 0, what, evidence, strict=False)
    evidence.update(weakest_group=weakest.what)
    if exact == "equal" and c < k:
        return judge_part(ev.request, -weakest.margin, weakest.error, what, evidence)
    return judge_part(ev.request, weakest.margin, weakest.error, what, evidence)


def _diameter(z: np.ndarray) -> tuple[float, float]:
    return diameter(z), 0.0


@register_conclusion(
    "consensus", summary="a single cluster: the diameter max_ij |z_i − z_j| tends to 0",
    needs=f"D(t) = max_ij |z_i − z_j|; {_TREND}. Unlike `converges`, two clusters violate it.",
    final_state=True, validate=lambda p, s, w: _validate_common(p, s, w), keys=dict(_COMMON))
def judge_consensus(ev) -> InstanceResult:
    """All tokens tend to one point."""
    return _judge_distance(ev, _diameter, "D", {"D": "max_ij |z_i - z_j|"})


@register_conclusion(
    "limit", summary="the limits equal a formula of the initial data",
    needs=f"D(t) = max_i |z_i(t) − E_i| for the formula E; {_TREND}.",
    final_state=True, validate=_validate_limit, required=("equals",),
    keys={**_COMMON, "equals": "formula (initial data): an n×d array of limits, or a d-vector "
                               "(the same limit for every token)"})
def judge_limit(ev) -> InstanceResult:
    """Every token tends to its predicted limit."""
    n, d = ev.request.instance.n, ev.request.instance.d
    value = _formula(ev, "equals")
    E = np.broadcast_to(value, (n, d)) if value.shape == (d,) else _points(value, d, "equals", n)

    def distance(z):
        return float(np.max(np.linalg.norm(z - E, axis=1))), 0.0
    return _judge_distance(ev, distance, "D", {"D": "max_i |z_i - E_i|"})


def _offdiagonal_gap(P: np.ndarray) -> np.ndarray:
    return np.max(np.minimum(P, 1 - P), axis=(1, 2))


@register_conclusion(
    "attention", summary="the limit of P is Boolean / has rank ≤ r / has the given leaders",
    needs="the certified hardmax graph at the last checkpoint (scores with their error radius) "
          "must have no undecided token and its Boolean limit must not change over the tail "
          "(certified graphs of the tail checkpoints); rank and leaders are then exact "
          "(error 0); Boolean also needs B(t) = max_ij min(P_ij, 1 − P_ij) → 0 "
          "(tends_to_zero, errors from the reference run).",
    final_state=True, validate=_validate_attention,
    keys={"tail_fraction": _COMMON["tail_fraction"], "boolean": "true: the limit of P is a "
          "0/1 matrix", "rank_at_most": "the limit of P has rank at most this",
          "leaders": "the leaders (tokens followed in the limit): a list of indices or a "
                     "formula (initial data) giving them"})
def judge_attention(ev) -> InstanceResult:
    """Boolean limit, its rank and its leaders, from the certified hardmax graph."""
    from verify.checks._parts import combine_parts
    from verify.graph import boolean_limit, boolean_limit_rank, leaders, undecided_nodes

    missing = _no_reference(ev)
    if missing:
        return missing
    p, req, traj = ev.parameters, ev.request, ev.trajectory
    G = hardmax_at(traj, -1)
    undecided = sorted(undecided_nodes(G))
    if undecided:
        return inconclusive(req, f"the hardmax graph at t = {traj.t[-1]:.4g} is not certified "
                            f"for tokens {undecided[:10]} (score margins within their error); "
                            "integrate longer or at higher precision.")
    n = req.instance.n
    P_star, found = boolean_limit(G, n), sorted(leaders(G))
    m = len(traj.times)
    for k in range(m - tail_count(m, _options(ev)[1]), m - 1):  # the limit, not a passing state
        G_k = hardmax_at(traj, k)
        if not undecided_nodes(G_k) and not np.array_equal(boolean_limit(G_k, n), P_star):
            return inconclusive(req, f"the certified hardmax graph still changes over the tail "
                                f"(t = {traj.t[k]:.4g} differs from t = {traj.t[-1]:.4g}): the "
                                "limit of P is not read off yet; integrate longer.")
    evidence = {"leaders": found, "rows_with_ties": int(np.sum(P_star.sum(axis=1) > 1))}
    parts = []
    if p.get("boolean"):
        if evidence["rows_with_ties"]:
            parts.append(inconclusive(req, "some rows of the certified hardmax graph follow "
                                      "several tied leaders; whether P → a Boolean matrix "
                                      "is not decided by the hardmax graph."))
        else:
            B = _offdiagonal_gap(np.asarray(traj.attention, dtype=float))
            Br = _offdiagonal_gap(np.asarray(traj.reference_run.attention, dtype=float))
            err = quantity_error(B, Br) + 2 * _EPS
            parts.append(tends_to_zero(traj.t, B, err, tail=_options(ev)[1], name="B")
                         .judge(req, {"B": "max_ij min(P_ij, 1 - P_ij)"}))
    if "rank_at_most" in p:
        rank = boolean_limit_rank(G)
        parts.append(judge_part(req, p["rank_at_most"] - rank, 0, f"the Boolean limit has "
                                f"rank {rank} ≤ {p['rank_at_most']}", {"rank": rank},
                                strict=False))
    if "leaders" in p:
        want = p["leaders"]
        if isinstance(want, str):
            value = _formula(ev, "leaders").ravel()
            if not np.all((value == np.round(value)) & (value >= 0) & (value < n)):
                raise InvalidArgument(f"leaders: the formula gives {value.tolist()}; it must "
                                      f"give token indices 0..{n - 1}.")
            want = value.astype(int).tolist()
        want = sorted(set(int(i) for i in want))
        miss = set(want) ^ set(found)
        parts.append(judge_part(req, -len(miss), 0, f"the leaders are {want} (certified: "
                                f"{found})", {"expected_leaders": want}, strict=False))
    return parts[0] if len(parts) == 1 else combine_parts(req, parts, evidence)


@register_conclusion(
    "approach", summary="the tokens approach a subspace, a union of hyperplanes or a polytope",
    needs=f"D(t) = max_i dist(z_i, set) (Euclidean; to a polytope with a certified gap between "
          f"an upper and a dual lower bound added to the error); {_TREND}.",
    final_state=True, validate=_validate_approach,
    keys={**_COMMON, "subspace": "formula (initial data): k×d rows spanning the subspace",
          "hyperplanes": "formula: m×d normals; the set is the union of the hyperplanes",
          "offsets": "formula: the m offsets b_j of <n_j, z> = b_j (default 0)",
          "polytope": "formula: points whose convex hull is the set"})
def judge_approach(ev) -> InstanceResult:
    """Every token's distance to the set tends to 0."""
    p, d = ev.parameters, ev.request.instance.d
    if "subspace" in p:
        return _judge_distance(ev, _subspace(_points(_formula(ev, "subspace"), d, "subspace")),
                               "D", {"D": "max_i dist(z_i, subspace)"})
    if "polytope" in p:
        return _judge_distance(ev, _hull(_points(_formula(ev, "polytope"), d, "polytope")),
                               "D", {"D": "max_i dist(z_i, conv(points))"})
    normals = _points(_formula(ev, "hyperplanes"), d, "hyperplanes")
    if np.any(np.linalg.norm(normals, axis=1) == 0):
        raise InvalidArgument("hyperplanes: a normal is zero; every row must be a nonzero "
                              "normal vector.")
    offsets = np.zeros(len(normals)) if "offsets" not in p else _formula(ev, "offsets")
    if offsets.size not in (1, len(normals)):
        raise InvalidArgument(f"offsets: the formula gives {offsets.size} values; it must give "
                              f"one per hyperplane ({len(normals)}).")
    offsets = np.broadcast_to(offsets.ravel(), (len(normals),))
    return _judge_distance(ev, _hyperplanes(normals, offsets), "D",
                           {"D": "max_i min_j |<n_j, z_i> - b_j| / |n_j|"})
