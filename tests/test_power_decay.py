"""Lemma power-decay (V = -μI collapse, verify/lemmas/power_decay.py): its bound against closed
forms and a reduced ODE, against twice the digits, its refusals, its certificate's tampering,
and the proofs it gives the V = -I claims."""

import json
import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from certificate_helpers import tampered
from flint import arb, arb_mat, ctx
from scipy.integrate import solve_ivp

from verify.claim import (
    Basis,
    CheckRequest,
    InstanceResult,
    InstanceVerdict,
    load_claim,
    parse_conclusions,
)
from verify.enclosure import Enclosure
from verify.lemmas import check_certificate, power_decay
from verify.lemmas._balls import CheckFailure, ball_text, parse_ball
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof import proof_budget, prove_result
from verify.proof._lemmas import instance_text, lemma_for
from verify.proof._plans import NoPlan, plan_facts
from verify.run import Budget, InlineExecutor, check_conjecture, load_conjecture, run_claims

CLAIMS = Path(__file__).resolve().parent.parent / "claims"


def _exact(inst):
    return read_instance({"instance": instance_text(inst)})


def _report(inst, t1=Fraction(0), x=None, R=None):
    exact = _exact(inst)
    balls = arb_mat([[arb(Fraction(v).numerator) / Fraction(v).denominator for v in row]
                     for row in exact.x0]) if x is None else x
    if R is None:
        probe = power_decay.check(exact, t1, balls, {"R": "1"})
        R = power_decay.radius_for(float(parse_ball(probe.conclusions["L1"]).upper()))
    return power_decay.check(exact, t1, balls, {"R": str(R)})


def _bound(report, t):
    return power_decay.bounds_at(report.conclusions, Fraction(t))


def test_one_token_decays_as_its_closed_form_and_stays_under_the_bound():
    """n = 1: P = 1, so x(t) = e^{-μt} x(0) and L(t) = e^{|x|²} - 1 exactly."""
    inst = Instance(Model(V=[[-2, 0], [0, -2]], form="x"), [[1, Fraction(1, 2)]])
    report = _report(inst)
    assert report.holds
    for t in (0, Fraction(1, 3), 1, 5, 40):
        r2 = mpmath.mpf(5) / 4 * mpmath.e ** (-4 * mpmath.mpf(Fraction(t).numerator)
                                              / Fraction(t).denominator)  # |x(t)|²
        bounds = _bound(report, t)
        assert float(bounds["Lambda"].upper()) >= float(mpmath.e ** r2 - 1)
        assert float(bounds["max_norm"].upper()) >= float(mpmath.sqrt(r2))


def _pair(u0: float, times: list) -> list:
    """Two tokens ±u on a line (V = -1, B = 1): u' = -u tanh(u²), a reduced ODE (SciPy's
    DOP853 at a tolerance far below the factors compared)."""
    solution = solve_ivp(lambda s, u: -u * np.tanh(u * u), (0, max(times)), [u0],
                         method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    return list(solution.y[0])


def test_two_opposite_tokens_follow_the_reduced_ode_under_a_bound_of_the_right_order():
    """x_1 = -x_2 = u: u ~ (2t)^{-1/2}; the certified bound C (t + a)^{-1/2} is above u at every
    time and within a fixed factor of it late (the exponent 1/2 is the true one)."""
    inst = Instance(Model(V=[[-1]], form="x"), [[Fraction(1, 2)], [Fraction(-1, 2)]])
    report = _report(inst)
    assert report.holds and report.conclusions["exponent"] == "1/2"
    times = [1, 10, 100, 400]
    ratios = []
    for t, u in zip(times, _pair(0.5, times), strict=True):
        bound = _bound(report, t)
        assert float(bound["max_norm"].upper()) >= u
        ratios.append(float(bound["max_norm"].upper()) / u)
        gap = math.tanh(2 * u * u) / 2  # |P_ij - 1/2| = |tanh(2u²)|/2
        assert float(bound["P_gap"].upper()) >= gap
    assert ratios[-1] < 10 and abs(ratios[-1] - ratios[-2]) < 0.5 * ratios[-2]


def test_the_lemma_on_an_enclosure_agrees_at_twice_the_digits():
    """Three tokens in the plane, t1 = 1: the energy bound from 128-bit and 256-bit enclosures
    overlaps, and the finer one is the tighter."""
    inst = Instance(Model(V=[[-1, 0], [0, -1]], form="x"),
                    [[1, 0], [0, Fraction(1, 2)], [Fraction(-1, 3), Fraction(-1, 4)]])
    L = {}
    for bits in (128, 256):
        enc = Enclosure(inst, bits=bits, tol=2.0 ** -40 if bits == 128 else 2.0 ** -56)
        assert enc.advance(1)
        with ctx.workprec(bits):
            report = _report(inst, Fraction(1), enc.x_at(1), R=Fraction(1))
            assert report.holds
            L[bits] = parse_ball(report.conclusions["L1"])
    assert float(L[256].upper()) <= float(L[128].upper()) < float(L[256].upper()) * (1 + 1e-9)
    # and L decreased from t = 0 (the energy is non-increasing)
    assert float(L[256].upper()) < float(parse_ball(_report(inst).conclusions["L1"]).lower())


@pytest.mark.parametrize("V, B, why", [
    ([[1, 0], [0, 1]], None, "V = -μI"),                  # expanding: no collapse lemma
    ([[-1, 0], [0, -2]], None, "V = -μI"),                # not a multiple of I
])
def test_the_lemma_refuses_another_value_matrix(V, B, why):
    inst = Instance(Model(V=V, form="x"), [[1, 0], [0, 1]])
    with pytest.raises(CheckFailure, match=why):
        _report(inst, R=Fraction(1))
    assert lemma_for(inst.model) != power_decay.ID


def test_the_lemma_refuses_an_indefinite_form_and_a_mask():
    indefinite = Instance(Model(V=[[-1, 0], [0, -1]], Q=[[1, 2], [0, 1]], K=[[1, 0], [0, 1]],
                                form="x"), [[1, 0], [0, 1]])
    with pytest.raises(CheckFailure, match="symmetric"):  # B = [[1, 2], [0, 1]]
        _report(indefinite, R=Fraction(1))
    exact = _exact(indefinite)
    assert power_decay.gershgorin_lower(exact.B) is None
    assert lemma_for(indefinite.model) is None
    wide = Instance(Model(V=[[-1, 0], [0, -1]], Q=[[1, 2], [2, 1]], K=[[1, 0], [0, 1]],
                          form="x"), [[1, 0], [0, 1]])  # symmetric, Gershgorin bound -1
    report = _report(wide, R=Fraction(1))
    assert not report.holds and [q.name for q in report.failed()] == ["B_definite"]
    assert lemma_for(wide.model) is None
    masked = Instance(Model(V=[[-1]], mask="causal", form="x"), [[1], [2]])
    with pytest.raises(CheckFailure, match="plain model"):
        _report(masked, R=Fraction(1))


def test_a_radius_below_the_energy_fails_its_inequality():
    inst = Instance(Model(V=[[-1]], form="x"), [[2], [-1]])
    report = _report(inst, R=Fraction(1, 2))
    assert not report.holds and [q.name for q in report.failed()] == ["R"]


# ---------------------------------------------------------------------- certificates and tamper
@pytest.fixture(scope="module")
def certificate():
    claim = load_claim(CLAIMS / "collapse-negative-identity.toml")
    family = claim.family("one-far-token")
    request = CheckRequest(claim, family, family.instance(0), None, Fraction(family.horizon),
                           family.checkpoints, family.precision, dict(claim.parameters))
    undecided = InstanceResult(request.instance.name, family.name, None,
                               InstanceVerdict.INCONCLUSIVE, "not judged yet")
    with proof_budget(60):
        result = prove_result(request, undecided)
    assert result.basis is Basis.CERTIFICATE, result.evidence.get("proof")
    return json.loads(json.dumps(result.certificate["document"]))


def test_the_collapse_claim_is_proved_with_every_conclusion(certificate):
    assert certificate["lemma"]["id"] == "power-decay"
    assert [f["fact"] for f in certificate["facts"]] == ["power-law-decay", "power-law-decay",
                                                         "max-norm-bound"]
    assert check_certificate(certificate).valid


def test_a_widened_ball_a_moved_token_and_a_changed_lemma_are_rejected(certificate):
    def widen(data):
        ball = parse_ball(data["enclosure"]["tokens"][0][0])
        data["enclosure"]["tokens"][0][0] = ball_text(arb(ball.mid(), arb("0.01")))

    def move(data):
        data["enclosure"]["tokens"][1] = list(data["enclosure"]["tokens"][0])

    def relabel(data):
        data["lemma"]["id"] = "sphere-consensus"

    for change in (widen, move, relabel):
        assert not tampered(certificate, change).valid, change.__name__


def test_a_smaller_radius_a_faster_power_and_a_lower_floor_are_rejected(certificate):
    def shrink(data):
        data["lemma"]["parameters"]["R"] = "1"

    def faster(data):
        data["facts"][0] = {**data["facts"][0], "exponent_at_least": "1"}

    def strict_half(data):
        data["facts"][0] = {**data["facts"][0], "exponent_at_least": "1/2", "strict": True}

    def lower_floor(data):
        data["facts"][2] = {**data["facts"][2], "floor_squared": "1/1000"}

    for change in (shrink, faster, strict_half, lower_floor):
        result = tampered(certificate, change)
        assert not result.valid, change.__name__
    # the facts belong to this lemma only
    assert not tampered(certificate, lambda d: d["facts"].append({"fact": "consensus"})).valid


def test_a_run_of_the_collapse_claim_proves_every_instance(tmp_path):
    claim = load_claim(CLAIMS / "collapse-negative-identity.toml")
    claim = replace(claim, families=(claim.family("one-far-token"),))
    run = run_claims([claim], out_dir=tmp_path, executor=InlineExecutor(), progress=False,
                     budget=Budget(proof=60))
    (record,) = run.records.values()
    result = InstanceResult.from_json(record["result"])
    assert result.basis is Basis.CERTIFICATE and "power-decay" in result.reason


def test_the_restated_conjecture_is_proved_on_its_draws(tmp_path):
    """claims/conjectures/negative-identity-collapse.toml: inconclusive by the trend (its
    comment), every draw proved with proofs on."""
    conj = load_conjecture(CLAIMS / "conjectures" / "negative-identity-collapse.toml")
    run = check_conjecture(conj, out_dir=tmp_path, instances=2, seed=0,
                           executor=InlineExecutor(), instance_budget=Budget(proof=60))
    verdict = run.claim_results[0]
    assert verdict.verdict.value == "supported", verdict.reason
    assert verdict.grades["proved"] == sum(verdict.grades.values()) == 2


def test_a_conclusion_on_the_rescaled_tokens_gets_no_collapse_proof():
    """In the rescaled form a conclusion without a variable reads z = e^{μt} x, which does not
    tend to 0: only an explicit variable x is planned."""
    inst = Instance(Model(V=[[-1]]), [[1], [2]])  # form z
    (implicit,) = parse_conclusions([{"type": "consensus"}], "<test>")
    with pytest.raises(NoPlan):
        plan_facts(implicit, power_decay.ID, inst)
    (explicit,) = parse_conclusions([{"type": "consensus", "variable": "x"}], "<test>")
    assert plan_facts(explicit, power_decay.ID, inst) == [{"fact": "collapse"}]
