r"""How a check turns the parts of its claim into one instance verdict.

A check splits its claim into parts, each a signed margin (positive: the claim is satisfied)
with an error estimate. Two combination rules are in use, and they are kept apart on purpose
because they pick the deciding part differently:

* :func:`combine_parts` (the ``d = 1`` checks of §6–§7): each part is already an
  :class:`~verify.claim.InstanceResult` judged by :func:`~verify.claim.judge_instance` with its
  own ``strict`` flag; the worst verdict decides, ties broken by the smallest ``margin / error``
  (an exact part, error 0, ranks last); every part is listed in ``evidence["parts"]`` and the
  reason counts the parts that hold.
* :func:`combine` (the polytope, hyperplane and codimension checks): each part is a
  :class:`SubCheck` (margin, error, sentence) judged only when picked, non-strictly; the largest
  violation beyond its error decides, else the first undecided part, else the holding part with
  the smallest ``margin − error`` among those with a numerical error; the counts of the statuses
  are in ``evidence["sub_checks"]`` and the reason is :func:`~verify.claim.judge_instance`'s.

Examples
--------
>>> from types import SimpleNamespace
>>> req = SimpleNamespace(instance=SimpleNamespace(name="f#0"), family=SimpleNamespace(
...     name="f"), seed=0)
>>> r = combine_parts(req, [judge_part(req, 1.0, 0.1, "a"), judge_part(req, 0.5, 0.1, "b")])
>>> r.verdict.value, r.margin, len(r.evidence["parts"])
('holds', 0.5, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verify.claim import InstanceResult, InstanceVerdict, judge_instance

__all__ = ["VERDICT_ORDER", "SubCheck", "combine", "combine_parts", "judge_part",
           "inconclusive"]

VERDICT_ORDER = {InstanceVerdict.VIOLATED: 0, InstanceVerdict.INCONCLUSIVE: 1,
                 InstanceVerdict.HOLDS: 2}


def judge_part(request, margin, error, what: str, evidence: dict | None = None,
               strict: bool = True) -> InstanceResult:
    """:func:`~verify.claim.judge_instance` on the request's instance, family and seed."""
    return judge_instance(margin, error, instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          strict=strict, evidence=evidence)


def inconclusive(request, reason: str, evidence: dict | None = None) -> InstanceResult:
    """An inconclusive result for the request's instance, saying why."""
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.INCONCLUSIVE, reason, evidence=evidence or {})


def combine_parts(request, parts: list[InstanceResult], evidence: dict | None = None
                  ) -> InstanceResult:
    """The instance verdict of a conjunction of parts: the worst part decides.

    Violated if some part is violated, inconclusive if some part is, else holds; the margin,
    error and reason are those of the deciding part (for holds: smallest ``margin / error``).
    Every part's verdict, margin, error and reason is kept in ``evidence["parts"]``.
    """
    def key(r):
        ratio = math.inf if not r.error else (r.margin or 0.0) / r.error
        return (VERDICT_ORDER[r.verdict], ratio)

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


@dataclass(frozen=True)
class SubCheck:
    """One signed margin (positive: the claim is satisfied) with its error estimate."""

    margin: float
    error: float
    what: str

    @property
    def status(self) -> str:
        """``"holds"``, ``"violated"`` or ``"undecided"`` (as in ``judge_instance``)."""
        m, e = self.margin, self.error
        if math.isnan(m) or not math.isfinite(e):
            return "undecided"
        if e == 0:
            return "holds" if m >= 0 else "violated"
        return "holds" if m > e else "violated" if -m > e else "undecided"


def combine(subs: list[SubCheck], request, evidence: dict) -> InstanceResult:
    """The instance result from its sub-checks: the worst violation, else the first undecided
    sub-check, else the tightest holding one with a numerical error (exact facts, error 0, are
    reported only when there is nothing else); all are counted in ``evidence["sub_checks"]``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> req = SimpleNamespace(instance=SimpleNamespace(name="f#0"), family=SimpleNamespace(
    ...     name="f"), seed=0)
    >>> r = combine([SubCheck(1.0, 0.1, "a"), SubCheck(0.5, 0.1, "b")], req, {})
    >>> r.verdict.value, r.reason
    ('holds', 'b holds with margin 0.5 > error estimate 0.1.')
    """
    counts = {"holds": 0, "violated": 0, "undecided": 0}
    for s in subs:
        counts[s.status] += 1
    evidence = dict(evidence, sub_checks=counts)
    if not subs:
        return inconclusive(request, "no sub-check could be formed (nothing to compare).",
                            evidence)
    violated = [s for s in subs if s.status == "violated"]
    undecided = [s for s in subs if s.status == "undecided"]
    if violated:
        pick = max(violated, key=lambda s: -s.margin - s.error)
    elif undecided:
        pick = undecided[0]
    else:
        numeric = [s for s in subs if s.error > 0] or subs  # exact facts have margin ±1
        pick = min(numeric, key=lambda s: s.margin - s.error)
    return judge_part(request, pick.margin, pick.error, pick.what, evidence, strict=False)
