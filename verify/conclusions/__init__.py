r"""The vocabulary of conclusions a conjecture file can state (``[conclusion] type = "..."``).

Each conclusion is a documented building block with its numerical decision rule and error bar
(:data:`CONCLUSIONS`; ``verify check --help`` lists them):

* about the limit (``t → ∞``; judged after metastability is resolved): ``converges``,
  ``clusters``, ``consensus``, ``limit``, ``attention``, ``approach``, ``rate``;
* along the flow: ``events`` (order and times of merges), ``monotone``;
* the escape hatch: ``predicate`` (a Python function over the trajectory).

The check ``conclusion`` (:mod:`verify.conclusions._check`) runs the instance once and judges
every conclusion of the file on that run.
"""

from verify.conclusions import _check, _flow, _limits, _predicate  # noqa: F401  (registration)
from verify.conclusions._base import (
    CONCLUSIONS,
    ConclusionSpec,
    ConclusionType,
    Evaluation,
    parse_conclusions,
    quantity_error,
    register_conclusion,
)
from verify.conclusions._expressions import check_expression, evaluate

__all__ = ["CONCLUSIONS", "ConclusionSpec", "ConclusionType", "Evaluation", "parse_conclusions",
           "quantity_error", "register_conclusion", "check_expression", "evaluate"]
