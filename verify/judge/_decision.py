r"""Decisions: one verdict type, built one way, combined one way.

A judge reduces its conclusion on one instance to a signed **margin** (positive: the conclusion
holds with that much room) and the **error** of that margin, both in one named **unit**, and
the **basis** the decision rests on (:class:`~verify.claim.Basis`: exact, enclosure,
certificate, estimate, fit, evidence — the weakest of its inputs). :func:`decide` applies the
rule of :func:`verify.claim.judge_instance`: an estimate is multiplied by the measured safety
factor κ (:data:`~verify.numerics.ESTIMATE_SAFETY`), then *holds* only when
``margin > error``, *violated* only when ``-margin > error``, otherwise *inconclusive*. A
decision about ``t → ∞`` also carries its **certificate** (why the observed end will not
change; :mod:`verify.analysis.end_certificates`), whose basis it cannot exceed. Only a violation on
a rigorous basis (exact, enclosure, certificate) can refute a claim.

:func:`combine` is the one way several parts (the conclusions of a claim, or the parts of one
conclusion) make an instance verdict: parts that do not apply (``when``) are left out; then the
worst verdict decides — violated, else inconclusive, else holds — and among parts of that
verdict the one with the smallest ``margin / error`` (the most clearly violated, or the
tightest hold; an exact part, error 0, ranks last), a violation on a rigorous basis before a
weaker one. The basis of a hold is the weakest basis among the parts. The reason of a hold
leads with the first part (a claim's first conclusion is its main statement) and names the
tightest. Every part is listed in ``evidence["parts"]``.

Examples
--------
>>> from types import SimpleNamespace
>>> req = SimpleNamespace(instance=SimpleNamespace(name="f#0"), family=SimpleNamespace(
...     name="f"), seed=0)
>>> a = decide(req, 1.0, 0.1, "a", unit="distance", basis="estimate")
>>> b = decide(req, 0.5, 0.1, "b", unit="distance", basis="fit")
>>> r = combine(req, [a, b])
>>> r.label, r.margin, r.error, len(r.evidence["parts"])   # a: 1.0 > κ·0.1; b: 0.5 > 0.1
('holds (fit)', 1.0, 0.4, 2)
>>> combine(req, [a, inconclusive(req, "c is undecided")]).verdict.value
'inconclusive'
"""

from __future__ import annotations

import math

from verify.analysis.evidence import Basis
from verify.judge._verdicts import InstanceResult, InstanceVerdict, judge_instance

__all__ = ["decide", "inconclusive", "not_applicable", "combine", "VERDICT_ORDER"]

VERDICT_ORDER = {InstanceVerdict.VIOLATED: 0, InstanceVerdict.INCONCLUSIVE: 1,
                 InstanceVerdict.HOLDS: 2, InstanceVerdict.OUT_OF_SCOPE: 3}


def decide(request, margin, error, what: str, *, unit: str, basis: Basis | str,
           evidence: dict | None = None, strict: bool = True,
           certificate: dict | None = None) -> InstanceResult:
    """:func:`~verify.claim.judge_instance` on the request's instance, family and seed; a
    ``certificate`` that states its own ``basis`` caps the decision's basis at it."""
    if certificate is not None and certificate.get("basis") is not None:
        basis = Basis.weakest(basis, certificate["basis"])
    return judge_instance(margin, error, instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what=what,
                          basis=basis, strict=strict, evidence=evidence, unit=unit,
                          certificate=certificate)


def inconclusive(request, reason: str, evidence: dict | None = None,
                 unit: str = "") -> InstanceResult:
    """An inconclusive result for the request's instance, saying why."""
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.INCONCLUSIVE, reason, evidence=evidence or {},
                          unit=unit)


def not_applicable(request, reason: str) -> InstanceResult:
    """A part that does not apply to this instance (its ``when`` hypotheses fail): left out of
    :func:`combine`; an instance where no part applies is out of scope."""
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.OUT_OF_SCOPE, reason)


def _ratio(r: InstanceResult) -> float:
    if not r.error:
        return math.inf
    return (r.margin if r.margin is not None and math.isfinite(r.margin) else 0.0) / r.error


def _rank(r: InstanceResult) -> tuple:
    """Worst first: the verdict, then (violations) a rigorous basis first, then margin/error."""
    weak = r.verdict is InstanceVerdict.VIOLATED and not (r.basis and r.basis.rigorous)
    return VERDICT_ORDER[r.verdict], weak, _ratio(r)


def combine(request, parts: list[InstanceResult], evidence: dict | None = None
            ) -> InstanceResult:
    """The instance verdict of a conjunction of parts (see the module docstring)."""
    record = dict(evidence or {})
    applying = [r for r in parts if r.verdict is not InstanceVerdict.OUT_OF_SCOPE]
    if not applying:
        reasons = "; ".join(r.reason for r in parts) or "no conclusion was stated"
        return InstanceResult(request.instance.name, request.family.name, request.seed,
                              InstanceVerdict.OUT_OF_SCOPE, f"no conclusion applies: {reasons}",
                              evidence=record)
    if len(parts) == 1:
        only = parts[0]
        return InstanceResult(only.instance, only.family, only.seed, only.verdict, only.reason,
                              evidence={**record, **only.evidence}, margin=only.margin,
                              error=only.error, unit=only.unit, certificate=only.certificate,
                              basis=only.basis)
    worst = min(applying, key=_rank)
    record["parts"] = [{"verdict": r.verdict.value, "basis": r.basis, "margin": r.margin,
                        "error": r.error, "unit": r.unit, "reason": r.reason,
                        **({"certificate": r.certificate} if r.certificate else {})}
                       for r in parts]
    for r in parts:  # a part's figure (and other small evidence) stays visible
        for key, value in r.evidence.items():
            record.setdefault(key, value)
    n_ok = sum(r.verdict is InstanceVerdict.HOLDS for r in applying)
    basis = worst.basis
    if worst.verdict is InstanceVerdict.HOLDS:
        basis = Basis.weakest(*(r.basis for r in applying))
        main = applying[0]
        reason = (f"all {len(applying)} parts hold: {main.reason}" if main is worst else
                  f"all {len(applying)} parts hold: {main.reason}; tightest: {worst.reason}")
    else:
        reason = f"{n_ok} of {len(applying)} parts hold; {worst.reason}"
    return InstanceResult(worst.instance, worst.family, worst.seed, worst.verdict, reason,
                          evidence=record, margin=worst.margin, error=worst.error,
                          unit=worst.unit, certificate=worst.certificate, basis=basis)
