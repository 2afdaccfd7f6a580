"""Mutation tests of the paper's claims: each claim's own conclusions (from its file) judged on
a small instance in its scope with a deliberately wrong prediction or statement — a vertex
moved, a hyperplane shifted, a wrong rank or count, a bound cut — must be *violated*, and
for a statement about t -> infinity with its certificate named. Where no certificate can exist
(the rescaled flow of a general V, an MLP), the wrong statement must stay *inconclusive*, never
refuted. That every claim expected to hold is supported is asserted on the quick suite run
(tests/test_suite.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from verify.claim import (
    CheckRequest,
    load_claims,
    parse_claim,
    parse_conclusions,
    register_prediction,
)
from verify.judge import Value, judge_request

CLAIMS = {c.id: c for c in load_claims(Path(__file__).resolve().parent.parent / "claims")}


def _family(table):
    """A one-instance family from a plain table (the claim-file syntax)."""
    return parse_claim({"id": "f", "label": "F", "kind": "remark", "expected": "holds",
                        "statement": "f", "conclusion": {"type": "consensus"},
                        "families": [dict({"name": "f", "kind": "explicit"}, **table)]},
                       "<test>").families[0]


def judge(claim_id, family, conclusions=None, parameters=None):
    """The claim's conclusions (or ``conclusions``, tables in the claim-file syntax) on the
    family's instance, through the engine (hypotheses checked first)."""
    from verify.claim import judge_scope

    claim = CLAIMS[claim_id]
    if conclusions is not None:
        claim = replace(claim, conclusions=parse_conclusions(conclusions, "<mutation>"))
    if parameters is not None:
        claim = replace(claim, parameters={**claim.parameters, **parameters})
    family = claim.family(family) if isinstance(family, str) else _family(family)
    instance = family.instance(0)
    out = judge_scope(claim.hypotheses, instance, family=family.name)
    assert out is None, out.reason                 # the instance is in the claim's scope
    return judge_request(CheckRequest(claim, family, instance, None, family.horizon,
                                      family.checkpoints, family.precision,
                                      dict(claim.parameters)))


def violated(result, certificate=None):
    assert result.verdict.value == "violated", result.reason
    if certificate:
        kinds = (certificate,) if isinstance(certificate, str) else certificate
        assert result.certificate and result.certificate["kind"] in kinds, result.reason
    return True


def _moved(name, shift):
    """Register ``<name>-moved``: the prediction ``name`` with its first point moved."""
    from verify.claim import PREDICTIONS

    original = PREDICTIONS[name]

    @register_prediction(f"test-{name}-moved", gives=original.gives, summary="a mutation")
    def moved(ev):
        value = original.function(ev)
        array = np.array(value.array, dtype=float)
        array[0, -1] += shift
        return Value(array, value.error, value.evidence, value.source)

    return f"test-{name}-moved"


SQUARE_CENTRE = {"V": [[1, 0], [0, 1]], "x0": [[1, 1], [-1, 1], [-1, -1], [1, -1], [0, 0]],
                 "horizon": 8, "checkpoints": 17}
THREE = {"V": [[1, 0], [0, 1]], "x0": [[2, 0], [0, 2], ["3/2", "1/2"]], "horizon": 8,
         "checkpoints": 17}
ODD_1D = {"V": [[1]], "x0": [[-2], [-1], [0], [1], [2]], "horizon": 6, "checkpoints": 25}


# --------------------------------------------------------------------------- §3, §8
def test_polytope_with_a_vertex_of_S_moved():
    moved = _moved("polytope-S", 0.1)
    assert violated(judge("polytope", SQUARE_CENTRE, [{"type": "converges",
                                                       "to": {"predict": moved}}]),
                    "hardmax-leader-map")


def test_polytope_vertices_generic_with_a_vertex_moved():
    moved = _moved("polytope-vertices", 0.1)
    assert violated(judge("polytope-vertices-generic", THREE,
                          [{"type": "converges", "to": {"predict": moved}}]),
                    "hardmax-leader-map")


def test_hull_nonincreasing_fails_when_the_hull_grows():
    """The claim's own conclusion on V = -I (the hull expands), outside its hypothesis V = I:
    judged without it."""
    claim = replace(CLAIMS["hull-nonincreasing"], hypotheses=())
    CLAIMS["hull-growing"] = replace(claim, id="hull-growing")
    assert violated(judge("hull-growing", {"V": [[-1, 0], [0, -1]],
                                           "x0": [[1, 0], [0, 1], [-1, -1]], "horizon": 3,
                                           "checkpoints": 7}))


def test_collapse_with_an_exponential_rate_and_a_halved_bound():
    family = {"V": [[-1, 0], [0, -1]], "x0": [[1, 0], [0, 1], [-1, "1/2"]],
              "model": {"form": "x"}, "horizon": 40, "checkpoints": 41}
    assert violated(judge("collapse-negative-identity", family, [
        {"type": "rate", "law": "exponential", "value": "1/10", "variable": "x"}]),
        "degenerate-equilibrium")
    assert violated(judge("collapse-negative-identity", family, [
        {"type": "inequality", "quantity": "max-norm", "variable": "x", "relation": "<=",
         "value": "maximum(max(norm(x0)), sqrt(2 * n)) / 4"}]))


# --------------------------------------------------------------------------- §4, §5
def test_hyperplanes_with_the_middle_hyperplane_shifted():
    """d = 1, V = 2: a good triple whose middle token is pinned at 0 by the symmetry."""
    from verify.claim import PREDICTIONS

    family = dict(ODD_1D, V=[[2]])

    original = PREDICTIONS["hyperplanes-a0b"]

    @register_prediction("test-hyperplanes-middle-shifted", gives="hyperplanes",
                         summary="a mutation")
    def shifted(ev):
        value = original.function(ev)
        array = np.array(value.array, dtype=float)
        array[np.argmin(np.abs(array[:, -1])), -1] = 0.25
        return Value(array, value.error, value.evidence, value.source)

    table = [{"type": "approach", "hyperplanes": {"predict": "test-hyperplanes-middle-shifted"}}]
    assert violated(judge("hyperplanes", family, table), "hardmax-leader-map")


def test_hyperplanes_with_a_general_v_is_never_refuted_without_certificate():
    """A shifted middle hyperplane on the paper's symmetric family (V = diag(2, 1)): the
    rescaled flow of this V has no certificate, so the wrong statement stays inconclusive."""
    result = judge("hyperplanes", "symmetric-middle",
                   [{"type": "approach", "hyperplanes": "array([[1.0, 0.0]])",
                     "offsets": "0.25"}])
    assert result.verdict.value == "inconclusive" and "no certificate" in result.reason


def test_codimension_with_too_few_subspaces():
    assert violated(judge("codimension", THREE, [
        {"type": "clusters", "at_most": 1, "functional": {"predict": "positive-left-rows"}}]),
        "hardmax-leader-map")


def test_polytope_subspace_with_K_moved():
    """V = I is paranormal (F = R^2, G = 0): the certified leader map decides."""
    moved = _moved("subspace-K", 0.3)
    assert violated(judge("polytope-subspace", THREE, [
        {"type": "approach", "boundary": {"predict": moved},
         "functional": {"predict": "F-coordinates"}}]), "hardmax-leader-map")


def test_generic_qk_with_the_targets_moved():
    moved = _moved("leader-targets", 0.2)
    family = dict(THREE, K=[[1, "1/2"], ["-1/4", 1]])
    assert violated(judge("generic-qk", family, [
        {"type": "limit", "equals": {"predict": moved},
         "functional": {"predict": "F-coordinates"}}]), "hardmax-leader-map")


def test_boundrj_step_is_refuted_exactly_and_holds_in_the_safe_case():
    assert violated(judge("boundrj-step", "spec-counterexample"), "exact")
    assert judge("boundrj-step", "block-diagonal-3d").verdict.value == "holds"


# --------------------------------------------------------------------------- §6, §7 (d = 1)
def test_boolean_1d_with_a_wrong_leader_and_a_wrong_rank():
    assert violated(judge("boolean-1d", ODD_1D, [
        {"type": "attention", "targets_within": [5], "free_rows_at_most": 1}]),
        "hardmax-leader-map")
    assert violated(judge("boolean-1d", ODD_1D, [{"type": "attention", "rank_at_most": 1}]),
                    "hardmax-leader-map")


def test_one_bounded_token_with_no_bounded_token_allowed():
    """The middle token is pinned at 0 by the exact symmetry x -> -x: an exact invariant set."""
    result = judge("one-bounded-token", ODD_1D, [{"type": "escapes", "at_most_bounded": 0}])
    assert violated(result, "invariant-set") and result.basis.value == "exact"


def test_escape_threshold_claimed_for_the_pinned_middle_token():
    family = {"V": [[1]], "x0": [[-3], [0], [3]], "horizon": 6, "checkpoints": 25}
    result = judge("escape-threshold", family, [{"type": "escapes", "tokens": [2]}])
    assert violated(result, "invariant-set") and result.basis.value == "exact"


def test_order_preserved_reversed_and_distances_decreasing():
    family = {"V": [[1]], "x0": [["-1/2"], ["1/4"], [1]], "horizon": 4, "checkpoints": 17}
    assert violated(judge("order-preserved", family, [
        {"type": "inequality", "quantity": "consecutive-gaps", "relation": "<",
         "value": "0"}]))
    assert violated(judge("distances-nondecreasing", family, [
        {"type": "monotone", "quantity": "pairwise-distances", "variable": "x",
         "direction": "nonincreasing"}]))


def test_higherdim_remark_with_one_cluster_claimed():
    assert violated(judge("higherdim-remark", "epsilon-one-half",
                          [{"type": "clusters", "equal": 1}]), "hardmax-leader-map")


def test_wellposed_with_halved_norms(monkeypatch):
    import verify.judge._wellposed as wellposed

    norm2 = wellposed._norm2
    monkeypatch.setattr(wellposed, "_norm2", lambda M: (norm2(M)[0] / 2, norm2(M)[1]))
    family = {"V": [[1, "1/2"], [0, 1]], "x0": [[1, 0], [0, 1], [-1, 1]], "horizon": 1,
              "checkpoints": 5}
    assert violated(judge("wellposed", family, [{"type": "field-bounds", "points": 16}]))


def test_discrete_rescaling_with_the_wrong_rescaling(monkeypatch):
    import verify.judge._exact

    right = verify.judge._exact.discrete_step_rescaled  # as the judge imports it
    monkeypatch.setattr(verify.judge._exact, "discrete_step_rescaled",
                        lambda z, P, V, h, R_inv: right(z, P, V, h, np.eye(len(V), dtype=object)))
    assert violated(judge("discrete-rescaling", CLAIMS["discrete-rescaling"].families[0].name))


# --------------------------------------------------------------------------- §12 open problems
def test_complex_leading_claimed_where_the_attention_freezes():
    """``switching`` on V = I: the leader map is certified, the pattern never changes."""
    claim = replace(CLAIMS["complex-leading"], hypotheses=())
    CLAIMS["complex-leading-on-identity"] = replace(claim, id="complex-leading-on-identity")
    assert violated(judge("complex-leading-on-identity", THREE), "hardmax-leader-map")


def test_mlp_collapse_claimed_where_it_fails_is_never_refuted():
    """tanh with W = I from a spread configuration: the diameter grows over the run, but an MLP
    has no certificate: evidence, inconclusive."""
    family = {"V": [[1, 0], [0, 1]], "x0": [[1, 0], [0, 1], [-1, "1/2"]], "horizon": 4,
              "checkpoints": 17, "model": {"mlp": {"W": [[1, 0], [0, 1]], "activation": "tanh"}}}
    result = judge("mlp", family, parameters={"max_horizon": 6})
    assert result.verdict.value != "violated"


def test_multi_head_directions_converge_on_its_explicit_family():
    claim = CLAIMS["multi-head"]
    explicit = next(f for f in claim.families if f.kind == "explicit")
    assert judge("multi-head", explicit.name).verdict.value == "holds"


# --------------------------------------------------------------------------- exact pieces
def test_escape_threshold_value_solves_the_equation():
    from fractions import Fraction

    import mpmath

    from verify.claim import check_hypotheses
    from verify.exact import escape
    from verify.model import Instance, Model

    for n in (1, 3, 7):
        with mpmath.workdps(40):
            a = mpmath.mpf(escape.escape_threshold_value(n, 35))
            assert abs(a * a - n * n * mpmath.exp(-a * a)) < mpmath.mpf(10) ** -30
    a3 = Fraction(escape.escape_threshold_value(3, 30))
    assert escape.above_escape_threshold(a3 + Fraction(1, 10**20), 3) is True
    assert escape.above_escape_threshold(a3 - Fraction(1, 10**20), 3) is False
    inside = Instance(Model(V=[[1]]), [[-1], [0], [1]])
    assert check_hypotheses(["above_escape_threshold"], inside).holds is False


def test_f_coordinates_are_the_exact_projection():
    from fractions import Fraction

    from verify.exact.splitting import f_coordinates

    C = f_coordinates([[1, 0, 0], [0, 1, 1]], [[1, 1, 0]])
    z = np.array([Fraction(3), Fraction(5), Fraction(-2)], dtype=object)
    c = C.dot(z)
    g = z - c[0] * np.array([1, 0, 0]) - c[1] * np.array([0, 1, 1])
    assert g[0] == g[1] and g[2] == 0                           # the rest lies in G


def test_boundary_distance_against_a_square():
    from verify.judge._distances import boundary_distance

    square = np.array([[0, 0], [2, 0], [0, 2], [2, 2]], dtype=float)
    distance = boundary_distance(square)
    for point, expected in (([1, 1], 1.0), ([1, 0.5], 0.5), ([3, 1], 1.0), ([0, 0], 0.0),
                            ([0.2, 0.1], 0.1)):
        value, bound = distance(np.array([point], dtype=float))
        assert abs(value - min(expected, np.linalg.norm(point))) <= bound + 1e-15
    flat = boundary_distance(np.array([[0, 0], [1, 1], [2, 2]], dtype=float))
    value, bound = flat(np.array([[1.0, 1.0]]))                  # a flat hull is its boundary
    assert value <= bound
