r"""Orbits of a group of signed permutations on the entries of an n×d state (signed union-find).

Private helper of :class:`verify.exact.symmetry_group.SymmetryGroup`: the entries
:math:`(i, c)` are numbered :math:`k = i d + c`; an element :math:`(S, \pi)` links :math:`k` to
:math:`\pi(i) d + \sigma(c)` with the sign of :math:`S`, tied duplicate tokens link their rows
with sign 1.  An orbit containing a closed loop of sign :math:`-1` is forced to 0.

Examples
--------
>>> from types import SimpleNamespace
>>> from verify.exact.symmetry_group import Symmetry
>>> flip = Symmetry(perm=(0, 1), signs=(1, -1), tokens=(0,))
>>> group = SimpleNamespace(n=1, d=2, elements=(flip,), tie_duplicates=True,
...                         duplicate_classes=())
>>> ids, sign, forced, reps = orbit_arrays(group)
>>> ids.tolist(), forced.tolist(), reps.tolist()
([0, 1], [False, True], [0, 1])
"""

from __future__ import annotations

import numpy as np

__all__ = ["orbit_arrays"]


def orbit_arrays(group) -> tuple:
    """Signed union-find on the ``n·d`` entries: orbit ids, signs, forced zeros, representatives."""
    n, d = group.n, group.d
    parent, par_sign, zero = list(range(n * d)), [1] * (n * d), [False] * (n * d)

    def find(x):  # returns (root, s) with Z_x = s * Z_root; compresses the path
        path = []
        while parent[x] != x:
            path.append(x)
            x = parent[x]
        s = 1
        for y in reversed(path):  # nearest to the root first
            s *= par_sign[y]
            parent[y], par_sign[y] = x, s
        return x, (par_sign[path[0]] if path else 1)

    def union(x, y, s):  # record Z_y = s * Z_x
        rx, px = find(x)
        ry, py = find(y)
        if rx == ry:
            if py != s * px:
                zero[rx] = True
            return
        if ry < rx:  # keep the smallest index as representative
            rx, ry, px, py = ry, rx, py, px
        parent[ry], par_sign[ry] = rx, py * s * px
        zero[rx] = zero[rx] or zero[ry]

    seen = [False] * (n * d)
    for k in range(n * d):  # the orbit of k is {g·k : g ∈ G}, G being closed
        if seen[k]:
            continue
        i, a = divmod(k, d)
        for g in group.elements:
            m = g.tokens[i] * d + g.perm[a]
            union(k, m, g.signs[a])
            seen[m] = True
    if group.tie_duplicates:
        for c in group.duplicate_classes:
            for i, j in zip(c, c[1:], strict=False):
                for a in range(d):
                    union(i * d + a, j * d + a, 1)
    roots = [find(k) for k in range(n * d)]
    reps = sorted({r for r, _ in roots})
    number = {r: m for m, r in enumerate(reps)}
    ids = np.array([number[r] for r, _ in roots], dtype=np.intp)
    sign = np.array([s for _, s in roots], dtype=float)
    forced = np.array([zero[r] for r in reps], dtype=bool)
    return ids, sign, forced, np.array(reps, dtype=np.intp)
