"""Lemma masked-cap: a closed set of tokens on the sphere (V = cI) that all attend to a token
attending only to itself converges to it once within 90° of it; its bound against rigorous
enclosures and a 30-digit run, the prover's and the no-enclosure routes, tampering."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest
from certificate_helpers import tampered
from flint import arb, ctx

from verify.enclosure import Enclosure
from verify.flow.simulate import simulate
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate, masked_cap, sphere_consensus
from verify.lemmas._balls import CheckFailure, ball_text, parse_ball
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof import certify_masked, proof_budget
from verify.proof._lemmas import (
    cap_document_at_start,
    cap_parts,
    instance_text,
    lemmas_for,
    try_lemma,
)
from verify.vocabulary.conclusions import ConclusionSpec

I2 = [[1, 0], [0, 1]]
#: token 2 attends only to itself; every token attends to it and to itself (a star), token 3
#: also to token 0
STAR = [[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 1, 0], [1, 0, 1, 1]]
#: within 90° of token 2 = (0, 1), but tokens 0 and 1 are 160° apart
X0_STAR = [[math.cos(math.radians(10)), math.sin(math.radians(10))],
           [-math.cos(math.radians(10)), math.sin(math.radians(10))], [0, 1], ["3/5", "4/5"]]
LIMIT = ConclusionSpec("limit", {"variable": "x", "equals": "ones((n, 1)) * x0[2] / norm(x0[2])"})
HOLDS = InstanceResult("c#0", "c", None, InstanceVerdict.HOLDS, "holds (estimate)",
                       margin=1.0, error=0.5, basis="estimate")


def _request(model, x0, conclusion=LIMIT):
    inst = Instance(model, x0, name="c#0")
    claim = SimpleNamespace(id="c", conclusions=[conclusion])
    return SimpleNamespace(claim=claim, instance=inst, parameters={}, recheck=False)


def _star(beta=1, V=I2):
    return Instance(Model(V=V, mask=STAR, form="x", normalisation="sphere", beta=beta), X0_STAR)


def test_the_root_and_the_models_the_lemma_is_tried_on():
    assert cap_parts(_star().model) == [(2, [0, 1, 2, 3])]
    causal = Model(V=I2, mask="causal", form="x", normalisation="sphere")
    assert cap_parts(causal, 3) == [(0, [0, 1, 2])] and lemmas_for(causal)[0] == masked_cap.ID
    for model in (Model(V=I2, form="x", normalisation="sphere"),  # full attention
                  Model(V=[[1, -1], [1, 1]], mask="causal", form="x", normalisation="sphere"),
                  Model(V=I2, mask="causal", form="x", normalisation="sphere",
                        attention="hardmax"),
                  Model(V=I2, mask=[[1, 1], [1, 1]], form="x", normalisation="sphere")):
        assert cap_parts(model, 2) is None


def test_the_cap_holds_where_pairwise_consensus_does_not():
    """Tokens 0 and 1 are 160° apart, so sphere consensus's hypothesis fails; each is 80° from
    the root, so the cap's holds, with m1 = cos 80°."""
    document, why = cap_document_at_start(_star())
    assert document is not None, why
    assert check_certificate(document).valid
    m1 = parse_ball(document["inequalities"][0]["margin"])
    assert abs(float(m1.mid()) - math.cos(math.radians(80))) < 1e-15
    causal = Instance(Model(V=I2, mask="causal", form="x", normalisation="sphere"),
                      [X0_STAR[2], X0_STAR[0], X0_STAR[1]])
    with ctx.workprec(128):
        x = Enclosure(causal).x_at(0)
        report = sphere_consensus.check(read_instance({"instance": instance_text(causal)}),
                                        Fraction(0), x, {})
    assert not report.holds


@pytest.mark.parametrize("beta", [0, 2])
def test_the_bound_holds_on_a_rigorous_enclosure_of_the_whole_system(beta):
    """Independent route: the rigorous enclosure of all four tokens at t = 3; every token's
    inner product with x_2(0) is at least 1 - (1 - m1) e^{-3κ} (the lemma's bound from the
    certificate at t1 = 0), and the root's ball still contains x_2(0)."""
    inst = _star(beta=beta)
    document, _ = cap_document_at_start(inst)
    m1 = parse_ball(document["conclusions"]["m1"])
    kappa = parse_ball(document["conclusions"]["kappa"])
    enc = Enclosure(inst)
    assert enc.advance(Fraction(3))
    with ctx.workprec(enc.bits):
        X = enc.x_at(Fraction(3))
        bound = 1 - (1 - m1) * (-3 * kappa).exp()
        for i in range(4):
            inner = X[i, 0] * 0 + X[i, 1] * 1
            assert inner.lower() >= bound.upper(), (i, inner, bound)
        assert X[2, 0].contains(0) and X[2, 1].contains(1)


def test_the_bound_and_the_limit_against_a_30_digit_run():
    """Independent route: a 30-digit run to T = 12; every token is within its error of the
    lemma's bound |x_i - x_2(0)|^2 <= 2 (1 - m1) e^{-κ T}, and the run has reached x_2(0)."""
    inst = _star(beta=1)
    document, _ = cap_document_at_start(inst)
    m1 = float(parse_ball(document["conclusions"]["m1"]).mid())
    kappa = float(parse_ball(document["conclusions"]["kappa"]).mid())
    traj = simulate(inst, 12, checkpoints=4, precision=30)
    err = float(np.max(traj.error[-1]))
    with mpmath.workdps(40):
        for i, row in enumerate(traj.state_text[-1]):
            x = [mpmath.mpf(v) for v in row]
            distance2 = float(x[0] ** 2 + (x[1] - 1) ** 2)
            assert distance2 <= 2 * (1 - m1) * math.exp(-kappa * 12) + 4 * err, i
    assert err < 1e-20


def test_the_prover_traps_a_causal_instance_on_its_enclosure_after_t0():
    """Causal, V = Q = K = I: token 2 starts 100° from token 1 (the cap fails at 0, and also on
    the look-ahead's float balls at 0); on a rigorous enclosure at t1 = 4 it holds."""
    c, s = math.cos(math.radians(100)), math.sin(math.radians(100))
    inst = Instance(Model(V=I2, mask="causal", form="x", normalisation="sphere"),
                    [[1, 0], [c, s], ["3/5", "-4/5"]])
    assert cap_document_at_start(inst)[0] is None
    enc = Enclosure(inst)
    assert enc.advance(Fraction(4))
    document, why = try_lemma(masked_cap.ID, inst, enc, Fraction(4))
    assert document is not None, why
    assert document["lemma"]["parameters"] == {"root": 0, "set": [0, 1, 2]}
    assert check_certificate(document).valid


def test_the_no_enclosure_route_proves_a_limit_with_more_tokens_than_an_enclosure_takes():
    """n = 40 tokens in the plane (n·d = 80 > 64, no enclosure): all within 90° of the causal
    first token, proved at t1 = 0 on the initial tokens; only with proofs on."""
    angles = np.linspace(-80, 80, 39)
    x0 = [[1, 0]] + [[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in angles]
    model = Model(V=I2, mask="causal", form="x", normalisation="sphere", beta=4)
    spec = ConclusionSpec("limit", {"variable": "x",
                                    "equals": "ones((n, 1)) * x0[0] / norm(x0[0])"})
    with proof_budget(0):
        assert certify_masked(_request(model, x0, spec), HOLDS) is HOLDS
    with proof_budget(5):
        out = certify_masked(_request(model, x0, spec), HOLDS)
    assert out.verdict is InstanceVerdict.HOLDS and out.basis.value == "certificate"
    assert out.certificate["lemma"] == masked_cap.ID and "t1 = 0" in out.reason
    assert check_certificate(out.certificate["document"]).valid


@pytest.mark.parametrize("conclusion, proved", [
    (LIMIT, True), (ConclusionSpec("consensus", {}), True), (ConclusionSpec("converges", {}), True),
    # another token's start is not the limit
    (ConclusionSpec("limit", {"variable": "x", "equals": "ones((n, 1)) * x0[3] / norm(x0[3])"}),
     False),
    # x0[2] itself is the limit only when it is exactly a unit vector (it is: (0, 1))
    (ConclusionSpec("limit", {"variable": "x", "equals": "ones((n, 1)) * x0[2]"}), True),
])
def test_which_conclusions_the_cap_proves(conclusion, proved):
    with proof_budget(5):
        out = certify_masked(_request(_star().model, X0_STAR, conclusion), HOLDS)
    assert (out.basis.value == "certificate") is proved


@pytest.fixture(scope="module")
def certificate():
    with proof_budget(5):
        out = certify_masked(_request(_star().model, X0_STAR), HOLDS)
    return json.loads(json.dumps(out.certificate["document"]))


def test_tampered_cap_certificates_are_rejected(certificate):
    assert check_certificate(certificate).valid

    def root_sees_another(data):  # the root attends to token 0: it may move
        data["instance"]["model"]["mask_matrix"][2][0] = 1

    def token_blind_to_root(data):
        data["instance"]["model"]["mask_matrix"][1] = [1, 1, 0, 0]

    def set_not_closed(data):  # token 3 attends to token 0, outside the set
        data["lemma"]["parameters"]["set"] = [1, 2, 3]

    def widen(data):
        ball = parse_ball(data["enclosure"]["tokens"][0][1])
        data["enclosure"]["tokens"][0][1] = ball_text(arb(ball.mid(), arb("0.1")))

    def move(data):  # the ball no longer contains x0_1/|x0_1|
        data["enclosure"]["tokens"][1][1] = "1*2^-1"

    def move_x0(data):
        data["instance"]["x0"][0] = ["-1", "0"]

    def relabel(data):
        data["lemma"]["id"] = "sphere-consensus"

    def later(data):  # at t1 = 1 the balls would rest on an enclosure, which x0 is not
        data["enclosure"]["t1"] = "1"
        data["conclusions"]["t1"] = "0"

    def other_root(data):
        data["facts"][1]["token"] = 3

    def rotate_v(data):
        data["instance"]["V"] = [["1", "-1"], ["1", "1"]]

    for change in (root_sees_another, token_blind_to_root, set_not_closed, widen, move,
                   move_x0, relabel, later, other_root, rotate_v):
        assert not tampered(certificate, change).valid, change.__name__


def test_the_lemma_refuses_variants_it_is_not_about():
    inst = read_instance({"instance": instance_text(_star())})
    with ctx.workprec(64):
        x = Enclosure(_star()).x_at(0)
        for parameters, words in (({"root": 0, "set": [0, 1, 2, 3]}, "attend only to itself"),
                                  ({"root": 2}, "parameters"),
                                  ({"root": 2, "set": [2, 9]}, "must hold the root")):
            with pytest.raises(CheckFailure, match=words):
                masked_cap.check(inst, Fraction(0), x, parameters)
    rotation = read_instance({"instance": instance_text(_star(V=[[1, -1], [1, 1]]))})
    with pytest.raises(CheckFailure, match="V = cI"):
        masked_cap.check(rotation, Fraction(0), None, {"root": 2, "set": [0, 1, 2, 3]})


# ------------------------------------------------------------- several parts (closed components)
#: two hubs: tokens 0, 1, 2 attend to hub 0; tokens 3, 4 to hub 3 (a union of closed parts)
TWO_HUBS = [[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 1, 1]]
X0_HUBS = [[1, 0], ["3/5", "4/5"], ["3/5", "-4/5"], [-1, 0], ["-4/5", "3/5"]]


def test_each_closed_part_converges_to_its_own_hub():
    """Two parts, each with its own hub: every token converges (to its hub) and the limits form
    exactly two points, proved by masked-cap; one cluster and consensus are refuted instead
    (the two hubs never move and are 180° apart: masked-token's fixed-apart)."""
    model = Model(V=I2, mask=TWO_HUBS, form="x", normalisation="sphere", beta=2)
    assert cap_parts(model) == [(0, [0, 1, 2]), (3, [3, 4])]
    found = {}
    for conclusion in (ConclusionSpec("converges", {}), ConclusionSpec("clusters", {"equal": 2}),
                       ConclusionSpec("clusters", {"at_most": 1}), ConclusionSpec("consensus", {})):
        with proof_budget(5):
            out = certify_masked(_request(model, X0_HUBS, conclusion), HOLDS)
        assert out.basis.value == "certificate"
        document = out.certificate["document"]
        assert check_certificate(document).valid
        found[conclusion.type + str(conclusion.parameters)] = (out.verdict.value,
                                                               document["lemma"]["id"])
        if document["lemma"]["id"] == masked_cap.ID:
            assert document["lemma"]["parameters"] == {"parts": [
                {"root": 0, "set": [0, 1, 2]}, {"root": 3, "set": [3, 4]}]}
    assert found == {"converges{}": ("holds", "masked-cap"),
                     "clusters{'equal': 2}": ("holds", "masked-cap"),
                     "clusters{'at_most': 1}": ("violated", "masked-token"),
                     "consensus{}": ("violated", "masked-token")}


def test_the_parts_bound_holds_on_a_rigorous_enclosure():
    """Independent route: an enclosure of all five tokens at t = 2; each token's inner product
    with its hub's start is above its part's bound 1 - (1 - m1) e^{-2κ}."""
    inst = Instance(Model(V=I2, mask=TWO_HUBS, form="x", normalisation="sphere", beta=2),
                    X0_HUBS)
    document, _ = cap_document_at_start(inst)
    enc = Enclosure(inst)
    assert enc.advance(Fraction(2))
    with ctx.workprec(enc.bits):
        X = enc.x_at(Fraction(2))
        for part in document["conclusions"]["parts"]:
            r = part["root"]
            m1, kappa = parse_ball(part["m1"]), parse_ball(part["kappa"])
            bound = 1 - (1 - m1) * (-2 * kappa).exp()
            hub = [arb(1), arb(0)] if r == 0 else [arb(-1), arb(0)]
            for i in part["set"]:
                inner = X[i, 0] * hub[0] + X[i, 1] * hub[1]
                assert inner.lower() >= bound.upper(), (i, inner, bound)


def test_tampered_parts_are_rejected():
    model = Model(V=I2, mask=TWO_HUBS, form="x", normalisation="sphere")
    with proof_budget(5):
        out = certify_masked(_request(model, X0_HUBS, ConclusionSpec("converges", {})), HOLDS)
    document = json.loads(json.dumps(out.certificate["document"]))

    def overlap(data):
        data["lemma"]["parameters"]["parts"][1]["set"] = [2, 3, 4]

    def drop_a_part(data):  # token 3 and 4 no longer covered: the convergence fact fails
        data["lemma"]["parameters"]["parts"].pop()
        data["conclusions"]["parts"].pop()
        data["inequalities"] = [q for q in data["inequalities"] if not q["name"].endswith("-3")]

    def a_bridge(data):  # token 4 attends to token 1: the second part is not closed
        data["instance"]["model"]["mask_matrix"][4][1] = 1

    def claim_one_cluster(data):
        data["facts"] = [{"fact": "cap-clusters", "at_most": 1}]

    for change in (overlap, drop_a_part, a_bridge, claim_one_cluster):
        assert not tampered(document, change).valid, change.__name__
