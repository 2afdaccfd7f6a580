r"""The paper's experiments (spec §3) re-run with our integrator: the report's "Paper figures".

Importing this module appends its figure makers to :data:`verify.report.paper_figures.PAPER_FIGURES`
(once); each is a callable ``() -> list[(caption, Figure)]``.  The setups follow the authors'
scripts (``n = 20`` tokens, ``Q = K = A``), but the numerics are ours: SciPy's DOP853 in
float64 with error control (``rtol = 1e-10``), never the scripts' fixed-step Euler.  Every
caption states the precision and an error estimate: the largest deviation, over all tokens and
checkpoints, from a reference run.  Where a figure stars the *certified* leaders (polytope,
leaders: :data:`CERTIFIED_LEADERS`) the reference is ``arb`` at
:func:`verify.flow.simulate.choose_bits` bits and ``rtol = 1e-15``: its score radius decides
the hardmax graph beyond float64's resolution.  Where a figure states only the drawn run's
error (polytope × subspace, hyperplanes, low rank) the reference is a float64 re-run at
``rtol = 1e-13``: a thousand times tighter than the drawn run, so the deviation measures the
drawn run's error (an ``arb`` reference costs more than ten times as much and measures the
same order: ``tests/test_paper_figures.py`` compares the two).  Inputs are seeded draws rounded to 3
decimals, so every instance is exact and reproducible.

* :func:`polytope_figures`: ``A = V = I``; tokens, the exact hull of the leaders' limits;
* :func:`polytope_subspace_figures`: ``V = diag(1, −1/2)``; the lines ``{z_1 = c}``;
* :func:`hyperplane_figures`: the paper's 2-D good triple; the lines ``{φ_1^* = c}``;
* :func:`leaders_figures`: ``V = MMᵀ``, ``QᵀK = NNᵀ``; attention graph and ``P(t)``;
* :func:`low_rank_figures`: ``V = MMᵀ/ρ``, scaled down to ``n = d = 20``; ``P(t)`` and its rank.

Examples
--------
>>> from verify.report.html import PAPER_FIGURES
>>> polytope_figures in PAPER_FIGURES and PAPER_FIGURES.count(polytope_figures) == 1
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from verify.analysis.graph import attention_graph, hardmax_graph, leaders, undecided_nodes
from verify.digits import trusted, upper
from verify.exact import eigenpair, hull_vertices
from verify.flow.simulate import simulate
from verify.model import Instance, Model
from verify.report._figstyle import beside_legend, colour_clusters
from verify.report.figures import (
    Predicted,
    plot_attention_graph,
    plot_attention_heatmaps,
    plot_trajectories,
)
from verify.report.figures import token_colours as colours_of

__all__ = ["PaperRun", "paper_run", "SETUPS", "CERTIFIED_LEADERS", "polytope_figures",
           "polytope_subspace_figures", "hyperplane_figures", "leaders_figures",
           "low_rank_figures", "PAPER_FIGURES"]

DENSE_CHECKPOINTS = 101  # checkpoints of the drawn paths
FLOAT_RTOL, TIGHT_RTOL = 1e-10, 1e-13
ARB_REFERENCE_MAX = 2_000  # n·n·d up to which the reference run is in arb
#: The setups whose figures star certified leaders: their reference run is in arb.
CERTIFIED_LEADERS = ("polytope", "leaders")
LEADERS_MIN_LAMBDA = 1
HYPERPLANE_V = [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]]


@dataclass
class PaperRun:
    """One re-run experiment: the instance, the drawn path and its error estimate.

    Attributes
    ----------
    name, note : str
        Setup name and a sentence on how it departs from the paper (may be empty).
    instance : Instance
    horizon : int
    traj : Trajectory
        Float64 run at :data:`DENSE_CHECKPOINTS` checkpoints (what is drawn).
    error : float
        Largest ``|z − z_ref|`` over tokens, coordinates and the reference's checkpoints.
    scores, radius : ndarray
        Scaled scores at ``t = T`` and an absolute bound on their error (for certified leaders).
    precision : str
        Sentence stating the precision and the reference run.
    """

    name: str
    note: str
    instance: Instance
    horizon: int
    traj: object
    error: float
    scores: np.ndarray
    radius: np.ndarray
    precision: str

    def leaders(self) -> list[int]:
        """Certified leaders at ``t = T`` (hardmax graph of the scores within ``radius``)."""

        return sorted(leaders(hardmax_graph(self.scores, self.radius)))


def _exact(array) -> list[list[str]]:
    return [[str(Fraction(v)) for v in row] for row in array]


def _draw(rng, shape, r=1.0) -> np.ndarray:
    """Uniform on ``[−r, r]`` rounded to 3 decimals (exact decimals)."""
    return np.round(rng.uniform(-r, r, shape), 3)


def _gram(M: np.ndarray) -> list[list[str]]:
    """``M Mᵀ`` exactly, for ``M`` with 3-decimal entries."""
    F = [[Fraction(str(v)) for v in row] for row in M]
    return [[str(sum(a * b for a, b in zip(u, w, strict=True))) for w in F] for u in F]


def _instances(name: str) -> tuple[Instance, int, str]:
    rng = np.random.default_rng([2305, 5465, SETUPS.index(name)])
    if name == "polytope":
        return Instance(Model(V=np.eye(2, dtype=int)), _exact(_draw(rng, (20, 2), 5))), 5, ""
    if name == "polytope-subspace":
        return Instance(Model(V=[[1, 0], [0, "-1/2"]]), _exact(_draw(rng, (20, 2), 5))), 5, ""
    if name == "hyperplanes":
        return Instance(Model(V=HYPERPLANE_V), _exact(_draw(rng, (20, 2), 5))), 5, ""
    if name == "leaders":
        for draw in range(100):  # the first draw whose V = MMᵀ has λ_1 ≥ 1 (see the note)
            rng = np.random.default_rng([2305, 5465, SETUPS.index(name), draw])
            M, N = _draw(rng, (2, 2)), _draw(rng, (2, 2))
            if np.linalg.eigvalsh(M @ M.T)[-1] >= LEADERS_MIN_LAMBDA:
                break
        note = (f"Draw {draw + 1} of the seeded sequence, the first with $\\lambda_1(MM^\\top) "
                f"\\ge {LEADERS_MIN_LAMBDA}$ (with smaller $\\lambda_1$ the tokens have barely "
                f"moved by $T = 10$).")
        Nt = _exact(N.T)
        return Instance(Model(V=_gram(M), Q=Nt, K=Nt), _exact(_draw(rng, (20, 2)))), 10, note
    M = _draw(rng, (20, 20))
    gram = np.array(_gram(M), dtype=object)
    rho = Fraction(float(np.linalg.eigvalsh(M @ M.T)[-1])).limit_denominator(1000)
    V = [[str(Fraction(v) / rho) for v in row] for row in gram]
    note = (f"Scaled down from the paper's $n = 40$, $d = 80$, $T = 11$ to $n = d = 20$, "
            f"$T = 6$, with $V = MM^\\top/\\rho$, $\\rho = {rho} \\approx$ the spectral radius "
            f"of $MM^\\top$ "
            f"(the time change $s = \\rho t$ maps it to $V = MM^\\top$ on $[0, 6/\\rho]$): with "
            f"$V = MM^\\top$ itself the scores grow like $e^{{2\\rho t}}$ and float64 fails early.")
    return Instance(Model(V=V), _exact(_draw(rng, (20, 20)))), 6, note


SETUPS = ("polytope", "polytope-subspace", "hyperplanes", "leaders", "low-rank")


@functools.cache
def paper_run(name: str, arb: bool | None = None) -> PaperRun:
    """Simulate setup ``name`` (one of :data:`SETUPS`) with an error estimate (cached).

    ``arb``: the reference run is in arb (``True``) or a float64 re-run at ``rtol = 1e-13``
    (``False``); by default arb for :data:`CERTIFIED_LEADERS` when ``n²d`` is at most
    :data:`ARB_REFERENCE_MAX`.
    """

    instance, T, note = _instances(name)
    traj = simulate(instance, T, checkpoints=DENSE_CHECKPOINTS, error_estimate=False,
                    rtol=FLOAT_RTOL, throw=True)
    if arb is None:
        arb = name in CERTIFIED_LEADERS and instance.n ** 2 * instance.d <= ARB_REFERENCE_MAX
    if arb:
        checked = simulate(instance, T, checkpoints=T + 1, rtol=FLOAT_RTOL, throw=True)
        if checked.error is None:
            raise RuntimeError(f"{name}: reference run failed: {checked.reference}")
        error, scores, radius = checked.error_estimate, checked.scaled_scores[-1], \
            checked.score_radius(-1)
        drift = float(np.max(np.abs(checked.state[-1] - traj.state[-1])))
        error += drift  # 0 in practice: DOP853 takes the same steps at any checkpoints
        ref = (f"a {checked.reference['bits']}-bit arb reference run (Gragg–Bulirsch–Stoer, "
               f"rtol $10^{{-15}}$)")
    else:
        tight = simulate(instance, T, checkpoints=DENSE_CHECKPOINTS, error_estimate=False,
                         rtol=TIGHT_RTOL, atol=TIGHT_RTOL * 1e-2, throw=True)
        error = float(np.max(np.abs(traj.state - tight.state)))
        scores = traj.scaled_scores[-1]
        radius = np.abs(scores - tight.scaled_scores[-1]) + 4e-16 * np.max(np.abs(scores))
        ref = "a float64 re-run at rtol $10^{-13}$"
    precision = (f"float64 DOP853 (rtol $10^{{-10}}$); largest deviation of $z$ from {ref}: "
                 f"{upper(error)}")
    return PaperRun(name, note, instance, T, traj, error, scores, radius, precision)


def _mark_leaders(fig: Figure, points: np.ndarray, unsure: np.ndarray | None = None) -> None:
    """Star the certified leaders' final positions (hollow stars: leaders read from the float64
    ``P(T)`` only) and add them to the figure legend."""
    ax = fig.axes[0]
    old = fig.legends[0]
    handles, title = list(old.legend_handles), old.get_title().get_text()
    labels = [t.get_text() for t in old.get_texts()]
    old.remove()
    ax.scatter(points[:, 0], points[:, 1], marker="*", s=260, facecolors="gold",
               edgecolors="k", linewidths=0.9, zorder=6, gid="leaders")
    handles.append(Line2D([], [], ls="none", marker="*", ms=14, mfc="gold", mec="k"))
    labels.append(f"certified leaders at $t = T$ ({len(points)})")
    if unsure is not None and len(unsure):
        ax.scatter(unsure[:, 0], unsure[:, 1], marker="*", s=260, facecolors="none",
                   edgecolors="k", linewidths=0.9, zorder=6, gid="uncertified-leaders")
        handles.append(Line2D([], [], ls="none", marker="*", ms=14, mfc="none", mec="k"))
        labels.append(f"float-read leaders ({len(unsure)})")
    beside_legend(fig, ax, fig.legend(handles, labels, title=title, fontsize=8,
                                      title_fontsize=8, frameon=False))


def _convergence(run: PaperRun) -> float:
    """``max |z_i(T) − z_i(T − 1)|``: how far the tokens still move over the last unit."""
    z, t = run.traj.z, run.traj.t
    k = int(np.argmin(np.abs(t - (t[-1] - 1))))
    return float(np.max(np.abs(z[-1] - z[k])))


def _moved(run: PaperRun) -> str:
    """How far the tokens still move over the last unit of time, in words (never "at most 0":
    below the run's error the motion is not resolved)."""
    moved = _convergence(run)
    if moved <= run.error:
        return f"less than the error estimate {upper(run.error)} (not resolved)"
    return f"at most {upper(moved)}"


def polytope_figures() -> list[tuple[str, Figure]]:
    """Setup 1: ``A = V = I``, tokens uniform in ``[−5, 5]²``, ``T = 5``."""

    run = paper_run("polytope")
    zT = run.traj.z[-1]
    lead = run.leaders()
    verts = [lead[k] for k in hull_vertices(zT[lead])]
    fig = plot_trajectories(run.traj, predicted=Predicted(polytope_vertices=zT[verts],
                                                          label=r"conv$\{z_\ell(T)\}$"))
    _mark_leaders(fig, zT[lead])
    caption = (f"Polytope (Theorem 3.1), $A = V = I_2$, $n = 20$, tokens uniform in $[-5, 5]^2$, "
               f"$T = {run.horizon}$. Dashed: the convex hull of the certified leaders' $z(T)$, "
               f"vertices found in exact arithmetic: {len(verts)} of the {len(lead)} leaders are "
               f"vertices (generic picture: all). Tokens still move by "
               f"{_moved(run)} over $[T-1, T]$. {run.precision}.")
    return [(caption, fig)]


def polytope_subspace_figures() -> list[tuple[str, Figure]]:
    """Setup 2: ``V = diag(1, −1/2)``, ``A = I``: ``z_1`` tends to ``{a, 0, b}``."""

    run = paper_run("polytope-subspace")
    z1 = run.traj.z[-1][:, 0]
    a, b = float(z1.min()), float(z1.max())
    offsets = np.array([a, 0.0, b])
    gap = float(np.max(np.min(np.abs(z1[:, None] - offsets[None, :]), axis=1)))
    pred = Predicted(polytope_vertices=[[a, 0.0], [b, 0.0]], subspace=[[0.0, 1.0]],
                     anchors=[[c, 0.0] for c in offsets], label=r"$\mathcal{K} = [a, b]$")
    caption = (f"Polytope × subspace (Theorem 5.2), $V = \\mathrm{{diag}}(1, -1/2)$, $A = I_2$, "
               f"$n = 20$, $T = {run.horizon}$: $F = \\mathbb{{R}}e_1$, $G = \\mathbb{{R}}e_2$. "
               f"Dotted: $\\{{z_1 = c\\}}$, $c \\in \\{{a, 0, b\\}}$ with "
               f"$a = {trusted(a, run.error)}$, $b = {trusted(b, run.error)}$ (extreme "
               f"$z_1(T)$); every $z_{{i,1}}(T)$ is within {upper(gap)} of "
               f"one of them, while $z_{{i,2}}$ spreads along $G$. {run.precision}.")
    fig = plot_trajectories(run.traj, predicted=pred)
    fig.axes[0].set_aspect("auto")  # z_2 spreads far more than z_1: equal axes squash it
    return [(caption, fig)]


def hyperplane_lines(run: PaperRun) -> tuple[np.ndarray, np.ndarray, float]:
    r"""``(φ_1^*, (a, 0, b), radius)``: exact-arithmetic left eigenvector (as float balls'
    midpoints, radius of the balls) and the offsets read from ``z(T)``."""

    pair = eigenpair(run.instance.model.V)
    phi = pair.left_float
    values = run.traj.z[-1] @ phi
    return phi, np.array([values.min(), 0.0, values.max()]), pair.radius


def hyperplane_figures() -> list[tuple[str, Figure]]:
    """Setup 3: the paper's 2-D good triple with the lines ``{φ_1^* = c}``."""

    run = paper_run("hyperplanes")
    phi, offsets, radius = hyperplane_lines(run)
    offset_error = float(np.abs(phi).sum()) * run.error \
        + float(radius) * float(np.max(np.abs(run.traj.z[-1])))  # of a, b = extreme φ₁*(z_i(T))
    vals = run.traj.z @ phi  # (m, n)
    top, bottom = vals.max(axis=1), vals.min(axis=1)
    slack = 10 * run.error * float(np.abs(phi).sum())
    monotone = bool(np.all(np.diff(top) <= slack) and np.all(np.diff(bottom) >= -slack))
    gap = float(np.max(np.min(np.abs(vals[-1][:, None] - offsets[None, :]), axis=1)))
    fig = plot_trajectories(run.traj, predicted=Predicted(hyperplanes=(phi, offsets)))
    caption = (f"Hyperplanes (Theorem 4.2), 2-D good triple $A = I$, $V$ = [[0.64709742, "
               f"0.81911926], [0.61210449, 0.63263484]] ($\\lambda_1 \\approx 1.34799$, "
               f"$\\lambda_2 \\approx -0.06826$), $n = 20$, $T = {run.horizon}$. Lines "
               f"$\\{{\\varphi_1^*(z) = c\\}}$, $c \\in \\{{a, 0, b\\}}$ = "
               f"{{{trusted(offsets[0], offset_error)}, 0, {trusted(offsets[2], offset_error)}}}: "
               f"$\\varphi_1^*$ = ({trusted(phi[0], radius)}, {trusted(phi[1], radius)}) computed "
               f"exactly over $\\mathbb{{Q}}(\\lambda_1)$ (ball radius {upper(radius, 1)}), "
               f"$a, b$ = extreme $\\varphi_1^*(z_i(T))$. Every $\\varphi_1^*(z_i(T))$ is within "
               f"{upper(gap)} of $\\{{a, 0, b\\}}$; $\\max_j \\varphi_1^*(z_j)$ non-increasing and "
               f"$\\min_j$ non-decreasing over the {len(top)} checkpoints: "
               f"{'yes' if monotone else 'NO'}. {run.precision}.")
    return [(caption, fig)]


def leaders_figures() -> list[tuple[str, Figure]]:
    """Setup 4: ``V = MMᵀ``, ``QᵀK = NNᵀ``: attention graph with leaders and ``P(t)``."""

    run = paper_run("leaders")
    traj, lead = run.traj, run.leaders()
    zT = traj.z[-1]
    read = colour_clusters(traj.attention[-1])
    unsure = sorted({int(v) for v in read} - set(lead)) if read is not None else []
    undecided = len(undecided_nodes(hardmax_graph(run.scores, run.radius)))
    V = np.array(run.instance.model.V, dtype=float)
    B = np.array(run.instance.model.B, dtype=float)
    setup = (f"$V = MM^\\top$ (eigenvalues {np.linalg.eigvalsh(V).round(4).tolist()}), "
             f"$Q^\\top K = NN^\\top$ (eigenvalues {np.linalg.eigvalsh(B).round(4).tolist()}), "
             f"$M, N$ uniform in $[-1, 1]$, $n = 20$ tokens uniform in $[-1, 1]^2$, "
             f"$T = {run.horizon}$")
    certified = (f"{len(lead)} certified leader(s) (filled stars: hardmax of the scores "
                 f"certified against the reference run); {len(unsure)} more read from the "
                 f"float64 $P(T)$ only (hollow stars): {undecided} rows have top scores that "
                 f"agree to float64 resolution, their argmax is decided by the sub-leading "
                 f"eigendirection of $V$, beyond float64 at this $T$ (spec §4)")
    phi, offsets, _ = hyperplane_lines(run)
    paths = plot_trajectories(traj, predicted=Predicted(hyperplanes=(phi, offsets)))
    _mark_leaders(paths, zT[lead], zT[unsure] if unsure else None)
    G = attention_graph(traj.attention[-1], 1e-4)
    node_colours = colours_of(traj.n, read)
    graph = plot_attention_graph(G, zT, leaders=sorted(set(lead) | set(unsure)),
                                 node_colours=node_colours,
                                 title=f"Attention graph at $t = {run.horizon}$, "
                                       f"{G.number_of_edges()} edges $P_{{ij}} > 10^{{-4}}$")
    return [(f"Leaders: rescaled token paths, {setup}; lines: $\\{{\\varphi_1^*(z) = c\\}}$, "
             f"$c \\in \\{{a, 0, b\\}}$ (a good triple: Theorem 4.2); {certified}. {run.note} "
             f"{run.precision}.", paths),
            (f"Leaders: attention graph at $t = T$ (edge $i \\to j$ when $P_{{ij}} > 10^{{-4}}$) "
             f"drawn at $z(T)$; stars: the leaders (certified and float-read). {setup}.", graph),
            (f"Leaders: $P(t)$ heat maps and its numerical rank, {setup}.",
             plot_attention_heatmaps(traj))]


def low_rank_figures() -> list[tuple[str, Figure]]:
    """Setup 5 (scaled down): ``V = MMᵀ/ρ``, ``A = I``: ``P(t)`` and its rank."""

    run = paper_run("low-rank")
    caption = (f"Low-rank attention: $A = I$, $n = d = 20$, tokens uniform in $[-1, 1]^{{20}}$, "
               f"$T = {run.horizon}$; $P(t)$ heat maps and its numerical rank. {run.note} "
               f"{run.precision}.")
    return [(caption, plot_attention_heatmaps(run.traj))]


PAPER_FIGURES: list[Callable] = []


for _maker in (polytope_figures, polytope_subspace_figures, hyperplane_figures,
               leaders_figures, low_rank_figures):
    if _maker not in PAPER_FIGURES:
        PAPER_FIGURES.append(_maker)
