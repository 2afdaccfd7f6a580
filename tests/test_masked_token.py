"""The masked-token lemma (verify.lemmas.masked_token): the closed form of the causal first
token against the enclosure and a run at twice the digits, its classification on instances
whose behaviour is known, the refutation and proof it gives, and tampered certificates."""

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
from verify.flow.trajectory import token_array
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate, masked_token
from verify.lemmas.masked_token import classify, local_minimal_polynomial
from verify.model import Instance, Model
from verify.proof import certify_masked, proof_budget
from verify.proof._lemmas import masked_document
from verify.vocabulary.conclusions import ConclusionSpec

SPIRAL = [[1, -1], [1, 1]]  # V = I + J: e^{tV} = e^t R(t)


def _closed_form(V, v, t: Fraction) -> arb_mat:
    """e^{tV} v in balls (python-flint's rigorous matrix exponential)."""
    M = arb_mat([[arb(Fraction(x).numerator) / Fraction(x).denominator for x in row]
                 for row in V])
    tt = arb(t.numerator) / t.denominator
    column = arb_mat([[arb(Fraction(x).numerator) / Fraction(x).denominator] for x in v])
    return (M * tt).exp() * column


@pytest.mark.parametrize("variant", ["x", "z", "sphere"])
def test_the_closed_form_lies_in_the_enclosure(variant):
    """Token 1's ball of a rigorous enclosure of the whole causal system contains the lemma's
    closed form, and the closed form is tight (the ball's radius is small)."""
    model = Model(V=SPIRAL, mask="causal", form="z" if variant == "z" else "x",
                  normalisation="sphere" if variant == "sphere" else "none", beta=2)
    x0 = [[1, 0], [0, 1], [-1, "1/2"]] if variant != "sphere" else [[1, 0], [0, 1], [-1, 0]]
    inst = Instance(model, x0)
    enc = Enclosure(inst)
    t = Fraction(1)
    assert enc.advance(t)
    with ctx.workprec(enc.bits):
        y = _closed_form(SPIRAL, [1, 0], t)
        if variant == "sphere":
            norm = (y[0, 0] ** 2 + y[1, 0] ** 2).sqrt()
            y = arb_mat([[y[0, 0] / norm], [y[1, 0] / norm]])
        X, Z = enc.x_at(t), enc.z_at(t)
        for a in range(2):
            assert X[0, a].overlaps(y[a, 0]), (a, X[0, a], y[a, 0])
            assert X[0, a].rad() < 2.0 ** -30  # the enclosure's own accuracy (tol 2^-40)
            if variant != "sphere":  # z_1(t) = z_1(0)
                assert Z[0, a].contains(arb(x0[0][a]))


def test_the_closed_form_matches_a_run_at_twice_the_digits():
    """A 40-digit run of the causal spiral (independent route: the integrator) agrees with
    e^{tV} x_1(0) to within its error estimate, and token 1's direction turns: the angle at
    t = 3 is 3 (mod 2π) from the start."""
    inst = Instance(Model(V=SPIRAL, mask="causal", form="x", normalisation="sphere"),
                    [[1, 0], [0, 1]])
    traj = simulate(inst, 3, checkpoints=4, precision=40)
    err = float(np.max(traj.error[-1]))
    with mpmath.workdps(60):
        x = [mpmath.mpf(v) for v in traj.state_text[-1][0]]
        exact = [mpmath.cos(3), mpmath.sin(3)]  # e^{3V}(1, 0)/|e^{3V}(1, 0)| = R(3)(1, 0)
        assert max(abs(float(x[a] - exact[a])) for a in range(2)) <= 4 * err
    assert 0 < err < 1e-30
    assert np.allclose(token_array(traj, "x")[:, 0], [[np.cos(t), np.sin(t)] for t in traj.t],
                       rtol=0, atol=1e-15)


@pytest.mark.parametrize("V, v, x, direction", [
    ([[-1, 0], [0, -2]], [1, 1], "converges", "converges"),  # a stable node
    ([[0, -1], [1, 0]], [1, 0], "turns", "turns"),  # a rotation: |x| constant, never settles
    (SPIRAL, [1, 0], "grows", "turns"),  # e^t R(t): grows, and its direction turns
    ([[0, 1], [0, 0]], [0, 1], "drifts", "converges"),  # x = (t, 1): direction -> (1, 0)
    ([[1, 0], [0, 1]], [3, 4], "grows", "fixed"),  # V = I: the direction never moves
    ([[0, 0], [0, 0]], [3, 4], "fixed", "fixed"),
    ([[0, -1, 0], [1, 0, 0], [0, 0, 0]], [1, 0, 1], "turns", "undecided"),  # a real root ties
    ([[1, 2, 3], [0, 1, 5], [7, 0, -4]], [1, 0, 0], "grows", "converges"),  # irreducible cubic
])
def test_the_classification_on_known_instances(V, v, x, direction):
    found = classify(V, v)
    assert (found["x"], found["direction"]) == (x, direction)


def test_the_local_minimal_polynomial_annihilates_v():
    V = [[Fraction(1), Fraction(2), Fraction(3)], [Fraction(0), Fraction(1), Fraction(5)],
         [Fraction(7), Fraction(0), Fraction(-4)]]
    v = [Fraction(1), Fraction(0), Fraction(0)]
    c = local_minimal_polynomial(V, v)
    power, total = list(v), [Fraction(0)] * 3
    for coefficient in c:
        total = [a + coefficient * b for a, b in zip(total, power, strict=True)]
        power = [sum(V[i][j] * power[j] for j in range(3)) for i in range(3)]
    assert total == [0, 0, 0] and c[-1] == 1
    assert local_minimal_polynomial([[2, 0], [0, 3]], [1, 0]) == [-2, 1]


def _request(model, x0, conclusion: ConclusionSpec, name="c#0"):
    inst = Instance(model, x0, name=name)
    claim = SimpleNamespace(id="c", conclusions=[conclusion])
    return SimpleNamespace(claim=claim, instance=inst, parameters={}, recheck=False)


UNDECIDED = InstanceResult("c#0", "c", None, InstanceVerdict.INCONCLUSIVE, "not stabilised")


@pytest.mark.parametrize("conclusion", [ConclusionSpec("converges", {}),
                                        ConclusionSpec("limit", {"equals": "x0[0]"}),
                                        ConclusionSpec("clusters", {"at_most": 1})])
def test_a_turning_first_token_refutes_every_limit_statement(conclusion):
    model = Model(V=SPIRAL, mask="causal", form="x", normalisation="sphere")
    out = certify_masked(_request(model, [[1, 0], [0, 1]], conclusion), UNDECIDED)
    assert out.verdict is InstanceVerdict.VIOLATED and out.basis.value == "certificate"
    assert check_certificate(out.certificate["document"]).valid
    assert "turns forever" in out.reason


@pytest.mark.parametrize("model, x0, conclusion", [
    # consensus is not refuted: the other tokens may follow the turning first token
    (Model(V=SPIRAL, mask="causal", form="x", normalisation="sphere"), [[1, 0], [0, 1]],
     ConclusionSpec("consensus", {})),
    # z_1 never moves: "every z_i converges" is not refuted by the first token
    (Model(V=SPIRAL, mask="causal"), [[1, 0], [0, 1]], ConclusionSpec("converges", {})),
    # V = -I: the first token converges
    (Model(V=[[-1, 0], [0, -1]], mask="causal", form="x"), [[1, 0], [0, 1]],
     ConclusionSpec("converges", {})),
    # full attention: the lemma does not apply
    (Model(V=SPIRAL, form="x", normalisation="sphere"), [[1, 0], [0, 1]],
     ConclusionSpec("converges", {})),
])
def test_no_refutation_where_the_first_token_says_nothing(model, x0, conclusion):
    out = certify_masked(_request(model, x0, conclusion), UNDECIDED)
    assert out is UNDECIDED


def test_a_fixed_first_token_proves_the_identity_within_the_proof_budget():
    """Post-LN, V = I, causal: token 1 never moves (the conjecture
    causal-first-token-any-beta); proved only when proofs are on."""
    model = Model(V=[[1, 0], [0, 1]], mask="causal", form="x", normalisation="sphere", beta=7)
    spec = ConclusionSpec("identity", {"quantity": "norm(x[0] - x0[0])", "value": 0})
    holds = InstanceResult("c#0", "c", None, InstanceVerdict.HOLDS, "holds (estimate)",
                           margin=1.0, error=0.5, basis="estimate")
    with proof_budget(0):
        assert certify_masked(_request(model, [[0, 1], [1, 0]], spec), holds) is holds
    with proof_budget(5):
        out = certify_masked(_request(model, [[0, 1], [1, 0]], spec), holds)
        assert out.verdict is InstanceVerdict.HOLDS and out.basis.value == "certificate"
        # x0_1 not exactly a unit vector: the sphere token is x0_1/|x0_1| ≠ x0_1
        near = [["3/5", Fraction(4, 5) + Fraction(1, 2 ** 50)], [1, 0]]
        assert certify_masked(_request(model, near, spec), holds) is holds


@pytest.fixture(scope="module")
def refutation():
    """The certificate refuting 'converges' for the causal spiral on the circle."""
    model = Model(V=SPIRAL, mask="causal", form="x", normalisation="sphere")
    request = _request(model, [["3/5", "4/5"], [0, 1], [-1, 0]],
                       ConclusionSpec("converges", {}))
    out = certify_masked(request, UNDECIDED)
    return json.loads(json.dumps(out.certificate["document"]))


def test_the_refutation_certificate_is_valid_and_the_command_accepts_it(refutation, tmp_path):
    assert_accepted(refutation, tmp_path)


def test_a_moved_token_is_rejected(refutation):
    def move_state(data):  # the state no longer the instance's x0
        data["enclosure"]["tokens"][0][0] = "4/5"

    def change_v(data):  # V = I: the direction of token 1 is fixed, nothing refuted
        data["instance"]["V"] = [["1", "0"], ["0", "1"]]
    for change in (move_state, change_v):
        assert not tampered(refutation, change).valid, change.__name__


def test_a_widened_state_a_raised_margin_and_a_changed_lemma_are_rejected(refutation):
    def widen(data):  # a ball instead of the exact initial token
        data["enclosure"]["tokens"][0][0] = "3/5 +/- 1/1000"

    def later(data):
        data["enclosure"]["t1"] = "1"

    def raise_margin(data):
        data["inequalities"][-1]["margin"] = "3*2^0"

    def change_behaviour(data):
        data["conclusions"]["behaviour"]["x"] = "converges"

    def change_lemma(data):
        data["lemma"]["id"] = "sphere-consensus"

    def false_fact(data):
        data["facts"] = [{"fact": "token-fixed", "variable": "x"}]

    for change in (widen, later, raise_margin, change_behaviour, change_lemma, false_fact):
        assert not tampered(refutation, change).valid, change.__name__


def test_the_lemma_refuses_variants_it_is_not_about():
    for model in (Model(V=SPIRAL, mask="causal", form="x", attention="unnormalised"),
                  Model(V=SPIRAL, mask="causal", form="x", normalisation="pre-ln"),
                  Model(V=SPIRAL, form="x")):
        document, why = masked_document(Instance(model, [[1, 0], [0, 1]]))
        assert document is None and why
    assert masked_token.ID == "masked-token"


# ------------------------------------------------------------- sphere consensus under a causal mask
def _causal_circle(x0, beta=1):
    from verify.lemmas._instance import read_instance
    from verify.proof._lemmas import instance_text

    model = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere", mask="causal",
                  beta=beta)
    inst = Instance(model, x0)
    return inst, read_instance({"instance": instance_text(inst)})


def test_causal_sphere_consensus_halves_the_rate_and_its_bound_holds_on_the_enclosure():
    """Under a causal mask only the later token of a pair attends to the earlier one: κ is
    a m1, half the full-attention rate; the bound 1 - m(t) <= (1 - m1) e^{-κ(t - t1)} holds
    on a rigorous enclosure at t = 2 (independent route), and token 1 has not moved."""
    from verify.lemmas import sphere_consensus
    from verify.lemmas._balls import parse_ball
    from verify.lemmas._instance import read_instance
    from verify.proof._lemmas import instance_text

    x0 = [[1, 0], ["3/5", "4/5"], ["4/5", "3/5"]]  # m1 = <x_1, x_2> = 3/5
    inst, exact_inst = _causal_circle(x0)
    full = read_instance({"instance": instance_text(
        Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"), x0))})
    balls = arb_mat([[arb(Fraction(v).numerator) / Fraction(v).denominator for v in row]
                     for row in x0])
    causal_report = sphere_consensus.check(exact_inst, Fraction(0), balls, {})
    full_report = sphere_consensus.check(full, Fraction(0), balls, {})
    assert causal_report.holds and causal_report.conclusions["mask"] == "causal"
    kappa = parse_ball(causal_report.conclusions["kappa"])
    assert abs(2 * kappa - parse_ball(full_report.conclusions["kappa"])) < 1e-12
    enc = Enclosure(inst)
    assert enc.advance(Fraction(2))
    X = enc.x_at(Fraction(2))
    m = min((X[i, 0] * X[k, 0] + X[i, 1] * X[k, 1]).lower() for i in range(3)
            for k in range(i + 1, 3))
    assert 1 - arb(m) < (1 - arb(3) / 5) * (-2 * kappa).exp()
    assert X[0, 0].contains(1) and X[0, 1].contains(0)


def test_causal_consensus_proves_every_token_tends_to_the_first():
    """The conjecture causal-almost-every on one instance: consensus (causal sphere lemma)
    and a fixed first token give the limit x0_1; the certificate is valid, and the fact
    fails for a full mask or a first token that is not exactly a unit vector."""
    from verify.proof._lemmas import try_lemma

    inst, _ = _causal_circle([[1, 0], ["3/5", "4/5"], ["-3/5", "4/5"]])
    enc = Enclosure(inst)
    document = None
    for t in (Fraction(k, 2) for k in range(1, 9)):
        assert enc.advance(t)
        document, why = try_lemma("sphere-consensus", inst, enc, t)
        if document is not None:
            break
    assert document is not None, why
    document["facts"] = [{"fact": "consensus"}, {"fact": "limit-first-token"}]
    document = json.loads(json.dumps(document))
    assert check_certificate(document).valid

    def full(data):
        data["instance"]["model"]["mask"] = "full"

    def not_unit(data):
        data["instance"]["x0"][0] = ["1", "1/1000000"]
    for change in (full, not_unit):
        assert not tampered(document, change).valid, change.__name__


def test_the_limit_plan_names_the_normalised_first_token_or_an_exact_unit_one():
    from verify.proof._plans import NoPlan, plan_facts

    inst, _ = _causal_circle([[1, 0], [0, 1]])
    for equals, normalised in (("ones((n, 1)) * x0[0]", False),
                               ("ones((n, 1)) * x0[0] / norm(x0[0])", True),
                               ("x0[0]/norm(x0[0])", True)):
        facts = plan_facts(ConclusionSpec("limit", {"equals": equals}), "sphere-consensus", inst)
        assert facts[1] == {"fact": "limit-first-token", "normalised": normalised}
    with pytest.raises(NoPlan):
        plan_facts(ConclusionSpec("limit", {"equals": "x0[1]"}), "sphere-consensus", inst)
