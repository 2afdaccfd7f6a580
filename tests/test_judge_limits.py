"""The limit conclusions (verify.judge._limits), each against an independent route.

* uniform attention (Q = K = 0), V = I: z_i(t) = m0 + e^{-t}(x_i(0) − m0) in closed form, so
  z → mean(x0) at rate 1 and every distance below has a closed form;
* d = 1, V = Q = K = 1, two tokens ±1: the limit of z_2 = −z_1 solves the scalar ODE
  z' = −2z σ(−2e^{2t}z²), integrated here by SciPy (a second integrator);
* d = 1, tokens {−2, −1.9, 1.9, 2}: two clusters led by the extreme tokens (Theorem 2.1);
* V = −I, Q = K = I: the t^{-1/2} collapse of x (paper §4).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from verify.claim import CONCLUSIONS, CheckRequest, parse_conclusions
from verify.errors import InvalidArgument
from verify.flow.simulate import simulate
from verify.judge import Evaluation, tends_to_zero
from verify.judge._distances import hull_point_distance as hull_distance
from verify.judge._limits import _distance_series as distance_series
from verify.model import Instance, Model
from verify.numerics import estimate_bound

LIMIT_TYPES = ("converges", "clusters", "consensus", "limit", "attention", "approach")


def _run(instance, horizon, checkpoints, **kw):
    traj = simulate(instance, horizon, checkpoints=checkpoints, **kw)
    request = CheckRequest(claim=None, family=SimpleNamespace(name="f"), instance=instance,
                           seed=None, horizon=horizon, checkpoints=checkpoints,
                           precision="float64", parameters={})
    return request, traj


def _judge(case, table):
    request, traj = case
    spec = parse_conclusions([table], "t.toml")[0]
    return spec.kind.judge(Evaluation(request, traj, spec))


def _verdict(case, table):
    return _judge(case, table).verdict.value


X0 = np.array([[2, 0], [0, 2], [1, 0.5], [-1, 1]])
M0 = X0.mean(axis=0)                                    # (0.5, 0.875)


@pytest.fixture(scope="module")
def uniform():
    zero = [[0, 0], [0, 0]]
    inst = Instance(Model(V=[[1, 0], [0, 1]], Q=zero, K=zero), [[2, 0], [0, 2], [1, "1/2"],
                                                                 [-1, 1]])
    return _run(inst, 20, 41)


@pytest.fixture(scope="module")
def two_clusters():
    inst = Instance(Model(V=[[1]], Q=[[1]], K=[[1]]), [[-2], ["-19/10"], ["19/10"], [2]])
    return _run(inst, 20, 41)


@pytest.fixture(scope="module")
def pair():
    inst = Instance(Model(V=[[1]], Q=[[1]], K=[[1]]), [[-1], [1]])
    return _run(inst, 16, 33)


# --------------------------------------------------------------------------- uniform attention
def test_uniform_distance_series_matches_closed_form(uniform):
    request, traj = uniform
    spec = parse_conclusions([{"type": "consensus"}], "t.toml")[0]
    ev = Evaluation(request, traj, spec)
    from verify.judge._limits import _diameter
    D, err = distance_series(ev, _diameter)
    diam = max(np.linalg.norm(a - b) for a in X0 for b in X0)
    exact = np.exp(-traj.t) * diam
    # within the stated error, an estimate: times κ, its measured coverage (the float64 twin
    # reference this run gets has an error of its own; the true error is 1.15 times it here)
    assert np.all(np.abs(D - exact) <= estimate_bound(err) + 1e-12 * exact)
    assert np.all(err < 1e-8)


def test_uniform_consensus_and_limit(uniform):
    r = _judge(uniform, {"type": "consensus"})
    assert r.verdict.value == "holds"
    assert abs(r.margin - 1.0) <= r.error                      # fitted rate = 1 (closed form)
    assert _verdict(uniform, {"type": "limit", "equals": "mean(x0, axis=0)"}) == "holds"
    assert _verdict(uniform, {"type": "converges"}) == "holds"
    assert _verdict(uniform, {"type": "converges", "to": "array([mean(x0, axis=0)])"}) == "holds"
    assert _verdict(uniform, {"type": "clusters", "equal": 1}) == "holds"
    # every score ties (Q = K = 0): no certified hardmax, so no certificate of the end; a wrong
    # count is then inconclusive, never violated from the trend
    r = _judge(uniform, {"type": "clusters", "equal": 2})
    assert r.verdict.value == "inconclusive" and "no certificate" in r.reason


def test_uniform_wrong_limit_is_evidence_against_not_a_violation(uniform):
    r = _judge(uniform, {"type": "limit", "equals": "x0"})
    assert r.verdict.value == "inconclusive" and r.certificate is None
    assert "not a certificate" in r.reason and "no certificate" in r.reason
    expected = max(np.linalg.norm(x - M0) for x in X0)        # D → max_i |x_i − m0|
    assert abs(float(r.evidence["limit"]) - expected) <= float(r.evidence["limit_error"]) \
        + 1e-5 * expected                                    # evidence has 6 digits


def test_uniform_approach(uniform):
    assert _verdict(uniform, {"type": "approach",
                              "subspace": "array([mean(x0, axis=0)])"}) == "holds"
    assert _verdict(uniform, {"type": "approach", "hyperplanes": "eye(2)",
                              "offsets": "mean(x0, axis=0)"}) == "holds"
    square = "mean(x0, axis=0) + 0.1 * array([[-1, -1], [1, -1], [1, 1], [-1, 1]])"
    assert _verdict(uniform, {"type": "approach", "polytope": square}) == "holds"
    for table, gap in (({"type": "approach", "subspace": "array([[1.0, 0.0]])"}, M0[1]),
                       ({"type": "approach", "hyperplanes": "array([[0.0, 1.0]])"}, M0[1]),
                       ({"type": "approach", "polytope": "x0 + 10"},
                        _segments_distance(M0, X0 + 10))):
        r = _judge(uniform, table)            # the trend levels off at the distance: evidence
        assert r.verdict.value == "inconclusive", table
        assert abs(float(r.evidence["limit"]) - gap) <= float(r.evidence["limit_error"]) \
            + 1e-5 * gap


def _segments_distance(z, points):
    """Distance from z to the union of the segments between the points (2-D; equals the
    distance to their hull when z is outside it)."""
    best = math.inf
    for p in points:
        for q in points:
            s = 0.0 if np.all(p == q) else np.clip((z - p) @ (q - p) / ((q - p) @ (q - p)), 0, 1)
            best = min(best, float(np.linalg.norm(z - p - s * (q - p))))
    return best


# --------------------------------------------------------------------------- d = 1, V = 1
def test_pair_limit_matches_an_independent_integrator(pair):
    from scipy.integrate import solve_ivp
    from scipy.special import expit

    sol = solve_ivp(lambda t, z: -2 * z * expit(-2 * np.exp(2 * t) * z**2), (0, 30), [1.0],
                    method="DOP853", rtol=1e-13, atol=1e-15)
    c = float(sol.y[0, -1])
    assert _verdict(pair, {"type": "limit", "equals": f"sign(x0) * {c!r}"}) == "holds"
    assert _verdict(pair, {"type": "converges", "to": f"array([[{c!r}], [{-c!r}]])"}) == "holds"
    # both tokens are certified leaders (V = 1 scalar): the end is certified, so a limit off by
    # a relative 1e-6 is a violation, by that amount
    r = _judge(pair, {"type": "limit", "equals": f"sign(x0) * {c * (1 + 1e-6)!r}"})
    assert r.verdict.value == "violated" and abs(-r.margin - c * 1e-6) <= r.error + 1e-10
    assert r.certificate["kind"] == "hardmax-leader-map"
    # the leaders keep moving a little: the limit is not the initial datum
    assert _verdict(pair, {"type": "limit", "equals": "x0"}) == "violated"


def test_two_clusters(two_clusters):
    assert _verdict(two_clusters, {"type": "consensus"}) == "violated"
    assert _verdict(two_clusters, {"type": "converges"}) == "holds"
    assert _verdict(two_clusters, {"type": "clusters", "equal": 2}) == "holds"
    assert _verdict(two_clusters, {"type": "clusters", "at_most": 3}) == "holds"
    r = _judge(two_clusters, {"type": "clusters", "equal": 1})
    assert r.verdict.value == "violated" and r.unit == "clusters"
    assert r.certificate["kind"] == "hardmax-leader-map"              # leaders: tokens 1, 4
    assert r.evidence["clusters_certified"] == [2, 2]
    assert _verdict(two_clusters, {"type": "clusters", "at_most": 1}) == "violated"
    assert _verdict(two_clusters, {"type": "clusters", "equal": 3}) == "violated"


def test_boolean_attention_with_leaders(two_clusters):
    r = _judge(two_clusters, {"type": "attention", "boolean": True, "rank_at_most": 2,
                              "leaders": [1, 4]})
    assert r.verdict.value == "holds" and len(r.evidence["parts"]) == 3
    assert _verdict(two_clusters, {"type": "attention",
                                   "leaders": "array([argmin(x0), argmax(x0)]) + 1"}) == "holds"
    assert _verdict(two_clusters, {"type": "attention", "leaders": [1]}) == "violated"
    assert _verdict(two_clusters, {"type": "attention", "rank_at_most": 1}) == "violated"
    assert _verdict(two_clusters, {"type": "attention",
                                   "targets_within": {"predict": "extreme-tokens"}}) == "holds"


# --------------------------------------------------------------------------- V = −I
def test_negative_identity_collapse_is_algebraic():
    case = _run(Instance(Model(V=[[-1, 0], [0, -1]], form="x"), [[1, 0], [0, 1], [-1, "1/2"]]),
                200, 41)
    r = _judge(case, {"type": "consensus", "variable": "x"})
    assert r.verdict.value == "holds" and r.evidence["kind"] == "power-law"
    assert 0.4 < r.margin < 0.6                                   # D ~ t^{-1/2}
    # z = e^{t} x moves apart: evidence against a consensus in z, but the end state is a
    # degenerate equilibrium (no certificate), so nothing is refuted
    assert _verdict(case, {"type": "consensus", "variable": "z"}) == "inconclusive"


def test_nothing_moves():
    """V = 0: the tokens stay put. In the token form the field vanishes: every configuration
    is an equilibrium, the end is certified, and the diameter is violated by its value;
    convergence has no trend to be decided from."""
    case = _run(Instance(Model(V=[[0, 0], [0, 0]], form="x"), [[1, 0], [0, 1], [0, 0]]), 10,
                21)
    r = _judge(case, {"type": "consensus"})
    assert r.verdict.value == "violated" and abs(-r.margin - math.sqrt(2)) <= r.error + 1e-15
    assert r.certificate["kind"] == "stable-equilibrium"
    assert _verdict(case, {"type": "converges"}) == "inconclusive"
    assert _verdict(case, {"type": "clusters", "equal": 3}) == "holds"


def test_no_reference_run_is_inconclusive(uniform):
    request, _ = uniform
    traj = simulate(request.instance, 20, checkpoints=41, error_estimate=False)
    for table in ({"type": "consensus"}, {"type": "converges"}, {"type": "clusters", "equal": 1},
                  {"type": "attention", "boolean": True}):
        assert _verdict((request, traj), table) == "inconclusive"


# --------------------------------------------------------------------------- the central rule
def test_tends_to_zero_kinds():
    t = np.linspace(1, 40, 40)
    small = np.full(40, 1e-13)
    assert tends_to_zero(t, 3 * np.exp(-0.5 * t), small).status == "holds"
    # a trend against the claim is evidence, never a violation
    for against in (0.1 + np.exp(-0.5 * t), np.exp(0.1 * t)):        # levels off; diverges
        trend = tends_to_zero(t, against, small)
        assert trend.status == "undecided" and trend.against
    assert tends_to_zero(t, 2 + np.sin(t), small).status == "undecided"         # stalled
    # power + offset: the extrapolated law is a model, not a bound (a pre-asymptotic approach
    # to 0 looks the same), so it is never a violation
    assert tends_to_zero(t, 0.01 + t ** -1.5, small).status == "undecided"
    assert tends_to_zero(t, 2 * t ** -0.3, small).status == "holds"
    # large errors never give a verdict on a decaying series
    assert tends_to_zero(t, 3 * np.exp(-0.5 * t), np.full(40, 10.0)).status == "undecided"


def test_hull_distance_matches_the_square():
    rng = np.random.default_rng(1)
    square = [[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]]
    for z in rng.normal(scale=2, size=(30, 2)):
        d, gap = hull_distance(z, square)
        exact = float(np.linalg.norm(z - np.clip(z, 0, 1)))
        assert abs(d - exact) <= gap + 4e-16 * (1 + exact) and gap < 1e-12


# --------------------------------------------------------------------------- validation
def test_registered_with_documentation():
    for name in LIMIT_TYPES:
        c = CONCLUSIONS[name]
        assert c.asymptotic and c.summary and c.needs and all(c.keys.values())


@pytest.mark.parametrize("table, message", [
    ({"type": "clusters", "equl": 2}, "Did you mean 'equal'?"),
    ({"type": "clusters", "equal": 2, "at_most": 3}, "exactly one of equal, at_most"),
    ({"type": "clusters"}, "exactly one of equal, at_most"),
    ({"type": "clusters", "equal": 0}, "integer ≥ 1"),
    ({"type": "limit", "equals": "nrom(x0)"}, "Did you mean 'norm'?"),
    ({"type": "limit"}, "missing"),
    ({"type": "consensus", "variable": "y"}, "'z' (rescaled tokens), 'x' (tokens)"),
    ({"type": "consensus", "tail_fraction": 2}, "(0, 1]"),
    ({"type": "attention"}, "at least one of"),
    ({"type": "attention", "boolean": False}, "must be true"),
    ({"type": "attention", "leaders": [0, 1]}, "token indices"),
    ({"type": "approach", "subspace": "eye(2)", "polytope": "x0"}, "exactly one of"),
    ({"type": "approach", "subspace": "eye(2)", "offsets": "ones(2)"}, "only goes with"),
    ({"type": "approach", "hyperplanes": "eye(2) +"}, "not a valid expression"),
])
def test_validation_messages(table, message):
    with pytest.raises(InvalidArgument, match="t.toml: conclusion") as info:
        parse_conclusions([table], "t.toml")
    assert message in str(info.value)


def test_formula_of_the_wrong_shape(uniform):
    with pytest.raises(InvalidArgument, match="shape"):
        _judge(uniform, {"type": "limit", "equals": "ones(3)"})
    assert math.isfinite(_judge(uniform, {"type": "consensus"}).error)
