"""Proved on this instance (verify.proof): the grade, its certificate file, its limits."""

import json
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from verify.claim import (
    Basis,
    CheckRequest,
    InstanceResult,
    InstanceVerdict,
    judge_claim,
    load_claim,
    parse_conclusions,
    recheck_record,
)
from verify.cli import main
from verify.lemmas import check_certificate, check_file
from verify.proof import MARK_STEP, proof_budget, prove_result
from verify.run import Budget, InlineExecutor, load_conjecture, run_claims

CLAIMS = Path(__file__).resolve().parent.parent / "claims"


def _request(claim, family_name):
    family = claim.family(family_name)
    instance = family.instance(0)
    return CheckRequest(claim, family, instance, None, Fraction(family.horizon),
                        family.checkpoints, family.precision, dict(claim.parameters))


def _prove_square_with_centre(budget: float):
    """polytope's square-with-centre (proved at t1 = 1) through prove_result: the result and
    its proof evidence."""
    claim = load_claim(CLAIMS / "polytope.toml")
    request = _request(claim, "square-with-centre")
    with proof_budget(budget):
        result = prove_result(request, _undecided(request))
    return result, result.evidence["proof"]


def _undecided(request):
    return InstanceResult(request.instance.name, request.family.name, None,
                          InstanceVerdict.INCONCLUSIVE, "not judged yet")


def test_an_escape_is_proved_for_all_time_with_a_checked_certificate():
    claim = load_claim(CLAIMS / "escape-threshold.toml")
    request = _request(claim, "two-tokens")
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.verdict is InstanceVerdict.HOLDS and result.basis is Basis.CERTIFICATE
    assert result.reason.startswith("proved on this instance (for all t ≥ 0)")
    document = result.certificate["document"]
    assert document["lemma"]["id"] == "leader-map"
    assert [f["fact"] for f in document["facts"]] == ["limit-signs"]
    assert result.evidence["estimate"]["verdict"] == "inconclusive"


def test_a_conclusion_without_a_proof_keeps_the_estimate_and_says_why():
    claim = load_claim(CLAIMS / "escape-threshold.toml")
    claim = replace(claim, conclusions=parse_conclusions(
        [{"type": "escapes", "at_most_bounded": 0, "same_sign": True}], "<mutation>"))
    request = _request(claim, "two-tokens")
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is None and result.verdict is InstanceVerdict.INCONCLUSIVE
    assert "has no proof through lemma leader-map" in result.evidence["proof"]["reason"]


def test_no_proof_is_tried_with_a_zero_budget_or_on_a_violation():
    claim = load_claim(CLAIMS / "escape-threshold.toml")
    request = _request(claim, "two-tokens")
    with proof_budget(0):
        assert "proof" not in prove_result(request, _undecided(request)).evidence
    violated = InstanceResult(request.instance.name, "two-tokens", None,
                              InstanceVerdict.VIOLATED, "violated", margin=-1.0, error=0.1)
    assert prove_result(request, violated) is violated


def test_a_run_writes_certificates_the_checker_accepts_and_counts_the_grades(tmp_path, capsys):
    claim = load_claim(CLAIMS / "escape-threshold.toml")
    claim = replace(claim, families=(claim.family("two-tokens"),))
    run = run_claims([claim], out_dir=tmp_path, executor=InlineExecutor(), progress=False,
                     budget=Budget(proof=60))
    (record,) = run.records.values()
    result = InstanceResult.from_json(record["result"])
    assert result.basis is Basis.CERTIFICATE and result.certificate["kind"] == "proof"
    path = tmp_path / result.certificate["file"]
    assert check_file(path).valid
    assert main(["certificate", str(path)]) == 0
    capsys.readouterr()
    grades = judge_claim(claim, [result]).grades
    assert grades == {"proved": 1, "violated": 0, "estimate": 0, "evidence": 0, "unstated": 0,
                      "undecided": 0}
    assert "document" not in json.dumps(record["result"]["certificate"])


def test_grades_count_a_rigorous_violation_apart_and_an_estimated_one_as_undecided():
    claim = load_claim(CLAIMS / "escape-threshold.toml")

    def violated(basis):  # and confirmed by its re-check, as the runner does
        first = InstanceResult("i#0", "f", None, InstanceVerdict.VIOLATED, "violated",
                               margin=-1.0, error=0.1, basis=basis)
        return replace(first, rechecked=recheck_record(first, precision=30, horizon=30))

    grades = judge_claim(claim, [violated(Basis.CERTIFICATE), violated(Basis.ESTIMATE)]).grades
    assert grades["proved"] == 0 and grades["violated"] == 1 and grades["undecided"] == 1


def test_the_proof_budget_counts_cpu_seconds_not_waiting():
    from types import SimpleNamespace

    from verify.proof._prove import _expiry

    expired = _expiry(SimpleNamespace(parameters={"proof_seconds": 0.3}))
    time.sleep(0.5)  # a loaded machine: the wall clock runs, this thread computes nothing
    assert not expired()
    start = time.thread_time()
    while time.thread_time() - start < 0.4:
        pass
    assert expired()


@pytest.mark.parametrize("conclusion, rate_text", [
    ({"type": "exists", "constants": {"C": "(0, inf)", "lam": "(0, inf)"},
      "quantity": "diameter", "variable": "x", "bound": "C * exp(-lam * t)"}, "λ = κ/2"),
    ({"type": "rate", "law": "exponential", "relation": ">", "value": 0,
      "quantity": "diameter", "variable": "x"}, "λ = κ/2"),
])
def test_an_exponential_consensus_bound_is_proved_on_the_circle(conclusion, rate_text):
    claim = load_conjecture(CLAIMS / "conjectures" / "exists-exponential-consensus.toml").claim
    claim = replace(claim, conclusions=parse_conclusions([conclusion], "<test>"))
    request = _request(claim, "three-radians")
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is Basis.CERTIFICATE, result.evidence["proof"]
    document = result.certificate["document"]
    assert document["lemma"]["id"] == "sphere-consensus"
    check = check_certificate(document)
    assert check.valid and rate_text in check.facts[0][2]
    # a rate the lemma does not certify is refused by the checker
    asked = dict(document["facts"][0], rate_above="1000")
    assert not check_certificate({**document, "facts": [asked]}).valid


def test_a_theta_statement_has_no_proof_through_the_consensus_lemma():
    claim = load_conjecture(CLAIMS / "conjectures" / "theta-consensus-rate.toml").claim
    request = _request(claim, "three-radians")
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is None and "has no proof" in result.evidence["proof"]["reason"]


def test_a_score_tie_is_not_integrated_at_all_and_says_why():
    # square with edge midpoints: a midpoint's scores with the two vertices of its edge tie
    # exactly (a symmetry) and with itself in the limit, so no strict leader map ever exists;
    # its margin creeps towards 0 from below, which the look-ahead's balls do not read as
    # holding: no enclosure is computed and the reason names the inequality and its margin
    claim = load_claim(CLAIMS / "polytope.toml")
    request = _request(claim, "square-with-edge-midpoints")
    with proof_budget(600):
        result = prove_result(request, _undecided(request))
    proof = result.evidence["proof"]
    assert result.basis is None and proof["marks_tried"] == [] and "enclosure" not in proof
    assert "no proof tried: lemma leader-map fails at every t1 = 0, 0.5, ..., 18" in \
        proof["reason"]
    assert "inequality g_out (best margin -" in proof["reason"]
    assert proof["look_ahead"]["first"] is None and proof["look_ahead"]["reached"] == "18"
    assert proof["reason"] in result.reason


def test_a_provable_instance_is_enclosed_straight_to_where_the_lemma_holds_in_floats():
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    assert check_certificate(result.certificate["document"]).valid
    ahead = proof["look_ahead"]
    first, mark = Fraction(ahead["first"]), Fraction(ahead["reached"])
    # the lemma fails in floats at the marks before the mark where it holds (1), and at the
    # points of the finer grid between the mark before (1/2) and t*, so the proof tried it
    # first at t* and nowhere before
    assert all(failing for _, failing in ahead["margins"] + ahead["refined"])
    assert [Fraction(t) for t, _ in ahead["margins"]] == \
        [Fraction(k, 2) for k in range(int(2 * mark))]
    assert mark - MARK_STEP < first < mark and first.denominator == 16
    assert [Fraction(t) for t, _ in ahead["refined"]] == \
        [t for t in (Fraction(k, 16) for k in range(16)) if mark - MARK_STEP < t < first]
    assert proof["marks_tried"][0] == float(first) and Fraction(proof["t1"]) == first


def test_after_a_failure_at_the_look_aheads_mark_the_later_marks_are_tried(monkeypatch):
    # a look-ahead too optimistic (here: pretending the lemma holds at 0) costs one failed
    # attempt per mark, not the proof: the marks after it are tried in turn
    import verify.proof._prove as prove

    def optimistic(request, lemma, enclosure, marks, runs):
        return {"first": "0", "reached": "0", "margins": []}

    monkeypatch.setattr(prove, "look_ahead", optimistic)
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    assert proof["marks_tried"] == [k / 2 for k in range(int(2 * float(proof["t1"])) + 1)]
    assert [t for t, _ in proof["margins"]] == proof["marks_tried"][:-1]


def test_a_failed_float_run_falls_back_to_trying_every_mark(monkeypatch):
    import verify.proof._prove as prove
    from verify.errors import IntegrationError

    def failing(*args, **kwargs):
        raise IntegrationError("Required step size is less than spacing between numbers")

    monkeypatch.setattr(prove, "simulate", failing)
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    ahead = proof["look_ahead"]
    assert ahead["first"] is None and ahead["reached"] == "0" and ahead["after"] == "1/2"
    assert "the float64 run failed: Required step size" in ahead["reason"]
    assert proof["marks_tried"][0] == 0.5


def test_the_look_ahead_needs_the_lemma_to_hold_not_margins_to_improve():
    # a margin creeping towards 0 from below (a tie in the limit) improves at every mark but
    # never holds: the look-ahead reports its best margin and where, and no first mark
    from verify.proof._prove import _nowhere

    history = [[k / 2, {"g_out": -1e-3 / (k + 1)}] for k in range(9)]
    why = _nowhere("leader-map", history, "g_out fails (margin -0.000111)", Fraction(4))
    assert why.startswith("lemma leader-map fails at every t1 = 0, 0.5, ..., 4 ")
    assert "inequality g_out (best margin -0.000111 at t1 = 4, -0.000111 at t1 = 4)" in why
    assert _nowhere("good-triple", [[0.0, {}]], "the chains do not end", Fraction(0)).endswith(
        "at t1 = 0, the chains do not end")


def test_the_stopping_rule_on_margin_sequences():
    from verify.proof._prove import failing_margins, stalled

    assert failing_margins("the argmax chains do not end at self-attending leaders yet.") == {}
    assert not stalled([{}, {"g": -1.0}, {"g": -1.0}, {"g": -1.0}])  # a mark without margins
    assert not stalled([{"g": -1.0}] * 3)  # not enough marks
    assert stalled([{"g": -26.5}, {"g": -27.7}, {"g": -31.2}, {"g": -35.9}])
    assert not stalled([{"g": -1.0}, {"g": -1.0}, {"g": -1.0}, {"g": 0.5}])
    # spd-3d#1 of polytope: the score gaps improve, then the allowances fail: progress
    assert not stalled([{"g_in": -0.718}, {"g_in": -0.155}, {"g_in": -0.0525},
                        {"rho": -7.18e3}])
    # an improvement within the window (0.5 -> 1 of square-with-edge-midpoints) is no stall
    assert not stalled([{"g": -7.01e-9}, {"g": -6.22e-9}, {"g": -7.03e-9}, {"g": -6.98e-9}])


def test_the_good_triples_dominance_is_followed_without_its_exponential_factor():
    # hyperplanes' symmetric-middle (lambda_1 = 2): G_+ grows more negative from t1 = 0 to 1.5
    # and holds at t1 = 2; G_+ e^{-2 lambda_1 t1} improves at every mark, so no stall
    from verify.lemmas import good_triple
    from verify.proof._prove import comparable_margins, stalled

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    instance = claim.family("symmetric-middle").instance(0)
    raw = [-6.58, -13.7, -33.8, -45.0]
    assert stalled([{"dominance-plus": g} for g in raw])
    seen = [comparable_margins(good_triple.ID, instance, Fraction(k, 2),
                               {"dominance-plus": g, "mu-plus": -1.0})
            for k, g in enumerate(raw)]
    assert all(set(m) == {"dominance-plus"} for m in seen) and not stalled(seen)


def test_an_undecided_instance_says_why_no_proof_could_be_tried():
    claim = load_claim(CLAIMS / "mlp.toml")
    request = _request(claim, claim.families[0].name)
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.verdict is InstanceVerdict.INCONCLUSIVE and result.basis is None
    assert result.reason.startswith("not judged yet [no proof for all t could be tried: ")
    assert result.evidence["proof"]["reason"] in result.reason


def test_a_budget_that_ends_before_the_look_aheads_mark_says_where_the_lemma_held(monkeypatch):
    # a fake CPU clock: one unit per reading (the enclosure reads it before every step), so 5
    # units stop the enclosure after a few steps, long before t* = 1 (32 steps)
    import itertools
    from types import SimpleNamespace

    import verify.proof._prove as prove

    ticks = itertools.count()
    monkeypatch.setattr(prove, "time", SimpleNamespace(
        thread_time=lambda: float(next(ticks)), perf_counter=time.perf_counter,
        monotonic=time.monotonic))
    result, proof = _prove_square_with_centre(5)
    assert result.basis is None and proof["marks_tried"] == []
    first = Fraction(proof["look_ahead"]["first"])
    assert proof["enclosure"]["status"] == "budget"
    assert "the time budget ran out at t = " in proof["reason"]
    assert proof["reason"].endswith(
        f"(the look-ahead saw the lemma hold in floats from t1 = {float(first):g})")
    assert 0 < Fraction(proof["enclosure"]["t"]) < first
    # the record counts the budget's clock (5 fake units spent), not the wall clock
    assert proof["cpu_seconds"] >= 5 and proof["cpu_seconds"] > proof["seconds"]


def test_order_fact_holds_across_long_steps():
    """order-preserved uniform#2 at 128 bits to t1 = 9/2: the enclosure's steps are long enough
    that a quarter step moves a token's box by more than its narrowest gap; the steps where a
    gap is not positive are cut finer, and the fact's smallest gap is a lower bound of every
    consecutive gap at t1."""
    from verify.enclosure import Enclosure
    from verify.proof._prove import _order_before

    claim = load_claim(CLAIMS / "order-preserved.toml")
    family = next(f for f in claim.families if f.name == "uniform")
    instance = family.instance(2)
    enclosure = Enclosure(instance)
    assert enclosure.advance(Fraction(9, 2))
    fact = _order_before(enclosure, Fraction(9, 2))
    assert fact is not None and fact["smallest_gap"] > 0
    z = enclosure.z_at(Fraction(9, 2))
    order = sorted(range(instance.n), key=lambda i: instance.x0[i, 0])
    for i, j in zip(order, order[1:], strict=False):
        assert fact["smallest_gap"] <= float((z[j, 0] - z[i, 0]).upper())


def test_a_good_triple_proof_carries_the_followers_drift_beside_it(tmp_path):
    """After a hyperplanes (good-triple) proof, lemma hyperplane-drift on the same enclosure at
    the same t1: V = diag(1, -1/2), both tokens on one side, far apart along φ1 (both lemmas
    hold on the exact tokens, t1 = 0), the follower drifts like e^(t/2). The claim's verdict
    and certificate are the good triple's; the drift is in the evidence and in the statement,
    and its own certificate is written beside and accepted."""
    from verify.model import Instance, Model
    from verify.proof import write_certificate

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    family = claim.family("symmetric-middle")
    instance = Instance(Model(V=[[1, 0], [0, Fraction(-1, 2)]]),
                        [[10, 0], [9, 1]], name="drift#0")
    request = CheckRequest(claim, family, instance, None, Fraction(4), family.checkpoints,
                           family.precision, dict(claim.parameters))
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.verdict is InstanceVerdict.HOLDS and result.basis is Basis.CERTIFICATE
    document = result.certificate["document"]
    assert document["lemma"]["id"] == "good-triple" and check_certificate(document).valid
    drift = result.evidence["proof"]["drift"]
    assert drift["behaviour"] == "drifts" and drift["t1"] == result.certificate["t1"]
    assert drift["sides"] == {"plus": {"leader": 0, "followers": [1], "behaviour": "drifts",
                                       "certified": [1], "rates": ["0.5"]}}
    assert "side plus (leader 0): 1 of 1 followers drift away along their hyperplane like " \
           "e^(0.5 t)" in result.reason
    [companion] = result.certificate["companions"]
    assert companion["document"]["lemma"]["id"] == "hyperplane-drift"
    assert companion["document"]["enclosure"]["tokens"] == document["enclosure"]["tokens"]
    assert check_certificate(companion["document"]).valid
    record = write_certificate({"claim": claim.id, "family": family.name, "k": 0,
                                "result": result.to_json()}, tmp_path)
    written = InstanceResult.from_json(record["result"]).certificate
    files = [written["file"], written["companions"][0]["file"]]
    assert files[1] == "certificates/hyperplanes-symmetric-middle-0-hyperplane-drift.json"
    assert all(check_file(tmp_path / f).valid for f in files)


def test_a_good_triple_proof_whose_drift_is_undecided_is_unchanged(monkeypatch):
    """The drift lemma failing at t1 (here: made to fail) leaves the proof as it is and says
    why in the evidence."""
    import verify.proof._prove as prove

    original = prove.try_lemma

    def no_drift(lemma, instance, enclosure, t1):
        if lemma == "hyperplane-drift":
            return None, "the leaders at t = 2 do not trap the followers: lead-plus fails"
        return original(lemma, instance, enclosure, t1)

    monkeypatch.setattr(prove, "try_lemma", no_drift)
    claim = load_claim(CLAIMS / "hyperplanes.toml")
    request = _request(claim, "symmetric-middle")
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is Basis.CERTIFICATE and "companions" not in result.certificate
    drift = result.evidence["proof"]["drift"]
    assert drift["behaviour"] == "undecided" and "lead-plus fails" in drift["reason"]
    assert "decides nothing about the followers" in result.reason


# ------------------------------------------------------------------- the pace stop (fake clock)
#: The 128-bit enclosure of hyperplanes paper-3d-negative-pair#0 to t* = 3 (proved there):
#: (CPU s, t reached), every 2 CPU s (traced on this machine, load 2-10). A slow stretch at
#: t = 0.7..1.2, then five times faster: the calibration case of the pace stop.
NEGATIVE_PAIR = [
    (0.0, 0.0), (2.0, 0.0722), (4.0, 0.1874), (6.0, 0.2513), (8.0, 0.3214), (10.0, 0.3698),
    (12.1, 0.4629), (14.1, 0.5602), (16.1, 0.6169), (18.0, 0.6548), (20.0, 0.6889),
    (22.0, 0.7253), (24.1, 0.7541), (26.1, 0.772), (28.0, 0.7876), (30.0, 0.8054),
    (32.0, 0.8232), (34.1, 0.8424), (36.1, 0.8636), (38.0, 0.8868), (40.0, 0.9119),
    (42.1, 0.9423), (44.1, 0.9681), (46.1, 1.0331), (48.0, 1.0807), (50.1, 1.1003),
    (52.1, 1.1132), (54.1, 1.1259), (56.1, 1.1424), (58.1, 1.1682), (60.1, 1.2178),
    (62.1, 1.304), (64.1, 1.4187), (66.1, 1.5335), (68.0, 1.654), (70.0, 1.7802),
    (72.1, 1.8949), (74.0, 2.0097), (76.1, 2.1647), (78.0, 2.3332), (80.1, 2.517),
    (82.0, 2.6589), (84.0, 2.7623), (86.0, 2.8751), (88.0, 2.9879), (88.2, 3.0)]
#: random-good-triple#0's 128-bit enclosure: steady, then its steps collapse at t = 1.9636
#: (the balls lose their accuracy; it failed 38 CPU s later).
COLLAPSING = [(0.0, 0.0), (10.1, 1.1571), (20.0, 1.4879), (30.0, 1.6965), (40.1, 1.8537),
              (48.0, 1.9505), (49.5, 1.9635), (88.0, 1.9635)]


def _replay(profile, budget, target, *, slower=1.0, step_cpu=0.05):
    """Drive a _Pace with a fake clock along ``profile`` ((CPU s, t) points, linearly
    interpolated; CPU times multiplied by ``slower``), one step per ``step_cpu`` CPU s, until it
    stops or the target is reached: the pace, the CPU spent and the t reached."""
    import numpy as np

    from verify.proof._prove import _Pace

    cpu, ts = (np.array([p[i] for p in profile]) for i in (0, 1))
    clock = SimpleNamespace(seconds=budget, spent=0.0)
    clock.now, clock.remaining = lambda: clock.spent, lambda: budget - clock.spent
    enclosure = SimpleNamespace(t=Fraction(0), steps=[])
    pace = _Pace(lambda: clock.spent > budget, enclosure, Fraction(target), clock)
    while enclosure.t < target and not pace():
        clock.spent += step_cpu
        t = Fraction(float(np.interp(clock.spent / slower, cpu, ts))).limit_denominator(10**15)
        enclosure.steps.append(SimpleNamespace(h=max(t - enclosure.t, Fraction(1, 10**20))))
        enclosure.t = max(t, enclosure.t)
    return pace, clock.spent, float(enclosure.t)


def test_the_pace_stop_spares_the_provable_instance_it_is_calibrated_on():
    pace, spent, reached = _replay(NEGATIVE_PAIR, 120.0, 3)
    assert pace.stopped is None and reached == 3 and spent < 90
    # 30 % slower (115 CPU s of its 120): still not stopped
    pace, spent, reached = _replay(NEGATIVE_PAIR, 120.0, 3, slower=1.3)
    assert pace.stopped is None and reached == 3


def test_the_pace_stop_ends_an_enclosure_that_cannot_reach_its_target_and_says_why():
    # the same enclosure twice as slow needs 176 CPU s: stopped well before the budget ends
    pace, spent, reached = _replay(NEGATIVE_PAIR, 120.0, 3, slower=2.0)
    s = pace.stopped
    assert s is not None and not s["collapsed"] and spent < 120 and reached < 3
    assert s["projected_cpu"] > 2 * s["left_cpu"] - 0.1  # both rounded in the record
    assert s["reached"] == pytest.approx(reached, abs=1e-4)
    why = pace.reason()
    assert why.startswith(f"the enclosure stopped early at t = {s['reached']:g} after "
                          f"{s['cpu_spent']:g} CPU s")
    assert "even at the best pace it kept" in why and "reaching t = 3 would take" in why
    assert f"{s['left_cpu']:g} CPU s left" in why


def test_collapsing_steps_are_told_apart_from_a_slow_enclosure():
    pace, spent, reached = _replay(COLLAPSING, 120.0, Fraction(5, 2))
    assert pace.stopped is not None and pace.stopped["collapsed"]
    assert 49.5 < spent < 60 and reached == pytest.approx(1.9635, abs=1e-4)
    assert pace.reason().startswith("the enclosure's steps collapsed at t = 1.9635")


def test_a_stopped_enclosure_leaves_the_estimate_and_the_proof_record_says_why(monkeypatch):
    # a fake CPU clock (one unit per reading) and a pace rule made eager: the proof of
    # square-with-centre (t* = 1) stops early; the estimate-based verdict stands
    import itertools

    import verify.proof._prove as prove

    ticks = itertools.count()
    monkeypatch.setattr(prove, "time", SimpleNamespace(
        thread_time=lambda: float(next(ticks)), perf_counter=time.perf_counter,
        monotonic=time.monotonic, process_time=time.process_time))
    monkeypatch.setattr(prove, "PACE_FACTOR", 1e-3)
    monkeypatch.setattr(prove, "PACE_STEPS", 2)
    monkeypatch.setattr(prove, "PACE_WINDOW", 0.5)
    result, proof = _prove_square_with_centre(200)  # enough without the eager rule
    assert result.basis is None and result.verdict is InstanceVerdict.INCONCLUSIVE
    assert proof["stopped_early"]["target"] == proof["look_ahead"]["first"]
    assert not proof["stopped_early"]["collapsed"]
    assert "the enclosure stopped early at t = " in proof["reason"]
    assert proof["enclosure"]["status"] == "budget"
    assert proof["enclosure"]["message"] in proof["reason"]


def _drift_request() -> CheckRequest:
    """V = diag(1, -1/2), tokens (2, 0) and (1, 1), as an instance of the hyperplanes claim."""
    from verify.model import Instance, Model

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    family = claim.family("symmetric-middle")
    instance = Instance(Model(V=[[1, 0], [0, Fraction(-1, 2)]]), [[2, 0], [1, 1]],
                        name="drift#1")
    request = CheckRequest(claim, family, instance, None, Fraction(4), family.checkpoints,
                           family.precision, dict(claim.parameters))
    return request


def test_the_drift_beside_a_proof_is_tried_at_later_marks_when_undecided_at_t1(monkeypatch):
    """V = diag(1, -1/2), tokens (2, 0) and (1, 1): the good triple holds on the exact tokens
    (t1 = 0: both on one side, no dominance needed), but there the follower does not yet prefer
    the leader (the drift lemma's lead inequality fails). The same enclosure is carried on to
    later marks: the drift is certified at t1 = 3/2, with its own certificate, accepted; with no
    later marks allowed, or no CPU for them, it stays undecided, and the proof and its
    certificate are the same."""
    from verify.proof import _prove

    request = _drift_request()

    def proved(marks: int, share: float = 1.0):
        monkeypatch.setattr(_prove, "DRIFT_MARKS", marks)
        monkeypatch.setattr(_prove, "DRIFT_SHARE", share)
        monkeypatch.setattr(_prove, "DRIFT_SECONDS", 10.0 * share)
        with proof_budget(60):
            return prove_result(request, _undecided(request))

    later, only_t1, no_share = proved(4), proved(0), proved(4, share=0.0)
    assert no_share.evidence["proof"]["drift"]["behaviour"] == "undecided"
    # the marks 1/2 and 1, where the lemma fails in floats, are skipped: carried on to 3/2
    assert "the enclosure stopped before t1 = 3/2" in no_share.evidence["proof"]["drift"]["reason"]
    for result in (later, only_t1, no_share):
        assert result.verdict is InstanceVerdict.HOLDS and result.basis is Basis.CERTIFICATE
        assert result.certificate["t1"] == "0"
    assert later.certificate["document"] == only_t1.certificate["document"]
    assert only_t1.evidence["proof"]["drift"]["behaviour"] == "undecided"
    assert "companions" not in only_t1.certificate
    drift = later.evidence["proof"]["drift"]
    assert drift["behaviour"] == "drifts" and drift["t1"] == "3/2"
    assert "lemma hyperplane-drift at t1 = 1.5 certifies" in later.reason
    [companion] = later.certificate["companions"]
    assert companion["document"]["enclosure"]["t1"] == "3/2"
    assert check_certificate(companion["document"]).valid


def test_a_coarse_enclosure_too_wide_for_the_lemma_gives_way_to_the_fine_one(monkeypatch):
    # steps aiming at 2^-12 of the state, and no float balls wider than the look-ahead's
    # measured: the coarse enclosure's balls outgrow the widest float balls on which the lemma
    # held at t* long before t*; it is given up at once and the fine enclosure proves the
    # instance at the same t1, the checker accepting it
    import verify.proof._prove as prove

    monkeypatch.setattr(prove, "COARSE", {"bits": 128, "tol": 2.0 ** -12})
    monkeypatch.setattr(prove, "ALLOWANCE_MAX", prove.LOOKAHEAD_RADIUS)
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    assert check_certificate(result.certificate["document"]).valid
    coarse, allowance = proof["coarse"], proof["look_ahead"]["allowance"]
    assert "grew wider" in coarse["why"] and Fraction(coarse["t"]) < Fraction(proof["t1"])
    assert proof["t1"] == proof["look_ahead"]["first"]
    assert allowance == prove.LOOKAHEAD_RADIUS


def test_a_lemma_failing_on_coarse_balls_is_tried_again_on_fine_ones(monkeypatch):
    # the coarse enclosure reaches t* with balls wider than the look-ahead's, and the lemma
    # fails on them (made to: on this instance it holds on balls of 1e-2): the fine enclosure,
    # from 0, proves it at the same t1 — not at a later mark
    import verify.proof._prove as prove

    coarse_tol = 2.0 ** -12
    monkeypatch.setattr(prove, "COARSE", {"bits": 128, "tol": coarse_tol})
    for coarser in (prove.COARSER, prove.COARSEST):
        monkeypatch.setitem(coarser, "allowance", 1.0)  # not tried
    real = prove.try_lemma

    def fails_when_coarse(lemma, instance, enclosure, t1):
        if getattr(enclosure, "tol", None) == coarse_tol:
            return None, "g_in fails (margin -1e-3)"
        return real(lemma, instance, enclosure, t1)

    monkeypatch.setattr(prove, "try_lemma", fails_when_coarse)
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    assert proof["coarse"]["why"] == f"the lemma fails at t1 = {proof['t1']}: g_in fails " \
        "(margin -1e-3)"
    assert proof["coarse"]["radius"] > proof["enclosure"]["radius"]
    assert proof["marks_tried"] == [float(Fraction(proof["t1"]))]
    assert proof["t1"] == proof["look_ahead"]["first"]


def test_a_coarser_enclosure_too_wide_for_the_lemma_gives_way_to_the_coarse_one(monkeypatch):
    # square-with-centre, float balls measured up to 2^-20 of the state (the allowance) and
    # the coarser enclosure's steps aiming at 2^-12 of the state: its balls outgrow the
    # allowance before t*, and the next one, the coarse enclosure (not the fine one), proves
    # the instance at the same t1 — its steps are those of an enclosure at COARSE's tolerance
    import verify.proof._prove as prove
    from verify.enclosure import Enclosure

    monkeypatch.setattr(prove, "ALLOWANCE_MAX", 2.0 ** -20)
    monkeypatch.setitem(prove.COARSEST, "allowance", 1.0)  # not tried
    monkeypatch.setitem(prove.COARSER, "tol", 2.0 ** -12)
    monkeypatch.setitem(prove.COARSER, "allowance", 2.0 ** -20)
    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE, proof
    assert check_certificate(result.certificate["document"]).valid
    coarse = proof["coarse"]
    assert coarse["tol"] == 2.0 ** -12 and "grew wider" in coarse["why"]
    assert proof["look_ahead"]["allowance"] == 2.0 ** -20
    assert proof["t1"] == proof["look_ahead"]["first"]
    t1 = Fraction(proof["t1"])
    again = Enclosure(_square_with_centre(), tol=prove.COARSE["tol"])
    assert again.advance(t1) and proof["enclosure"]["steps"] == len(again.steps)


def _square_with_centre():
    return _request(load_claim(CLAIMS / "polytope.toml"), "square-with-centre").instance


def test_the_coarse_enclosure_proves_where_its_balls_are_narrow_enough():
    # square-with-centre by default: the coarse enclosure (fewer steps than the fine one
    # to the same t1) proves it; the allowance is where the lemma still holds in floats
    # and fails on balls ALLOWANCE_STEP times wider
    import verify.proof._prove as prove
    from verify.enclosure import Enclosure

    result, proof = _prove_square_with_centre(60)
    assert result.basis is Basis.CERTIFICATE and "coarse" not in proof
    t1 = Fraction(proof["t1"])
    fine = Enclosure(result_instance := _request(load_claim(CLAIMS / "polytope.toml"),
                                                 "square-with-centre").instance)
    assert fine.advance(t1) and proof["enclosure"]["steps"] < len(fine.steps)
    assert proof["enclosure"]["radius"] < proof["look_ahead"]["allowance"]
    # the lemma allows 2^-8 of the state there: the coarsest enclosure, kept
    assert proof["look_ahead"]["allowance"] >= prove.COARSEST["allowance"]
    assert proof["enclosure"]["tol"] == prove.COARSEST["tol"]
    coarsest = Enclosure(result_instance, tol=prove.COARSEST["tol"])
    assert coarsest.advance(t1) and proof["enclosure"]["steps"] == len(coarsest.steps)
    request = SimpleNamespace(instance=result_instance)
    seen = prove._FloatMarks(fine, lambda: prove._float_run(request, [Fraction(0), t1], {}))
    allowance = prove._allowance(request, "leader-map", seen, t1)
    assert allowance == proof["look_ahead"]["allowance"]
    wider = prove._FloatMarks(fine, seen.run, allowance * prove.ALLOWANCE_STEP)
    assert allowance == prove.ALLOWANCE_MAX or \
        prove.try_lemma("leader-map", result_instance, wider, t1)[0] is None


def test_the_good_triples_look_ahead_refines_t_star_between_the_marks():
    # hyperplanes' symmetric-middle: the good triple first holds in floats at the mark 3/2;
    # it is then asked on the finer grid between 1 and 3/2 (REFINED_SEARCH) and starts where it
    # first holds there; an allowance is measured (the followers' drift holds at t* on float
    # balls that wide: it is decided at t1 on a coarse enclosure, not carried on)
    import verify.proof._prove as prove
    from verify.enclosure import Enclosure
    from verify.lemmas import good_triple

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    request = _request(claim, "symmetric-middle")
    ahead = prove.look_ahead(request, good_triple.ID, Enclosure(request.instance),
                             prove._marks(Fraction(6)), {})
    first, mark = Fraction(ahead["first"]), Fraction(ahead["reached"])
    assert mark == Fraction(3, 2) and mark - MARK_STEP < first <= mark
    assert (first * 16).denominator == 1
    assert [Fraction(t) for t, _ in ahead["refined"]] == \
        [t for t in (Fraction(k, 16) for k in range(17, 24)) if t < first]
    assert all(failing for _, failing in ahead["refined"])
    assert ahead["allowance"] is not None


def test_the_good_triple_keeps_the_fine_enclosure_where_the_drift_would_carry_it_on(monkeypatch):
    # the drift test's instance (V = diag(1, -1/2), tokens (2, 0) and (1, 1)) read at t* = 1/4
    # on a float64 run: the drift lemma fails there in floats and holds at a later mark (3/2),
    # so the drift would carry the enclosure on: no coarse enclosure; at t* = 3/2 it holds on
    # float balls as wide as the allowance, and at t* = 1/4 with no later mark tried nothing is
    # ahead: a coarse enclosure may be used
    from verify.enclosure import Enclosure
    from verify.lemmas import hyperplane_drift
    from verify.proof import _prove

    request = _drift_request()
    times = [Fraction(k, 4) for k in range(11)]
    seen = _prove._FloatMarks(Enclosure(request.instance),
                              lambda: _prove._float_run(request, times, {}))

    def holds(t, radius=_prove.LOOKAHEAD_RADIUS):
        wide = _prove._FloatMarks(seen.enclosure, seen.run, radius)
        return _prove.try_lemma(hyperplane_drift.ID, request.instance, wide, t)[0] is not None

    quarter, later = Fraction(1, 4), _prove._drift_marks(Fraction(1, 4))
    assert not holds(quarter) and any(holds(t) for t in later)
    assert not _prove._drift_settled(request, seen, seen, quarter, 2.0 ** -8)
    assert holds(Fraction(3, 2), 2.0 ** -8)
    assert _prove._drift_settled(request, seen, seen, Fraction(3, 2), 2.0 ** -8)
    monkeypatch.setattr(_prove, "DRIFT_MARKS", 1)  # only 1/2, where it fails in floats
    assert not holds(Fraction(1, 2))
    assert _prove._drift_settled(request, seen, seen, quarter, 2.0 ** -8)


def test_the_drift_beside_a_proof_goes_on_along_the_marks_grid_from_any_t1():
    # the drift test's instance further up, proved at t1 = 1/4 (off the marks' grid): the drift is
    # tried there and then at the marks 1/2, 1, 3/2, where it is certified as from t1 = 0 (a
    # step of MARK_STEP from t1 would have tried 3/4, 5/4, 7/4)
    from verify.enclosure import Enclosure
    from verify.proof import _prove

    request = _drift_request()
    enclosure = Enclosure(request.instance)
    assert enclosure.advance(Fraction(1, 4))
    record, document = _prove._drift_beside(request, enclosure, Fraction(1, 4),
                                             _prove._Clock(60.0))
    assert record["behaviour"] == "drifts" and record["t1"] == "3/2"
    assert document is not None and check_certificate(document).valid


def test_the_drift_beside_a_proof_is_not_carried_on_where_it_holds_in_floats_at_no_later_mark(
        monkeypatch):
    # the drift test's instance, proved at t1 = 0, with one later mark allowed (1/2): the drift
    # lemma fails there in floats, so the enclosure stays at t1 and the drift is undecided,
    # saying why; an enclosure carried on to 1/2 (the independent route: what the proof would
    # have done) does not decide it either, and with the later marks up to 3/2 the float
    # balls lead the enclosure straight to 3/2, where it is certified
    from verify.enclosure import Enclosure
    from verify.proof import _prove

    request = _drift_request()
    enclosure = Enclosure(request.instance)
    assert enclosure.advance(0)
    with monkeypatch.context() as patch:
        patch.setattr(_prove, "DRIFT_MARKS", 1)
        record, document = _prove._drift_beside(request, enclosure, Fraction(0),
                                                 _prove._Clock(60.0), {})
    assert record["behaviour"] == "undecided" and document is None
    assert "holds in floats at none of the 1 later marks t1 = 1/2..1/2" in record["reason"]
    assert "not carried on" in record["reason"]
    assert enclosure.t == 0 and not enclosure.steps
    carried = Enclosure(request.instance)
    assert carried.advance(Fraction(1, 2))
    assert _prove._drift_at(request, carried, Fraction(1, 2))[0] is None
    record, document = _prove._drift_beside(request, enclosure, Fraction(0),
                                             _prove._Clock(60.0), {})
    assert record["behaviour"] == "drifts" and record["t1"] == "3/2"
    assert enclosure.marks.keys() == {Fraction(0), Fraction(3, 2)}
    assert document is not None and check_certificate(document).valid


def test_a_good_triple_whose_followers_drift_is_not_ahead_is_proved_on_the_coarse_enclosure():
    # hyperplanes' random-good-triple#1: the followers' drift lemma fails in floats at t* and
    # at the later marks (lead-minus), so the good triple gets the coarse enclosure (an
    # allowance is measured), which proves it at t* with fewer steps than the fine one; the
    # drift is undecided as it is on the fine enclosure at the same t1 (the independent route:
    # what the proof did before), and the enclosure is not carried on for it
    import verify.proof._prove as prove
    from verify.enclosure import Enclosure

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    family = claim.family("random-good-triple")
    request = CheckRequest(claim, family, family.instance(1), family.seed_of(1),
                           Fraction(family.horizon), family.checkpoints, family.precision,
                           dict(claim.parameters))
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is Basis.CERTIFICATE and check_certificate(
        result.certificate["document"]).valid
    proof = result.evidence["proof"]
    t1 = Fraction(proof["t1"])
    assert proof["look_ahead"]["allowance"] is not None and "coarse" not in proof
    assert proof["t1"] == proof["look_ahead"]["first"] and Fraction(proof["enclosure"]["t"]) == t1
    assert proof["drift"]["behaviour"] == "undecided"
    assert "not carried on" in proof["drift"]["reason"]
    fine = Enclosure(request.instance)
    assert fine.advance(t1) and proof["enclosure"]["steps"] < len(fine.steps)
    assert prove._drift_at(request, fine, t1)[0] is None


def _rung_request() -> CheckRequest:
    """V = diag(1, -1/2), tokens (1, 0), (1/2, 1), (-1/4, 0), as an instance of the hyperplanes
    claim: the good triple first holds in floats at t* = 1/2, the followers' drift only at the
    mark 5/2 (so the proof's enclosure is carried on to 5/2 beside it)."""
    from verify.model import Instance, Model

    claim = load_claim(CLAIMS / "hyperplanes.toml")
    family = claim.family("symmetric-middle")
    instance = Instance(Model(V=[[1, 0], [0, Fraction(-1, 2)]]),
                        [[1, 0], [Fraction(1, 2), 1], [Fraction(-1, 4), 0]], name="rung#0")
    return CheckRequest(claim, family, instance, None, Fraction(4), family.checkpoints,
                        family.precision, dict(claim.parameters))


def test_a_good_triple_whose_drift_is_carried_on_is_proved_on_the_rung_its_slack_admits():
    # the slack of both lemmas, measured in floats before anything is enclosed: the good triple
    # at t* = 1/2 holds on float balls of 2^-8 of the state, the drift at 5/2 on 2^-14; the
    # narrower, 2^-14, admits the 2^-36 rung (not 2^-32, which needs 2^-12); the proof is made on
    # it at t*, with fewer steps than the fine enclosure, and the drift is decided at 5/2 on it
    # as on the fine enclosure carried on from t1 (the independent route: what main does)
    import verify.proof._prove as prove
    from verify.enclosure import Enclosure
    from verify.lemmas import good_triple, hyperplane_drift

    request = _rung_request()
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is Basis.CERTIFICATE and check_certificate(
        result.certificate["document"]).valid
    proof = result.evidence["proof"]
    carried = proof["look_ahead"]["carried"]
    assert proof["look_ahead"]["allowance"] is None
    assert carried["mark"] == "5/2" and carried["allowance"] == 2.0 ** -14
    assert carried["allowance"] == min(carried["good_triple"], carried["drift"])
    rung = prove.DRIFT_RUNGS[1]
    assert prove.DRIFT_RUNGS[0]["allowance"] > carried["allowance"] >= rung["allowance"]
    assert proof["enclosure"]["tol"] == rung["tol"] and "coarse" not in proof
    t1 = Fraction(proof["t1"])
    assert t1 == Fraction(proof["look_ahead"]["first"]) == Fraction(1, 2)
    fine = Enclosure(request.instance)
    assert fine.advance(t1) and proof["enclosure"]["steps"] < len(fine.steps)
    assert prove.try_lemma(good_triple.ID, request.instance, fine, t1)[0] is not None
    drift = proof["drift"]
    assert drift["behaviour"] == "drifts" and drift["t1"] == "5/2" and "fallback" not in drift
    [companion] = result.certificate["companions"]
    assert check_certificate(companion["document"]).valid
    assert fine.advance(Fraction(5, 2))
    on_fine = prove.try_lemma(hyperplane_drift.ID, request.instance, fine, Fraction(5, 2))[0]
    assert on_fine["conclusions"]["behaviour"] == "drifts"
    drifting = [{k: w[k] for k in ("side", "leader", "follower", "rate")}
                for w in companion["document"]["conclusions"]["drifting"]]
    assert [{k: w[k] for k in ("side", "leader", "follower", "rate")}
            for w in on_fine["conclusions"]["drifting"]] == drifting == \
        [{"side": "plus", "leader": 0, "follower": 1, "rate": "1*2^-1"}]


def test_a_rung_too_wide_for_the_drift_falls_back_to_the_fine_enclosure_from_0(monkeypatch):
    # the rung's steps aiming at 2^-12 of the state (a real failure, not a faked one): it still
    # proves the good triple at t* = 1/2, but carried on its balls outgrow the drift's slack
    # (2^-14) before 5/2; the fine enclosure, from 0, decides the drift at 5/2 with its own
    # budget, as the fine one carried on from t1 does, and its CPU counts in the drift's
    import verify.proof._prove as prove

    request = _rung_request()
    monkeypatch.setitem(prove.DRIFT_RUNGS[1], "tol", 2.0 ** -12)
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    assert result.basis is Basis.CERTIFICATE and check_certificate(
        result.certificate["document"]).valid
    proof = result.evidence["proof"]
    assert proof["enclosure"]["tol"] == 2.0 ** -12 and proof["t1"] == "1/2"
    drift = proof["drift"]
    assert drift["behaviour"] == "drifts" and drift["t1"] == "5/2"
    fallback = drift["fallback"]
    assert fallback["rung"]["tol"] == 2.0 ** -12 and "grew wider" in fallback["rung"]["why"]
    assert Fraction(1, 2) < Fraction(fallback["rung"]["t"]) < Fraction(5, 2)
    assert fallback["enclosure"]["tol"] == prove.SETTINGS[0]["tol"]
    assert fallback["enclosure"]["t"] == "5/2"
    assert 0 < fallback["cpu_seconds"] <= drift["cpu_seconds"] <= proof["cpu_seconds"]
    [companion] = result.certificate["companions"]
    assert check_certificate(companion["document"]).valid
    assert companion["document"]["enclosure"]["steps"] == fallback["enclosure"]["steps"]


def test_the_fallback_is_taken_when_the_drift_fails_on_the_rung_and_stops_at_its_budget(
        monkeypatch):
    # the drift lemma made to fail on the rung's enclosure (whatever its width): the fallback,
    # the fine enclosure from 0, is taken and decides it; with no CPU of its own (share 0, no
    # floor) it stops at once, the drift is undecided and the reason says both; the proof and
    # its certificate are the same either way
    import verify.proof._prove as prove

    request = _rung_request()
    real = prove._drift_at
    rung_tol = prove.DRIFT_RUNGS[1]["tol"]

    def fails_on_the_rung(request, enclosure, t1):
        if enclosure.tol == rung_tol:
            return None, "lead-plus fails (margin -1e-3)"
        return real(request, enclosure, t1)

    monkeypatch.setattr(prove, "_drift_at", fails_on_the_rung)

    def proved():
        with proof_budget(60):
            return prove_result(request, _undecided(request))

    taken = proved()
    drift = taken.evidence["proof"]["drift"]
    assert drift["behaviour"] == "drifts" and drift["t1"] == "5/2"
    assert "lead-plus fails (margin -1e-3)" in drift["fallback"]["rung"]["why"]
    assert drift["fallback"]["rung"]["t"] == "5/2"  # carried on to the mark, undecided there
    monkeypatch.setattr(prove, "FALLBACK_SHARE", 0.0)
    monkeypatch.setattr(prove, "DRIFT_SECONDS", 0.0)
    starved = proved()
    drift = starved.evidence["proof"]["drift"]
    assert drift["behaviour"] == "undecided" and drift["fallback"]["own_cpu"] == 0.0
    assert "the fine enclosure from 0, with at most 0 CPU s of its own, did not decide it " \
        "either: the enclosure stopped before t1 = 5/2" in drift["reason"]
    assert "undecided on the enclosure of the proof" in drift["reason"]
    assert taken.certificate["document"] == starved.certificate["document"]


def test_no_rung_is_tried_where_the_slack_admits_none(monkeypatch):
    # every rung asking for more slack than the lemmas leave: the fine enclosure, as on main
    import verify.proof._prove as prove

    request = _rung_request()
    for rung in prove.DRIFT_RUNGS:
        monkeypatch.setitem(rung, "allowance", 1.0)
    with proof_budget(60):
        result = prove_result(request, _undecided(request))
    proof = result.evidence["proof"]
    assert result.basis is Basis.CERTIFICATE
    assert proof["enclosure"]["tol"] == prove.SETTINGS[0]["tol"] and "coarse" not in proof
    assert proof["drift"]["behaviour"] == "drifts" and "fallback" not in proof["drift"]
