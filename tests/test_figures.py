"""Tests of verify.report.figures on small real simulations (d = 1, 2, 3) and synthetic data.

The figures are checked through their artists against independent routes: the drawn paths
against the trajectory arrays, the polygon against the exact hull (verify.exact.hull_vertices),
hyperplane lines against φ*(x) = c, rank values against numpy.linalg.matrix_rank, the final
rank against the certified leaders, fitted lines against closed forms.
"""

import base64
import dataclasses
import io
from fractions import Fraction

import matplotlib.image as mpimg
import networkx as nx
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Polygon

from verify.analysis.graph import attention_graph, hardmax_graph, leaders
from verify.analysis.observed_limits import fit_doubly_exponential, fit_exponential_convergence
from verify.errors import InvalidArgument
from verify.exact import hull_vertices
from verify.flow.simulate import simulate
from verify.model import Instance, Model
from verify.report import (
    Predicted,
    figure_to_data_uri,
    figure_to_png_bytes,
    plot_attention_graph,
    plot_attention_heatmaps,
    plot_convergence,
    plot_dependency_graph,
    plot_doubly_exponential,
    plot_trajectories,
)
from verify.report._figstyle import mathtext_parser
from verify.report.figures import PNG_SIGNATURE, verdict_colour

X2 = [["3/2", "1/2"], [0, -1], ["-3/4", -2], ["-7/4", -2], ["-3/2", "5/4"], ["3/4", "7/4"]]
X1 = [["-3/2"], ["-1/2"], ["1/4"], ["1/2"], [1], [2]]
X3 = [[1, 1, 0], [1, -1, 0], [-1, -1, 0], [-1, 1, 0], [0, 0, 1], ["1/4", "1/4", "1/4"]]
PHI = np.array([1.0, 2.0])  # a dual vector for the hyperplane tests


@pytest.fixture(scope="module")
def traj2():
    return simulate(Instance(Model(V=[[1, 0], [0, 1]]), X2), 4, checkpoints=9)


@pytest.fixture(scope="module")
def traj1():
    return simulate(Instance(Model(V=[[1]]), X1), 4, checkpoints=9)


@pytest.fixture(scope="module")
def traj3():
    return simulate(Instance(Model(V=np.eye(3).tolist()), X3), 3, checkpoints=7)


def paths(ax):
    return [line for line in ax.lines if (line.get_gid() or "").startswith("path-")]


def by_gid(artists, gid):
    return [a for a in artists if a.get_gid() == gid]


def png_shape(fig, dpi):
    data = figure_to_png_bytes(fig, dpi=dpi)
    assert data[:8] == PNG_SIGNATURE
    image = mpimg.imread(io.BytesIO(data), format="png")
    w, h = fig.get_size_inches()
    assert image.shape[2] == 3                           # opaque: RGB, figsize·dpi pixels
    assert abs(image.shape[0] - h * dpi) < 1 and abs(image.shape[1] - w * dpi) < 1
    return data


# ------------------------------------------------------------------------------ trajectories
def test_trajectories_2d_paths_and_polytope(traj2):
    x0 = np.array([[float(Fraction(v)) for v in row] for row in X2])
    exact = hull_vertices(X2)
    fig = plot_trajectories(traj2, predicted=Predicted(polytope_vertices=x0[[4, 0, 3, 5, 2]],
                                                       points=traj2.z[-1]))
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    drawn = paths(ax)
    assert len(drawn) == traj2.n
    for i, line in enumerate(drawn):
        np.testing.assert_array_equal(np.column_stack(line.get_data()), traj2.z[:, i])
    np.testing.assert_array_equal(by_gid(ax.collections, "start")[0].get_offsets(), traj2.z[0])
    np.testing.assert_array_equal(by_gid(ax.collections, "end")[0].get_offsets(), traj2.z[-1])
    (polygon,) = by_gid(ax.patches, "predicted-polytope")
    corners = polygon.get_xy()[:-1]                      # closed: first point repeated
    assert len(corners) == len(exact)
    assert {tuple(p) for p in corners} == {tuple(p) for p in x0[exact]}
    np.testing.assert_array_equal(by_gid(ax.collections, "predicted-points")[0].get_offsets(),
                                  traj2.z[-1])
    png_shape(fig, 40)


def test_trajectories_degenerate_hull_is_a_segment(traj2):
    fig = plot_trajectories(traj2, predicted={"polytope_vertices": [[0, 0], [1, 1], [2, 2]]})
    ax = fig.axes[0]
    assert not by_gid(ax.patches, "predicted-polytope")
    (segment,) = by_gid(ax.lines, "predicted-polytope")
    assert {tuple(p) for p in np.column_stack(segment.get_data())} == {(0, 0), (2, 2)}


def test_trajectories_hyperplanes_and_subspace(traj2):
    offsets = [-1.5, 0, 2.0, 2.0]                        # duplicates are drawn once
    fig = plot_trajectories(traj2, predicted={
        "hyperplanes": {"phi_star": PHI, "offsets": offsets},
        "subspace": [[1, -1]], "anchors": [[0, 0], [1, 1]]})
    ax = fig.axes[0]
    lines = by_gid(ax.lines, "predicted-hyperplane")
    assert len(lines) == 3
    for line, c in zip(lines, sorted(set(offsets)), strict=True):
        ends = np.column_stack(line.get_data())
        np.testing.assert_allclose(ends @ PHI, c, atol=1e-12)
        assert np.linalg.norm(ends[1] - ends[0]) > 1
    subspace = by_gid(ax.lines, "predicted-subspace")
    assert len(subspace) == 2
    for line, anchor in zip(subspace, ([0, 0], [1, 1]), strict=True):
        ends = np.column_stack(line.get_data()) - anchor
        assert np.all(np.abs(ends @ [1, 1]) < 1e-12)     # on the line anchor + s·(1, −1)


def test_trajectories_1d_time_plot(traj1):
    fig = plot_trajectories(traj1, variable="x", predicted={"points": [[0]]})
    ax = fig.axes[0]
    drawn = paths(ax)
    assert len(drawn) == traj1.n
    for i, line in enumerate(drawn):
        np.testing.assert_array_equal(line.get_xdata(), traj1.t)
        np.testing.assert_array_equal(line.get_ydata(), traj1.x[:, i, 0])
    assert ax.get_yscale() == "symlog"                   # x grows like e^t
    assert len(by_gid(ax.lines, "predicted-point")) == 1
    assert plot_trajectories(traj1).axes[0].get_yscale() == "linear"   # z stays bounded
    png_shape(fig, 30)


def test_trajectories_3d_polytope_and_planes(traj3):
    pts = np.array([[float(Fraction(v)) for v in row] for row in X3])
    fig = plot_trajectories(traj3, predicted={"polytope_vertices": pts,
                                              "hyperplanes": (np.array([1.0, 1, 1]), [0, 1])})
    ax = fig.axes[0]
    assert ax.name == "3d" and len(paths(ax)) == traj3.n
    np.testing.assert_array_equal(np.array(paths(ax)[2].get_data_3d()).T, traj3.z[:, 2])
    png_shape(fig, 30)                                   # 3-D collections project on draw
    (faces,) = by_gid(ax.collections, "predicted-polytope")
    # projected closed polygons, padded with NaN to a common length
    sizes = [int(np.sum(np.all(np.isfinite(path.vertices[:-1]), axis=1)))
             for path in faces.get_paths()]
    # a square pyramid (token 5 inside, exact hull: 5 vertices): the coplanar triangles of
    # the base are merged into one square, and Euler's V − E + F = 2 holds
    assert len(hull_vertices(X3)) == 5 and sorted(sizes) == [3, 3, 3, 3, 4]
    assert 5 - sum(sizes) / 2 + len(sizes) == 2
    planes = by_gid(ax.collections, "predicted-hyperplane")
    assert len(planes) == 2


def test_trajectories_high_dimension_uses_two_coordinates():
    traj = simulate(Instance(Model(V=np.eye(4).tolist()), np.eye(4).tolist()), 1,
                    checkpoints=3, error_estimate=False)
    ax = plot_trajectories(traj).axes[0]
    assert "first 2 of $d = 4$" in ax.get_title()
    np.testing.assert_array_equal(np.column_stack(paths(ax)[0].get_data()), traj.z[:, 0, :2])


def test_trajectories_bad_input(traj2):
    with pytest.raises(InvalidArgument, match="not a Trajectory"):
        plot_trajectories(traj2.z)
    with pytest.raises(InvalidArgument, match="variable="):
        plot_trajectories(traj2, variable="y")
    with pytest.raises(InvalidArgument, match="d=2"):
        plot_trajectories(traj2, predicted={"points": [[0, 0, 0]]})
    with pytest.raises(InvalidArgument, match="unknown keys"):
        plot_trajectories(traj2, predicted={"vertices": [[0, 0]]})
    with pytest.raises(InvalidArgument, match="none of"):
        plot_trajectories(traj2, predicted={})
    with pytest.raises(InvalidArgument, match="m=9"):
        plot_trajectories(dataclasses.replace(traj2, state=traj2.state[:-1]))


# ------------------------------------------------------------------------------ attention
def test_heatmaps_rank_panel_and_order(traj2):
    fig = plot_attention_heatmaps(traj2, max_panels=3)
    assert len(fig.axes) == 1 + 2                        # heat maps, colour bar, rank panel
    heat = fig.axes[0]
    assert [image.get_gid() for image in heat.images] == ["heat-0", "heat-1", "heat-2"]
    (rank_line,) = [line for ax in fig.axes for line in ax.lines if line.get_gid() == "rank"]
    expected = [np.linalg.matrix_rank(P, tol=1e-8 * np.linalg.svd(P, compute_uv=False)[0])
                for P in traj2.attention]
    np.testing.assert_array_equal(rank_line.get_ydata(), expected)
    np.testing.assert_array_equal(rank_line.get_xdata(), traj2.t)
    # independent route: at T the rank is the number of certified leaders
    G = hardmax_graph(traj2.scaled_scores[-1], traj2.score_radius(-1))
    assert expected[-1] == len(leaders(G)) == 3
    # the last heat map is P(T) with tokens grouped by leader: each row's 1 sits in its block
    order = [int(label.get_text()) - 1 for label in heat.get_yticklabels()]  # 1-based
    assert sorted(order) == list(range(traj2.n))
    # the columns under every panel, in the rows' order and colours, each under its column
    columns = by_gid(heat.texts, "column-label")
    assert [int(label.get_text()) - 1 for label in columns] == order * 3
    assert [label.get_color() for label in columns] == \
        [label.get_color() for label in heat.get_yticklabels()] * 3
    (marks,) = by_gid(heat.lines, "column-ticks")
    centres = [(left + right) / 2 for left, right, _, _ in
               (image.get_extent() for image in heat.images)]
    expected_x = [c - (traj2.n - 1) / 2 + j for c in centres for j in range(traj2.n)]
    np.testing.assert_allclose([label.get_position()[0] for label in columns], expected_x)
    np.testing.assert_allclose(marks.get_xdata(), expected_x)
    shown = heat.images[-1].get_array()
    np.testing.assert_array_equal(shown, traj2.attention[-1][np.ix_(order, order)])
    for k, index in enumerate((0, 4, 8)):                # panels at 0, T/2, T: P at those times
        np.testing.assert_array_equal(heat.images[k].get_array(),
                                      traj2.attention[index][np.ix_(order, order)])
    # the panels do not overlap, each one n cells wide and high
    extents = [image.get_extent() for image in heat.images]
    assert all(right - left == traj2.n and bottom - top == traj2.n
               for left, right, bottom, top in extents)
    assert all(a[1] < b[0] for a, b in zip(extents, extents[1:], strict=False))
    png_shape(fig, 30)


def test_heatmaps_times_and_bad_input(traj2):
    fig = plot_attention_heatmaps(traj2, times=[0.1, 3.9])
    titles = [text.get_text() for text in fig.axes[0].texts if text.get_gid() == "heat-title"]
    assert titles == [r"$P(t)$ at $t = 0$", r"$P(t)$ at $t = 4$"]
    with pytest.raises(InvalidArgument, match="outside"):
        plot_attention_heatmaps(traj2, times=[5])
    with pytest.raises(InvalidArgument, match="max_panels"):
        plot_attention_heatmaps(traj2, times=[0, 1, 2], max_panels=2)
    with pytest.raises(InvalidArgument, match=r"\(m, n, n\)"):
        plot_attention_heatmaps(dataclasses.replace(traj2, attention=traj2.attention[:, :, 1:]))


# ------------------------------------------------------------------------------ rates
def test_convergence_fit_line_and_resolution():
    t = np.linspace(0, 6, 13)
    distance = 2 * np.exp(-0.7 * t)
    errors = np.full_like(t, 5e-2)                       # the last points are not resolved
    fig = plot_convergence(t, distance, errors, fit=(0.7, np.log(2)))
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    (fit_line,) = by_gid(ax.lines, "fit")
    np.testing.assert_allclose(fit_line.get_ydata(), 2 * np.exp(-0.7 * fit_line.get_xdata()),
                               rtol=1e-12)
    hollow = [line for line in ax.lines if line.get_markerfacecolor() == "white"]
    assert len(hollow[0].get_xdata()) == int(np.sum(distance <= errors)) > 0
    png_shape(fig, 30)


def test_convergence_with_limit_fit(traj2):
    fit = fit_exponential_convergence(traj2.t, traj2.z, traj2.error.max(axis=1))
    distance = np.max(np.abs(traj2.z - fit.limit), axis=(1, 2))
    fig = plot_convergence(traj2.t, distance, traj2.error.max(axis=1), fit=fit)
    (fit_line,) = by_gid(fig.axes[0].lines, "fit")
    slope = np.diff(np.log(fit_line.get_ydata())) / np.diff(fit_line.get_xdata())
    np.testing.assert_allclose(slope, -fit.rate, rtol=1e-9)
    assert fit_line.get_xdata()[0] == fit.tail_start
    per_token = np.max(np.abs(traj2.z - fit.limit), axis=2)
    fig = plot_convergence(traj2.t, per_token, traj2.error, fit=fit)
    assert len(by_gid(fig.axes[0].lines, "distance-5")) == 1


def test_doubly_exponential_closed_form(traj1):
    t = np.linspace(0, 3, 7)
    gaps = np.exp(-2 * np.exp(t))
    gaps[-1] = 0.0                                        # an underflow is left out
    fit = fit_doubly_exponential(t, gaps, tail=1.0)
    fig = plot_doubly_exponential(t, gaps, fit)
    ax = fig.axes[0]
    (points,) = by_gid(ax.lines, "gaps")
    np.testing.assert_allclose(points.get_ydata(), np.log(2) + t[:-1], atol=1e-12)
    (line,) = by_gid(ax.lines, "fit")
    np.testing.assert_allclose(line.get_ydata(), fit.intercept + fit.slope * line.get_xdata())
    assert "1 of 7 points left out" in ax.get_title()
    # real data: the escaping rows of the 1-D run (P_{1n} -> 0)
    real = plot_doubly_exponential(traj1.t, traj1.attention[:, 0, -1],
                                   errors=np.zeros(len(traj1.t)))
    assert len(by_gid(real.axes[0].lines, "gaps")) == 1


def test_rates_bad_input():
    t = np.linspace(0, 1, 5)
    with pytest.raises(InvalidArgument, match="m = len"):
        plot_convergence(t, np.ones(4))
    with pytest.raises(InvalidArgument, match="negative"):
        plot_convergence(t, -np.ones(5))
    with pytest.raises(InvalidArgument, match="increasing"):
        plot_convergence(t[::-1], np.ones(5))
    with pytest.raises(InvalidArgument, match="LimitFit"):
        plot_convergence(t, np.ones(5), fit="fast")
    with pytest.raises(InvalidArgument, match="must match"):
        plot_doubly_exponential(t, np.ones(3))


# ------------------------------------------------------------------------------ graphs
def test_attention_graph_leaders_and_edges(traj2):
    G = hardmax_graph(traj2.scaled_scores[-1], traj2.score_radius(-1))
    fig = plot_attention_graph(G, traj2.z[4])
    ax = fig.axes[0]
    (stars,) = by_gid(ax.collections, "leaders")
    (dots,) = by_gid(ax.collections, "followers")
    chosen = sorted(leaders(G))
    np.testing.assert_array_equal(stars.get_offsets(), traj2.z[4][chosen])
    assert len(dots.get_offsets()) == traj2.n - len(chosen)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == G.number_of_edges()
    # spring layout: deterministic (fixed seed)
    A = attention_graph(traj2.attention[2])
    first = by_gid(plot_attention_graph(A).axes[0].collections, "followers")[0].get_offsets()
    second = by_gid(plot_attention_graph(A).axes[0].collections, "followers")[0].get_offsets()
    np.testing.assert_array_equal(first, second)
    png_shape(fig, 30)


def test_colours_consistent_across_figures(traj2):
    from verify.report.figures import colour_clusters, token_colours

    leader = colour_clusters(traj2.attention[-1])
    G = hardmax_graph(traj2.scaled_scores[-1], traj2.score_radius(-1))
    assert set(leader.tolist()) == leaders(G)            # the float reading agrees (certified)
    colours = token_colours(traj2.n, leader)
    drawn = [line.get_color() for line in paths(plot_trajectories(traj2).axes[0])]
    assert drawn == colours
    fig = plot_attention_graph(attention_graph(traj2.attention[4]), traj2.z[4],
                               node_colours=colours)
    graph_leaders = {v for v in range(traj2.n) if attention_graph(traj2.attention[4]).has_edge(
        v, v)} & {v for c in nx.attracting_components(attention_graph(traj2.attention[4]))
                  for v in c}
    (dots,) = by_gid(fig.axes[0].collections, "followers")
    followers = [v for v in range(traj2.n) if v not in graph_leaders]
    np.testing.assert_allclose(dots.get_facecolors(), [colours[v] for v in followers])


def test_attention_graph_bad_input(traj2):
    G = attention_graph(traj2.attention[-1])
    with pytest.raises(InvalidArgument, match="positions"):
        plot_attention_graph(G, np.zeros((3, 2)))
    with pytest.raises(InvalidArgument, match="DiGraph"):
        plot_attention_graph(nx.Graph([(0, 1)]))
    with pytest.raises(InvalidArgument, match="not nodes"):
        plot_attention_graph(G, leaders=[17])
    with pytest.raises(InvalidArgument, match="every node"):
        plot_attention_graph(G, node_colours=["red"])


DEPS = {"polytope": ["hull-nonincreasing"], "polytope-vertices-generic": ["polytope"],
        "boolean-1d": ["order-preserved", "escape-threshold"], "hull-nonincreasing": [],
        "mlp": []}


def test_dependency_graph_layout_and_colours():
    verdicts = {"polytope": "supported on 12 instances", "boolean-1d": "refuted",
                "mlp": "inconclusive: horizon too short"}
    fig = plot_dependency_graph(DEPS, verdicts)
    ax = fig.axes[0]
    labels = {t.get_gid()[6:]: t for t in ax.texts if (t.get_gid() or "").startswith("claim:")}
    assert set(labels) == set(DEPS) | {"order-preserved", "escape-threshold"}
    arrows = [t for t in ax.texts if (t.get_gid() or "").startswith("uses:")]
    assert len(arrows) == sum(len(v) for v in DEPS.values())
    for a, used in DEPS.items():  # every arrow points right, from what is used to its user
        for b in used:
            assert labels[b].get_position()[0] < labels[a].get_position()[0]
    for claim, text in labels.items():
        face = text.get_bbox_patch().get_facecolor()
        expected = verdict_colour(verdicts.get(claim))[0]
        np.testing.assert_allclose(face[:3], Polygon([[0, 0]], fc=expected).get_facecolor()[:3])
    png_shape(fig, 30)


def test_dependency_graph_bad_input():
    with pytest.raises(InvalidArgument, match="cycle"):
        plot_dependency_graph({"a": ["b"], "b": ["a"]})
    with pytest.raises(InvalidArgument, match="dict"):
        plot_dependency_graph([("a", "b")])
    with pytest.raises(InvalidArgument, match="lists of claim ids"):
        plot_dependency_graph({"a": "b"})
    with pytest.raises(InvalidArgument, match="names no claim"):  # was an IndexError
        plot_dependency_graph({})


# ------------------------------------------------------------------------------ export
def test_png_and_data_uri_round_trip(tmp_path):
    fig = plot_convergence(np.arange(4.0), np.exp(-np.arange(4.0)))
    data = png_shape(fig, 50)
    uri = figure_to_data_uri(fig, dpi=50)
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.split(",", 1)[1], validate=True) == data
    (tmp_path / "f.png").write_bytes(data)
    assert mpimg.imread(tmp_path / "f.png").shape[:2] == (250, 340)
    with pytest.raises(InvalidArgument, match="Figure"):
        figure_to_png_bytes("figure")
    with pytest.raises(InvalidArgument, match="dpi"):
        figure_to_png_bytes(fig, dpi=0)


def test_one_mathtext_parser_draws_matplotlib_s_own_pixels(traj1, traj2, traj3):
    # the figures parse their formulas with one parser per process (its cache warm from the
    # figures drawn before): the PNG bytes of matplotlib's own canvas, whose renderer parses
    # every figure's formulas afresh
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    t = np.linspace(0, 6, 13)
    for _ in range(2):  # the second round draws from the parser's cache
        for fig in (plot_trajectories(traj1), plot_trajectories(traj2), plot_trajectories(traj3),
                    plot_attention_heatmaps(traj2),
                    plot_convergence(t, 2 * np.exp(-0.7 * t), np.full_like(t, 5e-2),
                                     fit=(0.7, np.log(2)))):
            ours = figure_to_png_bytes(fig, dpi=60)
            FigureCanvasAgg(fig)
            assert figure_to_png_bytes(fig, dpi=60) == ours


def _decoded(png: bytes) -> np.ndarray:
    """The RGBA pixels of a PNG (an RGB one with alpha 255)."""
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_png_has_the_pixels_of_matplotlib_s_own_png(traj2, traj3):
    # figure_to_png_bytes encodes Agg's pixels itself (RGB for an opaque figure, a faster zlib
    # level): decoded, they are those of matplotlib's savefig(format="png"), alpha included
    t = np.linspace(0, 6, 13)
    transparent = plot_convergence(t, np.exp(-t))
    transparent.patch.set_alpha(0)
    for fig in (plot_attention_heatmaps(traj2), plot_trajectories(traj3),
                plot_convergence(t, 2 * np.exp(-0.7 * t), fit=(0.7, np.log(2))), transparent):
        ours = figure_to_png_bytes(fig, dpi=60)
        theirs = io.BytesIO()
        fig.savefig(theirs, format="png", dpi=60)
        np.testing.assert_array_equal(_decoded(ours), _decoded(theirs.getvalue()))
        mode = mpimg.imread(io.BytesIO(ours), format="png").shape[2]
        assert mode == (4 if fig is transparent else 3)


def _same_parser_in_child(parser, answer):
    answer.put(mathtext_parser() is parser)


def test_mathtext_parser_is_one_per_process_and_thread():
    # a parsed formula holds FreeType fonts: a forked child that used its parent's (sharing the
    # font files' offsets) garbled glyphs when drawing at the same time ("FT_Load_Glyph ...
    # invalid outline"), so a child and another thread get a parser of their own
    import multiprocessing
    import threading

    parser = mathtext_parser()
    assert mathtext_parser() is parser
    context = multiprocessing.get_context("fork")
    answer = context.Queue()
    child = context.Process(target=_same_parser_in_child, args=(parser, answer))
    child.start()
    assert answer.get(timeout=60) is False
    child.join()
    seen: list = []
    thread = threading.Thread(target=lambda: seen.append(mathtext_parser() is parser))
    thread.start()
    thread.join()
    assert seen == [False]
    assert mathtext_parser() is parser


def test_no_pyplot_figures_left_open(traj2):
    import matplotlib.pyplot as plt

    plot_attention_graph(attention_graph(traj2.attention[-1]))
    plot_trajectories(traj2)
    assert plt.get_fignums() == []


def test_fixed_layouts_keep_axes_labels_and_legends_apart(traj1, traj2, traj3):
    """The figures placed without constrained layout: every axes with its tick labels, axis
    labels and title inside the figure, and clear of the figure legend (right of the token
    paths, below the convergence plot)."""
    figures = [plot_trajectories(traj, predicted=Predicted(points=traj.z[-1][:1]))
               for traj in (traj1, traj2, traj3)]
    figures.append(plot_convergence(traj2.t, np.exp(-traj2.t), fit=(1.0, 0.0), label=(
        "D(t): every token approaches a union of hyperplanes, a long sentence that wraps")))
    figures.append(plot_attention_heatmaps(traj2))
    for fig in figures:
        renderer = fig.canvas.get_renderer()
        page = fig.bbox
        for ax in fig.axes:
            box = ax.get_tightbbox(renderer)
            assert page.x0 <= box.x0 and box.x1 <= page.x1 + 1, box
            assert page.y0 <= box.y0 and box.y1 <= page.y1 + 1, box
            for legend in fig.legends:
                drawn = legend.get_window_extent(renderer)
                assert not drawn.overlaps(box), (drawn, box)
