r"""Decisions: one verdict type, built one way, combined one way — and every rule that turns a
judge's evidence into a verdict, in this one place.

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

**The rules after the margin rule.** A judge, the engine, the prover and the runner never change
a verdict themselves; they call one of these named rules:

* statements about ``t → ∞`` (the engine): :func:`finite_run_violation` (a violation on a
  basis that cannot refute stays *violated (basis)*, evidence only) and :func:`judged_twice`
  (judged at ``T`` and re-checked at ``3T/2``: a hold or a violation must survive the
  re-check);
* facts decided from part of the evidence: :func:`fact_basis` (a violation of a fact read off
  the run rests on the certificate only where the certificate decides it),
  :func:`superseded_by_certificate` (a violation read off a trend gives way to the decision a
  certificate gives), :func:`noted_violation` (a violation keeps its verdict and says why it
  cannot refute), :func:`beyond_the_run` (a statement up to a time after the run's end cannot
  hold on it), :func:`unmeasured_estimate` (a run whose error estimate has no measured coverage:
  nothing decided on the estimate or a fit of it stands);
* holds established outside the margin rule: :func:`holds` (a fit validated out of sample, an
  identity within κ times its error at every checkpoint) and :func:`proved` (the certificate
  the independent checker accepts: *proved on this instance*);
* outcomes that are not decisions: :func:`judge_scope` (a claim's hypotheses not met:
  *out of scope*), :func:`inconclusive`, :func:`not_applicable`, :func:`failed` (an instance
  that raised: *error*, or *inconclusive* when its input is not at fault) and
  :func:`budget_used_up` (nothing decided under a used-up budget is trusted).

What counts for the claim (a violation only on a rigorous basis, confirmed by its re-check) is
:func:`~verify.judge._verdicts.effective_verdict`; the claim's verdict is
:func:`~verify.judge._claim_verdict.judge_claim`.

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
>>> weak = decide(req, -1.0, 0.1, "d <= 0", unit="distance", basis="fit")
>>> judged_twice(req, weak, weak, 2, 3).label   # evidence, never a refutation
'violated (fit)'
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from verify.analysis.evidence import Basis
from verify.judge._verdicts import InstanceResult, InstanceVerdict, judge_instance
from verify.numerics import KINKED_FIELD_COVERAGE
from verify.vocabulary.hypothesis_expressions import about_data, check_hypotheses

__all__ = ["decide", "inconclusive", "not_applicable", "combine", "VERDICT_ORDER",
           "finite_run_violation", "judged_twice", "fact_basis", "superseded_by_certificate",
           "noted_violation", "beyond_the_run", "holds", "proved", "refuted_by_certificate",
           "failed", "budget_used_up", "judge_scope", "UNMEASURED_ESTIMATE",
           "unmeasured_estimate"]

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
                 unit: str = "", basis: Basis | str | None = None) -> InstanceResult:
    """An inconclusive result for the request's instance, saying why; ``basis`` names what the
    undecided evidence rests on, where there is one (a fit that resolves nothing)."""
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.INCONCLUSIVE, reason, evidence=evidence or {},
                          unit=unit, basis=basis)


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
    return VERDICT_ORDER[r.verdict], r.weak_violation, _ratio(r)


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


# --------------------------------------------------------------------------- t → ∞
def finite_run_violation(decision: InstanceResult) -> InstanceResult:
    """The rule for a statement about ``t → ∞``: a violation on a basis that cannot refute
    (estimate, fit, evidence; none stated counts as evidence) stays *violated (basis)*, with
    its evidence kept and a reason saying it is evidence — it leaves the claim inconclusive and
    the engine extends the horizon. Any other decision is returned as it is."""
    if decision.weak_violation:
        basis = (decision.basis or Basis.EVIDENCE).value
        return replace(decision, basis=Basis(basis), reason=(
            f"{decision.reason} — but this is read off a finite run on the {basis} basis, "
            "without a rigorous certificate that its end will not change, so it is evidence, "
            "not a violation; integrate longer."))
    return decision


def judged_twice(request, at_T: InstanceResult, at_R: InstanceResult, T: Fraction,
                 R: Fraction) -> InstanceResult:
    """An asymptotic conclusion judged at ``T`` and re-checked at ``R`` (``3T/2``), each after
    :func:`finite_run_violation`: a violation at ``R`` stands; a violation at ``T`` that is gone
    at ``R`` did not hold up (inconclusive); a hold must hold at both horizons (a hold at one
    only is inconclusive); otherwise the decision at ``R``."""
    at_T, at_R = finite_run_violation(at_T), finite_run_violation(at_R)
    hold = InstanceVerdict.HOLDS
    if at_R.verdict is InstanceVerdict.VIOLATED:
        return at_R
    if at_T.verdict is InstanceVerdict.VIOLATED:
        return inconclusive(request, f"violated at t = {float(T):.4g} ({at_T.reason}) but not "
                            f"at t = {float(R):.4g} ({at_R.reason}): the violation did not hold "
                            "up.", at_R.evidence)
    if at_T.verdict is hold and at_R.verdict is hold:
        return replace(at_R, reason=f"{at_R.reason} (holds at t = {float(T):.4g} and at the "
                       f"re-check t = {float(R):.4g})")
    if at_R.verdict is hold:
        return inconclusive(request, f"holds at t = {float(R):.4g} but not yet at "
                            f"t = {float(T):.4g} ({at_T.reason}); the hold must survive a "
                            "longer horizon.", at_R.evidence, unit=at_R.unit)
    if at_T.verdict is hold:
        return inconclusive(request, f"held at t = {float(T):.4g} but not at the re-check "
                            f"t = {float(R):.4g}: {at_R.reason}", at_R.evidence, unit=at_R.unit)
    return at_R


# --------------------------------------------------------------------------- partial evidence
def fact_basis(read: Basis, violated: bool, certain: bool) -> Basis:
    """The basis of a fact read off the run (the certified hardmax graph at the horizon, read as
    the limit): ``read`` (the end certificate's basis, or evidence without one) when the fact
    holds or when the certificate itself decides the violation (``certain``); a violation the
    certificate does not decide rests on evidence.

    >>> fact_basis(Basis.CERTIFICATE, violated=True, certain=False).value
    'evidence'
    """
    return read if not violated or certain else Basis.EVIDENCE


def superseded_by_certificate(parts: list[InstanceResult], certified) -> list[InstanceResult]:
    """Each violated part replaced by ``certified()`` — the decision a certificate gives on the
    same statement (an exact invariant set, a certified limit) — when it gives one (not
    ``None``); otherwise the violation stands as it was (on its weaker basis it cannot
    refute)."""
    return [(certified() or part) if part.verdict is InstanceVerdict.VIOLATED else part
            for part in parts]


def noted_violation(result: InstanceResult, note: str) -> InstanceResult:
    """A violation keeps its verdict and basis, with ``note`` (why it cannot refute: a fitted
    trend is not a certificate) added to its reason; any other result as it is."""
    if result.verdict is InstanceVerdict.VIOLATED:
        return replace(result, reason=f"{result.reason} — {note}")
    return result


def beyond_the_run(request, result: InstanceResult, until: float, end: float) -> InstanceResult:
    """A statement about the checkpoints up to ``until`` cannot *hold* on a run that ends at
    ``end < until``: such a hold is inconclusive (a violation inside the run stands)."""
    if until > end and result.verdict is InstanceVerdict.HOLDS:
        return inconclusive(request, f"{result.reason} — but the statement runs until "
                            f"t = {until:.4g} and the run ends at t = {end:.4g}.",
                            result.evidence, unit=result.unit)
    return result


#: Why the error estimate of a field with kinks (:attr:`verify.model.Model.field_has_kinks`)
#: decides nothing (:data:`verify.numerics.KINKED_FIELD_COVERAGE`, the measurement).
UNMEASURED_ESTIMATE = (
    "the error estimate of a field with kinks (ReLU MLP) has no measured coverage: "
    f"{KINKED_FIELD_COVERAGE}, so no reference run is made and nothing is decided on an estimate "
    "or a fit of one")


def unmeasured_estimate(result: InstanceResult, why: str = UNMEASURED_ESTIMATE
                        ) -> InstanceResult:
    """A part decided (holds or violated) on the run's error estimate — basis *estimate*, or a
    *fit* weighted and bounded by it — is *inconclusive* with ``why`` (the estimate's coverage is
    not measurable, so ``margin > κ·error`` says nothing); rigorous decisions (exact,
    enclosure, certificate) and evidence are returned as they are; an undecided part (often
    for want of the reference run that is then not made) says ``why`` first.

    >>> from types import SimpleNamespace
    >>> req = SimpleNamespace(instance=SimpleNamespace(name="f#0"), family=SimpleNamespace(
    ...     name="f"), seed=0)
    >>> hold = decide(req, 1.0, 0.1, "z_1 is nondecreasing", unit="z", basis="estimate")
    >>> unmeasured_estimate(hold, "no coverage").label
    'inconclusive'
    >>> unmeasured_estimate(decide(req, 1.0, 0, "r_2(0) <= C", unit="r", basis="exact")).label
    'holds (exact)'
    >>> unmeasured_estimate(inconclusive(req, "no reference run."), "no coverage").reason
    'no coverage; so: no reference run.'
    """
    if result.verdict is InstanceVerdict.INCONCLUSIVE:
        return replace(result, reason=f"{why}; so: {result.reason}")
    if result.verdict not in (InstanceVerdict.HOLDS, InstanceVerdict.VIOLATED) or \
            result.basis not in (Basis.ESTIMATE, Basis.FIT):
        return result
    return InstanceResult(result.instance, result.family, result.seed,
                          InstanceVerdict.INCONCLUSIVE,
                          f"{result.reason.rstrip('.')} — undecided: {why}.",
                          evidence={**result.evidence, "verdict_before": result.verdict.value},
                          unit=result.unit, basis=result.basis)


# --------------------------------------------------------------------------- holds and proofs
def holds(request, reason: str, *, basis: Basis | str, evidence: dict | None = None,
          margin: float | None = None, error: float | None = None,
          unit: str = "") -> InstanceResult:
    """A hold the judge established by a comparison that :func:`decide`'s margin rule cannot
    state (a fitted law validated out of sample, every checkpoint within κ times its error);
    ``reason`` says what was compared and on what basis."""
    return InstanceResult(request.instance.name, request.family.name, request.seed,
                          InstanceVerdict.HOLDS, reason, evidence=evidence or {}, margin=margin,
                          error=error, unit=unit, basis=basis)


def proved(result: InstanceResult, statement: str, *, evidence: dict, margin: float,
           unit: str, certificate: dict) -> InstanceResult:
    """The grade **proved on this instance (for all t ≥ 0)**: ``result`` (a hold on an estimate,
    or undecided) replaced once the independent checker accepts the ``certificate`` (a
    rigorous enclosure and a trapping lemma); basis certificate, error 0, the smallest lemma
    margin as the margin."""
    return InstanceResult(result.instance, result.family, result.seed, InstanceVerdict.HOLDS,
                          statement, evidence=evidence, margin=margin, error=0.0, unit=unit,
                          certificate=certificate, basis=Basis.CERTIFICATE)



def refuted_by_certificate(result: InstanceResult, statement: str, *, evidence: dict,
                           margin: float, unit: str, certificate: dict) -> InstanceResult:
    """**Violated on this instance (for all t ≥ 0)**: ``result`` (whatever the estimate said)
    replaced once the independent checker accepts a ``certificate`` that the conclusion fails
    for every ``t`` (e.g. a token proved never to converge); basis certificate, error 0, the
    negated smallest lemma margin as the margin (``margin > 0`` is the lemma's strict
    inequality), so the verdict rule reads it as a rigorous violation."""
    return InstanceResult(result.instance, result.family, result.seed, InstanceVerdict.VIOLATED,
                          statement, evidence=evidence, margin=-margin, error=0.0, unit=unit,
                          certificate=certificate, basis=Basis.CERTIFICATE)

# --------------------------------------------------------------------------- no decision
def failed(instance: str, family: str, seed: int | None, what: str, message: str,
           input_at_fault: bool) -> InstanceResult:
    """An instance on which ``what`` raised (``message``): *error* when its input cannot be
    judged, *inconclusive* when nothing says the input is at fault (its worker was lost,
    memory ran out); nothing was decided either way."""
    if input_at_fault:
        verdict, why = InstanceVerdict.ERROR, f"{what} failed"
    else:
        verdict, why = InstanceVerdict.INCONCLUSIVE, f"{what} raised an exception"
    return InstanceResult(instance, family, seed, verdict,
                          f"{why}, so nothing was decided: {message}",
                          evidence={"exception": message})


def budget_used_up(result: InstanceResult, reason: str, budget: dict) -> InstanceResult:
    """``result`` when its instance used up its budget (wall time, memory): inconclusive with
    ``reason``, since nothing decided under it is trusted; the verdict it had is kept in the
    evidence (``budget["verdict_before"]``)."""
    return InstanceResult(result.instance, result.family, result.seed,
                          InstanceVerdict.INCONCLUSIVE, reason,
                          evidence={"budget": {**budget, "verdict_before": result.verdict.value}})


def judge_scope(names, instance, *, family: str, seed: int | None = None):
    """The result of an instance outside the claim's scope, or ``None`` when it is in scope.

    A hypothesis that fails gives ``out-of-scope``; one that is undecided gives
    ``inconclusive``, except a hypothesis that reads the data (``"sum(x0) != 0"``,
    ``"equiangular(x0, 1/3)"``): an instance that cannot be placed inside or outside the set
    the statement is about is not judged, so it is ``out-of-scope`` with the reason. All carry
    the explanations.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> inst = Instance(Model(V=[[2, 0], [0, 1]]), [[1, 0], [0, 1]], name="f#0")
    >>> judge_scope(["is_identity"], inst, family="f").reason
    'hypothesis not met: is_identity: V[0, 0] = 2 ≠ 1.'
    >>> judge_scope(["d >= 2"], inst, family="f") is None
    True
    """
    names = list(names)
    scope = check_hypotheses(names, instance)
    if scope.holds is True:
        return None
    if scope.holds is False:
        failed = [line for line, value in zip(scope.explanations, scope.values, strict=True)
                  if value is False]
        return InstanceResult(instance.name, family, seed, InstanceVerdict.OUT_OF_SCOPE,
                              "hypothesis not met: " + "; ".join(failed),
                              evidence={"hypotheses": list(scope.explanations)})

    undecided = [name for name, value in zip(names, scope.values, strict=True) if value is None]
    if all(about_data(name) for name in undecided):
        shown = [line for line, value in zip(scope.explanations, scope.values, strict=True)
                 if value is None]
        return InstanceResult(instance.name, family, seed, InstanceVerdict.OUT_OF_SCOPE,
                              "whether the data meet the hypotheses is undecided, so the "
                              "instance is not judged: " + "; ".join(shown),
                              evidence={"hypotheses": list(scope.explanations)})
    return InstanceResult(instance.name, family, seed, InstanceVerdict.INCONCLUSIVE,
                          "a hypothesis could not be decided: " + "; ".join(scope.explanations),
                          evidence={"hypotheses": list(scope.explanations)})
