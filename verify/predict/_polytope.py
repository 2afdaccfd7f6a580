r"""Polytope predictions from the certified leaders: ``polytope-S`` (Theorem 3.1),
``polytope-vertices`` (its generic form) and ``subspace-K`` (Theorem 5.2).

:math:`\mathcal K` is the convex hull of the leaders' positions at the first certified time
:math:`t_1` of the run (each a limit up to its error,
:func:`~verify.predict._leaders.certified_leaders`) — determined by the dynamics, not by the
initial hull, since leaders move during the early, soft phase; read once, before the end the
prediction is compared with. The positions are read off the run: basis *estimate*. For Theorem 3.1,
:math:`\mathcal S = \{x \in \mathcal K : \|Ax\|^2 = \max_j \langle Ax, Av_j\rangle\}` is then
computed **exactly** (:func:`verify.exact.polytope_S`, on the leaders' float positions at their
exact binary value); each point of :math:`\mathcal S` is the :math:`B`-projection of 0 onto the
affine hull of a face, and carries the first-order error induced by the errors of that face's
vertices (central differences of the projection).
"""

from __future__ import annotations

import numpy as np

from verify.analysis.evidence import Basis, plain6
from verify.errors import InvalidArgument
from verify.exact import hull_certificate, polytope_S
from verify.exact.inputs import rational_array
from verify.predict._evaluation import Value, projected_tokens
from verify.predict._leaders import Unavailable, certified_leaders
from verify.vocabulary.conclusions import register_prediction

__all__ = ["polytope_S_prediction", "polytope_vertices", "subspace_K"]


def _face_point(VJ: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Float B-orthogonal projection of 0 onto aff(rows of VJ) (as in polytope_S)."""
    v0 = VJ[0]
    if len(VJ) == 1:
        return v0.copy()
    W = VJ[1:] - v0
    alpha = np.linalg.solve(W @ B @ W.T, -(W @ B.T @ v0))
    return v0 + W.T @ alpha


def _face_error(VJ: np.ndarray, errs: np.ndarray, B: np.ndarray) -> float:
    """First-order error of :func:`_face_point` when vertex ``j`` moves by ``errs[j]`` in the
    max-norm (central finite differences of the Jacobian)."""
    if len(VJ) == 1:
        return float(errs[0])
    scale = max(float(np.max(np.abs(VJ))), 1.0)
    h, total = 1e-6 * scale, 0.0
    for j in range(VJ.shape[0]):
        for a in range(VJ.shape[1]):
            up, down = VJ.copy(), VJ.copy()
            up[j, a] += h
            down[j, a] -= h
            total += float(np.max(np.abs(_face_point(up, B) - _face_point(down, B)))) / (2 * h) \
                * float(errs[j])
    return total


def _leader_points(ev):
    found = certified_leaders(ev)
    return found, found.positions[found.leaders], found.errors[found.leaders]


def _figure(vertices, points=None, label: str = "") -> dict:
    out = {"polytope_vertices": [[plain6(v) for v in x] for x in vertices], "label": label}
    if points is not None:
        out["points"] = [[plain6(v) for v in x] for x in points]
    return {"figure": {"predicted": out}}


@register_prediction("polytope-S", gives="points",
                     summary="𝒮 of Theorem 3.1 for 𝒦 = conv(certified leaders), exactly")
def polytope_S_prediction(ev) -> Value:
    """The finite set 𝒮 (points, their error bound, the exact data in the evidence)."""

    found, L, E = _leader_points(ev)
    R, _ = rational_array("leaders", L)
    B = ev.instance.model.B
    try:
        S = polytope_S(R, B)
    except InvalidArgument as exc:
        raise Unavailable(f"𝒮 could not be computed: {exc}") from None
    cert = hull_certificate(R)
    index = {tuple(R[c]): c for c in range(len(L))}
    Bf = np.array(B, dtype=float)
    points, errors = [], []
    for x, weights in zip(S.points, S.weights, strict=True):
        face = [index[S.vertices[j]] for j in sorted(weights)]
        points.append([float(v) for v in x])
        errors.append(_face_error(L[face], E[face], Bf))
    vertices = L[sorted(cert.vertices)]
    evidence = {**found.evidence(), "K_vertices": vertices.tolist(), "S_points": points,
                "S_is_vertex": list(S.is_vertex), "S_is_origin": list(S.is_origin),
                "V_subset_S": S.vertices_in_S(),
                "S_in_boundary_or_origin": S.in_boundary_or_origin(),
                **_figure(vertices, points, r"$\mathcal{K}$ and $\mathcal{S}$")}
    return Value(np.array(points), float(max(errors)), evidence, source="prediction",
                 basis=Basis.ESTIMATE)


@register_prediction("polytope-vertices", gives="points",
                     summary="the vertices of 𝒦 = conv(certified leaders)")
def polytope_vertices(ev) -> Value:
    """The vertices of the leaders' hull (certified exactly)."""

    found, L, E = _leader_points(ev)
    cert = hull_certificate(rational_array("leaders", L)[0])
    keep = sorted(cert.vertices)
    inside = [found.leaders[i] + 1 for i in range(len(L)) if i not in keep]
    evidence = {**found.evidence(), "leaders_not_vertices": inside,
                **_figure(L[keep], None, r"$\mathcal{K}$ (its vertices: the leaders' limits)")}
    return Value(L[keep], float(np.max(E[keep])), evidence, source="prediction",
                 basis=Basis.ESTIMATE)


@register_prediction("subspace-K", gives="polytope",
                     summary="Theorem 5.2: the leaders' π_F z in F-coordinates (𝒦 is their hull)")
def subspace_K(ev) -> Value:
    """The points whose hull is 𝒦 ⊂ F, in the coordinates of the conclusion's functional (the
    map ``F-coordinates``)."""

    found, L, E = _leader_points(ev)
    points = projected_tokens(ev, L)
    gain = float(np.max(np.abs(projected_tokens(ev, np.eye(ev.instance.d))).sum(axis=0)))
    return Value(points, gain * float(np.max(E)), {**found.evidence(),
                                                   "K_points": points.tolist()},
                 source="prediction", basis=Basis.ESTIMATE)
