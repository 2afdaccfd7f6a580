r"""Distances from tokens to the sets of ``approach`` and ``converges``: a finite set of points,
a subspace, a union of hyperplanes, a convex hull (:func:`hull_distance`, with an error bound).

Examples
--------
>>> d, gap = hull_distance([2.0, 0.5], [[0, 0], [1, 0], [1, 1], [0, 1]])
>>> round(float(d), 12), bool(gap < 1e-12)
(1.0, True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["hull_distance"]

_EPS = float(np.finfo(float).eps)

# --------------------------------------------------------------------------- distances
def _nearest(points: np.ndarray):
    def distance(z):
        return float(np.max(np.min(np.linalg.norm(z[:, None, :] - points[None], axis=2),
                                   axis=1))), 0.0
    return distance


def _bounds(z: np.ndarray, P: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Upper bound ``|z − y|`` (``y`` in the hull) and the lower bound from the hyperplane
    through ``y`` orthogonal to ``z − y`` (weak duality)."""
    upper = float(np.linalg.norm(z - y))
    if upper == 0:
        return 0.0, 0.0
    u = (z - y) / upper
    return upper, max(0.0, float(u @ z - np.max(P @ u)))


def hull_distance(z: object, points: object) -> tuple[float, float]:
    r"""Euclidean distance from ``z`` to :math:`\operatorname{conv}(\text{points})` and a bound
    on its error.

    A point :math:`y` of the hull comes from non-negative least squares with the weights' sum
    as a heavy extra row (refined by an affine projection on its support); :math:`|z - y|` is
    an upper bound and :math:`\langle u, z\rangle - \max_p \langle u, p\rangle`,
    :math:`u = (z - y)/|z - y|`, a lower bound. Returns (upper bound, upper − lower).

    >>> d, gap = hull_distance([1.0, 1.0], [[0, 0], [1, 0], [0, 1]])
    >>> round(d, 12), gap < 1e-15
    (0.707106781187, True)
    """
    from scipy.optimize import nnls

    z, P = np.asarray(z, dtype=float), np.asarray(points, dtype=float)
    heavy = 1e3 * max(float(np.max(np.abs(P))), float(np.max(np.abs(z))), 1e-300)
    w, _ = nnls(np.vstack([P.T, np.full((1, len(P)), heavy)]), np.append(z, heavy))
    best = _bounds(z, P, P.T @ (w / w.sum()))
    S = np.flatnonzero(w > 0)
    c = np.linalg.lstsq((P[S[1:]] - P[S[0]]).T, z - P[S[0]], rcond=None)[0] if len(S) > 1 \
        else np.zeros(0)
    weights = np.append(1 - c.sum(), c)
    if np.all(weights >= 0):
        other = _bounds(z, P, P[S].T @ (weights / weights.sum()))
        best = min(best, other, key=lambda b: b[0] - b[1])
    return best[0], best[0] - best[1]


def _subspace(basis: np.ndarray):
    U, s, _ = np.linalg.svd(basis.T, full_matrices=False)
    Q = U[:, s > s[0] * max(basis.shape) * _EPS] if s[0] > 0 else U[:, :0]

    def distance(z):
        return float(np.max(np.linalg.norm(z - (z @ Q) @ Q.T, axis=1))), 0.0
    return distance


def _hyperplanes(normals: np.ndarray, offsets: np.ndarray):
    size = np.linalg.norm(normals, axis=1)

    def distance(z):
        gaps = np.abs(z @ normals.T - offsets) / size
        return float(np.max(np.min(gaps, axis=1))), 0.0
    return distance


def _hull(points: np.ndarray):
    def distance(z):
        pairs = [hull_distance(zi, points) for zi in z]
        return max(p[0] for p in pairs), max(p[1] for p in pairs)
    return distance


