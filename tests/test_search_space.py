"""Search spaces, strategies and the structured token distributions (issue 5, search)."""

from __future__ import annotations

import math
import re
import time
from fractions import Fraction

import numpy as np
import pytest

from verify.claim import TOKEN_DISTRIBUTIONS
from verify.claim._family_file import parse_family
from verify.errors import InvalidArgument
from verify.exact.symmetry import find_symmetries
from verify.search import _strategies as strategies
from verify.search._space import parse_search
from verify.search._strategies import Draw, build_family, build_instance, search

RNG = np.random.default_rng(20240505)


def draw_tokens(name, n, d, **params):
    spec = parse_family({"name": "t", "kind": "random", "count": 1, "seed": 0, "n": n, "d": d,
                         "V": "random", "tokens": {"distribution": name, **params},
                         "horizon": 1}, 0, "<t>").tokens
    return TOKEN_DISTRIBUTIONS[name].draw(np.random.default_rng(5), n, d, spec.params)


def eye(d):
    return [[int(i == j) for j in range(d)] for i in range(d)]


# -- distributions ------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "n", "d", "order"), [
    ("cross-polytope", 6, 3, 48), ("cross-polytope", 4, 2, 8), ("hypercube", 8, 3, 48),
    ("hypercube", 4, 2, 8), ("regular-polygon", 4, 2, 8), ("regular-polygon", 8, 2, 8),
    ("regular-polygon", 6, 2, 4), ("regular-polygon", 3, 2, 2), ("regular-polygon", 5, 2, 2)])
def test_exactly_symmetric_configurations(name, n, d, order):
    x0 = draw_tokens(name, n, d)
    assert x0.shape == (n, d)
    # with V = B = I every signed permutation preserving the token set is a symmetry: the full
    # hyperoctahedral group 2^d d! for the cross-polytope and the cube, the signed-permutation
    # part of the dihedral group for the polygon (only if the float vertices are exactly placed)
    assert find_symmetries(eye(d), eye(d), x0).order == order


def test_integer_configurations_and_polygon_values():
    cross = draw_tokens("cross-polytope", 4, 2)
    cube = draw_tokens("hypercube", 8, 3)
    assert all(v.denominator == 1 for v in cross.ravel()) and all(abs(v) == 1 for v in cube.ravel())
    assert {tuple(r) for r in cube.tolist()} == {(a, b, c) for a in (1, -1) for b in (1, -1)
                                                  for c in (1, -1)}
    assert all(v.denominator == 1 for v in draw_tokens("regular-polygon", 4, 2).ravel())
    poly = draw_tokens("regular-polygon", 7, 2).astype(float)
    angles = 2 * np.pi * np.arange(7) / 7  # independent route: numpy's cos/sin directly
    assert np.max(np.abs(poly - np.c_[np.cos(angles), np.sin(angles)])) < 4e-16
    assert np.max(np.abs(np.sum(poly**2, axis=1) - 1)) < 4e-16


def test_antipodal_pairs_are_exact():
    x0 = draw_tokens("antipodal", 6, 3)
    assert all(x0[i + 3, c] == -x0[i, c] for i in range(3) for c in range(3))
    group = find_symmetries(eye(3), eye(3), x0)
    assert group.order >= 2 and "diag(-1,-1,-1)" in group.describe(max_listed=50)


def test_lattice_points_distinct_integers():
    x0 = draw_tokens("lattice", 9, 2, k=1)  # the whole 3×3 lattice
    assert {tuple(int(v) for v in r) for r in x0.tolist()} == {(a, b) for a in (-1, 0, 1)
                                                               for b in (-1, 0, 1)}
    x0 = draw_tokens("lattice", 20, 3, k=2)
    rows = {tuple(r) for r in x0.tolist()}
    assert len(rows) == 20 and all(v.denominator == 1 and abs(v) <= 2 for v in x0.ravel())
    with pytest.raises(InvalidArgument, match=r"tokens: 'lattice' needs n ≤ \(2k \+ 1\)\^d = 9"):
        draw_tokens("lattice", 10, 2, k=1)


def test_clustered_and_nearly_tied():
    x0 = draw_tokens("clustered", 6, 2, k=2, spread="1/100").astype(float)
    for i in range(4):  # tokens i and i + 2 share a centre: within 2·spread in each coordinate
        assert np.max(np.abs(x0[i] - x0[i + 2])) <= 2 / 100
    x0 = draw_tokens("nearly-tied", 4, 3, gap="1/1000")
    diff = x0[3] - x0[0]
    assert sorted(diff.tolist()) == [0, 0, Fraction(1, 1000)]


@pytest.mark.parametrize(("name", "n", "d", "message"), [
    ("cross-polytope", 5, 2, "needs n = 2d = 4 (got n = 5)"),
    ("hypercube", 6, 2, "needs n = 2^d = 4 (got n = 6)"),
    ("antipodal", 5, 2, "needs an even n"),
    ("regular-polygon", 4, 3, "needs d = 2 (got d = 3)"),
    ("clustered", 2, 2, "needs k ≤ n")])
def test_shape_errors_name_the_field(name, n, d, message):
    with pytest.raises(InvalidArgument, match=re.escape(f"families[0].tokens: '{name}' {message}")):
        draw_tokens(name, n, d, **({"k": 3} if name == "clustered" else {}))


# -- parse_search ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("table", "message"), [
    ({"horizn": 5}, r"c\.toml: search\.horizn: unknown field 'horizn'\. Did you mean 'horizon'"),
    ({"V": ["identity", "symetric-MMt"]},
     r"search\.V\[1\]: unknown V class 'symetric-MMt'\. Did you mean 'symmetric-MMt'"),
    ({"QK": "integr"}, r"search\.QK: unknown QK class 'integr'\. Did you mean 'integer'"),
    ({"tokens": [{"distribution": "lattice", "kk": 2}]},
     r"search\.tokens\[0\]\.kk: unknown parameter 'kk'"),
    ({"V": [{"generator": "integer", "bound": 20}]}, r"search\.V\[0\]\.bound: 20 must be at most"),
    ({"n": [5, 2]}, r"search\.n: \[5, 2\] is empty"),
    ({"d": [0, 2]}, r"search\.d\[0\]: 0 \(int\) must be an integer ≥ 1"),
    ({"n": "many"}, r"search\.n: 'many' must be an integer or a range"),
    ({"beta": [1, "x"]}, r"search\.beta\[1\]"),
    ({"model": {"beta": 2}}, r"search\.model\.beta: beta is an axis"),
    ({"model": {"form": "y"}}, r"search\.model: "),
    ({"horizon": -1}, r"search\.horizon: -1 must be positive"),
    ({"precision": 8}, r"search\.precision: 8 must be"),
    ({"tokens": "hypercube", "n": [2, 3], "d": [2, 3]},
     r"search\.tokens: 'hypercube' fits no n in \[2, 3\] and d in \[2, 3\]"),
])
def test_parse_errors_name_the_field(table, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_search(table, "c.toml")


def test_hypothesis_conflicts_with_given_range():
    with pytest.raises(InvalidArgument, match=r"search\.d: \[2, 3\] but the hypotheses"):
        parse_search({"d": [2, 3]}, "c.toml", hypotheses=["d == 1"])


@pytest.mark.parametrize(("hypotheses", "V", "QK", "d"), [
    (["is_identity"], ["identity"], None, (1, 3)),
    (["is_negative_identity"], ["negative-identity"], None, (1, 3)),
    (["qk_positive_definite"], None, ["identity", "spd-NNt"], (1, 3)),
    (["good_triple"], ["random-good-triple"], ["identity", "spd-NNt"], (1, 3)),
    (["paranormal"], ["paranormal"], None, (1, 3)),
    (["complex_leading_pair"], ["complex-leading"], None, (2, 3)),
    (["scalar_positive"], ["scalar-positive"], ["identity", "spd-NNt"], (1, 1)),
    (["d == 1"], None, None, (1, 1)), (["d >= 2", "is_identity"], ["identity"], None, (2, 3)),
    (["qk_identity", "is_identity"], ["identity"], ["identity"], (1, 3))])
def test_defaults_follow_the_hypotheses(hypotheses, V, QK, d):
    space = parse_search({}, "c.toml", hypotheses)
    assert space.d == d and space.n == (2, 6) and space.beta == (1,)
    assert space.horizon == 10 and space.checkpoints == 41 and space.precision == "float64"
    if V is not None:
        assert [s.name for s in space.V] == V
    if QK is not None:
        assert [s.name for s in space.QK] == QK
    if d == (1, 1):  # defaults that cannot fit d = 1 are dropped, not reported as errors
        assert "complex-leading" not in [s.name for s in space.V]
        assert "regular-polygon" not in [s.name for s in space.tokens]
    assert "V (default)" not in space.describe() and "V: " in space.describe()


def test_given_keys_are_not_defaults():
    space = parse_search({"n": 4, "V": {"generator": "paranormal", "rho": "1/4"},
                          "beta": ["1/2", 2], "horizon": 3}, "c.toml", ["is_identity"])
    assert space.n == (4, 4) and space.V[0].params["rho"] == Fraction(1, 4)
    assert space.beta == (Fraction(1, 2), 2) and space.horizon == 3
    assert "V: paranormal(rho=1/4)\n" in space.describe() + "\n"
    assert "QK: identity, spd-NNt, random-uniform, integer (default)" in space.describe()


# -- strategies and search ------------------------------------------------------------------------
def record(space, seed, max_examples=30):
    seen = []
    stats = search(space, lambda dr: seen.append(dr) and False, seed=seed,
                   max_examples=max_examples)
    return seen, stats


def test_determinism_and_coverage():
    space = parse_search({"beta": [1, 2]}, "c.toml")
    first, stats = record(space, 11)
    again, _ = record(space, 11)
    other, _ = record(space, 12)
    assert first == again and first != other
    assert stats.stopped == "examples" and stats.drawn == len(first) == 30 and stats.draw is None
    for axis in ("n", "d", "V", "QK", "beta", "tokens"):
        assert sum(stats.covered[axis].values()) == 30
    assert stats.covered["n"] == {n: sum(dr.n == n for dr in first) for n in stats.covered["n"]}
    assert len(stats.covered["tokens"]) >= 4 and len(stats.covered["V"]) >= 4
    assert stats.to_json()["covered"]["beta"].keys() <= {"1", "2"}


def test_drawn_shapes_respect_the_distributions():
    space = parse_search({"n": [2, 8], "d": [1, 3], "tokens": ["cross-polytope", "hypercube",
                                                                "regular-polygon"]}, "c.toml")
    seen, _ = record(space, 3, 60)
    for dr in seen:
        expected = {"cross-polytope": 2 * dr.d, "hypercube": 2 ** dr.d}.get(dr.tokens.name)
        assert dr.n == expected if expected else (dr.d == 2 and dr.n >= 3)
        inst = build_instance(space, dr, "x")
        assert inst.x0.shape == (dr.n, dr.d)


def test_a_finite_deterministic_space_is_enumerated_once():
    space = parse_search({"n": [2, 8], "d": [1, 3], "V": ["identity", "negative-identity"],
                          "QK": "identity", "tokens": ["cross-polytope", "hypercube",
                                                       "regular-polygon"]}, "c.toml")
    seen, stats = record(space, 1, 100)
    # cross-polytope and cube: d = 1, 2, 3; polygon: n = 3..8; times two V: 24 instances
    assert stats.stopped == "examples" and stats.drawn == len({dr.describe() for dr in seen}) == 24
    assert all(dr.seed == 0 for dr in seen)


def test_stop_on_found_and_budget(monkeypatch):
    space = parse_search({"d": 2}, "c.toml")
    calls = []

    def fifth(dr):
        calls.append(dr)
        return len(calls) == 5

    stats = search(space, fifth, seed=0, max_examples=50)
    assert (stats.stopped, stats.drawn, len(calls)) == ("found", 5, 5)
    assert stats.draw == calls[-1]
    stats = search(space, fifth, seed=0, deadline=time.monotonic())
    assert (stats.stopped, stats.drawn) == ("budget", 0)

    # A clock of our own (no wall-clock threshold): each evaluation takes 1/64 "second" (exact
    # in binary), so a deadline 1/4 after the start allows exactly 16 draws, whatever the load.
    clock = [1000.0]
    monkeypatch.setattr(strategies.time, "monotonic", lambda: clock[0])

    def slow(dr):
        clock[0] += 1 / 64
        return False

    stats = search(space, slow, seed=0, deadline=clock[0] + 1 / 4)
    assert (stats.stopped, stats.drawn) == ("budget", 16)


def test_evaluate_errors_propagate_without_replay():
    calls = []

    def broken(dr):
        calls.append(dr)
        raise ZeroDivisionError("oracle bug")

    with pytest.raises(ZeroDivisionError, match="oracle bug"):
        search(parse_search({}, "c.toml"), broken, seed=0, max_examples=10)
    assert len(calls) == 1
    with pytest.raises(InvalidArgument, match="max_examples=0"):
        search(parse_search({}, "c.toml"), broken, seed=0, max_examples=0)


def test_integer_classes_are_drawn_by_hypothesis():
    space = parse_search({"d": 2, "V": ["integer", "integer-diagonal"],
                          "QK": {"generator": "integer", "bound": 2}, "tokens": "lattice"},
                         "c.toml")
    seen, _ = record(space, 1, 40)
    # Hypothesis tries its simplest example first: the zero matrices
    assert seen[0].V_matrix == ((0, 0), (0, 0)) and seen[0].K_matrix == ((0, 0), (0, 0))
    entries = {v for dr in seen for row in dr.V_matrix + dr.K_matrix for v in row}
    assert entries <= set(range(-3, 4)) and len(entries) >= 4
    assert all(abs(v) <= 2 for dr in seen for row in dr.K_matrix for v in row)
    assert all(dr.V_matrix[0][1] == dr.V_matrix[1][0] == 0 for dr in seen
               if dr.V.name == "integer-diagonal")
    dr = next(d for d in seen if any(any(row) for row in d.V_matrix))
    inst = build_instance(space, dr, "z")
    assert inst.model.heads[0].V.tolist() == [[Fraction(v) for v in row] for row in dr.V_matrix]
    assert inst.model.heads[0].Q.tolist() == eye(2)
    assert inst.model.heads[0].K.tolist() == [list(row) for row in dr.K_matrix]
    # the integer matrices are Hypothesis's: the NumPy seed changes only the lattice tokens
    other = build_instance(space, Draw(**{**dr.__dict__, "seed": dr.seed + 1}), "z")
    assert (other.model.heads[0].V == inst.model.heads[0].V).all()


def test_family_of_a_draw_replays_from_its_file_form():
    space = parse_search({"d": [2, 3], "beta": ["1/2"], "model": {"form": "x"}}, "c.toml")
    seen, _ = record(space, 4, 12)
    for dr in seen:
        family = build_family(space, dr, "cex")
        again = parse_family(family.to_json(), 0, "<replay>")
        a, b = family.instance(0), again.instance(0)
        assert (a.x0 == b.x0).all() and (a.model.heads[0].V == b.model.heads[0].V).all()
        assert (a.model.heads[0].B == b.model.heads[0].B).all() and a.model.beta == Fraction(1, 2)
        assert family.kind == ("explicit" if family.seed is None else "random")
    identity = Draw(4, 2, space.V[0], space.QK[0], Fraction(1), parse_search(
        {"tokens": "cross-polytope"}, "c").tokens[0], 7)
    assert build_family(space, identity).kind == "explicit"


def test_build_rejects_unfit_draws():
    space = parse_search({"tokens": "cross-polytope", "V": "integer"}, "c.toml")
    seen, _ = record(space, 0, 3)
    with pytest.raises(InvalidArgument, match=r"tokens='cross-polytope' with n=5, d=2"):
        build_instance(space, Draw(**{**seen[0].__dict__, "n": 5, "d": 2}), "x")
    with pytest.raises(InvalidArgument, match="needs its 2×2 integer matrix"):
        build_instance(space, Draw(**{**seen[0].__dict__, "n": 4, "d": 2, "V_matrix": None}),
                       "x")


def test_draw_json_and_describe():
    space = parse_search({"d": 1, "V": "integer", "tokens": "nearly-tied"}, "c.toml")
    dr = record(space, 2, 1)[0][0]
    text = dr.describe()
    assert text.startswith("n=") and "V=integer V=[[" in text and f"seed={dr.seed}" in text
    data = dr.to_json()
    assert data["tokens"] == {"distribution": "nearly-tied", "gap": "1/1000"}
    assert data["V_matrix"] == [list(r) for r in dr.V_matrix] and math.isfinite(data["seed"])


# -- membership: the shrinker's bound ------------------------------------------------------------
def test_every_draw_of_the_broad_space_is_inside_it():
    space = parse_search({"beta": [1, 2], "model": {"form": "x", "normalisation": "sphere"},
                          "tokens": ["sphere"]}, "c.toml")
    broad = parse_search({"beta": [1, 2]}, "c.toml")
    for sp in (space, broad):
        draws, _ = record(sp, 3, max_examples=25)
        for k, dr in enumerate(draws):
            inst = build_instance(sp, dr, f"s#{k}")
            assert sp.contains(inst) is None, (dr.describe(), sp.contains(inst))


def test_instances_outside_the_space_say_why():
    from verify.model import Instance, Model

    space = parse_search({"n": [3, 4], "d": 2, "V": ["identity", {"generator": "integer",
                                                                   "bound": 2}],
                          "QK": "integer", "beta": [1, 2]}, "c.toml")
    x3, I2 = [[0, 1], [1, 0], [1, 1]], eye(2)

    def inst(V=I2, K=I2, x0=x3, **model):
        return Instance(Model(V=V, K=K, **model), x0)

    assert space.contains(inst()) is None
    assert space.contains(inst(V=[[2, 1], [0, -2]])) is None           # integer, bound 2
    assert space.contains(inst(x0=x3[:2])) == "n = 2 is outside 3..4"
    assert space.contains(inst(V=[[3, 0], [0, 1]])) == \
        "V is in none of its classes (identity, integer)"
    assert space.contains(inst(V=[[Fraction(1, 2), 0], [0, 1]])).startswith("V is in none")
    assert space.contains(inst(K=[[1, Fraction(1, 3)], [0, 1]])).startswith("QK is in none")
    assert space.contains(inst(beta=3)) == "beta = 3 is not one of ['1', '2']"
    sphere = parse_search({"n": 3, "d": 2, "V": "identity", "QK": "identity",
                           "model": {"form": "x", "normalisation": "sphere"}}, "c.toml")
    on_circle = [[0, 1], [1, 0], [-1, 0]]
    assert sphere.contains(inst(x0=on_circle, form="x", normalisation="sphere")) is None
    assert sphere.contains(inst(x0=on_circle, form="x")) == \
        "model.normalisation = 'none' is not the space's 'sphere'"


def test_classes_defined_by_a_hypothesis_are_decided_exactly():
    from verify.model import Instance, Model

    space = parse_search({"n": 2, "d": 2, "V": "complex-leading", "QK": "spd-NNt"}, "c.toml")
    rotation = Instance(Model(V=[[0, -1], [1, 0]]), [[0, 1], [1, 0]])
    assert space.contains(rotation) is None                 # eigenvalues ±i, Q = K = I
    assert space.contains(Instance(Model(V=eye(2)), [[0, 1], [1, 0]])).startswith("V is in none")
    singular = Instance(Model(V=[[0, -1], [1, 0]], K=[[1, 0], [0, 0]]), [[0, 1], [1, 0]])
    assert space.contains(singular).startswith("QK is in none")


@pytest.mark.parametrize(("hypotheses", "table", "n", "d"), [
    (["d == 2", "n >= 8"], {}, (8, 12), (2, 2)), (["d >= 4"], {}, (2, 6), (4, 6)),
    (["n <= 3 and is_identity"], {}, (2, 3), (1, 3)), (["2 <= d <= 3"], {"d": [1, 5]}, (2, 6),
                                                        (2, 3)),
    (["complex_leading_pair", "d <= 2"], {}, (2, 6), (2, 2)),
    (["d == 2 or d == 3"], {}, (2, 6), (1, 3))])  # under "or": no bound is read
def test_sizes_follow_hypothesis_expressions(hypotheses, table, n, d):
    space = parse_search(table, "c.toml", hypotheses)
    assert (space.n, space.d) == (n, d)


def test_sizes_no_hypothesis_allows_are_an_error():
    with pytest.raises(InvalidArgument, match="no d satisfies them"):
        parse_search({}, "c.toml", ["d == 2", "d >= 3"])
    with pytest.raises(InvalidArgument, match=r"search\.n: \[2, 4\] but the hypotheses need n ≥ 5"):
        parse_search({"n": [2, 4]}, "c.toml", ["n >= 5"])


# -- exact points on the sphere -------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3, 5])
def test_sphere_exact_points_have_norm_one_exactly(d):
    X = draw_tokens("sphere-exact", 12, d)
    assert all(sum(v * v for v in row) == 1 for row in X)
    assert len({tuple(row) for row in X}) == 12


def test_hemisphere_points_keep_their_margin_exactly():
    X = draw_tokens("hemisphere", 20, 3, margin="1/4")
    assert all(sum(v * v for v in row) == 1 and row[-1] >= Fraction(1, 4) for row in X)


def test_circle_angles_at_multiples_of_an_eighth_are_exact():
    X = TOKEN_DISTRIBUTIONS["circle-angles"].draw(None, 4, 2, {"angles": [
        Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(-1, 4)]})
    assert X.tolist() == [[1, 0], [0, 1], [-1, 0], [0, -1]]
    third = TOKEN_DISTRIBUTIONS["circle-angles"].draw(None, 1, 2, {"angles": [Fraction(1, 3)]})
    assert np.allclose(np.array(third, dtype=float), [[-0.5, np.sqrt(3) / 2]], atol=1e-16)


def test_rational_sphere_points_round_trip_through_an_instance_file():
    from verify.model.instance_file import instance_to_toml, parse_instance

    fam = parse_family({"name": "h", "kind": "random", "count": 1, "seed": 3, "n": 4, "d": 3,
                        "V": "identity", "tokens": {"distribution": "hemisphere"},
                        "model": {"form": "x", "normalisation": "sphere"}, "horizon": 1}, 0,
                       "<t>")
    inst = fam.instance(0)
    import tomllib
    from decimal import Decimal

    again = parse_instance(tomllib.loads(instance_to_toml(inst, {"horizon": "1"}),
                                         parse_float=Decimal), "<t>").instance
    assert again.x0.tolist() == inst.x0.tolist()
    assert all(sum(v * v for v in row) == 1 for row in again.x0)


def test_beta_choices_include_zero_and_negative_values():
    space = parse_search({"beta": [0, "-1/2", 2], "n": 3, "d": 2, "V": "identity",
                          "QK": "identity", "tokens": "uniform"}, "c.toml")
    assert space.beta == (0, Fraction(-1, 2), 2)
    draws, _ = record(space, 2, max_examples=12)
    assert {dr.beta for dr in draws} == {0, Fraction(-1, 2), 2}
    uniform = build_instance(space, next(dr for dr in draws if dr.beta == 0), "b0")
    assert uniform.model.beta == 0 and space.contains(uniform) is None


@pytest.mark.parametrize("hypotheses, absent", [
    (["no_exact_symmetry"], {"cross-polytope", "hypercube", "antipodal", "regular-polygon"}),
    (["no_antipodal_pair"], {"cross-polytope", "antipodal"}), ([], set())])
def test_default_tokens_leave_out_the_null_sets_the_hypotheses_exclude(hypotheses, absent):
    names = {s.name for s in parse_search({}, "c.toml", hypotheses).tokens}
    assert not names & absent and names
    if not hypotheses:
        assert {"cross-polytope", "antipodal"} <= names


def test_v_from_given_eigenvalues_is_exact_and_stays_in_its_class():
    from verify.exact import spectrum
    from verify.model import Instance, Model

    space = parse_search({"n": 3, "d": 3, "V": {"generator": "eigenvalues",
                                                "eigenvalues": [2, "-1/2", 0]},
                          "QK": "identity", "tokens": "uniform"}, "c.toml")
    draws, _ = record(space, 4, max_examples=3)
    for k, dr in enumerate(draws):
        inst = build_instance(space, dr, f"e#{k}")
        assert [str(e) for e in spectrum(inst.model.V).eigenvalues] == ["2", "-1/2", "0"]
        assert space.contains(inst) is None
    other = Instance(Model(V=[[2, 0, 0], [0, 1, 0], [0, 0, 0]]), [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert space.contains(other).startswith("V is in none")
    with pytest.raises(InvalidArgument, match="one eigenvalue per dimension"):
        parse_search({"d": 2, "V": {"generator": "eigenvalues", "eigenvalues": [1]}}, "c.toml")


def test_a_search_lists_explicit_matrices():
    import json

    space = parse_search({"n": 3, "d": 2, "tokens": "uniform",
                          "V": [{"generator": "matrix", "matrix": [[1, 0], [0, -1]]},
                                {"generator": "matrix", "matrix": [["1/2", 1], [0, 2]]}],
                          "QK": {"generator": "matrix", "matrix": [[2, 0], [0, 1]]}}, "c.toml")
    draws, stats = record(space, 1, max_examples=10)
    seen = set()
    for k, dr in enumerate(draws):
        inst = build_instance(space, dr, f"m#{k}")
        seen.add(str(inst.model.V.tolist()))
        assert inst.model.B.tolist() == [[2, 0], [0, 1]] and space.contains(inst) is None
        json.dumps(dr.to_json())  # the draw is recorded in results.json
    assert len(seen) == 2
    with pytest.raises(InvalidArgument, match="needs a 3×3 matrix"):
        parse_search({"d": 3, "V": {"generator": "matrix", "matrix": [[1, 0], [0, 1]]}},
                     "c.toml")
    with pytest.raises(InvalidArgument, match=r"search\.V\.matrix: .* must be a square matrix"):
        parse_search({"d": 2, "V": {"generator": "matrix", "matrix": [[1, 0]]}}, "c.toml")


def test_simplex_is_exactly_equiangular():
    X = TOKEN_DISTRIBUTIONS["simplex"].draw(None, 4, 5, {"unit": False})
    G = X.dot(X.T)
    n = 4
    assert all(G[i, j] == (Fraction(n - 1, n) if i == j else Fraction(-1, n))
               for i in range(n) for j in range(n))
    assert TOKEN_DISTRIBUTIONS["simplex"].requires(4, 3, {"unit": False}) == \
        "needs d ≥ n (got n = 4, d = 3)"


def test_repeated_and_perturbed_tokens():
    R = draw_tokens("repeated", 7, 2, k=3)
    assert [tuple(R[i]) == tuple(R[i % 3]) for i in range(7)] == [True] * 7
    assert len({tuple(row) for row in R}) == 3
    fam = parse_family({"name": "p", "kind": "random", "count": 1, "seed": 2, "n": 2, "d": 2,
                        "V": "identity", "horizon": 1,
                        "tokens": {"distribution": "perturbed", "points": [[1, 0], ["1/3", 1]],
                                   "eps": "1/1000"}}, 0, "<t>")
    X = fam.instance(0).x0
    base = [[1, 0], [Fraction(1, 3), 1]]
    assert all(0 < abs(X[i][j] - base[i][j]) <= Fraction(1, 1000)
               for i in range(2) for j in range(2))
    with pytest.raises(InvalidArgument, match="needs 3 points of dimension 2"):
        parse_family({"name": "p", "kind": "random", "count": 1, "seed": 2, "n": 3, "d": 2,
                      "V": "identity", "horizon": 1,
                      "tokens": {"distribution": "perturbed", "points": [[1, 0], [0, 1]]}},
                     0, "<t>")


def test_a_search_draws_among_several_model_variants():
    space = parse_search({"n": 3, "d": 2, "V": "identity", "QK": "identity",
                          "model": [{"form": "x", "normalisation": "sphere"},
                                    {"form": "x", "normalisation": "sphere", "mask": "causal"}]},
                         "c.toml")
    assert len(space.models) == 2 and {t.name for t in space.tokens} <= {
        "sphere", "sphere-exact", "cross-polytope", "regular-polygon"}  # unit tokens for both
    assert "normalisation=sphere | form=x" in space.describe()
    draws, stats = record(space, 3, max_examples=16)
    masks = set()
    for k, dr in enumerate(draws):
        inst = build_instance(space, dr, f"v#{k}")
        masks.add(inst.model.mask)
        assert space.contains(inst) is None
    assert masks == {"full", "causal"} and set(stats.covered["model"]) == {"variant 1",
                                                                            "variant 2"}
    from verify.model import Instance, Model
    hardmax = Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere",
                             attention="hardmax"), [[1, 0], [0, 1], [-1, 0]])
    assert "attention" in space.contains(hardmax)
    with pytest.raises(InvalidArgument, match=r"search\.model\[1\]"):
        parse_search({"model": [{"form": "x"}, {"form": "y"}]}, "c.toml")


def test_a_hemisphere_hypothesis_draws_hemisphere_tokens_that_satisfy_it():
    from verify.claim import check_hypotheses

    space = parse_search({"n": [3, 5], "d": [2, 3], "V": "identity", "QK": "identity",
                          "model": {"form": "x", "normalisation": "sphere"}}, "c.toml",
                         ["in_open_hemisphere"])
    assert [t.name for t in space.tokens] == ["hemisphere"]
    draws, _ = record(space, 5, max_examples=6)
    for k, dr in enumerate(draws):
        inst = build_instance(space, dr, f"h#{k}")
        assert check_hypotheses(["in_open_hemisphere"], inst).holds is True


def test_beta_choices_must_satisfy_the_hypotheses():
    assert parse_search({"beta": ["1/2", 1]}, "c.toml", ["0 < beta <= 1"]).beta == (
        Fraction(1, 2), 1)
    with pytest.raises(InvalidArgument, match=r"search\.beta\[1\]: 2 but the hypotheses need "
                                              r"0 < beta <= 1"):
        parse_search({"beta": ["1/2", 2]}, "c.toml", ["n >= 2 and 0 < beta <= 1"])
    with pytest.raises(InvalidArgument, match="the default beta = 1 is excluded"):
        parse_search({}, "c.toml", ["beta > 1"])
    # under "or" nothing is read off: the draw is judged (and may be out of scope)
    assert parse_search({"beta": [0]}, "c.toml", ["is_identity or beta > 0"]).beta == (0,)
