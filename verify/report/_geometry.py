r"""Plane geometry for drawing predicted objects: boxes, clipped lines, plane sections, hulls.

All in float64 and only for drawing; the exact objects (vertices, offsets) come from
:mod:`verify.exact`.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

__all__ = ["bounding_box", "clip_line", "plane_section", "hull_pieces"]


def bounding_box(*clouds: np.ndarray, pad: float = 0.08) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned box around all finite points of ``clouds`` (each ``(..., d)``), padded by
    ``pad`` times the largest side (a unit box around a single point).

    >>> bounding_box(np.array([[0.0, 0.0], [1.0, 2.0]]), pad=0.0)
    (array([0., 0.]), array([1., 2.]))
    """
    d = clouds[0].shape[-1]
    pts = np.concatenate([c.reshape(-1, d) for c in clouds if c is not None and c.size])
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if pts.size == 0:
        return -np.ones(d), np.ones(d)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    side = float(np.max(hi - lo))
    margin = pad * side if side > 0 else 0.5
    return lo - margin, hi + margin


def clip_line(p: np.ndarray, u: np.ndarray, lo: np.ndarray, hi: np.ndarray
              ) -> np.ndarray | None:
    """The segment of the line ``p + s u`` inside the box ``[lo, hi]`` (Liang–Barsky), as a
    ``2 × d`` array, or ``None`` when the line misses the box or ``u = 0``.

    >>> clip_line(np.array([0.0, 0.5]), np.array([1.0, 0.0]), np.zeros(2), np.ones(2))
    array([[0. , 0.5],
           [1. , 0.5]])
    """
    if not np.any(u):
        return None
    s_lo, s_hi = -np.inf, np.inf
    for k in range(len(p)):
        if u[k] == 0:
            if not lo[k] <= p[k] <= hi[k]:
                return None
            continue
        a, b = (lo[k] - p[k]) / u[k], (hi[k] - p[k]) / u[k]
        s_lo, s_hi = max(s_lo, min(a, b)), min(s_hi, max(a, b))
    if s_lo > s_hi:
        return None
    return np.array([p + s_lo * u, p + s_hi * u])


def _box_edges(lo: np.ndarray, hi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    corners = np.array([[hi[k] if (c >> k) & 1 else lo[k] for k in range(3)] for c in range(8)])
    return [(corners[a], corners[b]) for a in range(8) for b in range(a + 1, 8)
            if bin(a ^ b).count("1") == 1]


def _ordered(points: np.ndarray) -> np.ndarray:
    """Points of a convex planar polygon (in 3-D) ordered around their centroid."""
    centre = points.mean(axis=0)
    _, _, vt = np.linalg.svd(points - centre)
    e1, e2 = vt[0], vt[1]
    angle = np.arctan2((points - centre) @ e2, (points - centre) @ e1)
    return points[np.argsort(angle)]


def plane_section(normal: np.ndarray, c: float, lo: np.ndarray, hi: np.ndarray
                  ) -> np.ndarray | None:
    """The polygon ``{x : normal·x = c} ∩ [lo, hi]`` in 3-D (vertices in order), or ``None``.

    >>> plane_section(np.array([0.0, 0.0, 1.0]), 0.5, np.zeros(3), np.ones(3)).shape
    (4, 3)
    """
    points = []
    for a, b in _box_edges(lo, hi):
        fa, fb = normal @ a - c, normal @ b - c
        if fa == 0:
            points.append(a)
        if fa * fb < 0:
            points.append(a + fa / (fa - fb) * (b - a))
    if not points:
        return None
    points = np.unique(np.round(np.array(points), 12), axis=0)
    return _ordered(points) if len(points) >= 3 else None


def hull_pieces(vertices: np.ndarray) -> tuple[int, list[np.ndarray]]:
    """The convex hull of ``vertices`` (``k × d``, ``d ≤ 3``) as drawable pieces.

    Returns ``(r, pieces)`` with ``r`` the affine dimension of the points and ``pieces``: one
    point (``r = 0``), one segment (``r = 1``), one polygon with its vertices in order
    (``r = 2``, also for coplanar points in 3-D), or the polygonal faces of a polytope
    (``r = 3``, coplanar facets of Qhull merged).

    >>> r, (square,) = hull_pieces(np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]]))
    >>> r, len(square)
    (2, 4)
    """
    pts = np.asarray(vertices, dtype=float)
    centre = pts.mean(axis=0)
    _, sing, vt = np.linalg.svd(pts - centre)
    scale = max(float(np.max(np.abs(pts))), 1e-300)
    r = int(np.sum(sing > 1e-10 * scale))
    coords = (pts - centre) @ vt[:r].T
    if r == 0:
        return 0, [pts[:1]]
    if r == 1:
        return 1, [pts[[int(np.argmin(coords[:, 0])), int(np.argmax(coords[:, 0]))]]]
    try:
        hull = ConvexHull(coords)
    except QhullError:  # numerically degenerate after all: fall back to a segment
        return 1, [pts[[int(np.argmin(coords[:, 0])), int(np.argmax(coords[:, 0]))]]]
    if r == 2:
        return 2, [pts[hull.vertices]]          # counter-clockwise order in 2-D
    faces: dict[tuple, set] = {}
    for simplex, eq in zip(hull.simplices, hull.equations, strict=True):
        faces.setdefault(tuple(np.round(eq, 9)), set()).update(simplex.tolist())
    return 3, [_ordered(pts[sorted(idx)]) for idx in faces.values()]
