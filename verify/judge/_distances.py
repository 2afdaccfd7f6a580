r"""Distances from tokens to the sets the conclusions name: a finite set of points, a subspace,
a union of hyperplanes, a convex hull, the boundary of a convex hull together with the origin.

Each ``*_distance(set)`` returns a function ``distance(z) -> (D, bound)`` of a configuration
``z`` (``n×k``): ``D = max_i dist(z_i, set)`` (Euclidean) and a bound on the error of that
computation (0 where it is a closed form). Every such ``D`` is 1-Lipschitz in each token.

Examples
--------
>>> d, gap = hull_point_distance([2.0, 0.5], [[0, 0], [1, 0], [1, 1], [0, 1]])
>>> round(float(d), 12), bool(gap < 1e-12)
(1.0, True)
>>> boundary_distance(np.array([[0, 0], [4, 0], [0, 4], [4, 4]]))(np.array([[3.0, 2.0]]))
(1.0, 0.0)
"""

from __future__ import annotations

import numpy as np

from verify.numerics import EPS, ulps

__all__ = ["hull_point_distance", "nearest_distance", "subspace_distance",
           "hyperplanes_distance", "hull_distance", "boundary_distance"]



def nearest_distance(points: np.ndarray):
    """``max_i min_p |z_i − p|`` over the rows ``p`` of ``points``."""
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


def hull_point_distance(z: object, points: object) -> tuple[float, float]:
    r"""Euclidean distance from ``z`` to :math:`\operatorname{conv}(\text{points})` and a bound
    on its error.

    A point :math:`y` of the hull comes from non-negative least squares with the weights' sum
    as a heavy extra row (refined by an affine projection on its support); :math:`|z - y|` is
    an upper bound and :math:`\langle u, z\rangle - \max_p \langle u, p\rangle`,
    :math:`u = (z - y)/|z - y|`, a lower bound. Returns (upper bound, upper − lower).

    >>> d, gap = hull_point_distance([1.0, 1.0], [[0, 0], [1, 0], [0, 1]])
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


def subspace_distance(basis: np.ndarray):
    """Distance to the span of the rows of ``basis``."""
    U, s, _ = np.linalg.svd(basis.T, full_matrices=False)
    Q = U[:, s > s[0] * max(basis.shape) * EPS] if s[0] > 0 else U[:, :0]  # NumPy's rank cut

    def distance(z):
        return float(np.max(np.linalg.norm(z - (z @ Q) @ Q.T, axis=1))), 0.0
    return distance


def hyperplanes_distance(normals: np.ndarray, offsets: np.ndarray):
    """Distance to the union of the hyperplanes ``<n_j, z> = b_j``."""
    size = np.linalg.norm(normals, axis=1)

    def distance(z):
        gaps = np.abs(z @ normals.T - offsets) / size
        return float(np.max(np.min(gaps, axis=1))), 0.0
    return distance


def hull_distance(points: np.ndarray):
    """Distance to the convex hull of ``points`` (:func:`hull_point_distance`)."""
    def distance(z):
        pairs = [hull_point_distance(zi, points) for zi in z]
        return max(p[0] for p in pairs), max(p[1] for p in pairs)
    return distance


def _facets(points: np.ndarray) -> np.ndarray | None:
    """Unit outer facet normals and offsets ``[a, b]`` (``a·x ≤ b`` inside) of a full-dimensional
    hull, or ``None`` when the hull is flat (then its boundary in the ambient space is itself)."""
    k = points.shape[1]
    if k == 1:
        return np.array([[1.0, points.max()], [-1.0, -points.min()]]) \
            if points.max() > points.min() else None
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(np.unique(points, axis=0))
    except (QhullError, ValueError):
        return None
    return np.column_stack([hull.equations[:, :k], -hull.equations[:, k]])


def boundary_distance(points: np.ndarray):
    r"""Distance to :math:`\partial\mathcal K \cup \{0\}`, :math:`\mathcal K` the convex hull of
    ``points``: outside :math:`\mathcal K` the distance to :math:`\mathcal K`, inside the
    smallest depth below a facet (a flat :math:`\mathcal K` is its own boundary); and at most
    the distance to 0."""
    facets = _facets(points)

    rounding = ulps(8, max(1.0, float(np.max(np.abs(points)))))  # Qhull facets (HULL_ULPS = 64)

    def distance(z):
        worst, bound = 0.0, rounding
        for zi in z:
            depth = None if facets is None else float(np.min(facets[:, -1]
                                                           - facets[:, :-1] @ zi))
            if depth is not None and depth >= 0:  # inside: the depth below the nearest facet
                d = depth
            else:
                d, gap = hull_point_distance(zi, points)
                bound = max(bound, gap + rounding)
            worst = max(worst, min(d, float(np.linalg.norm(zi))))
        return worst, bound
    return distance
