r"""The conclusion ``clusters``: the number of distinct limits, decided as an **interval**.

The number of clusters of the limits is never read off one snapshot. Two intervals are kept:

* from the trend (evidence, re-checked at a longer horizon): the fitted limits of the tokens
  (:func:`~verify.judge._shared.token_fits`) are grouped by compatibility (max-norm distance
  within the sum of their error bars, :func:`certified_clusters`); when the grouping is
  certified (each group a clique, different groups separated beyond their bars) the count is
  at least the number of groups; it is at most that number only when every group's diameter
  tends to 0 by the trend rule (:func:`~verify.judge._trend.tends_to_zero`);
* from a certificate of the end state (:mod:`verify.analysis.end_certificates`): the certified
  limits grouped the same way give a certified lower bound (groups separated beyond the certified
  errors are distinct points); the upper bound is certified only where the certificate says
  which limits are equal (a hardmax leader map: every follower's limit *is* its leader's).

"At most k" holds when the trend's upper bound is ≤ k and is violated when the certified lower
bound exceeds k; "exactly k" holds when the trend interval is [k, k] and is violated when the
certified interval excludes k. Everything else is inconclusive, with both intervals in the
evidence.

Examples
--------
>>> labels, reps, ok = certified_clusters(np.array([[0.0], [1e-9], [1.0]]),
...                                       np.array([1e-8, 1e-8, 1e-8]))
>>> labels.tolist(), reps, ok
([0, 0, 1], [0, 2], True)
"""

from __future__ import annotations

import math

import numpy as np

from verify.analysis.evidence import Basis
from verify.analysis.observed_limits import coincide
from verify.exact.plain import fail
from verify.flow.trajectory import token_array
from verify.judge._decision import decide, inconclusive
from verify.judge._shared import COMMON_KEYS, _no_reference, token_fits, validate_common
from verify.judge._trend import tends_to_zero
from verify.judge._verdicts import InstanceResult
from verify.predict._evaluation import projected_tokens, quantity_error
from verify.predict._expressions import check_expression, diameter, evaluate, initial_namespace
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["certified_clusters", "cluster_groups", "count_interval", "judge_clusters"]


def certified_clusters(points: np.ndarray, errors: np.ndarray):
    """Group points by compatibility (max-norm distance ≤ sum of error bars).

    Returns ``(labels, reps, certified)``: a cluster label per point, one representative per
    cluster (its member with the smallest error bar), and whether the clustering is certified
    (each cluster a clique of compatible points; different clusters are separated by
    construction, being different connected components).
    """
    E = np.asarray(errors, dtype=float)
    n = len(points)
    close = coincide(points, E)
    labels = -np.ones(n, dtype=int)
    count = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        stack, labels[i] = [i], count
        while stack:
            j = stack.pop()
            for k in np.flatnonzero(close[j] & (labels < 0)):
                labels[k] = count
                stack.append(int(k))
        count += 1
    certified = all(np.all(close[np.ix_(labels == c, labels == c)]) for c in range(count))
    reps = [int(np.flatnonzero(labels == c)[np.argmin(E[labels == c])]) for c in range(count)]
    return labels, reps, bool(certified)


def cluster_groups(points: np.ndarray, errors: np.ndarray) -> list[list[int]]:
    """The clusters of :func:`certified_clusters` as lists of indices.

    >>> cluster_groups(np.array([[0.0], [1.0], [1e-9]]), np.array([1e-8, 1e-8, 1e-8]))
    [[0, 2], [1]]
    """
    labels, reps, _ = certified_clusters(points, errors)
    return [[int(i) for i in np.flatnonzero(labels == c)] for c in range(len(reps))]


def _trend_interval(ev) -> tuple[int | None, int | None, list, object]:
    """``(lo, hi, groups, weakest trend)`` from the fitted limits (``None``: unknown)."""
    fits = token_fits(ev)
    if not all(f.stabilised and math.isfinite(f.limit_error) for f in fits):
        return None, None, [], None
    L = np.array([np.atleast_1d(np.asarray(f.limit, dtype=float)) for f in fits])
    E = np.array([f.limit_error for f in fits])
    labels, reps, certified = certified_clusters(L, E)
    if not certified:
        return None, None, [], None
    groups = [[int(i) for i in np.flatnonzero(labels == c)] for c in range(len(reps))]
    weakest = None
    variable = ev.variable()
    run = projected_tokens(ev, token_array(ev.trajectory, variable))
    ref = projected_tokens(ev, token_array(ev.trajectory.reference_run, variable))
    for c, group in enumerate(groups):
        if len(group) < 2:
            continue
        D = np.array([diameter(z[group]) for z in run])
        err = quantity_error(D, np.array([diameter(z[group]) for z in ref]))
        trend = tends_to_zero(ev.trajectory.t, D, err, name=f"D_{c + 1}",
                              tail=float(ev.parameters.get("tail_fraction", 0.5)))
        if trend.status != "holds":
            return len(groups), None, groups, trend
        if weakest is None or trend.margin - trend.error < weakest.margin - weakest.error:
            weakest = trend
    return len(groups), len(groups), groups, weakest


def count_interval(ev) -> dict:
    """Both intervals of the module docstring, as plain data (``None``: unknown)."""
    lo, hi, groups, weakest = _trend_interval(ev)
    out = {"trend": [lo, hi], "groups": [[i + 1 for i in g] for g in groups][:20],
           "weakest": weakest, "certified": [None, None], "certificate": None}
    cert, why = ev.certificate()
    out["no_certificate"] = why if cert is None else f"the certificate is about {cert.variable}"
    if cert is not None and cert.variable == ev.variable():
        limit = projected_tokens(ev, np.asarray(cert.limit, dtype=float))
        gain = float(np.max(np.abs(projected_tokens(ev, np.eye(ev.instance.d))).sum(axis=0)))
        labels, reps, certified = certified_clusters(limit, gain * np.asarray(cert.limit_error))
        if certified:
            upper = cert.data.get("leader_of")
            distinct = None if upper is None else len(set(upper))
            out["certified"] = [len(reps), distinct]
            out["certificate"] = cert
    return out


def _target(ev, key: str) -> int:
    value = ev.parameters[key]
    if isinstance(value, str):
        value = float(evaluate(value, initial_namespace(ev.instance)).reshape(()))
        if value != round(value) or value < 1:
            raise ValueError(f"{key}: the formula gives {value}; it must be a whole number ≥ 1.")
    return int(value)


def _validate_clusters(p, source, where):
    validate_common(p, source, where)
    given = [k for k in ("equal", "at_most") if k in p]
    if len(given) != 1:
        fail(source, f"{where}.{given[1] if len(given) > 1 else 'equal'}", "give exactly one "
             f"of equal, at_most (found {', '.join(given) or 'none'}).")
    value = p[given[0]]
    if isinstance(value, str):
        check_expression(value, "initial", source, f"{where}.{given[0]}")
    elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
        fail(source, f"{where}.{given[0]}", f"{value!r} must be an integer ≥ 1 or a formula "
             "of the instance such as 'n' or 'd + 1'.")


@register_conclusion(
    "clusters", summary="the number of distinct limits (clusters) equals k / is at most k",
    needs="an interval for the count: from the fitted limits (grouped within their bars, each "
          "group's diameter → 0 by the trend) and from the certified limits of the end state; "
          "at most k holds when the trend's upper bound is ≤ k, is violated when the certified "
          "lower bound exceeds k; exactly k holds on the trend interval [k, k], is violated "
          "when the certified interval excludes k.",
    asymptotic=True, validate=_validate_clusters,
    keys={**COMMON_KEYS, "equal": "the number of clusters is exactly this (an integer or a "
                                  "formula such as 'n')",
          "at_most": "the number of clusters is at most this (an integer or a formula)"})
def judge_clusters(ev) -> InstanceResult:
    """The number of clusters of limits (``equal`` or ``at_most``), as an interval."""

    missing = _no_reference(ev)
    if missing:
        return missing
    exact = "equal" in ev.parameters
    try:
        k = _target(ev, "equal" if exact else "at_most")
    except ValueError as exc:
        return inconclusive(ev.request, str(exc))
    interval = count_interval(ev)
    (lo, hi), (c_lo, c_hi) = interval["trend"], interval["certified"]
    weakest = interval["weakest"]
    evidence = {"clusters_from_trend": [lo, hi], "clusters_certified": [c_lo, c_hi],
                "groups": interval["groups"]}
    said = f"exactly {k}" if exact else f"at most {k}"
    what = f"{said} cluster(s)"
    cert = interval["certificate"]
    if c_lo is not None and (c_lo > k or (exact and c_hi is not None and c_hi < k)):
        count = c_lo if c_lo > k else c_hi
        return decide(ev.request, -abs(count - k), 0, f"{what}: the certified limits form "
                      f"{'at least' if c_lo > k else 'at most'} {count} cluster(s)",
                      unit="clusters", evidence=evidence, certificate=cert.to_dict(),
                      basis=cert.basis)
    holds = hi is not None and (hi <= k if not exact else lo == hi == k)
    if holds:
        if weakest is None:  # every limit separated from every other: the count is the groups'
            return decide(ev.request, k - hi if not exact else 0, 0, f"{what} ({hi} groups of "
                          "pairwise separated fitted limits)", unit="clusters",
                          evidence=evidence, strict=False, basis=Basis.FIT)
        evidence["weakest_group"] = weakest.what
        return decide(ev.request, weakest.margin, weakest.error, f"{what} ({hi} groups of "
                      f"limits, each tending to one point; weakest: {weakest.what})",
                      unit=weakest.unit, evidence=evidence, basis=weakest.basis)
    why = (f"the count is in [{lo}, {hi if hi is not None else '?'}] by the trend"
           if lo is not None else "the token limits have not stabilised into certified groups")
    if weakest is not None and hi is None:
        why += f" ({weakest.what})"
    why += ("; certified: [" + ", ".join("?" if v is None else str(v) for v in (c_lo, c_hi))
            + "]" if c_lo is not None else f"; no certificate ({interval['no_certificate']})")
    return inconclusive(ev.request, f"{what} is undecided: {why} — integrate longer.", evidence)
