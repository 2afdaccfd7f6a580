r"""Heat maps of the attention matrix :math:`P(t)` and its numerical rank over time."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from verify.errors import InvalidArgument
from verify.flow.trajectory import Trajectory
from verify.report._figstyle import (
    colour_clusters,
    describe,
    float_array,
    inches_box,
    latex_float,
    new_figure,
    token_colours,
)

__all__ = ["attention_rank", "plot_attention_heatmaps", "RANK_RTOL"]

RANK_RTOL = 1e-8


def attention_rank(P: Any, rtol: float = RANK_RTOL) -> int:
    r"""Numerical rank of ``P``: the number of singular values :math:`\sigma_k > r\,\sigma_1`.

    Parameters
    ----------
    P : array_like, shape (n, n)
    rtol : float
        The relative tolerance :math:`r`, in :math:`(0, 1)`.

    Returns
    -------
    rank : int
        A float statement about the stored ``P``, not a certified rank; the certified rank of
        the Boolean limit is :func:`verify.analysis.graph.boolean_limit_rank`.

    Examples
    --------
    >>> attention_rank([[1, 0], [1, 1e-12]]), attention_rank([[1, 0], [0.5, 0.5]])
    (1, 2)
    """
    P = float_array("P", P, 2)
    if not isinstance(rtol, int | float) or not 0 < rtol < 1:
        raise InvalidArgument(f"rtol={rtol!r} ({type(rtol).__name__}) must be in (0, 1), "
                              "e.g. 1e-8.")
    sigma = np.linalg.svd(P, compute_uv=False)
    if sigma.size == 0 or sigma[0] == 0:
        return 0
    return int(np.sum(sigma > rtol * sigma[0]))


def _panel_indices(t: np.ndarray, times: Any, max_panels: int) -> list[int]:
    if isinstance(max_panels, bool) or not isinstance(max_panels, int) or max_panels < 1:
        raise InvalidArgument(f"max_panels={max_panels!r} ({type(max_panels).__name__}) must "
                              "be a positive integer.")
    if times is None:
        k = min(max_panels, len(t))
        return sorted(set(np.rint(np.linspace(0, len(t) - 1, k)).astype(int).tolist()))
    wanted = float_array("times", times, 1)
    if wanted.size == 0 or wanted.size > max_panels:
        raise InvalidArgument(f"times has {wanted.size} entries; give 1 to max_panels="
                              f"{max_panels} times (or raise max_panels).")
    outside = wanted[(wanted < t[0]) | (wanted > t[-1])]
    if outside.size:
        raise InvalidArgument(f"times={wanted.tolist()} has {outside[0]!r} outside the "
                              f"checkpoints' range [{t[0]:g}, {t[-1]:g}].")
    return sorted({int(np.argmin(np.abs(t - s))) for s in wanted})


def plot_attention_heatmaps(traj: Trajectory, times: Any = None, *, max_panels: int = 4,
                            rank_rtol: float = RANK_RTOL) -> Figure:
    r"""Return heat maps of :math:`P(t)` at a few checkpoints and the rank of :math:`P(t)`.

    Tokens are sorted by their cluster at :math:`t = T` (leader first, then its followers),
    so the limit's block structure shows; thin lines separate the clusters and the tick
    labels are the token indices (1-based, as in the paper), coloured like
    :func:`plot_trajectories`. The bottom panel plots, at every checkpoint, the numerical rank
    :func:`attention_rank` with relative tolerance ``rank_rtol``.

    Parameters
    ----------
    traj : Trajectory
    times : sequence of float, optional
        Times of the heat maps (each moved to the nearest checkpoint); default: up to
        ``max_panels`` checkpoints evenly spread from 0 to :math:`T`.
    max_panels : int
    rank_rtol : float

    Returns
    -------
    fig : matplotlib.figure.Figure
        Axes: the heat maps (one axes: the panels side by side, images with
        ``gid="heat-<panel>"``, their titles ``gid="heat-title"``; the rows labelled on the
        left by the axis' ticks, the columns under every panel by texts ``gid="column-label"``
        and one line of tick marks ``gid="column-ticks"``), the colour bar, the rank panel (its
        line has ``gid="rank"``). The layout is fixed (no text measured to place the axes).

    Raises
    ------
    InvalidArgument
        For a non-Trajectory, attention of shape other than ``(m, n, n)``, times outside
        :math:`[0, T]` or more times than ``max_panels``.

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> from verify.flow.simulate import simulate
    >>> traj = simulate(Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], [-1, -1]]), 2,
    ...                 checkpoints=5, error_estimate=False)
    >>> fig = plot_attention_heatmaps(traj, max_panels=2)
    >>> len(fig.axes), len(fig.axes[0].images)
    (3, 2)
    """
    if not isinstance(traj, Trajectory):
        raise InvalidArgument(f"traj=<{describe(traj)}> ({type(traj).__name__}) is not a "
                              "Trajectory; pass the result of verify.flow.simulate.simulate(...).")
    P = float_array("traj.attention", traj.attention, 3)
    m = len(traj.times)
    if P.shape[0] != m or P.shape[1] != P.shape[2] or P.shape[1] == 0:
        raise InvalidArgument(f"traj.attention has shape {P.shape}, but it must be (m, n, n) "
                              f"with m={m} checkpoints; the trajectory is corrupt, re-run it.")
    n = P.shape[1]
    t = traj.t
    panels = _panel_indices(t, times, max_panels)
    ranks = np.array([attention_rank(P[k], rank_rtol) for k in range(m)])

    leader = colour_clusters(P[-1])
    if leader is None:
        order = np.arange(n)
    else:
        order = np.array(sorted(range(n), key=lambda i: (leader[i], i != leader[i], i)))
    colours = token_colours(n, leader)
    boundaries = [] if leader is None else [
        b + 0.5 for b in range(n - 1) if leader[order[b]] != leader[order[b + 1]]]

    k = len(panels)
    fig = new_figure(max(6.4, 2.7 * k + 1.2), 6.2, layout=None)
    heat_box, rank_box, bar_box, gap = _heatmap_layout(fig, k)
    ax = fig.add_axes(heat_box)
    pitch = n + gap * n  # the panels' spacing in cells: a panel and the gap after it
    step = max(1, int(np.ceil(n / 12)))
    ticks = np.arange(0, n, step)
    tick_text = [str(order[j] + 1) for j in ticks]  # 1-based
    image = None
    for col, index in enumerate(panels):
        x0 = col * pitch
        image = ax.imshow(P[index][np.ix_(order, order)], vmin=0, vmax=1, cmap="Blues",
                          interpolation="nearest", gid=f"heat-{col}",
                          extent=(x0 - 0.5, x0 + n - 0.5, n - 0.5, -0.5))
        ax.add_patch(Rectangle((x0 - 0.5, -0.5), n, n, fill=False, lw=0.8, ec="k", zorder=3))
        middle = x0 + (n - 1) / 2
        ax.annotate(rf"$P(t)$ at $t = {t[index]:.3g}$", (middle, 1), xytext=(0, 5),
                    xycoords=("data", "axes fraction"), textcoords="offset points",
                    ha="center", va="bottom", fontsize=10, gid="heat-title")
        ax.annotate(r"token $j$", (middle, 0), xytext=(0, -19), xycoords=("data", "axes fraction"),
                    textcoords="offset points", ha="center", va="top", fontsize=9)
    starts = pitch * np.arange(k)
    if boundaries:  # the clusters' blocks, in every panel
        lines = np.array(boundaries)
        ax.hlines(np.tile(lines, k), np.repeat(starts - 0.5, len(lines)),
                  np.repeat(starts + n - 0.5, len(lines)), color="0.55", lw=0.6)
        ax.vlines((starts[:, None] + lines[None, :]).ravel(), -0.5, n - 0.5, color="0.55", lw=0.6)
    ax.set_xlim(-0.5, starts[-1] + n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    _column_labels(ax, (starts[:, None] + ticks[None, :]).ravel(), tick_text * k,
                   [colours[order[j]] for j in ticks] * k)
    ax.set_yticks(ticks, tick_text, fontsize=9)  # the rows: the same order in every panel
    for lab, j in zip(ax.get_yticklabels(), ticks, strict=True):
        lab.set_color(colours[order[j]])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_ylabel(r"token $i$", fontsize=9)
    fig.colorbar(image, cax=fig.add_axes(bar_box), label=r"$P_{ij}(t)$")

    ax = fig.add_axes(rank_box)
    ax.plot(t, ranks, "o-", color="C3", ms=3.5, lw=1.2, gid="rank",
            label=rf"$\#\{{k : \sigma_k(P(t)) > {latex_float(rank_rtol, 2)}\,\sigma_1\}}$")
    for index in panels:
        ax.axvline(t[index], color="0.6", lw=0.8, ls=":")
    if leader is not None:
        ax.axhline(len(set(leader.tolist())), color="0.3", lw=0.8, ls="--",
                   label=rf"clusters at $t = T$: {len(set(leader.tolist()))}")
    ax.set_ylim(0, n + 0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"numerical rank of $P(t)$")
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="best")
    order_note = "sorted by cluster at $t = T$" if leader is not None else "in index order"
    fig.suptitle(rf"Attention $P(t)$, $n = {n}$ tokens {order_note}", fontsize=11, y=0.99,
                 va="top")
    return fig


def _column_labels(ax: Any, positions: np.ndarray, texts: list[str], colours: list) -> None:
    """The columns' tick marks and labels under every panel, drawn as the x axis draws its
    ticks (the same marker, transform and pad: the same pixels) but as one line of markers and
    one text per label (``gid="column-label"``): an axis tick is five artists (two tick lines,
    a grid line, two labels), built and updated for each of the ``k`` panels' columns."""
    ax.set_xticks([])
    size = mpl.rcParams["xtick.major.size"]
    ax.plot(positions, np.zeros(len(positions)), ls="none", marker=TICKDOWN, ms=size,
            mew=mpl.rcParams["xtick.major.width"], color=mpl.rcParams["xtick.color"],
            transform=ax.get_xaxis_transform("tick1"), clip_on=False,
            zorder=Line2D.zorder + 0.01, gid="column-ticks")
    transform, va, ha = ax.get_xaxis_text1_transform(size + mpl.rcParams["xtick.major.pad"])
    for x, text, colour in zip(positions, texts, colours, strict=True):
        ax.text(x, 0, text, transform=transform, va=va, ha=ha, fontsize=9, color=colour,
                clip_on=False, gid="column-label")


# The heat maps' fixed layout, in inches: room for the titles above, for the first panel's row
# labels and the rank panel's labels on the left, the colour bar on the right, the column labels
# between the rows and the time axis below (tick labels of at most 3 digits, fontsize 9-10).
_TOP, _LEFT, _RIGHT, _GAP, _MID, _BOTTOM = 0.7, 0.8, 1.2, 0.3, 0.75, 0.6
_RANK_SHARE = 0.62  # the rank panel's height against a heat map's, when there is room


def _heatmap_layout(fig: Figure, k: int) -> tuple[list, list, list, float]:
    """Boxes (figure fractions) of the row of ``k`` square heat maps (one axes), the rank panel
    below them across the same width and the colour bar to their right, and the gap between
    two heat maps as a fraction of a heat map's side: a fixed layout, so that rendering
    measures no text to place the axes."""
    width, height = fig.get_size_inches()
    span = width - _LEFT - _RIGHT  # the heat maps' row and the rank panel
    rows = height - _TOP - _MID - _BOTTOM
    side = min((span - (k - 1) * _GAP) / k, rows / (1 + _RANK_SHARE))
    row = k * side + (k - 1) * _GAP
    top = height - _TOP
    heat = inches_box(fig, _LEFT + (span - row) / 2, top - side, row, side)
    rank = inches_box(fig, _LEFT, _BOTTOM, span, rows - side)
    bar = inches_box(fig, width - _RIGHT + 0.25, top - 0.925 * side, 0.16, 0.85 * side)
    return heat, rank, bar, _GAP / side
