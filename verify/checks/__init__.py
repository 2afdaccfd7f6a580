"""The numerical checks named by the claim files in ``claims/`` (``check = "..."``).

Importing this package registers every check in :data:`verify.claim.CHECKS` (and the
hypotheses in :data:`verify.claim.HYPOTHESES`). One module per group of claims:

* §6–§7 and Remark 3.4 (``d = 1``; shared measurements in :mod:`verify.checks.one_dimensional`):
  :mod:`~verify.checks.boolean_1d` (Theorem 2.1, the higher-dimensional remark),
  :mod:`~verify.checks.escape` (one bounded token, the escape threshold),
  :mod:`~verify.checks.monotone` (order, distances), :mod:`~verify.checks.wellposed` (§6),
  :mod:`~verify.checks.rescaling` (Remark 3.4);
* §3–§4, §8 (shared clustering of limits in :mod:`verify.checks.polytopes`):
  :mod:`~verify.checks.hull` (hull monotonicity), :mod:`~verify.checks.polytope_limits` (the
  polytope theorem, generic vertices), :mod:`~verify.checks.collapse` (``V = −I``),
  :mod:`~verify.checks.hyperplanes` (hyperplanes, the codimension conjecture);
* §5 and §12 (shared splitting ``F ⊕ G`` in :mod:`verify.checks.extensions`):
  :mod:`~verify.checks.boundrj` (the refuted bound), :mod:`~verify.checks.subspace` (polytope ×
  subspace), :mod:`~verify.checks.open_problems` (generic ``QᵀK``, a complex leading pair);
* :mod:`verify.checks.open_models` — the open problems on an MLP and on several heads.

Verdict combination is in :mod:`verify.checks._parts`, the runners of the §3–§5 and §12
checks in :mod:`verify.checks._runs`.

Examples
--------
>>> from verify.claim import CHECKS
>>> sorted(n for n in CHECKS if CHECKS[n].__module__ == "verify.checks.hyperplanes")
['codimension_subspaces', 'hyperplanes_limit']
"""

from verify.checks import (  # noqa: F401  (registration)
    boolean_1d,
    boundrj,
    collapse,
    escape,
    hull,
    hyperplanes,
    monotone,
    open_models,
    open_problems,
    polytope_limits,
    rescaling,
    subspace,
    wellposed,
)

__all__: list[str] = []
