"""The numerical checks named by the claim files in ``claims/`` (``check = "..."``).

Importing this package registers every check in :data:`verify.claim.CHECKS`. One module per
group of claims:

* :mod:`verify.checks.one_dimensional` — Theorem 2.1 and the lemmas of its proof, the
  higher-dimensional remark, well-posedness and the discrete rescaling;
* :mod:`verify.checks.polytopes` — hull monotonicity, the polytope theorem, generic vertices,
  collapse for ``V = −I``, hyperplanes and the codimension conjecture;
* :mod:`verify.checks.extensions` — polytope × subspace, the refuted bound of §10, and the open
  problems on generic ``QᵀK`` and a complex leading pair;
* :mod:`verify.checks.open_models` — the open problems on an MLP and on several heads.
"""

from verify.checks import (  # noqa: F401  (registration)
    extensions,
    one_dimensional,
    open_models,
    polytopes,
)

__all__: list[str] = []
