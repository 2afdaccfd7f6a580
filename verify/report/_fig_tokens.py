r"""Token paths with the predicted limit object drawn in (:func:`plot_trajectories`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Polygon
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from verify.errors import InvalidArgument
from verify.flow.trajectory import Trajectory
from verify.report._figstyle import (
    beside_legend,
    colour_clusters,
    describe,
    float_array,
    new_figure,
    token_colours,
)
from verify.report._geometry import bounding_box, clip_line, hull_pieces, plane_section

__all__ = ["Predicted", "plot_trajectories"]

PREDICTED_COLOUR = "0.15"
_NAMES = {"z": ("z", r"rescaled tokens $z_i(t) = e^{-tV} x_i(t)$"),
          "x": ("x", r"tokens $x_i(t)$"),
          "direction": ("u", r"directions $u_i(t) = x_i(t)/|x_i(t)|$")}


@dataclass(frozen=True)
class Predicted:
    r"""A predicted limit object to draw over the token paths (any combination of fields).

    Attributes
    ----------
    polytope_vertices : array_like, shape (k, d), optional
        Vertices of the polytope :math:`\mathcal{K}`; drawn as their convex hull.
    hyperplanes : tuple (phi_star, offsets), optional
        A dual vector :math:`\varphi_1^*` (shape (d,), real) and offsets such as
        :math:`(a, 0, b)`: the hyperplanes :math:`\{\varphi_1^*(x) = c\}`.
    points : array_like, shape (k, d), optional
        Predicted limit points.
    subspace : array_like, shape (r, d), optional
        Direction vectors; each spans a line drawn through every point of ``anchors``.
    anchors : array_like, shape (p, d), optional
        Points the lines of ``subspace`` pass through (default: the origin).
    label : str
        Name of the predicted object in the legend (mathtext), e.g. ``r"$\mathcal{K}$"``.
    """

    polytope_vertices: Any = None
    hyperplanes: Any = None
    points: Any = None
    subspace: Any = None
    anchors: Any = None
    label: str = ""


def _points(name: str, value: Any, d: int) -> np.ndarray:
    array = float_array(name, value, (1, 2))
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.shape[1] != d or array.shape[0] == 0:
        raise InvalidArgument(
            f"{name} has shape {array.shape}, but it must be k×d with k ≥ 1 and d={d} (the "
            "dimension of the tokens); give one row per point."
        )
    return array


def _as_predicted(predicted: Any, d: int) -> dict:
    """Validate ``predicted`` (a :class:`Predicted`, a dict or another dataclass)."""
    keys = {f.name for f in fields(Predicted)}
    if isinstance(predicted, dict):
        raw = predicted
    elif hasattr(predicted, "__dataclass_fields__"):
        raw = {f.name: getattr(predicted, f.name) for f in fields(predicted)}
    else:
        raise InvalidArgument(
            f"predicted=<{describe(predicted)}> ({type(predicted).__name__}) must be a "
            f"Predicted, a dataclass or a dict with some of the keys {sorted(keys)}."
        )
    unknown = set(raw) - keys
    if unknown:
        raise InvalidArgument(f"predicted has unknown keys {sorted(unknown)}; allowed keys are "
                              f"{sorted(keys)}.")
    out = {"label": str(raw.get("label") or "")}
    for key in ("polytope_vertices", "points", "subspace", "anchors"):
        if raw.get(key) is not None:
            out[key] = _points(f"predicted.{key}", raw[key], d)
    if raw.get("hyperplanes") is not None:
        hp = raw["hyperplanes"]
        if isinstance(hp, dict):
            hp = (hp.get("phi_star"), hp.get("offsets"))
        if not isinstance(hp, tuple | list) or len(hp) != 2:
            raise InvalidArgument(
                f"predicted.hyperplanes=<{describe(hp)}> must be a pair (phi_star, offsets) or "
                "a dict {'phi_star': ..., 'offsets': [a, 0, b]}."
            )
        phi = _points("predicted.hyperplanes phi_star", hp[0], d)[0]
        offsets = float_array("predicted.hyperplanes offsets", hp[1], 1)
        if not np.any(phi):
            raise InvalidArgument("predicted.hyperplanes phi_star is 0; a hyperplane needs a "
                                  "nonzero dual vector.")
        out["hyperplanes"] = (phi, np.unique(offsets))
    if len(out) == 1:
        raise InvalidArgument(f"predicted has none of {sorted(keys - {'label', 'anchors'})}; "
                              "give at least one, or pass predicted=None.")
    return out


def _series(traj: Any, variable: str) -> np.ndarray:
    if not isinstance(traj, Trajectory):
        raise InvalidArgument(
            f"traj=<{describe(traj)}> ({type(traj).__name__}) is not a Trajectory; pass the "
            "result of verify.flow.simulate.simulate(...)."
        )
    if variable == "direction":
        x = float_array("traj.x", traj.tokens("x"), 3, allow_nonfinite=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = x / np.linalg.norm(x, axis=-1, keepdims=True)
    else:
        values = float_array(f"traj.{variable}", traj.tokens(variable), 3,
                             allow_nonfinite=True)
    m = len(traj.times)
    if values.shape[0] != m or values.shape[1] == 0 or values.shape[2] == 0:
        raise InvalidArgument(
            f"traj.{variable} has shape {values.shape}, but it must be (m, n, d) with "
            f"m={m} checkpoints and n, d ≥ 1; the trajectory is corrupt, re-run simulate."
        )
    return values


def _legend(fig: Figure, token_handle: str, extra: list):
    handles = [
        Line2D([], [], ls="none", marker="o", ms=4, color="0.4", label="start, $t = 0$"),
        Line2D([], [], ls="none", marker="o", ms=8, color="0.4", mec="k",
               label="end, $t = T$"),
        *extra,
    ]
    return fig.legend(handles=handles, title=token_handle, fontsize=8, title_fontsize=8,
                      frameon=False)


def _plot_1d(ax, t, values, colours, pred, sym) -> list:
    n = values.shape[1]
    for i in range(n):
        ok = np.isfinite(values[:, i, 0])
        ax.plot(t[ok], values[ok, i, 0], color=colours[i], lw=1.4, gid=f"path-{i}")
    ax.scatter(np.full(n, t[0]), values[0, :, 0], s=14, c=colours, zorder=3, gid="start")
    ax.scatter(np.full(n, t[-1]), values[-1, :, 0], s=45, c=colours, edgecolors="k",
               zorder=3, gid="end")
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(rf"${sym}_i(t)$")
    finite = np.abs(values[np.isfinite(values)])
    start = float(np.max(np.abs(values[0]))) if np.all(np.isfinite(values[0])) else 0.0
    if start > 0 and finite.size and finite.max() > 20 * start:  # e^{tV} growth: symlog
        ax.set_yscale("symlog", linthresh=start)
        ax.set_ylabel(rf"${sym}_i(t)$ (linear on $[-{start:.3g}, {start:.3g}]$, log outside)")
    extra = []
    if pred is None:
        return extra
    style = {"color": PREDICTED_COLOUR, "lw": 1.0}
    if "polytope_vertices" in pred:
        v = pred["polytope_vertices"][:, 0]
        ax.axhspan(v.min(), v.max(), color="0.85", zorder=0, gid="predicted-polytope")
        extra.append(Polygon([[0, 0]], color="0.85", label="predicted interval"))
    if "hyperplanes" in pred:
        phi, offsets = pred["hyperplanes"]
        for c in offsets:
            ax.axhline(c / phi[0], ls="-.", gid="predicted-hyperplane", **style)
        extra.append(Line2D([], [], ls="-.", label=r"$\{\varphi_1^* = c\}$", **style))
    if "points" in pred:
        for p in pred["points"][:, 0]:
            ax.axhline(p, ls=":", gid="predicted-point", **style)
        extra.append(Line2D([], [], ls=":", label="predicted limits", **style))
    return extra


def _draw_hull(ax, vertices, three_d, label) -> list:
    r, pieces = hull_pieces(vertices)
    face, edge = (0.5, 0.5, 0.5, 0.18), PREDICTED_COLOUR
    if r >= 2 and not three_d:
        ax.add_patch(Polygon(pieces[0], closed=True, fc=face, ec=edge, lw=1.3, ls="--",
                             zorder=1, gid="predicted-polytope"))
    elif r >= 2:
        ax.add_collection3d(Poly3DCollection(pieces, facecolors=[face], edgecolors=edge,
                                             linewidths=0.8, gid="predicted-polytope"))
    elif r == 1:
        ax.plot(*pieces[0].T, color=edge, lw=1.5, ls="--", gid="predicted-polytope")
    ax.scatter(*vertices.T, marker="D", s=22, facecolors="none", edgecolors=edge, zorder=4,
               gid="predicted-vertices")
    name = label or r"$\mathcal{K}$"
    return [Polygon([[0, 0]], fc=face, ec=edge, ls="--",
                    label=f"predicted polytope {name} ({len(vertices)} vertices)")]


def _plot_nd(ax, values, colours, pred, sym, three_d) -> list:
    m, n, d = values.shape
    k = 3 if three_d else 2
    paths = values[..., :k]
    for i in range(n):
        ok = np.all(np.isfinite(paths[:, i]), axis=1)
        ax.plot(*paths[ok, i].T, color=colours[i], lw=1.3, gid=f"path-{i}")
    shade = {"depthshade": False} if three_d else {}
    ax.scatter(*paths[0].T, s=14, c=colours, zorder=3, gid="start", **shade)
    ax.scatter(*paths[-1].T, s=45, c=colours, edgecolors="k", zorder=3, gid="end", **shade)
    if n <= 12:
        for i in range(n):
            if np.all(np.isfinite(paths[0, i])):
                ax.text(*paths[0, i], f" {i + 1}", fontsize=7, color="0.25")  # 1-based
    for a, setter in enumerate(("set_xlabel", "set_ylabel", "set_zlabel")[:k]):
        getattr(ax, setter)(rf"${sym}_{{i,{a + 1}}}$")
    extra: list = []
    if pred is None:
        return extra
    proj = {key: val[:, :k] for key, val in pred.items()
            if key in ("polytope_vertices", "points", "subspace", "anchors")}
    lo, hi = bounding_box(paths, *proj.values())
    style = {"color": PREDICTED_COLOUR, "lw": 1.1}
    if "polytope_vertices" in proj:
        extra += _draw_hull(ax, proj["polytope_vertices"], three_d, pred["label"])
    if "hyperplanes" in pred and d <= 3:
        phi, offsets = pred["hyperplanes"]
        styles = ["-.", "--", ":"]
        for j, c in enumerate(offsets):
            lab = rf"$\{{\varphi_1^*(z) = {c:.4g}\}}$"
            if three_d:
                poly = plane_section(phi, c, lo, hi)
                if poly is not None:
                    ax.add_collection3d(Poly3DCollection(
                        [poly], facecolors=[(0.3, 0.3, 0.3, 0.12)], edgecolors="0.3",
                        linewidths=0.6, gid="predicted-hyperplane"))
                extra.append(Polygon([[0, 0]], fc=(0.3, 0.3, 0.3, 0.12), ec="0.3", label=lab))
            else:
                seg = clip_line(c * phi / (phi @ phi), np.array([-phi[1], phi[0]]), lo, hi)
                if seg is not None:
                    ax.plot(*seg.T, ls=styles[j % 3], gid="predicted-hyperplane", **style)
                extra.append(Line2D([], [], ls=styles[j % 3], label=lab, **style))
    if "subspace" in proj:
        anchors = proj.get("anchors", np.zeros((1, k)))
        for u in proj["subspace"]:
            for p in anchors:
                seg = clip_line(p, u, lo, hi)
                if seg is not None:
                    ax.plot(*seg.T, ls=":", gid="predicted-subspace", **style)
        extra.append(Line2D([], [], ls=":", label="predicted subspace directions", **style))
    if "points" in proj:
        ax.scatter(*proj["points"].T, marker="x", s=60, c=PREDICTED_COLOUR, zorder=5,
                   linewidths=1.5, gid="predicted-points")
        extra.append(Line2D([], [], ls="none", marker="x", ms=8, mew=1.5,
                            color=PREDICTED_COLOUR, label="predicted limit points"))
    for a, setter in enumerate(("set_xlim", "set_ylim", "set_zlim")[:k]):
        getattr(ax, setter)(lo[a], hi[a])
    return extra


def plot_trajectories(traj: Trajectory, *, variable: str = "z",
                      predicted: Predicted | dict | None = None) -> Figure:
    r"""Return a figure of the token paths, with the predicted limit object drawn in.

    Each token's path through the checkpoints runs from a small dot (:math:`t = 0`) to a larger
    dot (:math:`t = T`), coloured by its cluster at :math:`t = T` (see
    :func:`~verify.report._figstyle.colour_clusters`) or, when no clusters are read, one colour
    per token. For ``d = 2`` the plane, for ``d = 3`` a 3-D view, for ``d > 3`` the first two
    coordinates (hyperplanes are then not drawn), for ``d = 1`` the graphs
    :math:`t \mapsto x_i(t)`.

    Parameters
    ----------
    traj : Trajectory
    variable : {"z", "x", "direction"}
        The rescaled tokens :math:`z_i`, the tokens :math:`x_i` (non-finite values of ``x``,
        where :math:`e^{tV}` overflowed, are left out and the title says so) or their
        directions :math:`u_i = x_i/|x_i|`.
    predicted : Predicted or dict, optional
        Polytope vertices, hyperplanes :math:`\{\varphi_1^*(x) = c\}`, limit points and/or
        subspace directions (see :class:`Predicted`).

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes; artists carry ``gid``: ``path-i`` (one line per token), ``start``, ``end``,
        ``predicted-polytope``, ``predicted-hyperplane``, ``predicted-points``,
        ``predicted-subspace``.

    Raises
    ------
    InvalidArgument
        If ``traj`` is not a Trajectory or has a misshaped state, ``variable`` is unknown, or
        ``predicted`` is malformed or of the wrong dimension.

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> from verify.flow.simulate import simulate
    >>> traj = simulate(Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], [-1, -1]]), 2,
    ...                 checkpoints=5, error_estimate=False)
    >>> fig = plot_trajectories(traj, predicted=Predicted(polytope_vertices=[[1, 0], [0, 1],
    ...                                                                      [-1, -1]]))
    >>> len(fig.axes), len([a for a in fig.axes[0].lines if a.get_gid().startswith("path")])
    (1, 3)
    """
    values = _series(traj, variable)
    m, n, d = values.shape
    pred = None if predicted is None else _as_predicted(predicted, d)
    sym, title = _NAMES[variable]
    leader = colour_clusters(traj.attention[-1]) if traj.attention.shape[-2:] == (n, n) else None
    colours = token_colours(n, leader)
    three_d = d == 3
    fig = new_figure(8.4, 5.8 if d >= 2 else 4.4, layout=None)
    ax = fig.add_subplot(projection="3d" if three_d else None)
    t = traj.t
    if d == 1:
        extra = _plot_1d(ax, t, values, colours, pred, sym)
    else:
        extra = _plot_nd(ax, values, colours, pred, sym, three_d)
        if d == 2 or d > 3:
            ax.set_aspect("equal", adjustable="box")
    notes = [f"$n = {n}$ tokens, {m} checkpoints on $[0, {t[-1]:g}]$"]
    if d > 3:
        notes.append(f"first 2 of $d = {d}$ coordinates")
    if not np.all(np.isfinite(values)):
        notes.append("non-finite values left out")
    ax.set_title(title[0].upper() + title[1:] + "\n" + ", ".join(notes), fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.5)
    colour_note = "colour: cluster at $t = T$" if leader is not None else "colour: token"
    beside_legend(fig, ax, _legend(fig, colour_note, extra))
    return fig
