r"""Attention graphs, hardmax graphs and leaders (paper §2 `polytope-vertices-generic`, §3).

Two graphs on the tokens ``0, …, n−1``:

* the **attention graph** of a row-stochastic matrix $P$: an edge $i \to j$ of weight $P_{ij}$
  when $P_{ij}$ exceeds a threshold (the paper draws $P_{ij} > 10^{-4}$);
* the **hardmax graph** of the scores $S_{ij} = \langle Q x_i, K x_j\rangle$ known to within
  error bounds $r_{ij}$: an edge $i \to j$ for each $j$ in the argmax set of row $i$, where the
  argmax is *certified*, never guessed (see :func:`hardmax_graph`).

A **leader** is a token whose hardmax target is itself (a self-loop in an attracting
component); each token follows the leader(s) it reaches along hardmax edges, and in the limit
$P(t)$ tends to the Boolean matrix with ones at $(i, \mathrm{leader}(i))$.

Examples
--------
>>> G = hardmax_graph([[4, 3, 0], [3, 2, 0], [0, 0, 1]])
>>> leaders(G)
{0, 2}
>>> followers(G)
{0: {0, 1}, 2: {2}}
"""

from verify.analysis.graph._graphs import (
    ROW_SUM_TOLERANCE,
    attention_graph,
    certified_argmax,
    hardmax_graph,
    hardmax_only,
    score_bounds,
    undecided_nodes,
)
from verify.analysis.graph._leaders import (
    LeaderHistory,
    boolean_limit,
    boolean_limit_rank,
    clusters,
    followers,
    leader_history,
    leaders,
    number_clusters,
)

__all__ = [
    "attention_graph", "hardmax_graph", "hardmax_only", "leaders", "followers", "clusters",
    "number_clusters", "undecided_nodes", "boolean_limit", "boolean_limit_rank",
    "LeaderHistory", "leader_history", "ROW_SUM_TOLERANCE", "certified_argmax", "score_bounds",
]
