"""Tests for verify.analysis.graph: attention graphs, certified hardmax graphs, leaders."""

from fractions import Fraction as F

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.analysis.graph import (
    attention_graph,
    boolean_limit,
    boolean_limit_rank,
    clusters,
    followers,
    hardmax_graph,
    leader_history,
    leaders,
    number_clusters,
    undecided_nodes,
)
from verify.analysis.graph._graphs import _radius
from verify.errors import InvalidArgument


def exact_tokens():
    """z = (2,0), (1.9,0.1), (-1,0), (-1.1,0.05), (0,0) as exact rationals."""
    rows = [("2", "0"), ("19/10", "1/10"), ("-1", "0"), ("-11/10", "1/20"), ("0", "0")]
    return np.array([[F(a), F(b)] for a, b in rows], dtype=object)


# S = Z Z^T with B = I, by hand:
#   row 0: 4, 19/5, -2, -11/5, 0            -> argmax {0}: leader (4 > 19/5)
#   row 1: 19/5, 181/50, -19/10, -417/200, 0 -> argmax {0}: 181/50 < 19/5, follows 0
#   row 2: -2, -19/10, 1, 11/10, 0           -> argmax {3}: 1 < 11/10, follows 3
#   row 3: -11/5, -417/200, 11/10, 97/80, 0  -> argmax {3}: leader (97/80 > 11/10)
#   row 4: 0, 0, 0, 0, 0                      -> exact tie of all five: not a leader
HAND_S = [
    [F(4), F(19, 5), F(-2), F(-11, 5), F(0)],
    [F(19, 5), F(181, 50), F(-19, 10), F(-417, 200), F(0)],
    [F(-2), F(-19, 10), F(1), F(11, 10), F(0)],
    [F(-11, 5), F(-417, 200), F(11, 10), F(97, 80), F(0)],
    [F(0)] * 5,
]


class TestHandComputedLeaders:
    @classmethod
    def setup_class(cls):
        Z = exact_tokens()
        cls.S = Z @ Z.T
        cls.G = hardmax_graph(cls.S)
        Zf = np.array([[2, 0], [1.9, 0.1], [-1, 0], [-1.1, 0.05], [0, 0]])
        cls.Gf = hardmax_graph(Zf @ Zf.T)

    def test_scores_match_hand_computation(self):
        assert self.S.tolist() == HAND_S

    def test_leader_criterion(self):
        by_criterion = {i for i in range(5) if all(HAND_S[i][i] > HAND_S[i][j]
                                                  for j in range(5) if j != i)}
        assert by_criterion == {0, 3}
        assert leaders(self.G) == {0, 3}
        assert leaders(self.Gf) == {0, 3}

    def test_edges_and_attributes(self):
        expected = {(0, 0), (1, 0), (2, 3), (3, 3)} | {(4, j) for j in range(5)}
        assert set(self.G.edges) == expected
        assert set(self.Gf.edges) == expected
        assert all(c for _, _, c in self.G.edges(data="certain"))
        assert self.G.edges[4, 2]["weight"] == F(1, 5)
        assert self.G.edges[1, 0]["weight"] == 1
        assert undecided_nodes(self.G) == set()
        margins = {v: d["margin"] for v, d in self.G.nodes(data=True)}
        assert margins == {0: F(1, 5), 1: F(9, 50), 2: F(1, 10), 3: F(9, 80), 4: 0}
        assert all(d["margin_error"] == 0 for _, d in self.G.nodes(data=True))

    def test_followers_and_clusters(self):
        assert followers(self.G) == {0: {0, 1, 4}, 3: {2, 3, 4}}
        found = clusters(self.G)
        assert len(found) == 2 and {frozenset(c) for c in found} == {
            frozenset({0, 1, 4}), frozenset({2, 3, 4})}
        assert number_clusters(self.G) == 2

    def test_boolean_limit_and_rank(self):
        expected = np.zeros((5, 5), dtype=np.int64)
        expected[[0, 1, 4], 0] = 1
        expected[[2, 3, 4], 3] = 1
        np.testing.assert_array_equal(boolean_limit(self.G), expected)
        np.testing.assert_array_equal(boolean_limit(self.Gf, 5), expected)
        assert boolean_limit_rank(self.G) == 2
        # dropping the tied origin token leaves two clusters of rank 2 as well
        assert boolean_limit_rank(hardmax_graph(self.S[:4, :4])) == 2

    def test_positive_row_rescaling_changes_nothing(self):
        scale = np.array([[F(1, 3)], [F(7)], [F(2, 5)], [F(1)], [F(9)]], dtype=object)
        H = hardmax_graph(self.S * scale)
        assert set(H.edges) == set(self.G.edges) and leaders(H) == {0, 3}


class TestCertifiedMargin:
    S = [[1.0, 1.05], [0.0, 1.0]]

    def test_within_radius_is_undecided_with_both_edges(self):
        G = hardmax_graph(self.S, radius=0.1)
        assert undecided_nodes(G) == {0}
        assert set(G.successors(0)) == {0, 1}
        assert not G.edges[0, 0]["certain"] and not G.edges[0, 1]["certain"]
        assert "weight" not in G.edges[0, 1]
        assert G.nodes[0]["margin"] == pytest.approx(0.05, abs=1e-15)
        assert G.nodes[0]["margin_error"] >= 0.2
        assert set(G.successors(1)) == {1} and G.edges[1, 1]["certain"]

    def test_radius_zero_is_decided(self):
        G = hardmax_graph(self.S)
        assert undecided_nodes(G) == set()
        assert set(G.edges) == {(0, 1), (1, 1)}
        assert leaders(G) == {1}

    def test_exact_tie_with_positive_radius_is_undecided(self):
        G = hardmax_graph([[F(1), F(1)], [F(0), F(1)]], radius=F(1, 100))
        assert undecided_nodes(G) == {0}
        G0 = hardmax_graph([[F(1), F(1)], [F(0), F(1)]])
        assert undecided_nodes(G0) == set() and set(G0.successors(0)) == {0, 1}

    def test_boundary_is_undecided_but_winner_certain(self):
        # 1 - 1/2 = 0 + 1/2: token 0 is surely in the argmax, token 1 may tie with it.
        G = hardmax_graph([[F(1), F(0)], [F(0), F(1)]], radius=F(1, 2))
        assert undecided_nodes(G) == {0, 1}
        assert G.edges[0, 0]["certain"] and not G.edges[0, 1]["certain"]
        assert hardmax_graph([[1.0, 0.0], [0.0, 1.0]], radius=0.5).nodes[0]["undecided"]
        assert not hardmax_graph([[1.0, 0.0], [0.0, 1.0]], radius=0.49).nodes[0]["undecided"]

    def test_array_radius(self):
        radius = np.array([[0.0, 0.1], [0.0, 0.0]])
        assert undecided_nodes(hardmax_graph(self.S, radius=radius)) == {0}
        radius[0, 1] = 0.04
        assert undecided_nodes(hardmax_graph(self.S, radius=radius)) == set()

    def test_undecided_graph_leaders_are_certified_subset(self):
        # row 0 undecided between itself and 1; row 1 surely leads
        G = hardmax_graph([[1.0, 1.05, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], radius=0.1)
        assert leaders(G) == {1, 2}
        for func in (followers, clusters, number_clusters, boolean_limit):
            with pytest.raises(InvalidArgument, match=r"undecided nodes \[0\]"):
                func(G)

    def test_undecided_node_in_attracting_component_is_not_a_leader(self):
        # row 0: itself or token 1 (undecided); row 1 surely -> 0. Either {0} leads or the
        # cycle 0 -> 1 -> 0 has no leader: 0 must not be reported.
        G = hardmax_graph([[1.0, 1.05, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], radius=0.1)
        assert set(G.edges) == {(0, 0), (0, 1), (1, 0), (2, 2)}
        assert leaders(G) == {2}

    def test_mask(self):
        S = [[1.0, 5.0], [0.0, 1.0]]
        G = hardmax_graph(S, mask=np.array([[True, False], [True, True]]))
        assert set(G.edges) == {(0, 0), (1, 1)}
        assert G.nodes[0]["margin"] == np.inf


def test_exact_radius_rounded_up_for_float_scores():
    r = _radius(np.array([[F(1, 10), F(1, 4)], [0, F(1, 3)]], dtype=object), 2, exact=False)
    assert r.dtype == np.float64
    assert F(r[0, 0]) >= F(1, 10) and F(r[1, 1]) >= F(1, 3) and r[0, 1] == 0.25 and r[1, 0] == 0
    assert r[0, 0] == 0.1  # float 0.1 > 1/10 already: kept
    assert r[1, 1] == np.nextafter(1 / 3, 1)  # float(1/3) < 1/3
    assert _radius(0.5, 2, exact=True)[1, 0] == F(1, 2)


def brute_force(S, R):
    """Certain and possible argmax members of each row, straight from the definition."""
    n = len(S)
    out = []
    for i in range(n):
        certain = {j for j in range(n) if all(S[i][j] - R[i][j] >= S[i][k] + R[i][k]
                                              for k in range(n) if k != j)}
        possible = {j for j in range(n) if all(S[i][j] + R[i][j] >= S[i][k] - R[i][k]
                                               for k in range(n) if k != j)}
        out.append((certain, possible))
    return out


quarters = st.integers(-4, 4).map(lambda k: k / 4)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.lists(st.lists(quarters, min_size=n, max_size=n), min_size=n, max_size=n),
    st.lists(st.lists(st.sampled_from([0.0, 0.125, 0.25]), min_size=n, max_size=n),
             min_size=n, max_size=n))))
def test_hardmax_matches_definition_exact_and_float(data):
    S, R = data
    reference = brute_force([[F(v) for v in row] for row in S], [[F(v) for v in row] for row in R])
    exact = hardmax_graph(np.array([[F(v) for v in row] for row in S], dtype=object),
                          radius=np.array([[F(v) for v in row] for row in R], dtype=object))
    floats = hardmax_graph(np.array(S), radius=np.array(R))
    for G in (exact, floats):
        for i, (certain, possible) in enumerate(reference):
            assert set(G.successors(i)) == possible
            assert {j for j in G.successors(i) if G.edges[i, j]["certain"]} == certain
            assert G.nodes[i]["undecided"] == (certain != possible)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 5).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.floats(-3, 3), min_size=n, max_size=n), min_size=n, max_size=n),
    st.floats(0, 1e-3))))
def test_float_decisions_are_sound(data):
    """A row the float path decides is decided the same way in exact arithmetic."""
    S, r = data
    floats = hardmax_graph(np.array(S), radius=r)
    exact = hardmax_graph(np.array([[F(v) for v in row] for row in S], dtype=object),
                          radius=F(r))
    for i in floats:
        sure = {j for j in floats.successors(i) if floats.edges[i, j]["certain"]}
        assert sure <= {j for j in exact.successors(i) if exact.edges[i, j]["certain"]}
        assert set(floats.successors(i)) >= set(exact.successors(i))
        if not floats.nodes[i]["undecided"]:
            assert not exact.nodes[i]["undecided"]
            assert set(floats.successors(i)) == set(exact.successors(i))
        margin = exact.nodes[i]["margin"]
        assert abs(F(floats.nodes[i]["margin"]) - margin) <= F(floats.nodes[i]["margin_error"])


class TestAttentionGraph:
    def test_threshold(self):
        P = np.array([[0.5, 0.5 - 1e-4, 1e-4], [2e-4, 0.9998, 0.0], [0.0, 0.0, 1.0]])
        G = attention_graph(P)
        assert set(G.edges) == {(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)}  # 1e-4 is not > 1e-4
        assert G.edges[1, 0]["weight"] == 2e-4
        assert set(attention_graph(P, threshold=0.0).edges) == set(G.edges) | {(0, 2)}
        assert set(attention_graph(P, threshold=0.6).edges) == {(1, 1), (2, 2)}
        assert set(attention_graph(P, threshold=0.6).nodes) == {0, 1, 2}

    def test_softmax_of_scores(self):
        S = np.array([[3.0, 0.0], [0.0, 0.1]])
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        assert set(attention_graph(P).edges) == {(0, 0), (0, 1), (1, 0), (1, 1)}
        assert set(attention_graph(P, threshold=0.1).edges) == {(0, 0), (1, 0), (1, 1)}


class TestLeaderHistory:
    @classmethod
    def setup_class(cls):
        cls.A = hardmax_graph([[1, 0, 0], [1, 0, 0], [0, 0, 1]])  # leaders {0, 2}
        cls.B = hardmax_graph([[1, 0, 0], [0, 1, 0], [0, 0, 1]])  # leaders {0, 1, 2}
        cls.U = hardmax_graph([[1, 0, 0], [1, 0.95, 0], [0, 0, 1]], radius=0.1)

    def test_stable_since(self):
        h = leader_history([self.B, self.A, self.A, self.A], [0, 1, 2.5, 4])
        assert h.stable_since == 1.0
        assert h.leaders == (frozenset({0, 1, 2}),) + (frozenset({0, 2}),) * 3
        assert not h.any_undecided
        assert leader_history([self.A, self.A], [0, 1]).stable_since == 0.0
        assert leader_history([self.A, self.B, self.A], [0, 1, 2]).stable_since is None
        assert leader_history([self.A], [0]).stable_since is None

    def test_undecided_checkpoint_flagged(self):
        h = leader_history([self.A, self.U, self.A], [0, 1, 2])
        assert h.any_undecided and h.undecided == (frozenset(), frozenset({1}), frozenset())
        assert h.leaders[1] == frozenset({0, 2})

    def test_bad_times(self):
        with pytest.raises(InvalidArgument, match="strictly increasing"):
            leader_history([self.A, self.A], [1, 1])
        with pytest.raises(InvalidArgument, match="must be equal"):
            leader_history([self.A, self.A], [1])
        with pytest.raises(InvalidArgument, match="strictly increasing"):
            leader_history([self.A], [float("nan")])


class TestBadInput:
    def test_not_square_or_nan(self):
        with pytest.raises(InvalidArgument, match=r"P of shape \(2, 3\).*not square"):
            attention_graph(np.ones((2, 3)) / 3)
        with pytest.raises(InvalidArgument, match=r"P\[0, 1\]=nan"):
            attention_graph([[0.5, np.nan], [0.5, 0.5]])
        with pytest.raises(InvalidArgument, match=r"scores\[1, 0\]=inf"):
            hardmax_graph([[0.0, 1.0], [np.inf, 0.0]])
        with pytest.raises(InvalidArgument, match="not square"):
            hardmax_graph([1.0, 2.0])
        with pytest.raises(InvalidArgument, match="dtype bool"):
            hardmax_graph(np.eye(2, dtype=bool))

    def test_not_stochastic(self):
        with pytest.raises(InvalidArgument, match="outside \\[0, 1\\]"):
            attention_graph([[3.0, 0.0], [0.0, 0.1]])
        with pytest.raises(InvalidArgument, match="row 1 sums to"):
            attention_graph([[0.5, 0.5], [0.5, 0.4]])
        with pytest.raises(InvalidArgument, match="threshold"):
            attention_graph(np.eye(2), threshold=1.0)

    def test_radius_and_mask(self):
        with pytest.raises(InvalidArgument, match="negative"):
            hardmax_graph(np.eye(2), radius=-0.1)
        with pytest.raises(InvalidArgument, match="radius of shape"):
            hardmax_graph(np.eye(2), radius=np.zeros(3))
        with pytest.raises(InvalidArgument, match="finite"):
            hardmax_graph(np.eye(2), radius=np.nan)
        with pytest.raises(InvalidArgument, match="boolean array"):
            hardmax_graph(np.eye(2), mask=np.ones((2, 2)))
        with pytest.raises(InvalidArgument, match="mask row 0"):
            hardmax_graph(np.eye(2), mask=np.array([[False, False], [True, True]]))

    @pytest.mark.parametrize("func", [leaders, followers, clusters, number_clusters,
                                      boolean_limit, undecided_nodes])
    def test_requires_hardmax_graph(self, func):
        with pytest.raises(InvalidArgument, match=f"{func.__name__}\\(G\\) is defined for hardmax"):
            func(nx.DiGraph([(0, 1), (1, 1), (2, 1)]))
        with pytest.raises(InvalidArgument, match="not a hardmax graph"):
            func(attention_graph(np.eye(2)))
        with pytest.raises(InvalidArgument, match="not a hardmax graph"):
            func(nx.Graph([(0, 0)]))

    def test_not_a_graph(self):
        with pytest.raises(InvalidArgument, match=r"G=<array of shape \(2, 2\)"):
            leaders(np.eye(2))

    def test_boolean_limit_size(self):
        with pytest.raises(InvalidArgument, match="n=3"):
            boolean_limit(hardmax_graph(np.eye(2)), 3)

    def test_exact_scores_bad_entry(self):
        with pytest.raises(InvalidArgument, match=r"scores\[0, 1\]"):
            hardmax_graph(np.array([[F(1), "x"], [F(0), F(1)]], dtype=object))
