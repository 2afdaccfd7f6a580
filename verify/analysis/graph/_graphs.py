r"""The attention graph of $P$ and the certified hardmax graph of the scores (construction).

Part of :mod:`verify.analysis.graph` (import from there).  Also the precondition decorator
:func:`hardmax_only` and :func:`undecided_nodes`, which say what a hardmax graph is and where
it is not certified; the readings (leaders, clusters, Boolean limit) are in
:mod:`verify.analysis.graph._leaders`.

Examples
--------
>>> G = hardmax_graph([[0, 1], [0, 1]])
>>> sorted(G.edges(data="weight")), undecided_nodes(G)
([(0, 1, 1.0), (1, 1, 1.0)], set())
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from numbers import Real
from typing import Any

import networkx as nx
import numpy as np

from verify.errors import InvalidArgument
from verify.exact.inputs import as_float_array, rational_array

__all__ = ["ROW_SUM_TOLERANCE", "attention_graph", "hardmax_graph", "hardmax_only",
           "undecided_nodes", "certified_argmax", "score_bounds"]

ROW_SUM_TOLERANCE = 1e-8
_NODE_KEYS = ("undecided", "margin", "margin_error")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}, dtype {value.dtype}"
    return type(value).__name__


def _square(name: str, value: Any, exact_ok: bool) -> tuple[np.ndarray, bool]:
    """A finite n×n array: float64, or exact Fractions when ``exact_ok`` and given exactly."""
    raw = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if raw.ndim != 2 or raw.shape[0] != raw.shape[1] or raw.shape[0] == 0:
        raise InvalidArgument(
            f"{name} of shape {raw.shape} ({_describe(value)}) is not square; {name} must be an "
            f"n×n array with n ≥ 1 (row i for token i)."
        )
    if exact_ok and raw.dtype.kind in "OUS":
        return rational_array(name, raw)[0], True
    if raw.dtype.kind not in "iuf":
        raise InvalidArgument(
            f"{name} has dtype {raw.dtype} ({_describe(value)}); {name} must hold real numbers; "
            "pass a float64 array (or Fractions for exact scores)."
        )
    array = raw.astype(np.float64)
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        i, j = bad[0]
        raise InvalidArgument(
            f"{name}[{i}, {j}]={array[i, j]} (float) is not finite; every entry of {name} must be "
            f"a real number; recompute {name} (subtract the row maximum before exponentiating)."
        )
    return array, False


def attention_graph(P: Any, threshold: float = 1e-4) -> nx.DiGraph:
    r"""Return the attention graph of the attention matrix `P`.

    Nodes are the tokens ``0, …, n−1``; there is an edge $i \to j$ with ``weight`` $P_{ij}$
    whenever $P_{ij} > \text{threshold}$ (self-loops included).

    Parameters
    ----------
    P : array_like, shape (n, n)
        A row-stochastic matrix: entries in $[0, 1]$, rows summing to 1 within
        ``ROW_SUM_TOLERANCE``.
    threshold : float
        Edges are drawn where $P_{ij} > \text{threshold}$; $0 \le \text{threshold} < 1$.

    Returns
    -------
    G : DiGraph
        ``G.graph["threshold"]`` records the threshold.

    Raises
    ------
    InvalidArgument
        If `P` is not square, has NaN/infinite entries, or is not row-stochastic; or if
        `threshold` is outside $[0, 1)$.

    Examples
    --------
    >>> G = attention_graph([[0.5, 0.5], [1e-5, 1 - 1e-5]])
    >>> sorted(G.edges(data="weight"))
    [(0, 0, 0.5), (0, 1, 0.5), (1, 1, 0.99999)]
    """
    array, _ = _square("P", P, exact_ok=False)
    if not isinstance(threshold, Real) or not 0 <= threshold < 1:
        raise InvalidArgument(
            f"threshold={threshold!r} ({type(threshold).__name__}) is outside [0, 1); edges are "
            "drawn where P_ij > threshold; the paper uses threshold=1e-4."
        )
    if array.min() < 0 or array.max() > 1:
        raise InvalidArgument(
            f"P has entries outside [0, 1] (min {array.min()}, max {array.max()}); P must be an "
            "attention matrix, not scores; pass the softmax of the scores."
        )
    sums = array.sum(axis=1)
    worst = int(np.argmax(np.abs(sums - 1)))
    if abs(sums[worst] - 1) > ROW_SUM_TOLERANCE:
        raise InvalidArgument(
            f"P row {worst} sums to {sums[worst]!r}; P must be row-stochastic (|row sum − 1| ≤ "
            f"{ROW_SUM_TOLERANCE}); pass the attention matrix, not unnormalised weights."
        )
    n = array.shape[0]
    G = nx.DiGraph(threshold=float(threshold))
    G.add_nodes_from(range(n))
    for i, j in zip(*np.nonzero(array > threshold), strict=True):
        G.add_edge(int(i), int(j), weight=float(array[i, j]))
    return G


def _radius(radius: Any, n: int, exact: bool) -> np.ndarray:
    """The n×n error bounds, exact (Fractions) or float64 rounded upward."""
    raw = np.asarray(radius) if not isinstance(radius, np.ndarray) else radius
    if raw.ndim == 0:
        raw = np.full((n, n), raw.item(), dtype=raw.dtype if raw.dtype.kind != "O" else object)
    if raw.shape != (n, n):
        raise InvalidArgument(
            f"radius of shape {raw.shape} ({_describe(radius)}) does not match scores of shape "
            f"({n}, {n}); radius must be a number or an n×n array of absolute score errors."
        )
    if raw.dtype.kind == "b":
        raise InvalidArgument("radius has dtype bool; radius must hold non-negative numbers.")
    if raw.dtype.kind == "f" and not exact:  # already exact binary values: check, no conversion
        exact_r = raw.astype(np.float64)
        if not np.isfinite(exact_r).all():
            raise InvalidArgument("radius has a NaN or infinite entry; radius must be finite.")
    else:
        exact_r = rational_array("radius", raw)[0]  # exact; rejects NaN and infinities
    if (exact_r < 0).any():
        raise InvalidArgument(
            f"radius has a negative entry (min {exact_r.min()}); radius is an absolute error "
            "bound and must be ≥ 0; pass abs() of the error estimate."
        )
    if exact or exact_r.dtype != object:
        return exact_r
    out = as_float_array(exact_r)
    low = np.vectorize(lambda f, q: Fraction(f) < q, otypes=[bool])(out, exact_r)
    return np.where(low, np.nextafter(out, np.inf), out)  # never round an error bound down


def _mask(mask: Any, n: int) -> np.ndarray:
    if mask is None:
        return np.ones((n, n), dtype=bool)
    raw = np.asarray(mask)
    if raw.dtype != bool or raw.shape != (n, n):
        raise InvalidArgument(
            f"mask ({_describe(raw)}) must be a boolean array of shape ({n}, {n}); mask[i, j] is "
            "True when token i may attend to token j."
        )
    empty = np.flatnonzero(~raw.any(axis=1))
    if empty.size:
        raise InvalidArgument(
            f"mask row {int(empty[0])} has no True entry; every token must attend to at least "
            "one token (usually itself)."
        )
    return raw


def _margin(s: np.ndarray, r: np.ndarray, exact: bool) -> tuple[Any, Any]:
    """Top score minus runner-up, and a bound on its error (incl. the subtraction's rounding)."""
    if s.size == 1:
        return math.inf, 0
    top = int(np.argmax(s))
    second = np.delete(s, top).max()
    margin, error = s[top] - second, 2 * r.max()
    if exact:
        return margin, error
    margin, error = float(margin), float(error)
    if Fraction(s[top]) - Fraction(second) != Fraction(margin):
        error = float(np.nextafter(error + np.spacing(abs(margin)), np.inf))
    return margin, error


def _outward(a: np.ndarray, b: np.ndarray, direction: float) -> np.ndarray:
    """``a + b`` rounded toward `direction` (exact sums stay exact: Knuth's TwoSum error term)."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = a + b
        b_virtual = x - a
        err = (a - (x - b_virtual)) + (b - b_virtual)
    off = (err > 0) if direction > 0 else (err < 0)
    return np.where(off | ~np.isfinite(err), np.nextafter(x, direction), x)


def score_bounds(scores: np.ndarray, radius: np.ndarray, exact: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds ``S ∓ r`` on scores known to within ``r``, rounded outward
    (exact scores stay exact).

    >>> lo, hi = score_bounds(np.array([[1.0, 0.1]]), np.array([[0.0, 1e-17]]))
    >>> bool(hi[0, 1] > 0.1), float(lo[0, 0])
    (True, 1.0)
    """
    if exact:
        return scores - radius, scores + radius
    return _outward(scores, -radius, -np.inf), _outward(scores, radius, np.inf)


def certified_argmax(lo: np.ndarray, hi: np.ndarray, same: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    r"""The certified argmax of one row of scores known within $\ell_j \le S_j \le u_j$: the
    one leader-map rule of the library.

    Column $j$ is *certainly* in the argmax set when $\ell_j \ge u_l$ for every competitor
    $l$, and *possibly* in it when $u_j \ge \max_l \ell_l$; the row is *decided* when the two
    sets agree. The competitors of $j$ are the other columns, except, when ``same`` is given,
    those at the same point as $j$ (``same[j, l]``: points within their errors of each other
    are one point, so attending to either is attending to it).

    Parameters
    ----------
    lo, hi : ndarray, shape (m,)
        Bounds on the row's scores (float64 rounded outward, see :func:`score_bounds`, or
        exact).
    same : ndarray of bool, shape (m, m), optional

    Returns
    -------
    certain, possible : ndarray of int
        Positions in the row.

    Examples
    --------
    >>> certified_argmax(np.array([0.9, 0.0]), np.array([1.1, 0.2]))
    (array([0]), array([0]))
    >>> certified_argmax(np.array([0.9, 0.95]), np.array([1.1, 1.05]))[0]
    array([], dtype=int64)
    >>> certified_argmax(np.array([0.9, 0.95]), np.array([1.1, 1.05]), np.ones((2, 2), bool))[0]
    array([0, 1])
    """
    possible = np.flatnonzero(hi >= lo.max())
    m = lo.size
    if m == 1:
        return np.arange(1), possible
    if same is None:
        k = int(np.argmax(hi))
        others = np.full(m, hi[k], dtype=hi.dtype)
        others[k] = np.delete(hi, k).max()
        return np.flatnonzero(lo >= others), possible
    certain = [j for j in range(m)
               if all(lo[j] >= hi[k] for k in range(m) if k != j and not same[j, k])]
    return np.array(certain, dtype=int), possible


def hardmax_graph(scores: Any, radius: Any = 0.0, mask: Any = None) -> nx.DiGraph:
    r"""Return the certified hardmax graph of the attention scores.

    With lower and upper bounds $\ell_{ij} = S_{ij} - r_{ij}$ and $u_{ij} = S_{ij} + r_{ij}$ on the
    true scores (over the allowed $j$ of row $i$), token $j$ is *certainly* in the argmax set of
    row $i$ when $\ell_{ij} \ge \max_{l \ne j} u_{il}$, and *possibly* in it when
    $u_{ij} \ge \max_l \ell_{il}$. Row $i$ is **decided** when both sets agree; then the
    argmax set is known exactly and $i$ gets edges to it (ties split evenly: ``weight``
    $1/\#$). Otherwise $i$ is **undecided**: edges go to every possible member, ``certain`` is
    True only on certain members, and no ``weight`` is set. Decisions are rigorous: exact
    (Fraction) scores are compared exactly; float bounds $S \pm r$ are rounded outward
    whenever the sum is inexact (Knuth's TwoSum), so a decided float row is decided the same
    way in exact arithmetic.

    Parameters
    ----------
    scores : array_like, shape (n, n)
        $S_{ij}$, float64 or exact (Fractions, ints or strings in an object array). Each row
        may be rescaled by its own positive factor (the radius with it): only argmaxes matter.
    radius : float or array_like, shape (n, n)
        Absolute error bounds $r_{ij} \ge 0$ on the scores; 0 means the scores are exact.
    mask : array_like of bool, shape (n, n), optional
        ``mask[i, j]`` True when $i$ may attend to $j$; every row needs a True entry.

    Returns
    -------
    G : DiGraph
        Node attributes ``undecided`` (bool), ``margin`` (top score minus runner-up, ``inf``
        for a single allowed token) and ``margin_error`` (bound on the margin's error); edge
        attribute ``certain``; ``G.graph["hardmax"] = True``.

    Raises
    ------
    InvalidArgument
        For non-square or non-finite scores, a negative or misshaped radius, a bad mask.

    Examples
    --------
    >>> G = hardmax_graph([[1.0, 1.05], [0.0, 1.0]], radius=0.1)
    >>> undecided_nodes(G), sorted(G.successors(0)), G.edges[0, 1]["certain"]
    ({0}, [0, 1], False)
    >>> G = hardmax_graph([[1.0, 1.05], [0.0, 1.0]])
    >>> sorted(G.edges), G.nodes[0]["undecided"]
    ([(0, 1), (1, 1)], False)
    """
    s, exact = _square("scores", scores, exact_ok=True)
    n = s.shape[0]
    r, allowed = _radius(radius, n, exact), _mask(mask, n)
    lo, hi = score_bounds(s, r, exact)
    G = nx.DiGraph(hardmax=True)
    for i in range(n):
        a = np.flatnonzero(allowed[i])
        certain, possible = (a[p] for p in certified_argmax(lo[i, a], hi[i, a]))
        decided = set(certain.tolist()) == set(possible.tolist())
        margin, error = _margin(s[i, a], r[i, a], exact)
        G.add_node(i, undecided=not decided, margin=margin, margin_error=error)
        sure = set(certain.tolist())
        for j in possible.tolist():
            share = Fraction(1, possible.size) if exact else 1 / possible.size
            attrs = {"weight": share} if decided else {}
            G.add_edge(i, j, certain=j in sure, **attrs)
    return G


def hardmax_only(func: Callable) -> Callable:
    """Decorator: the function's first argument `G` must be a graph from :func:`hardmax_graph`.

    Like networkx's ``not_implemented_for``, it checks the precondition before the call and
    raises :class:`~verify.errors.InvalidArgument` with the fix.
    """

    @functools.wraps(func)
    def checked(G, *args, **kwargs):
        if (not isinstance(G, nx.DiGraph) or G.is_multigraph() or G.graph.get("hardmax") is not True
                or any(key not in data for _, data in G.nodes(data=True) for key in _NODE_KEYS)):
            raise InvalidArgument(
                f"G=<{G if isinstance(G, nx.Graph) else _describe(G)}> ({type(G).__name__}) "
                "is not a hardmax graph (graph attribute "
                f"'hardmax', node attributes {', '.join(_NODE_KEYS)}); {func.__name__}(G) is "
                "defined for hardmax graphs only; build G with hardmax_graph(scores, radius)."
            )
        if G.number_of_nodes() == 0:
            raise InvalidArgument(f"G has no nodes; {func.__name__}(G) needs at least one token.")
        return func(G, *args, **kwargs)

    return checked


@hardmax_only
def undecided_nodes(G: nx.DiGraph) -> set:
    """Return the tokens whose hardmax argmax is not certified.

    Examples
    --------
    >>> undecided_nodes(hardmax_graph([[1, 1], [0, 1]], radius=0.25))
    {0}
    """
    return {v for v, flag in G.nodes(data="undecided") if flag}
