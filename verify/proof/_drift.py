r"""Refuting with the hyperplane-drift lemma: a follower of a good triple drifts along its
hyperplane of Theorem 4.2 forever.

For a good triple whose ``V`` has an eigenvalue of negative real part, the rescaled tokens of one
side of :math:`\{\varphi_1^* = 0\}` end up attending to one leader, and a follower's offset to it
is :math:`e^{-tV}c_k(t)` with :math:`c_k` certified nearly constant
(:mod:`verify.lemmas.hyperplane_drift`): it grows like :math:`e^{|\operatorname{Re}\mu| t}`
while :math:`\varphi_1^*(z_k)` converges; along an eigenvalue :math:`i\omega \ne 0` on the
imaginary axis (decided exactly by the lemma) it turns forever. :func:`certify_drift`
**refutes** a conclusion that every rescaled token has a limit (``converges``, ``limit``,
``clusters``) or that they reach ``consensus`` (:func:`~verify.proof._plans.drift_refutation`):
it encloses the trajectory
(:class:`verify.enclosure.Enclosure`) at the marks :math:`t_1 = 0, \tfrac12, 1, \dots` up to
the re-check horizon (again with twice the bits when the enclosure fails), asks the lemma at
each, and once the independent checker accepts the certificate with the fact
``follower-drifts`` the verdict is *violated* on basis
``certificate`` (:func:`verify.judge._decision.refuted_by_certificate`), re-checked like every
refutation (it runs again on the re-check's request).

It needs an enclosure, so it runs only with proofs on (``--proof-seconds``, or the claim's
``parameters.proof_seconds``: the same CPU budget as a proof) and only where it can succeed: a
rescaled good-triple model (the lemmas of :func:`~verify.proof._lemmas.lemmas_for`) with an
eigenvalue of ``V`` of negative real part or near the imaginary axis off 0, and a conclusion it
refutes. Theorem 4.2's own
conclusions (the hyperplanes, the convergence of :math:`\varphi_1^*(z_i)`, the monotone
extremes) are never among them. It stops early once the lemma's verdict on the followers is
final: the good triple traps the tokens but no side has two of them, or the followers are
trapped without a certified drift at :data:`SETTLED` marks in a row (their offsets are then
nearly constant in the token variable: later marks change nothing). A result that already rests
on a rigorous basis, an out-of-scope or an erroneous instance is returned unchanged; a failed
attempt is recorded in ``evidence["drift"]``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

from verify.analysis.evidence import Basis
from verify.enclosure import MAX_SIZE, Enclosure, unsupported
from verify.judge._decision import refuted_by_certificate
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate
from verify.lemmas._balls import CheckFailure, parse_ball
from verify.lemmas.hyperplane_drift import ID
from verify.proof._lemmas import lemmas_for, try_lemma
from verify.proof._plans import drift_refutation
from verify.proof._prove import _BUDGET, MARK_STEP, _applying, _expiry, _reach

__all__ = ["certify_drift", "SETTLED"]

#: Marks in a row at which the lemma holds without a drift before the attempt stops.
SETTLED = 3
#: A float64 eigenvalue of ``V`` this close to the imaginary axis (relative) may be on it.
_AXIS = 1e-9
_FINAL = "no trapped side has two tokens"


def _applies(request) -> bool:
    model, instance = request.instance.model, request.instance
    if ID not in lemmas_for(model) or unsupported(model) or instance.n * instance.d > MAX_SIZE:
        return False
    if not float(request.parameters.get("proof_seconds", _BUDGET.get())) > 0:
        return False
    values = np.linalg.eigvals(np.asarray(model.V, dtype=float))
    # an eigenvalue of negative real part, or one near the imaginary axis off 0 (the lemma
    # decides exactly whether it is on it): only where a follower can have no limit
    near_axis = np.abs(values.real) <= _AXIS * max(1.0, float(np.max(np.abs(values))))
    return bool(np.any(values.real < 0) or np.any(near_axis & (values.imag != 0)))


def certify_drift(request, result: InstanceResult) -> InstanceResult:
    """``result`` refuted by the hyperplane-drift lemma, or unchanged (module docstring)."""
    if result.verdict in (InstanceVerdict.OUT_OF_SCOPE, InstanceVerdict.ERROR) or \
            (result.basis is not None and result.basis.rigorous) or not _applies(request):
        return result
    plans = [(spec, facts) for spec in _applying(request)
             if (facts := drift_refutation(spec, request.instance))]
    if not plans:
        return result
    spec, facts = plans[0]
    where = f"{spec.where} ({spec.type})"
    start = time.process_time()
    try:
        document, tried = _search(request, _reach(request, result), facts, where)
    except CheckFailure as exc:  # e.g. a ball of the enclosure is not finite: nothing decided
        document, tried = None, {"refuted": False, "reason": f"{ID}: {exc}"}
    tried["cpu_seconds"] = round(time.process_time() - start, 3)
    if document is None:
        return replace(result, evidence={**result.evidence, "drift": tried})
    check = check_certificate(document)
    conclusions = document["conclusions"]
    if conclusions["behaviour"] == "turns":
        witness = conclusions["turning"][0]
        how = (f"turns about it forever with frequency "
               f"{float(parse_ball(witness['frequency']).mid()):.4g} (an eigenvalue of V on the "
               "imaginary axis, decided exactly), at a distance bounded below")
    else:
        witness = conclusions["drifting"][0]
        how = (f"drifts away from it along its hyperplane of Theorem 4.2 like "
               f"e^({float(parse_ball(witness['rate']).mid()):.4g} t)")
    statement = (f"violated on this instance (for all t ≥ 0): {where} says every rescaled "
                 f"token has a limit, but from t1 = {document['enclosure']['t1']} on token "
                 f"{witness['follower']} attends to its leader {witness['leader']} and {how} "
                 f"(rigorous enclosure on [0, t1], then lemma {ID}; the independent checker "
                 "accepts the certificate).")
    margin = min(float(q.margin.lower()) for q in check.inequalities)
    certificate = {"kind": ID, "basis": Basis.CERTIFICATE.value, "statement": statement,
                   "lemma": ID, "t1": document["enclosure"]["t1"], "document": document}
    estimate = {"verdict": result.verdict.value, "reason": result.reason}
    return refuted_by_certificate(result, statement, evidence={
        **result.evidence, "estimate": estimate, "drift": tried,
        "refutation": {"lemma": ID, "conclusion": where}},
        margin=margin, unit="smallest lemma margin", certificate=certificate)


def _search(request, last_mark: Fraction, facts: list, where: str) -> tuple[dict | None, dict]:
    """Enclose and try the lemma at successive marks (module docstring), with 128 bits, then
    once with 256 bits and a tighter step when the first enclosure fails (as a proof does):
    the accepted document, or ``None``, and what was tried."""
    instance, expired = request.instance, _expiry(request)
    marks, why = [], "no mark reached"
    for bits, tol in ((128, 2.0 ** -40), (256, 2.0 ** -56)):
        enclosure = Enclosure(instance, bits=bits, tol=tol)
        settled, mark = 0, Fraction(0)
        while mark <= last_mark:
            if not enclosure.advance(mark, expired=expired):
                why = f"the enclosure stopped: {enclosure.message}"
                break
            document, why = try_lemma(ID, instance, enclosure, mark)
            marks.append(float(mark))
            if document is not None:
                document = {**document, "claim": request.claim.id,
                            "instance_name": instance.name, "facts": facts,
                            "enclosure_facts": [], "conclusions_refuted": [where]}
                check = check_certificate(document)
                if check.valid:
                    return document, {"refuted": True, "t1": str(mark), "marks_tried": marks,
                                      "enclosure": enclosure.describe()}
                why = "; ".join(check.reasons)
                settled += 1
            if why.startswith(_FINAL) or settled >= SETTLED:
                break
            mark += MARK_STEP
        if enclosure.status != "failed":
            break  # the lemma's answer is final, or the budget or the horizon ended it
    return None, {"refuted": False, "reason": f"{ID}: {why}", "marks_tried": marks,
                  "enclosure": enclosure.describe()}
