r"""Claims, instance families and verdicts: the types every check, runner and report shares.

* :class:`Claim`, :func:`load_claim`, :func:`load_claims` — claim files (``claims/_format.md``);
* :class:`Family` — instance families; :meth:`Family.instances` draws seeded instances from
  the generators :data:`V_GENERATORS`, :data:`QK_GENERATORS`, :data:`TOKEN_DISTRIBUTIONS`;
* :data:`HYPOTHESES`, :func:`check_hypotheses` — named predicates deciding the scope;
* :data:`CONCLUSIONS`, :data:`PREDICTIONS`, :func:`parse_conclusions` — the vocabulary a claim
  file states its conclusions in (registered by :mod:`verify.judge` and :mod:`verify.predict`);
  :class:`CheckRequest` — one claim on one instance, for the engine;
* :class:`InstanceResult`, :func:`judge_instance`, :func:`judge_comparison`,
  :class:`ClaimResult`, :func:`judge_claim`, :func:`exit_code`, :class:`Basis` — the verdict
  rules of design.md: every decision states its basis, an instance *holds* only when its
  margin exceeds its error (an estimate times the measured safety factor), a claim is
  *refuted* only by a violation on a rigorous basis that survives re-checking, and nothing is
  ever "proved".

Examples
--------
>>> from verify.model import Instance, Model
>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], ["1/2", "1/2"]], name="f#0")
>>> check_hypotheses(["is_identity", "qk_positive_definite"], inst).holds
True
>>> r = judge_comparison(0.25, 0.5, 1e-10, relation="<=", instance=inst.name, family="f",
...                      basis="estimate")
>>> r.verdict, r.basis
(<InstanceVerdict.HOLDS: 'holds'>, <Basis.ESTIMATE: 'estimate'>)
"""

from verify.analysis.evidence import Basis

# the structured token distributions register themselves into TOKEN_DISTRIBUTIONS
from verify.claim import _distributions  # noqa: F401
from verify.claim._claim import (
    Claim,
    ClaimKind,
    Expectation,
    load_claim,
    load_claims,
    parse_claim,
)
from verify.claim._family import Family, GeneratorSpec
from verify.claim._generators import QK_GENERATORS, TOKEN_DISTRIBUTIONS, V_GENERATORS, Generator
from verify.exact.plain import to_plain
from verify.judge._claim_verdict import EXIT_ERROR, ClaimResult, exit_code, judge_claim
from verify.judge._decision import judge_scope
from verify.judge._request import CheckRequest
from verify.judge._verdicts import (
    ClaimVerdict,
    InstanceResult,
    InstanceVerdict,
    effective_verdict,
    judge_comparison,
    judge_instance,
    recheck_record,
)
from verify.vocabulary.conclusions import (
    CONCLUSIONS,
    PREDICTIONS,
    ConclusionSpec,
    ConclusionType,
    parse_conclusions,
    register_conclusion,
    register_prediction,
)
from verify.vocabulary.hypotheses import (
    HYPOTHESES,
    PredicateResult,
    ScopeResult,
    register_hypothesis,
)
from verify.vocabulary.hypothesis_expressions import check_hypotheses

__all__ = [
    "Claim", "ClaimKind", "Expectation", "load_claim", "load_claims", "parse_claim",
    "Family", "GeneratorSpec", "Generator", "V_GENERATORS", "QK_GENERATORS",
    "TOKEN_DISTRIBUTIONS",
    "HYPOTHESES", "PredicateResult", "ScopeResult", "check_hypotheses", "register_hypothesis",
    "CONCLUSIONS", "PREDICTIONS", "ConclusionSpec", "ConclusionType", "parse_conclusions",
    "register_conclusion", "register_prediction", "CheckRequest",
    "InstanceVerdict", "ClaimVerdict", "Basis", "InstanceResult", "ClaimResult", "judge_instance",
    "judge_comparison", "recheck_record", "effective_verdict", "judge_claim", "exit_code",
    "EXIT_ERROR",
    "judge_scope", "to_plain",
]
