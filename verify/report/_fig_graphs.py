r"""Graph figures: the attention graph with its leaders, and the claim dependency graph."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from verify.analysis.graph import leaders as certified_leaders
from verify.errors import InvalidArgument
from verify.report._figstyle import describe, float_array, latex_float, new_figure, palette

__all__ = ["plot_attention_graph", "plot_dependency_graph", "VERDICT_COLOURS", "verdict_colour"]

#: Face colour and legend name per claim verdict (matched on the verdict's first word).
VERDICT_COLOURS = {
    "supported": ("#a5d6a7", "supported"),
    "refuted-expected": ("#b3c5ea", "refuted, as expected"),
    "refuted": ("#ef9a9a", "refuted"),
    "inconclusive": ("#ffcc80", "inconclusive"),
    None: ("#e0e0e0", "no verdict"),
}


_LEADER_SIZE, _FOLLOWER_SIZE = 320, 110  # marker areas (points²) of leaders and followers


def verdict_colour(verdict: str | None) -> tuple[str, str]:
    """``(face colour, legend name)`` of a verdict such as ``"supported on 12 instances"``.

    >>> verdict_colour("Refuted (counterexample saved)")
    ('#ef9a9a', 'refuted')
    >>> verdict_colour("refuted-expected")[1]  # a false proof step, refuted as the claim says
    'refuted, as expected'
    >>> verdict_colour(None)[1]
    'no verdict'
    """
    word = str(verdict).strip().lower() if verdict is not None else ""
    for key, value in VERDICT_COLOURS.items():
        if key is not None and word.startswith(key):
            return value
    return VERDICT_COLOURS[None]


def _positions(G: nx.DiGraph, positions: Any) -> tuple[dict, bool]:
    if positions is None:
        return nx.spring_layout(G, seed=0), False
    if isinstance(positions, dict):
        missing = [v for v in G.nodes if v not in positions]
        if missing:
            raise InvalidArgument(f"positions has no entry for nodes {missing[:5]}; give a "
                                  "position for every node of G.")
        items = {v: float_array(f"positions[{v!r}]", positions[v], 1) for v in G.nodes}
        if any(p.size < 2 for p in items.values()):
            raise InvalidArgument("every position needs at least 2 coordinates.")
        return {v: p[:2] for v, p in items.items()}, True
    array = float_array("positions", positions, 2)
    n = G.number_of_nodes()
    if array.shape[0] != n or array.shape[1] < 2 or set(G.nodes) != set(range(n)):
        raise InvalidArgument(
            f"positions has shape {array.shape}; an array must be (n, d) with d ≥ 2 and n = "
            f"{n} nodes labelled 0, …, n−1 (e.g. traj.z[-1]); otherwise pass a dict node → point."
        )
    return {v: array[v, :2] for v in G.nodes}, True


def _leaders(G: nx.DiGraph, leaders: Any) -> tuple[set, str]:
    if leaders is not None:
        chosen = set(leaders)
        if not chosen <= set(G.nodes):
            raise InvalidArgument(f"leaders={sorted(chosen - set(G.nodes))!r} are not nodes of G.")
        return chosen, "leaders (given)"
    if G.graph.get("hardmax") is True:
        return certified_leaders(G), "certified leaders"
    found = {v for comp in nx.attracting_components(G) for v in comp if G.has_edge(v, v)}
    return found, "leaders (self-loop in an attracting component)"


def plot_attention_graph(G: nx.DiGraph, positions: Any = None, *, leaders: Any = None,
                         node_colours: Any = None, title: str | None = None) -> Figure:
    r"""Return a drawing of the attention graph `G` with its leaders marked.

    Leaders are stars with a black rim; every other token is a dot coloured like its leader's
    cluster (grey when it reaches no leader or several), so colours match
    :func:`plot_trajectories` when `G` is the graph at the final checkpoint. Edge widths grow
    with the edge ``weight`` (:math:`P_{ij}`). For a hardmax graph, tokens whose argmax is not
    certified get a red rim.

    Parameters
    ----------
    G : networkx.DiGraph
        From :func:`verify.analysis.graph.attention_graph` or
        :func:`verify.analysis.graph.hardmax_graph`.
    positions : array_like, shape (n, d), or dict, optional
        Node positions, e.g. the final tokens ``traj.z[-1]`` (first two coordinates used);
        default: a spring layout with seed 0.
    leaders : iterable, optional
        Default: :func:`verify.analysis.graph.leaders` for a hardmax graph, otherwise the nodes with
        a self-loop in an attracting component.
    node_colours : sequence or dict, optional
        A colour per node (indexed by node), e.g. ``token_colours(n, colour_clusters(P_T))``
        to match the other figures of a trajectory; default: by the leaders of `G`.
    title : str, optional

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes; node collections have ``gid`` ``"leaders"`` and ``"followers"``.

    Raises
    ------
    InvalidArgument
        If `G` is not a non-empty DiGraph, positions are misshaped, or leaders are not nodes.

    Examples
    --------
    >>> G = nx.DiGraph([(0, 0), (1, 0), (2, 2)])
    >>> fig = plot_attention_graph(G, [[0, 0], [1, 0], [0, 1]])
    >>> sorted(c.get_gid() for c in fig.axes[0].collections)
    ['followers', 'leaders']
    """
    if not isinstance(G, nx.DiGraph) or G.number_of_nodes() == 0:
        raise InvalidArgument(f"G=<{describe(G)}> ({type(G).__name__}) must be a non-empty "
                              "networkx DiGraph, e.g. verify.analysis.graph.attention_graph(P).")
    pos, geometric = _positions(G, positions)
    chosen, leader_name = _leaders(G, leaders)
    heads = sorted(chosen, key=str)
    colour_of = dict(zip(heads, palette(len(heads)), strict=True))
    node_colour = {}
    for v in G.nodes:
        reach = (nx.descendants(G, v) | {v}) & chosen
        node_colour[v] = colour_of[next(iter(reach))] if len(reach) == 1 else "0.6"
    if node_colours is not None:
        try:
            node_colour = {v: node_colours[v] for v in G.nodes}
        except (KeyError, IndexError, TypeError):
            raise InvalidArgument(f"node_colours=<{describe(node_colours)}> must give a colour "
                                  "for every node (a list indexed by node, or a dict).") from None
    undecided = {v for v, u in G.nodes(data="undecided") if u}

    fig = new_figure(6.0, 5.4)
    ax = fig.add_subplot()
    weights = [w if w is not None else 1.0 for *_, w in G.edges(data="weight")]
    widths = [0.5 + 1.8 * float(w) for w in weights]
    size_of = {v: _LEADER_SIZE if v in chosen else _FOLLOWER_SIZE for v in G.nodes}
    if G.number_of_edges():  # arrows end at the rim of the marker they point to
        nx.draw_networkx_edges(G, pos, ax=ax, arrows=True, arrowstyle="-|>", arrowsize=9,
                               width=widths, edge_color="0.45", nodelist=list(G.nodes),
                               node_size=[size_of[v] for v in G.nodes],
                               connectionstyle="arc3,rad=0.22")  # bowed off collinear nodes
    followers = [v for v in G.nodes if v not in chosen]
    for group, marker, size, gid in ((followers, "o", _FOLLOWER_SIZE, "followers"),
                                     (heads, "*", _LEADER_SIZE, "leaders")):
        if not group:
            continue
        xy = np.array([pos[v] for v in group])
        edge = ["red" if v in undecided else ("k" if gid == "leaders" else "0.3")
                for v in group]
        ax.scatter(xy[:, 0], xy[:, 1], s=size, marker=marker, c=[node_colour[v] for v in group],
                   edgecolors=edge, linewidths=1.0, zorder=3, gid=gid)
    if G.number_of_nodes() <= 40:
        for v in G.nodes:
            name = str(v + 1) if isinstance(v, int) else str(v)  # tokens 1-based, as in the paper
            ax.annotate(name, pos[v], xytext=(5, 5), textcoords="offset points", fontsize=7,
                        color="0.2", zorder=4)
    handles = [Line2D([], [], ls="none", marker="*", ms=13, mfc="0.8", mec="k",
                      label=f"{leader_name}: {len(chosen)}"),
               Line2D([], [], ls="none", marker="o", ms=8, mfc="0.8", mec="0.3",
                      label="followers (colour: their leader)")]
    if "threshold" in G.graph:
        edge_text = rf"edge $i \to j$: $P_{{ij}} > {latex_float(G.graph['threshold'], 2)}$"
    elif G.graph.get("hardmax"):
        edge_text = r"edge $i \to j$: $j$ maximises the score of row $i$"
    else:
        edge_text = r"edge $i \to j$"
    handles.append(Line2D([], [], color="0.45", lw=1.2, label=edge_text))
    if undecided:
        handles.append(Line2D([], [], ls="none", marker="o", ms=8, mfc="white", mec="red",
                              label="argmax not certified"))
    ax.legend(handles=handles, fontsize=8, loc="best", framealpha=0.85)
    if geometric:
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(r"coordinate 1 of the token")
        ax.set_ylabel(r"coordinate 2 of the token")
        ax.grid(True, lw=0.3, alpha=0.4)
        ax.tick_params(left=True, bottom=True, labelleft=True, labelbottom=True)
    else:
        ax.set_axis_off()
    ax.set_title(title or f"Attention graph, $n = {G.number_of_nodes()}$ tokens, "
                 f"{G.number_of_edges()} edges", fontsize=10)
    return fig


def _dependency_digraph(edges: Any) -> nx.DiGraph:
    if not isinstance(edges, dict):
        raise InvalidArgument(f"edges=<{describe(edges)}> ({type(edges).__name__}) must be a "
                              "dict claim id -> list of the claim ids it uses.")
    G = nx.DiGraph()
    for claim, used in edges.items():
        if not isinstance(claim, str) or isinstance(used, str) or not all(
                isinstance(u, str) for u in (used or [])):
            raise InvalidArgument(f"edges[{claim!r}]={used!r}: keys must be claim ids (str) and "
                                  "values lists of claim ids (str), e.g. {'polytope': "
                                  "['hull-nonincreasing']}.")
        G.add_node(claim)
        G.add_edges_from((claim, u) for u in (used or []))
    if not nx.is_directed_acyclic_graph(G):
        cycle = " -> ".join(a for a, _ in nx.find_cycle(G))
        raise InvalidArgument(f"the claim dependencies have a cycle ({cycle}); a claim cannot "
                              "use itself, directly or not: fix the 'uses' lists.")
    return G


def _layers(G: nx.DiGraph) -> list[list[str]]:
    """Columns: topological generations (every node left of its successors), isolated claims
    last; inside a column, ordered by the mean row of their neighbours (barycentre)."""
    isolated = sorted(v for v in G.nodes if G.degree(v) == 0)
    H = G.subgraph(v for v in G.nodes if G.degree(v) > 0)
    layers = [sorted(gen) for gen in nx.topological_generations(H)]
    row: dict[str, float] = {}
    for c, layer in enumerate(layers):
        if c:
            layer.sort(key=lambda v: (np.mean([row[u] for u in G.predecessors(v)]), v))
        row.update({v: float(i) for i, v in enumerate(layer)})
    if len(layers) > 1:
        layers[0].sort(key=lambda v: (np.mean([row[u] for u in G.successors(v)]), v))
    if isolated:
        layers.append(isolated)
    return layers


def plot_dependency_graph(edges: dict[str, list[str]],
                          verdicts: dict[str, str] | None = None) -> Figure:
    r"""Return the claim dependency graph, claims coloured by verdict.

    An arrow :math:`B \to A` means claim *A* uses claim *B*: arrows run from what is used to
    what uses it, as a proof is read. Claims are laid out in columns by topological generation
    (a claim right of every claim it uses), so all arrows point right; claims with no
    dependency either way form the last column. Colours: supported green, refuted red,
    inconclusive amber, no verdict grey.

    Parameters
    ----------
    edges : dict of str to list of str
        Claim id -> ids of the claims it uses (ids that only appear in lists are added).
    verdicts : dict of str to str, optional
        Claim id -> verdict (``"supported on 12 instances"``, ``"refuted"``, ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes; the label of claim ``c`` is a Text with ``gid="claim:c"``, each arrow (from
        ``b`` to ``a``) an annotation with ``gid="uses:a->b"`` (``a`` uses ``b``).

    Raises
    ------
    InvalidArgument
        If ``edges`` is not a dict of str to lists of str, names no claim, or the dependencies
        have a cycle.

    Examples
    --------
    >>> fig = plot_dependency_graph({"polytope": ["hull-nonincreasing"],
    ...                              "hull-nonincreasing": []}, {"polytope": "supported"})
    >>> sorted(t.get_gid() for t in fig.axes[0].texts)
    ['claim:hull-nonincreasing', 'claim:polytope', 'uses:polytope->hull-nonincreasing']
    """
    G = _dependency_digraph(edges).reverse()  # b -> a when a uses b
    if not G:
        raise InvalidArgument("edges={} names no claim: there is no dependency graph to draw.")
    verdicts = {} if verdicts is None else verdicts
    if not isinstance(verdicts, dict):
        raise InvalidArgument(f"verdicts=<{describe(verdicts)}> ({type(verdicts).__name__}) "
                              "must be a dict claim id -> verdict string, or None.")
    layers = _layers(G)
    tallest = max((len(layer) for layer in layers), default=1)
    longest = max((len(v) for v in G.nodes), default=8)
    column = 0.062 * longest + 0.75
    fig = new_figure(max(6.0, column * len(layers)), max(2.5, 0.42 * tallest + 1.3))
    ax = fig.add_subplot()
    ax.set_axis_off()
    labels, used = {}, set()
    for c, layer in enumerate(layers):
        for i, v in enumerate(layer):
            face, name = verdict_colour(verdicts.get(v))
            used.add(name)
            labels[v] = ax.text(c, (len(layer) - 1) / 2 - i, v, ha="center", va="center",
                                fontsize=8, gid=f"claim:{v}",
                                bbox={"boxstyle": "round,pad=0.35", "fc": face, "ec": "0.3",
                                      "lw": 0.8})
    for b, a in G.edges:
        ax.annotate("", xy=labels[a].get_position(), xytext=labels[b].get_position(),
                    gid=f"uses:{a}->{b}",
                    arrowprops={"arrowstyle": "-|>", "color": "0.35", "lw": 0.9,
                                "shrinkA": 1, "shrinkB": 1,
                                "patchA": labels[b].get_bbox_patch(),
                                "patchB": labels[a].get_bbox_patch()})
    isolated = [v for v in layers[-1] if G.degree(v) == 0]
    if isolated:
        ax.text(len(layers) - 1, len(isolated) / 2 + 0.05, "no dependencies", ha="center",
                va="bottom", fontsize=8, style="italic", color="0.4")
    ax.set_xlim(-0.6, len(layers) - 0.4)
    ax.set_ylim(-(tallest / 2) - 0.1, tallest / 2 + 0.4)
    handles = [Patch(fc=face, ec="0.3", label=name) for key, (face, name)
               in VERDICT_COLOURS.items() if name in used]
    ax.legend(handles=handles, fontsize=8, loc="upper center", ncols=len(handles),
              bbox_to_anchor=(0.5, 0.0), frameon=False)
    ax.set_title(r"Claim dependencies (arrow $B \to A$: claim $A$ uses claim $B$)", fontsize=10)
    return fig
