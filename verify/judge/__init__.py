r"""The judging engine: one decision type, one runner, one library of judges, one way to
combine — for the paper's claims and the users' conjectures alike.

A claim (a file in ``claims/`` or a user's conjecture) is its hypotheses, its conclusions in
the vocabulary below, and — where a theorem predicts something exactly — a prediction
(:mod:`verify.predict`). :func:`judge_request` judges one instance
(:mod:`verify.judge._engine`: scope of each conclusion, the run, the rules for ``t → ∞``, the
horizon policy, the combination).

The vocabulary (:data:`verify.claim.CONCLUSIONS`; ``verify check --help`` lists it):

* about ``t → ∞`` — *holds* from a resolved trend, re-checked at a longer horizon; *violated*
  only with a certificate that the end will not change (:mod:`verify.analysis.end_certificates`):
  ``converges``, ``consensus``, ``limit``, ``approach``, ``tends`` (:mod:`._limits`),
  ``clusters`` (an interval, :mod:`._clusters`), ``attention`` (:mod:`._attention`),
  ``escapes`` (:mod:`._escape`), ``rate`` (:mod:`._flow`), ``exists`` and ``theta``
  (existential constants and Θ-statements, judged by fits, :mod:`._existential`);
* about finite times, at the checkpoints — a value beyond its error decides either way:
  ``monotone``, ``inequality``, ``events`` (:mod:`._flow`), ``identity`` (an exact
  identity, confirmed to the run's accuracy, :mod:`._identity`), ``hull-shrinks``
  (:mod:`._hull`), ``field-bounds`` and ``stability`` (:mod:`._wellposed`),
  ``rescaling-identity`` and ``remainder-bound`` (exact arithmetic, :mod:`._exact`);
* the escape hatch: ``predicate`` (a Python function of the trajectory, :mod:`._predicate`).

Every decision is an :class:`~verify.claim.InstanceResult` built by
:func:`~verify.judge._decision.decide`: a margin and its error in one named unit, and for a
violation of a statement about ``t → ∞`` its certificate. The verdict is decided in one place:
the margin rule (:func:`~verify.claim.judge_instance`) and the named rules applied after it
(:mod:`verify.judge._decision`); a judge computes evidence and margins and calls them.
"""

from verify.analysis.end_certificates import Certificate, certify_end, degenerate_equilibrium
from verify.judge import (  # noqa: F401  (registration of the vocabulary)
    _attention,
    _clusters,
    _escape,
    _exact,
    _existential,
    _flow,
    _hull,
    _identity,
    _limits,
    _predicate,
    _wellposed,
)
from verify.judge._decision import (
    budget_used_up,
    combine,
    decide,
    failed,
    inconclusive,
    not_applicable,
)
from verify.judge._engine import (
    DEFAULT_HORIZON_BUDGET,
    RECHECK_FACTOR,
    judge_request,
    shared_runs,
)
from verify.judge._trend import Trend, tends_to_zero
from verify.predict._evaluation import Evaluation, Value, quantity_error
from verify.predict._expressions import check_expression, evaluate

__all__ = ["judge_request", "shared_runs", "DEFAULT_HORIZON_BUDGET", "RECHECK_FACTOR",
           "Evaluation", "Value",
           "quantity_error", "decide", "inconclusive", "not_applicable", "combine", "failed",
           "budget_used_up",
           "Certificate", "certify_end", "degenerate_equilibrium", "Trend", "tends_to_zero",
           "check_expression", "evaluate"]

import verify.predict  # noqa: E402,F401  (registration of the predictions)
