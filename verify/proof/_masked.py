r"""Proving and refuting with the masked-token lemma: a token that attends only to itself is a
linear flow.

Under a causal mask token 1 attends only to itself, and so does every token :math:`k` whose row
of a graph mask has its one 1 on the diagonal; its exact solution is known in closed form
(:mod:`verify.lemmas.masked_token`): :math:`x_k(t) = e^{tV}x_k(0)`, :math:`z_k(t) = x_k(0)`, or
on the sphere the direction of :math:`e^{tV}x_k(0)`. The lemma reads only the
exact initial data (:math:`t_1 = 0`, no enclosure), costs milliseconds, and its certificate is
re-derived in full by the independent checker. :func:`certify_masked`

* **refutes** a conclusion that every token has a limit (``converges``, ``limit``,
  ``clusters``: :func:`~verify.proof._plans.masked_refutation`) when such a token is certified
  to grow, turn or drift forever: the verdict is *violated* on basis ``certificate``, with the
  certificate document attached (``verify run`` writes it as a file). Like the judges' own
  exact certificates (the linear flow of one point, the invariant point) it runs whatever the
  proof budget, and again in the re-check of the violation (:mod:`verify.run._tasks`), which
  recomputes it from the instance;
* **refutes** ``consensus``, one cluster, or every token at one limit when two such tokens
  never move, at distinct points (:func:`~verify.proof._plans.apart_refutation`: a graph mask
  with two sinks);
* **proves** a conclusion mapped onto the lemma's facts (token :math:`k` never moves:
  :func:`~verify.proof._plans.plan_facts`) when every applying conclusion is covered, within
  the proof budget's on/off switch (``--proof-seconds 0``: no proofs).

When no token's closed form covers the conclusions it tries lemma ``masked-cap``
(:mod:`verify.lemmas.masked_cap`) on the initial tokens: on the sphere with ``V = cI``, every
token already less than 90° from the token they all attend to (the causal first token) proves
that every token converges to it — with no enclosure, for any number of tokens (the prover's
enclosures stop at ``n·d = 64``). Otherwise the prover tries it later on an enclosure.

A result that already rests on a rigorous basis, an out-of-scope or an erroneous instance is
returned unchanged.

>>> from types import SimpleNamespace
>>> from verify.model import Instance, Model
>>> from verify.vocabulary.conclusions import ConclusionSpec
>>> from verify.judge._verdicts import InstanceResult, InstanceVerdict
>>> model = Model(V=[[1, -1], [1, 1]], form="x", normalisation="sphere", mask="causal")
>>> inst = Instance(model, [[1, 0], [0, 1]], name="r#0")
>>> claim = SimpleNamespace(id="c", conclusions=[ConclusionSpec("converges", {})])
>>> request = SimpleNamespace(claim=claim, instance=inst, parameters={}, recheck=False)
>>> before = InstanceResult("r#0", "r", None, InstanceVerdict.INCONCLUSIVE, "not stabilised")
>>> after = certify_masked(request, before)
>>> after.verdict.value, after.basis.value, after.certificate["kind"]
('violated', 'certificate', 'masked-token')
"""

from __future__ import annotations

from verify.analysis.evidence import Basis
from verify.judge._decision import refuted_by_certificate
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate, masked_cap
from verify.lemmas.masked_token import ID
from verify.proof._lemmas import cap_document_at_start, cap_parts, masked_document, masked_tokens
from verify.proof._plans import NoPlan, apart_refutation, masked_refutation, plan_facts
from verify.proof._prove import _BUDGET, _applying, _proved

__all__ = ["certify_masked"]


def certify_masked(request, result: InstanceResult) -> InstanceResult:
    """``result`` refuted or proved by the masked-token lemma, or unchanged (module
    docstring)."""
    if result.verdict in (InstanceVerdict.OUT_OF_SCOPE, InstanceVerdict.ERROR) or \
            (result.basis is not None and result.basis.rigorous):
        return result
    if request.instance.model.full_mask:  # no token is closed on its own: nothing to try
        return result
    specs = _applying(request)
    if not specs:
        return result
    documents = {}
    for k in masked_tokens(request.instance):  # exact, milliseconds each
        document, _ = masked_document(request.instance, k)
        if document is not None:
            documents[k] = document
    if not documents:
        return _at_start(request, result, specs)
    for spec in specs:
        facts = masked_refutation(spec, request.instance)
        for k, document in documents.items() if facts else ():
            token = {"token": k} if k else {}  # the first token: the facts as before
            refuted = _refuted(request, result, spec, document,
                               [{**fact, **token} for fact in facts])
            if refuted is not None:
                return refuted
        apart = apart_refutation(spec, request.instance)
        for k, b in ((k, b) for k in documents for b in documents if b > k) if apart else ():
            token = {"token": k} if k else {}
            refuted = _refuted(request, result, spec, documents[k],
                               [{**fact, **token, "other": b} for fact in apart])
            if refuted is not None:
                return refuted
    if request.recheck or not float(request.parameters.get("proof_seconds",
                                                            _BUDGET.get())) > 0:
        return result
    try:
        plans = [(spec, plan_facts(spec, ID, request.instance)) for spec in specs]
    except NoPlan:
        return _at_start(request, result, specs)
    named = {fact.get("token", 0) for _, facts in plans for fact in facts}
    if len(named) != 1 or next(iter(named)) not in documents:
        return result
    return _proof(request, result, ID, plans, documents[named.pop()])


def _at_start(request, result: InstanceResult, specs: list) -> InstanceResult:
    """``result`` proved by lemma ``masked-cap`` on the initial tokens (every token already
    within 90° of the root, checked without an enclosure, for any ``n``), or unchanged."""
    if request.recheck or not float(request.parameters.get("proof_seconds",
                                                            _BUDGET.get())) > 0 \
            or cap_parts(request.instance.model, request.instance.n) is None:
        return result
    try:
        plans = [(spec, plan_facts(spec, masked_cap.ID, request.instance)) for spec in specs]
    except NoPlan:
        return result
    document, _ = cap_document_at_start(request.instance)
    if document is None:
        return result
    return _proof(request, result, masked_cap.ID, plans, document)


def _proof(request, result: InstanceResult, lemma: str, plans: list, document: dict):
    document = _with(request, document, [f for _, facts in plans for f in facts],
                     conclusions_proved=[f"{spec.where} ({spec.type})" for spec, _ in plans])
    if not check_certificate(document).valid:
        return result
    outcome = {"proved": True, "document": document, "t1": "0", "marks_tried": [0.0],
               "enclosure": {"method": document["enclosure"]["method"], "steps": 0}}
    return _proved(request, result, lemma, plans, outcome)


def _with(request, document: dict, facts: list, **extra) -> dict:
    return {**document, "claim": request.claim.id, "instance_name": request.instance.name,
            "facts": facts, "enclosure_facts": [], **extra}


def _refuted(request, result: InstanceResult, spec, document: dict, facts: list):
    where = f"{spec.where} ({spec.type})"
    document = _with(request, document, facts, conclusions_refuted=[where])
    check = check_certificate(document)
    if not check.valid:
        return None
    why = "; ".join(text.rstrip(".") for _, ok, text in check.facts if ok)
    k = document["conclusions"]["token"]
    mask = "causal mask" if request.instance.model.causal_mask else "its row of the graph mask"
    says = "the tokens reach one point" if facts[0]["fact"] == "fixed-apart" else \
        "every token has a limit"
    statement = (f"violated on this instance (for all t ≥ 0): {where} says {says}, but token "
                 f"{k + 1} attends only to itself ({mask}), so "
                 f"{document['conclusions']['solution']}; {why} (lemma {ID} on the initial "
                 "tokens, in rational arithmetic; the independent checker accepts the "
                 "certificate).")
    margin = min(float(q.margin.lower()) for q in check.inequalities)
    certificate = {"kind": ID, "basis": Basis.CERTIFICATE.value, "statement": statement,
                   "lemma": ID, "t1": "0", "document": document}
    estimate = {"verdict": result.verdict.value, "reason": result.reason}
    return refuted_by_certificate(result, statement, evidence={
        **result.evidence, "estimate": estimate, "refutation": {"lemma": ID, "conclusion": where}},
        margin=margin, unit="smallest lemma margin", certificate=certificate)
