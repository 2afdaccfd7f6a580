r"""Leaders, followers, clusters and the Boolean limit of a certified hardmax graph.

Part of :mod:`verify.analysis.graph` (import from there).  A **leader** is a token whose hardmax
target is itself (a self-loop in an attracting component); each token follows the leader(s) it
reaches along hardmax edges, and in the limit $P(t)$ tends to the Boolean matrix with ones at
$(i, \mathrm{leader}(i))$.  Readings that need every row decided raise on undecided nodes.

Examples
--------
>>> G = hardmax_graph([[1, 0, 0], [1, 0, 1], [0, 0, 1]])
>>> leaders(G), clusters(G), number_clusters(G)
({0, 2}, [{0, 1}, {1, 2}], 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import networkx as nx
import numpy as np

from verify.analysis.graph._graphs import (  # noqa: F401 (used by the doctests)
    hardmax_graph,
    hardmax_only,
    undecided_nodes,
)
from verify.errors import InvalidArgument
from verify.exact.linalg import exact_rank

__all__ = [
    "leaders", "followers", "clusters", "number_clusters", "boolean_limit",
    "boolean_limit_rank", "LeaderHistory", "leader_history",
]


def _require_decided(G: nx.DiGraph, name: str) -> None:
    undecided = undecided_nodes(G)
    if undecided:
        raise InvalidArgument(
            f"G has undecided nodes {sorted(undecided)}: their hardmax targets are not "
            f"certified, so {name}(G) is not determined; recompute the scores with a smaller "
            "radius (tighter tolerance, more precision) or inspect undecided_nodes(G)."
        )


@hardmax_only
def leaders(G: nx.DiGraph) -> set:
    r"""Return the certified leaders of the hardmax graph `G`.

    A leader is a token with a self-loop (its hardmax target is itself) in an attracting
    component of `G`. Only leaders whose attracting component has no undecided node are
    returned, so the result is always a subset of the true leaders, and is exact when
    ``undecided_nodes(G)`` is empty.

    Parameters
    ----------
    G : DiGraph
        A hardmax graph (:func:`hardmax_graph`).

    Returns
    -------
    leaders : set

    Raises
    ------
    InvalidArgument
        If `G` is not a hardmax graph.

    Examples
    --------
    >>> leaders(hardmax_graph([[2, 1, 0], [2, 1, 0], [0, 1, 3]]))
    {0, 2}

    See Also
    --------
    followers, undecided_nodes
    """
    undecided = undecided_nodes(G)
    return {v for component in nx.attracting_components(G) if not component & undecided
            for v in component if G.has_edge(v, v)}


@hardmax_only
def followers(G: nx.DiGraph) -> dict:
    """Return, for each leader, the tokens that follow it (the leader included).

    Token ``i`` follows leader ``L`` when ``L`` is reachable from ``i`` along hardmax edges.
    When rows have exact ties a token may reach several leaders: it is then listed under each
    of them. A token reaching no leader (an attracting cycle without self-loop, possible when
    $Q^T K$ is not symmetric) is listed nowhere.

    Returns
    -------
    followers : dict
        ``leader -> set of tokens``.

    Raises
    ------
    InvalidArgument
        If `G` is not a hardmax graph or has undecided nodes.

    Examples
    --------
    >>> followers(hardmax_graph([[0, 1, 0], [0, 1, 0], [0, 1, 1]]))
    {1: {0, 1, 2}}
    """
    _require_decided(G, "followers")
    return {leader: nx.ancestors(G, leader) | {leader} for leader in sorted(leaders(G))}


@hardmax_only
def clusters(G: nx.DiGraph) -> list[set]:
    """Return the clusters: each attracting component with all tokens that reach it.

    Without ties the clusters partition the tokens, one per leader; a token whose row ties
    between two basins belongs to both clusters.

    Raises
    ------
    InvalidArgument
        If `G` is not a hardmax graph or has undecided nodes.

    Examples
    --------
    >>> clusters(hardmax_graph([[1, 0, 0], [1, 0, 1], [0, 0, 1]]))
    [{0, 1}, {1, 2}]
    """
    _require_decided(G, "clusters")
    found = [set(c).union(*(nx.ancestors(G, v) for v in c)) for c in nx.attracting_components(G)]
    return sorted(found, key=min)


@hardmax_only
def number_clusters(G: nx.DiGraph) -> int:
    """Return the number of clusters (attracting components) of the hardmax graph `G`.

    Examples
    --------
    >>> number_clusters(hardmax_graph([[1, 0, 0], [1, 0, 1], [0, 0, 1]]))
    2
    """
    _require_decided(G, "number_clusters")
    return nx.number_attracting_components(G)


@hardmax_only
def boolean_limit(G: nx.DiGraph, n: int | None = None) -> np.ndarray:
    r"""Return the Boolean limit matrix $P^*$: ``P[i, L] = 1`` iff ``L`` is a leader of ``i``.

    Rows are **not** normalised: a token following several leaders (exact ties) has several
    ones, and a token reaching no leader has a zero row.

    Parameters
    ----------
    G : DiGraph
        A decided hardmax graph on the nodes ``0, …, n−1``.
    n : int, optional
        Number of tokens; defaults to ``G.number_of_nodes()``.

    Returns
    -------
    P : ndarray of int64, shape (n, n)

    Examples
    --------
    >>> boolean_limit(hardmax_graph([[2, 1], [2, 1]]))
    array([[1, 0],
           [1, 0]])
    """
    n = G.number_of_nodes() if n is None else n
    if not isinstance(n, int) or isinstance(n, bool) or set(G) != set(range(n)):
        raise InvalidArgument(
            f"n={n!r} ({type(n).__name__}) does not match the nodes of G ({G.number_of_nodes()} "
            "nodes); the nodes must be exactly 0, …, n−1; omit n to use G.number_of_nodes()."
        )
    P = np.zeros((n, n), dtype=np.int64)
    for leader, tokens in followers(G).items():
        P[sorted(tokens), leader] = 1
    return P


def boolean_limit_rank(G: nx.DiGraph) -> int:
    """Return the exact rank of :func:`boolean_limit` (FLINT rational elimination).

    Examples
    --------
    >>> boolean_limit_rank(hardmax_graph([[2, 1, 0], [2, 1, 0], [0, 1, 3]]))
    2
    """
    return exact_rank(boolean_limit(G))


@dataclass(frozen=True)
class LeaderHistory:
    """Certified leader sets over checkpoints (see :func:`leader_history`)."""

    times: tuple[float, ...]
    leaders: tuple[frozenset, ...]
    undecided: tuple[frozenset, ...]
    stable_since: float | None

    @property
    def any_undecided(self) -> bool:
        """True when some checkpoint had an undecided node (its leader set is then a subset)."""
        return any(self.undecided)


def leader_history(graphs: Sequence[nx.DiGraph], times: Sequence[float]) -> LeaderHistory:
    """Return the leader sets of hardmax graphs at increasing checkpoint times.

    ``stable_since`` is the first time of the final run of equal leader sets, or None when that
    run is a single checkpoint (the set changed at the last checkpoint, or there is only one):
    a limit is judged from a trend, never from one snapshot. Leader sets are certified subsets
    (:func:`leaders`); check ``any_undecided`` before trusting a comparison.

    Raises
    ------
    InvalidArgument
        If lengths differ, times are not finite and strictly increasing, or a graph is not a
        hardmax graph.

    Examples
    --------
    >>> a, b = hardmax_graph([[1, 0], [1, 0]]), hardmax_graph([[1, 0], [0, 1]])
    >>> leader_history([a, b, b], [1.0, 2.0, 3.0]).stable_since
    2.0
    """
    graphs, times = list(graphs), [float(t) for t in times]
    if len(graphs) != len(times) or not graphs:
        raise InvalidArgument(
            f"len(graphs)={len(graphs)} and len(times)={len(times)} must be equal and positive; "
            "pass one hardmax graph per checkpoint time."
        )
    if not all(math.isfinite(t) for t in times) or any(b <= a for a, b in pairwise(times)):
        raise InvalidArgument(
            f"times={times} must be finite and strictly increasing; sort the checkpoints."
        )
    sets = tuple(frozenset(leaders(G)) for G in graphs)
    start = len(sets) - 1
    while start > 0 and sets[start - 1] == sets[-1]:
        start -= 1
    return LeaderHistory(
        times=tuple(times), leaders=sets,
        undecided=tuple(frozenset(undecided_nodes(G)) for G in graphs),
        stable_since=times[start] if start < len(sets) - 1 else None,
    )
