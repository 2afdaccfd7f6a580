"""Graph masks: a token whose mask row is itself alone is an exact linear flow (lemma
masked-token), certified and re-checked with the mask written in the certificate."""

from __future__ import annotations

import json
from fractions import Fraction
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest
from certificate_helpers import assert_accepted, tampered
from flint import arb, arb_mat, ctx

from verify.enclosure import Enclosure
from verify.flow.simulate import simulate
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof import certify_masked, proof_budget
from verify.proof._lemmas import instance_text, masked_document, masked_tokens
from verify.vocabulary.conclusions import ConclusionSpec

SPIRAL = [[1, -1], [1, 1]]  # V = I + J: e^{tV} = e^t R(t)
#: token 2 (the third) attends only to itself; the others see a neighbour
GRAPH = [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
X0 = [[1, 0], [0, 1], ["3/5", "4/5"], [-1, 0]]
UNDECIDED = InstanceResult("g#0", "g", None, InstanceVerdict.INCONCLUSIVE, "not stabilised")


def _request(model, x0, conclusion: ConclusionSpec):
    inst = Instance(model, x0, name="g#0")
    claim = SimpleNamespace(id="g", conclusions=[conclusion])
    return SimpleNamespace(claim=claim, instance=inst, parameters={}, recheck=False)


def test_the_self_only_tokens_and_the_mask_in_the_certificate():
    inst = Instance(Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere"), X0)
    assert masked_tokens(inst) == [2]
    exact = read_instance({"instance": instance_text(inst)})
    assert exact.self_only_tokens() == [2] and exact.attends(0) == [0, 1]
    assert exact.closed([1, 2]) and not exact.closed([0, 1])
    causal = Instance(Model(V=SPIRAL, mask="causal", form="x"), [[1, 0], [0, 1]])
    assert masked_tokens(causal) == [0] and "mask_matrix" not in instance_text(causal)["model"]
    assert masked_tokens(Instance(Model(V=SPIRAL, form="x"), [[1, 0], [0, 1]])) == []


def test_the_closed_form_of_a_graph_token_lies_in_the_enclosure_of_the_whole_system():
    """Independent route: a rigorous enclosure of all four tokens under the graph mask; token
    2's ball at t = 1 contains e^{V} x_2(0)/|e^{V} x_2(0)| (flint's matrix exponential)."""
    inst = Instance(Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere", beta=2), X0)
    enc = Enclosure(inst)
    assert enc.advance(Fraction(1))
    with ctx.workprec(enc.bits):
        M = arb_mat(SPIRAL)
        y = M.exp() * arb_mat([[arb(3) / 5], [arb(4) / 5]])
        norm = (y[0, 0] ** 2 + y[1, 0] ** 2).sqrt()
        X = enc.x_at(Fraction(1))
        for a in range(2):
            assert X[2, a].overlaps(y[a, 0] / norm), (a, X[2, a])
            assert X[2, a].rad() < 2.0 ** -30


def test_the_closed_form_matches_a_run_at_twice_the_digits():
    """A 40-digit run of the whole graph-masked system: token 2 is R(3) x_2(0) at t = 3 (the
    direction of e^{3V} x_2(0)) within the run's error estimate."""
    inst = Instance(Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere"), X0)
    traj = simulate(inst, 3, checkpoints=4, precision=40)
    err = float(np.max(traj.error[-1]))
    with mpmath.workdps(60):
        x = [mpmath.mpf(v) for v in traj.state_text[-1][2]]
        c, s = mpmath.cos(3), mpmath.sin(3)
        exact = [c * mpmath.mpf(3) / 5 - s * mpmath.mpf(4) / 5,
                 s * mpmath.mpf(3) / 5 + c * mpmath.mpf(4) / 5]
        assert max(abs(float(x[a] - exact[a])) for a in range(2)) <= 4 * err
    assert 0 < err < 1e-30


@pytest.mark.parametrize("conclusion", [ConclusionSpec("converges", {}),
                                        ConclusionSpec("clusters", {"at_most": 2})])
def test_a_turning_graph_token_refutes_every_limit_statement(conclusion):
    model = Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere")
    out = certify_masked(_request(model, X0, conclusion), UNDECIDED)
    assert out.verdict is InstanceVerdict.VIOLATED and out.basis.value == "certificate"
    assert "token 3 attends only to itself (its row of the graph mask)" in out.reason
    document = out.certificate["document"]
    assert document["lemma"]["parameters"] == {"token": 2}
    assert document["instance"]["model"]["mask_matrix"] == GRAPH
    assert check_certificate(document).valid


def test_no_refutation_without_a_self_only_token_or_with_a_converging_one():
    ring = [[1, 1, 0, 1], [1, 1, 1, 0], [0, 1, 1, 1], [1, 0, 1, 1]]
    converges = ConclusionSpec("converges", {})
    for model in (Model(V=SPIRAL, mask=ring, form="x", normalisation="sphere"),
                  Model(V=[[-1, 0], [0, -2]], mask=GRAPH, form="x")):
        assert certify_masked(_request(model, X0, converges), UNDECIDED) is UNDECIDED


def test_a_fixed_graph_token_proves_its_identity_within_the_proof_budget():
    """V = I on the sphere: the self-only token 2 never moves (x0_2 an exact unit vector);
    the plan names the token of the quantity, and another token is not proved."""
    model = Model(V=[[1, 0], [0, 1]], mask=GRAPH, form="x", normalisation="sphere", beta=3)
    holds = InstanceResult("g#0", "g", None, InstanceVerdict.HOLDS, "holds (estimate)",
                           margin=1.0, error=0.5, basis="estimate")
    fixed = ConclusionSpec("identity", {"quantity": "norm(x[2] - x0[2])", "value": 0})
    with proof_budget(5):
        out = certify_masked(_request(model, X0, fixed), holds)
        assert out.verdict is InstanceVerdict.HOLDS and out.basis.value == "certificate"
        assert out.certificate["document"]["facts"][0]["token"] == 2
        other = ConclusionSpec("identity", {"quantity": "norm(x[1] - x0[1])", "value": 0})
        assert certify_masked(_request(model, X0, other), holds) is holds


@pytest.fixture(scope="module")
def refutation():
    model = Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere")
    out = certify_masked(_request(model, X0, ConclusionSpec("converges", {})), UNDECIDED)
    return json.loads(json.dumps(out.certificate["document"]))


def test_the_certificate_is_valid_and_the_command_accepts_it(refutation, tmp_path):
    assert_accepted(refutation, tmp_path)


def test_a_changed_mask_a_moved_token_a_widened_ball_and_a_changed_lemma_are_rejected(
        refutation):
    def attend_to_a_neighbour(data):  # token 2 now sees token 3: no longer a linear flow
        data["instance"]["model"]["mask_matrix"][2][3] = 1

    def drop_the_mask(data):
        del data["instance"]["model"]["mask_matrix"]

    def call_it_causal(data):  # under a causal mask token 2 sees tokens 0, 1, 2
        data["instance"]["model"]["mask"] = "causal"
        del data["instance"]["model"]["mask_matrix"]

    def another_token(data):  # token 1 attends to token 2 as well
        data["lemma"]["parameters"]["token"] = 1

    def move_token(data):
        data["instance"]["x0"][2] = ["1", "0"]

    def widen(data):
        data["enclosure"]["tokens"][2][0] = "3/5 +/- 1/1000"

    def change_lemma(data):
        data["lemma"]["id"] = "sphere-consensus"

    def fact_about_another_token(data):
        data["facts"][0]["token"] = 0

    for change in (attend_to_a_neighbour, drop_the_mask, call_it_causal, another_token,
                   move_token, widen, change_lemma, fact_about_another_token):
        assert not tampered(refutation, change).valid, change.__name__


def test_a_malformed_mask_matrix_is_a_clear_rejection(refutation):
    def empty_row(data):
        data["instance"]["model"]["mask_matrix"][0] = [0, 0, 0, 0]

    def not_square(data):
        data["instance"]["model"]["mask_matrix"].pop()

    for change in (empty_row, not_square):
        result = tampered(refutation, change)
        assert not result.valid and "mask_matrix" in result.reasons[0], change.__name__


def test_the_lemma_document_names_why_not():
    inst = Instance(Model(V=SPIRAL, mask=GRAPH, form="x", normalisation="sphere"), X0)
    document, why = masked_document(inst, 1)
    assert document is None and "token 2 does not attend only to itself" in why


# ------------------------------------------------------------- two sinks: no consensus
#: tokens 0 and 2 attend only to themselves; token 1 attends to both, token 3 to token 2
SINKS = [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 1, 0], [0, 0, 1, 1]]


@pytest.mark.parametrize("conclusion", [
    ConclusionSpec("consensus", {}), ConclusionSpec("clusters", {"at_most": 1}),
    ConclusionSpec("limit", {"variable": "x", "equals": "ones((n, 1)) * x0[0]"})])
def test_two_fixed_sinks_at_distinct_points_refute_consensus(conclusion):
    """V = I on the sphere: both sinks never move, and they start apart (x0_0 and x0_2 not
    positively proportional), so their distance stays |x0_0 - x0_2| > 0 forever."""
    model = Model(V=[[1, 0], [0, 1]], mask=SINKS, form="x", normalisation="sphere")
    out = certify_masked(_request(model, X0, conclusion), UNDECIDED)
    assert out.verdict is InstanceVerdict.VIOLATED and out.basis.value == "certificate"
    assert "the tokens reach one point" in out.reason and "distinct points" in out.reason
    document = out.certificate["document"]
    assert document["facts"] == [{"fact": "fixed-apart", "variable": "x", "other": 2}]
    assert check_certificate(document).valid


def test_no_consensus_refutation_when_the_sinks_coincide_or_move():
    same = [[1, 0], [0, 1], [1, 0], [-1, 0]]  # x0_2 = x0_0: the sinks coincide
    consensus = ConclusionSpec("consensus", {})
    model = Model(V=[[1, 0], [0, 1]], mask=SINKS, form="x", normalisation="sphere")
    assert certify_masked(_request(model, same, consensus), UNDECIDED) is UNDECIDED
    turning = Model(V=[[0, -1], [1, 0]], mask=SINKS, form="x", normalisation="sphere")
    assert certify_masked(_request(turning, X0, consensus), UNDECIDED) is UNDECIDED
    # "converges" is not refuted by two fixed tokens
    converges = ConclusionSpec("converges", {})
    assert certify_masked(_request(model, X0, converges), UNDECIDED) is UNDECIDED


def test_a_tampered_apart_certificate_is_rejected():
    model = Model(V=[[1, 0], [0, 1]], mask=SINKS, form="x", normalisation="sphere")
    out = certify_masked(_request(model, X0, ConclusionSpec("consensus", {})), UNDECIDED)
    document = json.loads(json.dumps(out.certificate["document"]))

    def other_is_not_a_sink(data):
        data["facts"][0]["other"] = 1

    def other_sink_sees_a_neighbour(data):
        data["instance"]["model"]["mask_matrix"][2][3] = 1

    def sinks_at_one_point(data):  # 2 x0_0: the same point on the sphere
        data["instance"]["x0"][2] = ["2", "0"]
        data["enclosure"]["tokens"][2] = ["2", "0"]

    def other_is_itself(data):
        data["facts"][0]["other"] = 0

    for change in (other_is_not_a_sink, other_sink_sees_a_neighbour, sinks_at_one_point,
                   other_is_itself):
        assert not tampered(document, change).valid, change.__name__
