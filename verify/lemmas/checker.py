r"""The independent certificate checker: ``verify certificate FILE``.

A certificate (JSON, schema ``verify.certificate/1``) says: *on this exact instance, the
rescaled (or sphere) tokens at time* :math:`t_1` *lie in these balls* (the enclosure, written as
exact dyadic balls); *lemma L with these parameters applies there; here are its inequalities with
their margins, what it certifies for all* :math:`t \ge t_1`, *and the facts that make the claim's
conclusions follow.* :func:`check_certificate` re-derives everything after the enclosure from the
text alone, with python-flint ball arithmetic at the certificate's precision:

1. the exact instance (:mod:`verify.lemmas._instance`) and every listed symmetry, exactly;
2. the lemma's hypotheses on the balls (its own module: :mod:`verify.lemmas.leader_map`,
   :mod:`verify.lemmas.good_triple`, :mod:`verify.lemmas.sphere_consensus`,
   :mod:`verify.lemmas.power_decay`, :mod:`verify.lemmas.equilibrium`,
   :mod:`verify.lemmas.masked_token`, which reads the exact initial data only,
   :mod:`verify.lemmas.hyperplane_drift`, :mod:`verify.lemmas.masked_cap`, which at
   :math:`t_1 = 0` checks that its balls contain the exact initial tokens), each margin
   recomputed: every one must be positive and at least the margin the certificate states;
3. the lemma's conclusions, which must equal the stated ones;
4. every fact (:mod:`verify.lemmas.facts`).

Any difference rejects the certificate with the reason. What is **not** re-checked: that the
balls at :math:`t_1` contain the exact solution — that is the enclosure's theorem
(:mod:`verify.enclosure`), and the certificate records how it was computed; also the finite-time
facts on :math:`[0, t_1]` listed under ``enclosure_facts`` rest on the enclosure.

This module imports only python-flint, the standard library and :mod:`verify.lemmas` (which
imports nothing else either): a test enforces it, so the checker shares no code with the
integrator or the judges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from flint import ctx

from verify.lemmas import (
    equilibrium,
    good_triple,
    hyperplane_drift,
    leader_map,
    masked_cap,
    masked_token,
    power_decay,
    sphere_consensus,
)
from verify.lemmas._balls import CheckFailure, ball_matrix, parse_ball, rational
from verify.lemmas._instance import check_symmetries, pinned_tokens, read_instance
from verify.lemmas.facts import check_fact

__all__ = ["SCHEMA", "CheckResult", "check_certificate", "check_file", "run_lemma"]

SCHEMA = "verify.certificate/1"
LEMMAS = {leader_map.ID: leader_map, good_triple.ID: good_triple,
          sphere_consensus.ID: sphere_consensus, power_decay.ID: power_decay,
          equilibrium.ID: equilibrium, masked_token.ID: masked_token,
          hyperplane_drift.ID: hyperplane_drift, masked_cap.ID: masked_cap}
#: Lemmas that read the tokens x at t1 (the others read the rescaled z).
READS_X = (sphere_consensus, power_decay, equilibrium, masked_cap)


@dataclass
class CheckResult:
    """The checker's answer: ``valid``, the reasons it is not, and what was recomputed."""

    valid: bool
    reasons: list = field(default_factory=list)
    lemma: str = ""
    inequalities: list = field(default_factory=list)
    facts: list = field(default_factory=list)
    conclusions: dict = field(default_factory=dict)

    def text(self) -> str:
        head = "certificate VALID" if self.valid else "certificate REJECTED"
        lines = [f"{head} (lemma {self.lemma or '?'})"]
        lines += [f"  inequality {q.name}: margin {float(q.margin.mid()):.6g} "
                  f"({'>' if q.holds else 'NOT >'} 0)" for q in self.inequalities]
        lines += [f"  fact {name}: {'holds' if ok else 'FAILS'} — {why}"
                  for name, ok, why in self.facts]
        lines += [f"  reason: {r}" for r in self.reasons]
        return "\n".join(lines)


def run_lemma(data: dict):
    """Recompute the lemma of a certificate: ``(instance, report)``. Raises
    :class:`CheckFailure` when the certificate is malformed or the lemma does not apply."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CheckFailure(f"not a certificate: the schema must be {SCHEMA!r}.")
    inst = read_instance(data)
    symmetries = check_symmetries(inst, data.get("symmetries", []))
    try:
        enclosure, lemma = data["enclosure"], data["lemma"]
        t1 = rational(enclosure["t1"])
        bits = int(enclosure["bits"])
        variable = enclosure["variable"]
        module = LEMMAS[lemma["id"]]
        parameters = lemma.get("parameters", {})
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckFailure(f"the certificate's enclosure or lemma is incomplete or unknown "
                           f"({exc!r}).") from None
    if not 53 <= bits <= 4096 or t1 < 0:
        raise CheckFailure(f"bits={bits} or t1={t1} out of range.")
    if module is masked_token:
        return inst, _masked_token(inst, enclosure, t1, bits, parameters)
    with ctx.workprec(bits):
        balls = ball_matrix(enclosure["tokens"])
        if (balls.nrows(), balls.ncols()) != (inst.n, inst.d):
            raise CheckFailure("the enclosure does not have one ball per token coordinate.")
        expected = "x" if module in READS_X else "z"
        if variable != expected:
            raise CheckFailure(f"lemma {module.ID} reads the {expected!r} tokens, the "
                               f"enclosure gives {variable!r}.")
        if module is leader_map:
            report = module.check(inst, t1, balls, pinned_tokens(inst, symmetries), parameters)
        elif module in (good_triple, hyperplane_drift):
            report = module.check(inst, t1, balls, symmetries, parameters)
        else:
            report = module.check(inst, t1, balls, parameters)
    return inst, report


def _masked_token(inst, enclosure: dict, t1, bits: int, parameters: dict):
    """The masked-token lemma reads the exact initial data only: its state must be the
    instance's ``x0`` at ``t1 = 0``, written as exact rationals."""
    if t1 != 0 or enclosure.get("variable") != "exact":
        raise CheckFailure(f"lemma {masked_token.ID} reads the exact initial tokens "
                           "(t1 = 0, variable 'exact').")
    try:
        tokens = [[rational(v) for v in row] for row in enclosure["tokens"]]
    except (KeyError, TypeError) as exc:
        raise CheckFailure(f"the exact tokens are missing ({exc!r}).") from None
    if tokens != inst.x0:
        raise CheckFailure("the exact tokens at t1 = 0 are not the instance's x0.")
    with ctx.workprec(bits):
        return masked_token.check(inst, parameters)


def check_certificate(data: dict) -> CheckResult:
    """Check a certificate (module docstring); never raises on bad content."""
    try:
        inst, report = run_lemma(data)
    except CheckFailure as exc:
        return CheckResult(False, [str(exc)])
    result = CheckResult(True, [], report.lemma, report.inequalities)
    stated = {q.get("name"): q.get("margin") for q in data.get("inequalities", [])
              if isinstance(q, dict)}
    for q in report.inequalities:
        if not q.holds:
            result.reasons.append(f"inequality {q.name} fails: margin {q.margin} is not > 0.")
        elif q.name not in stated:
            result.reasons.append(f"inequality {q.name} is not stated in the certificate.")
        else:
            try:
                claimed = parse_ball(stated[q.name])
            except CheckFailure as exc:
                result.reasons.append(str(exc))
                continue
            if q.margin.lower() < claimed.lower():
                result.reasons.append(f"inequality {q.name}: the certificate states a margin "
                                      f"≥ {claimed.lower()} but the balls give only "
                                      f"≥ {q.margin.lower()}.")
    extra = set(stated) - {q.name for q in report.inequalities}
    if extra:
        result.reasons.append(f"inequalities {sorted(extra)} are not hypotheses of the lemma.")
    if data.get("conclusions") != report.conclusions:
        result.reasons.append("the stated conclusions differ from those the lemma gives on "
                              "these balls.")
    result.conclusions = report.conclusions
    facts = data.get("facts", [])
    if not isinstance(facts, list):
        facts = []
        result.reasons.append("facts must be a list.")
    for fact in facts:
        ok, why = check_fact(inst, report.lemma, report.conclusions, fact)
        result.facts.append((fact.get("fact") if isinstance(fact, dict) else fact, ok, why))
        if not ok:
            result.reasons.append(f"fact {fact.get('fact')!r} fails: {why}")
    result.valid = not result.reasons
    return result


def check_file(path: str | Path) -> CheckResult:
    """Read and check a certificate file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return CheckResult(False, [f"cannot read {path}: {exc}"])
    return check_certificate(data)
