r"""Predictions: each theorem's exact prediction for an instance, as small registered functions.

A conclusion names a prediction where it would take a formula (``to = { predict =
"polytope-S" }``); the prediction is computed from the instance (exactly, or certified) and,
where the theorem defines its object through the dynamics, from the **certified early leaders**
of the run — the tokens whose certified hardmax target is themselves — never from the observed
limits the prediction is then compared with. Each returns a
:class:`~verify.predict._evaluation.Value` (float array, error bound, evidence with the exact data
and the figure's predicted object) or raises :class:`Unavailable` (the run does not determine it
yet: the conclusion is then inconclusive and the horizon is extended).

==================  =========  ==========================================================
name                gives      what
==================  =========  ==========================================================
polytope-S          points     𝒮 of Theorem 3.1 for 𝒦 = conv(leaders), exactly
polytope-vertices   points     the vertices of conv(leaders)
leader-targets      targets    each token's certified leader's position (``n × k``)
subspace-K          polytope   Theorem 5.2: π_F of the leaders, in F-coordinates
hyperplanes-a0b     hyperplanes  Theorem 4.2: φ₁* = a, 0, b, a and b from the leaders
phi1                rows       the dual vector φ₁* of the leading eigenvalue (1 × d)
positive-left-rows  rows       a basis of the left invariant subspace of Re λ > 0 (k × d)
F-coordinates       rows       the exact map z ↦ π_F z in coordinates of a basis of F
extreme-tokens      indices    the tokens with the smallest and the largest x(0) (d = 1)
==================  =========  ==========================================================
"""

from verify.predict import _leaders, _polytope, _spectral  # noqa: F401  (registration)
from verify.predict._leaders import Unavailable, certified_leaders

__all__ = ["Unavailable", "certified_leaders"]
