r"""Exact invariant sets from signed-permutation symmetries of the weights and the tokens.

Let :math:`S` be a signed permutation matrix (entries :math:`0, \pm 1`, one nonzero per row and
column) with :math:`SV = VS` and :math:`S^\top B S = B` (:math:`B = Q^\top K`), and let
:math:`\pi` permute the tokens with :math:`S x_i(0) = x_{\pi(i)}(0)`. Since :math:`S` is
orthogonal and commutes with :math:`e^{tV}`, the scores
:math:`\langle e^{tV} z_i, B\, e^{tV} z_j\rangle` are unchanged by :math:`z \mapsto Sz`, so the map
:math:`(Z_i) \mapsto (S Z_{\pi^{-1}(i)})` commutes with the flows
:math:`\dot x_i = \sum_j P_{ij} V x_j`, :math:`\dot z_i = \sum_j P_{ij} V (z_j - z_i)` (3.1) and
their Euler layers. The exact solution therefore stays forever on the fixed subspace

.. math:: F = \{Z \in \mathbb{R}^{n \times d} : S Z_{\pi^{-1}(i)} = Z_i
          \ \text{for all } (S, \pi) \in G\}.

Such sets are typically unstable (paper.md §4): round-off pushes a float trajectory off them.
:meth:`SymmetryGroup.project` puts a state back on :math:`F` *exactly* in the backend's
arithmetic. ``G`` acts on the entries :math:`(i, c)` as signed permutations; on an orbit where
some element sends :math:`(i, c)` to :math:`-(i, c)` the entries are 0, on every other orbit
:math:`F` says :math:`Z_m = \sigma_m Z_r` (representative :math:`r`, signs :math:`\sigma_m`). The
projection writes :math:`\pm` one value (the signed mean over the orbit: the orthogonal
projection) to every member, so the symmetry holds bitwise by construction.

Scope: full attention, one head (a causal mask is not permutation-equivariant).

Examples
--------
>>> import numpy as np
>>> from verify.numerics import Float64
>>> G = find_symmetries([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, "1/10"], [1, "-1/10"]])
>>> G.describe()
'group of order 2: diag(1,-1) with tokens (0 1)'
>>> G.project(np.array([[1.0, 0.3], [0.8, -0.1]]), Float64())
array([[ 0.9,  0.2],
       [ 0.9, -0.2]])
>>> G.reduced_dimension
2
"""

from __future__ import annotations

import math
from collections import Counter

from verify.errors import InvalidArgument
from verify.exact._common import integer_rows
from verify.exact.symmetry_group import Symmetry, SymmetryGroup, _inputs

__all__ = ["Symmetry", "SymmetryGroup", "find_symmetries"]


def find_symmetries(V: object, B: object, x0: object, *, max_dim: int = 6,
                    tie_duplicates: bool = True) -> SymmetryGroup:
    r"""All signed permutations :math:`S \ne I` with :math:`SV = VS`, :math:`S^\top B S = B`
    that permute the initial tokens, each with its token permutation :math:`\pi`.

    The search assigns :math:`S e_a = s_a e_{\sigma(a)}` one column at a time and prunes with
    the pairwise conditions :math:`M_{\sigma(a)\sigma(b)} = s_a s_b M_{ab}` (:math:`M = V, B`;
    equivalent to the two matrix identities) and with the multiset of the assigned coordinates
    of the tokens. All comparisons are exact, in rationals. With repeated tokens, :math:`\pi`
    matches equal tokens in increasing index order, which makes the pairs a group.

    Parameters
    ----------
    V, B : d×d matrices
        Value matrix and bilinear form :math:`B = \beta Q^\top K` (any exact input, see
        :mod:`verify.exact.inputs`; floats are taken at their binary value).
    x0 : n×d array
        Initial tokens (rows).
    max_dim : int, optional
        Refuse ``d > max_dim`` (the search may visit up to :math:`d!\,2^d` candidates).
    tie_duplicates : bool, optional
        Passed to :class:`SymmetryGroup`.

    Returns
    -------
    SymmetryGroup

    Raises
    ------
    InvalidArgument
        Non-square ``V``, shapes that do not fit, non-numbers, or ``d > max_dim``.

    Examples
    --------
    >>> square = [[1, 0], [-1, 0], [0, 1], [0, -1]]
    >>> find_symmetries([[1, 0], [0, 1]], [[1, 0], [0, 1]], square).order
    8
    >>> find_symmetries([[1, 1], [0, 2]], [[1, 0], [0, 1]], square).describe()
    'group of order 2: diag(-1,-1) with tokens (0 1)(2 3)'
    >>> find_symmetries([[1, 1], [0, 2]], [[1, 0], [0, 1]], [[1, 1], [1, -1]]).is_trivial
    True
    """
    V, B, X = _inputs(V, B, x0)
    n, d = X.shape
    if not isinstance(max_dim, int) or d > max_dim:
        raise InvalidArgument(f"d={d} exceeds max_dim={max_dim!r}; the search visits up to "
                              f"d!·2^d = {math.factorial(d) * 2 ** d} candidates; pass "
                              f"max_dim={d} to search anyway.")
    # Equalities M[σa, σb] = ±M[a, b] and S x_i = x_j are scale invariant: clear denominators
    # and search on Python integers (Fractions are slow).
    Vi, Bi, rows = (integer_rows(M) for M in (V, B, X))
    classes: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        classes.setdefault(r, []).append(i)
    perm, signs, used, found = [0] * d, [0] * d, [False] * d, []
    image_keys, target_keys = [()] * n, [()] * n

    def fits(a: int) -> bool:
        pa, sa = perm[a], signs[a]
        for M in (Vi, Bi):
            for b in range(a + 1):
                s = sa * signs[b]
                if M[pa][perm[b]] != s * M[a][b] or M[perm[b]][pa] != s * M[b][a]:
                    return False
        # Assigned coordinates: the multiset {(s_b x_ib)_b} must equal {(x_j,σ(b))_b}.
        for i, r in enumerate(rows):
            image_keys[i] = image_keys[i][:a] + (sa * r[a],)
            target_keys[i] = target_keys[i][:a] + (r[pa],)
        return Counter(image_keys) == Counter(target_keys)

    def search(a: int) -> None:
        if a == d:
            tokens = [0] * n
            for row, members in classes.items():
                image = [None] * d
                for b in range(d):
                    image[perm[b]] = signs[b] * row[b]
                for i, j in zip(members, classes[tuple(image)], strict=True):
                    tokens[i] = j
            g = Symmetry(tuple(perm), tuple(signs), tuple(tokens))
            if not g.is_identity:
                found.append(g)
            return
        for r in range(d):
            if used[r]:
                continue
            for s in (1, -1):
                perm[a], signs[a], used[r] = r, s, True
                if fits(a):
                    search(a + 1)
                used[r] = False

    search(0)
    # With equal tokens matched in index order, π_{ST} = π_S ∘ π_T: the pairs form a group.
    return SymmetryGroup(n, d, found, [c for c in classes.values() if len(c) > 1],
                         tie_duplicates=tie_duplicates, _closed=True)
