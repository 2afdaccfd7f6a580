r"""Clusters of observed limits and their identification with predicted points (shared by the
checks of §3–§5: :mod:`~verify.checks.hull`, :mod:`~verify.checks.polytope_limits`,
:mod:`~verify.checks.collapse`, :mod:`~verify.checks.hyperplanes` and the Theorem 5.2 checks).

Observed limits are grouped into *clusters* of mutually compatible limits (max-norm distance
within the sum of the error bars); a clustering is *certified* when each cluster is a clique and
limits of different clusters are separated. Counting and identification facts read off a
certified clustering are exact (error 0). :class:`SubCheck` and :func:`combine` (how these checks
reach a verdict) are defined in :mod:`verify.checks._parts` and re-exported here.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks._parts import SubCheck, combine

__all__ = ["SubCheck", "combine", "certified_clusters", "cluster_groups", "identify"]


def certified_clusters(points: np.ndarray, errors: np.ndarray):
    """Group limits by compatibility (max-norm distance ≤ sum of error bars).

    Returns ``(labels, reps, certified)``: a cluster label per point, one representative per
    cluster (its member with the smallest error bar), and whether the clustering is certified
    (each cluster a clique of compatible limits; different clusters separated by construction).

    Examples
    --------
    >>> labels, reps, ok = certified_clusters(np.array([[0.0], [1e-9], [1.0]]),
    ...                                       np.array([1e-8, 1e-8, 1e-8]))
    >>> labels.tolist(), reps, ok
    ([0, 0, 1], [0, 2], True)
    """
    P = np.asarray(points, dtype=float).reshape(len(points), -1)
    E = np.asarray(errors, dtype=float)
    n = len(P)
    dist = np.max(np.abs(P[:, None, :] - P[None, :, :]), axis=2) if n else np.zeros((0, 0))
    close = dist <= E[:, None] + E[None, :]
    labels = -np.ones(n, dtype=int)
    count = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        stack, labels[i] = [i], count
        while stack:
            j = stack.pop()
            for k in np.flatnonzero(close[j] & (labels < 0)):
                labels[k] = count
                stack.append(int(k))
        count += 1
    certified = all(np.all(close[np.ix_(labels == c, labels == c)]) for c in range(count))
    reps = [int(np.flatnonzero(labels == c)[np.argmin(E[labels == c])]) for c in range(count)]
    return labels, reps, bool(certified)


def identify(value, error: float, candidates, cand_errors, what: str) -> tuple[int, SubCheck]:
    r"""Identify an observed limit with one of finitely many predicted points.

    With :math:`\delta_j` the max-norm distance to candidate ``j`` and :math:`e_j` the error bar
    (``error + cand_errors[j]``): **violated** when every :math:`\delta_j > e_j` (the limit is
    certainly none of them; margin :math:`-\delta_{j^*}`); otherwise the margin is
    :math:`\min_{j \ne j^*}\delta_j - \delta_{j^*}` (how much closer it is to its candidate than
    to any other), with error :math:`2\max_j e_j`: **holds** when the identification is unique.

    Examples
    --------
    >>> j, sub = identify([0.0], 1e-9, [[1.0], [1e-10]], [0.0, 0.0], "x in S")
    >>> j, sub.status
    (1, 'holds')
    >>> identify([0.5], 1e-9, [[1.0], [0.0]], [0.0, 0.0], "x in S")[1].status
    'violated'
    """
    c = np.asarray(candidates, dtype=float).reshape(len(candidates), -1)
    v = np.asarray(value, dtype=float).reshape(-1)
    delta = np.max(np.abs(c - v), axis=1)
    errs = float(error) + np.asarray(cand_errors, dtype=float)
    j = int(np.argmin(delta - errs))
    if delta[j] > errs[j]:
        return j, SubCheck(-float(delta[j]), float(errs[j]), what)
    others = np.delete(delta, j)
    second = float(np.min(others)) if others.size else math.inf
    return j, SubCheck(second - float(delta[j]), 2 * float(np.max(errs)), what)



def cluster_groups(points: np.ndarray, errors: np.ndarray) -> list[list[int]]:
    """The clusters of :func:`certified_clusters` as lists of indices (ascending, ordered by
    their smallest member), whether certified or not.

    Examples
    --------
    >>> cluster_groups(np.array([[0.0], [1.0], [1e-9]]), np.array([1e-8, 1e-8, 1e-8]))
    [[0, 2], [1]]
    """
    labels, reps, _ = certified_clusters(points, errors)
    return [[int(i) for i in np.flatnonzero(labels == c)] for c in range(len(reps))]
