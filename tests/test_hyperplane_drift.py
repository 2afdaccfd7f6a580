"""The hyperplane-drift lemma (verify.lemmas.hyperplane_drift) and the refutation it gives
(verify.proof._drift): a follower of a good triple drifts along its hyperplane of Theorem 4.2
forever. Independent routes: a 30-digit run against the lemma's closed form, the checker against
the prover; tampered certificates are rejected."""

import copy
import json
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from certificate_helpers import shifted_ball, tampered
from flint import acb_mat, arb, arb_mat

from verify.cli import main
from verify.enclosure import Enclosure
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate, hyperplane_drift
from verify.lemmas._balls import parse_ball
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof import certify_drift, proof_budget
from verify.proof._lemmas import instance_text, lemmas_for, try_lemma
from verify.vocabulary.conclusions import ConclusionSpec

DRIFT_V = [[1, 0], [0, Fraction(-1, 2)]]  # λ1 = 1, and -1/2 along e2: followers drift like e^{t/2}
X0 = [[1, 0], [Fraction(1, 2), Fraction(1, 2)]]  # both on the side φ1* > 0; token 0 leads


def _document(V, x0, last=Fraction(6)):
    """The prover's certificate at the first mark t1 where the lemma holds."""
    inst = Instance(Model(V=V), x0, name="drift#0")
    enclosure, t1 = Enclosure(inst), Fraction(0)
    while t1 <= last:
        assert enclosure.advance(t1)
        document, why = try_lemma(hyperplane_drift.ID, inst, enclosure, t1)
        if document is not None:
            return inst, {**document, "facts": [{"fact": "follower-drifts", "variable": "z"}]}
        t1 += Fraction(1, 2)
    raise AssertionError(why)


@pytest.fixture(scope="module")
def certificate():
    _, document = _document(DRIFT_V, X0)
    return json.loads(json.dumps(document))


def test_the_prover_s_certificate_is_accepted_and_the_checker_recomputes_its_conclusions(
        certificate):
    result = check_certificate(certificate)
    assert result.valid, result.reasons
    assert result.conclusions == certificate["conclusions"]
    names = {q.name for q in result.inequalities}
    # both tokens on the side φ1* > 0: no outsider, so no dominance-plus (good-triple, step 1')
    assert names == {"good-triple", "spectral-gap", "trap-plus", "lead-plus", "offsets-plus",
                     "drift"}
    assert result.conclusions["behaviour"] == "drifts"
    assert result.conclusions["leaders"] == {"plus": 0}
    [witness] = result.conclusions["drifting"]
    assert (witness["follower"], witness["leader"]) == (1, 0)
    assert parse_ball(witness["rate"]).contains(arb(1) / 2)


NON_NORMAL_V = [[1, 1], [0, Fraction(-1, 2)]]  # left eigenvector of -1/2: (0, 1); right: (1, -3/2)


@pytest.mark.parametrize("V", [DRIFT_V, NON_NORMAL_V], ids=["diagonal", "non-normal"])
def test_the_closed_form_bounds_a_30_digit_run(V):
    """Independent route: the integrator at 30 digits to t = 10 (the lemma's t1 is 5/2 or so).
    For t ≥ t1: the offset in the token variable x_1 - x_0 stays within r of its value at t1;
    |ψ*(z_1 - z_0)| ≥ η e^{t/2} along the left eigenvector of -1/2 (it grows without bound),
    while φ1*(z_1 - z_0) = e^{-t} φ1*(x_1 - x_0) tends to 0 (the same hyperplane); token 1's
    weight off its leader is at most e^{-U e^{λ1 (t - t1)}} (n = m: nothing outside the side)."""
    from verify.flow.simulate import simulate

    _, certificate = _document(V, X0)
    conclusions = certificate["conclusions"]
    assert conclusions["drifting"][0]["follower"] == 1 and conclusions["leaders"] == {"plus": 0}
    t1, r = float(Fraction(conclusions["t1"])), float(Fraction(conclusions["r"]))
    eta = float(parse_ball(conclusions["drifting"][0]["eta"]).lower())
    U = next(float(parse_ball(q["margin"]).lower()) for q in certificate["inequalities"]
             if q["name"] == "lead-plus")
    values, left, _ = acb_mat([[arb(Fraction(v).numerator) / Fraction(v).denominator
                                for v in row] for row in V]).eig(left=True, right=True)
    j = next(j for j in range(2) if values[j].real < 0)
    psi = [complex(left[j, a].mid()) for a in range(2)]
    phi_star = np.array([1.0, 2 / 3]) if V == NON_NORMAL_V else np.array([1.0, 0.0])
    traj = simulate(Instance(Model(V=V), X0), 10, checkpoints=41, precision=30)
    assert traj.error_estimate < 1e-20
    after = [k for k, t in enumerate(traj.t) if t >= t1]
    c1 = traj.x[after[0], 1] - traj.x[after[0], 0]
    for k in after:
        t, z, x = traj.t[k], traj.z[k], traj.x[k]
        assert np.linalg.norm(x[1] - x[0] - c1) <= r
        assert abs(np.dot(psi, z[1] - z[0])) >= eta * np.exp(t / 2)
        scores = x[1] @ x.T
        weights = np.exp(scores - scores.max())
        assert 1 - weights[0] / weights.sum() <= np.exp(-U * np.exp(t - t1))
    assert abs(phi_star @ (traj.z[-1, 1] - traj.z[-1, 0])) < 1e-3  # the same hyperplane
    assert np.linalg.norm(traj.z[-1, 1]) > 40 * np.linalg.norm(traj.z[-1, 0])  # far away


def test_all_other_eigenvalues_with_positive_real_part_give_convergence_not_drift():
    """V = diag(2, 1): e^{-tV} c_k → 0, the side converges to its leader's limit."""
    inst = read_instance({"instance": {**instance_text(Instance(Model(V=[[2, 0], [0, 1]]),
                                                                [[100, 0], [90, 1]])),
                                       "name": "c"}})
    parameters = {"T": [["1", "0"], ["0", "1"]], "zero": [], "mu_plus": "89",
                  "leaders": {"plus": 0}, "r": "1/1024"}
    report = hyperplane_drift.check(inst, Fraction(0), arb_mat([[100, 0], [90, 1]]), [],
                                    parameters)
    assert report.holds and report.conclusions["behaviour"] == "converges"
    assert "followers-converge" in {q.name for q in report.inequalities}


def test_the_wrong_leader_is_not_preferred():
    inst = read_instance({"instance": instance_text(Instance(Model(V=DRIFT_V),
                                                             [[100, 0], [90, 1]]))})
    parameters = {"T": [["1", "0"], ["0", "1"]], "zero": [], "mu_plus": "89",
                  "leaders": {"plus": 1}, "r": "1/1024"}
    report = hyperplane_drift.check(inst, Fraction(0), arb_mat([[100, 0], [90, 1]]), [],
                                    parameters)
    assert not report.holds and [q.name for q in report.failed()] == ["lead-plus"]


def test_a_widened_ball_is_rejected(certificate):
    def widen(data):
        data["enclosure"]["tokens"][1][1] = shifted_ball(data["enclosure"]["tokens"][1][1], "0.01",
                                                   widen=True)
    result = tampered(certificate, widen)
    assert not result.valid and any("margin" in r or "conclusions" in r for r in result.reasons)


def test_a_moved_token_is_rejected(certificate):
    def move(data):
        data["enclosure"]["tokens"][1][1] = shifted_ball(data["enclosure"]["tokens"][1][1], "1e-6")
    assert not tampered(certificate, move).valid


def test_a_changed_lemma_is_rejected(certificate):
    for other in ("good-triple", "leader-map", "no-such-lemma"):
        def change(data, other=other):
            data["lemma"]["id"] = other
        assert not tampered(certificate, change).valid


@pytest.mark.parametrize("change", [
    lambda d: d["lemma"]["parameters"].update(leaders={"plus": 1}),  # the follower as leader
    lambda d: d["lemma"]["parameters"].update(r="1"),  # a wider allowance: other margins
    lambda d: d["conclusions"].update(behaviour="converges"),
    lambda d: d["conclusions"]["drifting"][0].update(follower=0),
    lambda d: d["instance"]["V"][1].__setitem__(1, "-1/4"),
    lambda d: d["facts"][0].update(variable="x"),
    lambda d: d["inequalities"][-1].update(margin=shifted_ball(d["inequalities"][-1]["margin"],
                                                         "1")),
], ids=["leader", "allowance", "behaviour", "follower", "V", "variable", "raised-margin"])
def test_other_tampering_is_rejected(certificate, change):
    assert not tampered(certificate, change).valid


def test_the_follower_drifts_fact_needs_this_lemma(certificate):
    data = copy.deepcopy(certificate)
    data["lemma"]["id"] = "good-triple"
    result = check_certificate(data)
    assert not result.valid


def test_the_certificate_command_accepts_the_file(certificate, tmp_path, capsys):
    path = tmp_path / "drift.json"
    path.write_text(json.dumps(certificate), encoding="utf-8")
    assert main(["certificate", str(path)]) == 0
    assert "VALID" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the refutation
UNDECIDED = InstanceResult("c#0", "c", None, InstanceVerdict.INCONCLUSIVE, "not stabilised")


def _request(V, x0, *conclusions, proof_seconds=60):
    """A request whose claim allows ``proof_seconds`` of proofs (the tests' default is none)."""
    claim = SimpleNamespace(id="c", conclusions=list(conclusions))
    return SimpleNamespace(claim=claim, instance=Instance(Model(V=V), x0, name="c#0"),
                           parameters={"proof_seconds": proof_seconds}, recheck=False,
                           horizon=Fraction(4))


@pytest.mark.parametrize("V, conclusion", [
    (DRIFT_V, ConclusionSpec("converges", {})),
    (DRIFT_V, ConclusionSpec("clusters", {"at_most": 2})),
    (DRIFT_V, ConclusionSpec("consensus", {"variable": "z"})),
    # not normal: the left eigenvector of -1/2 is (0, 1), the right one (1, -3/2)
    ([[1, 1], [0, Fraction(-1, 2)]], ConclusionSpec("converges", {})),
], ids=["converges", "clusters", "consensus", "non-normal"])
def test_a_drifting_follower_refutes_every_limit_statement_on_z(V, conclusion):
    out = certify_drift(_request(V, X0, conclusion), UNDECIDED)
    assert out.verdict is InstanceVerdict.VIOLATED and out.basis.value == "certificate"
    assert out.margin < 0 and out.error == 0
    assert check_certificate(out.certificate["document"]).valid
    assert "drifts away" in out.reason and "hyperplane" in out.reason
    assert out.evidence["drift"]["refuted"] and out.evidence["estimate"]["verdict"] == \
        "inconclusive"


@pytest.mark.parametrize("conclusions", [
    # Theorem 4.2's own conclusions (the hyperplanes claim): true, never refuted
    [ConclusionSpec("approach", {"hyperplanes": {"predict": "hyperplanes-a0b"}}),
     ConclusionSpec("converges", {"functional": {"predict": "phi1"}}),
     ConclusionSpec("monotone", {"quantity": "max(z @ phi1)", "direction": "nonincreasing"})],
    [ConclusionSpec("converges", {"variable": "x"})],  # not about z
], ids=["theorem-4.2", "x"])
def test_conclusions_the_drift_does_not_contradict_are_untouched(conclusions):
    assert certify_drift(_request(DRIFT_V, X0, *conclusions), UNDECIDED) is UNDECIDED


def test_nothing_is_tried_without_proofs_or_without_a_direction_to_drift_along():
    with proof_budget(60):  # the claim's own budget (0) decides
        assert certify_drift(_request(DRIFT_V, X0, ConclusionSpec("converges", {}),
                                      proof_seconds=0), UNDECIDED) is UNDECIDED
    # V = diag(2, 1): no eigenvalue of negative real part, no enclosure is even started
    request = _request([[2, 0], [0, 1]], X0, ConclusionSpec("converges", {}))
    assert certify_drift(request, UNDECIDED) is UNDECIDED
    assert lemmas_for(request.instance.model) == ("good-triple", "hyperplane-drift")


def test_tokens_on_opposite_sides_have_no_follower_and_the_attempt_stops_early():
    out = certify_drift(_request(DRIFT_V, [[1, 0], [-1, 1]], ConclusionSpec("converges", {})),
                        UNDECIDED)
    assert out.verdict is InstanceVerdict.INCONCLUSIVE
    tried = out.evidence["drift"]
    assert not tried["refuted"] and "no trapped side has two tokens" in tried["reason"]
    assert max(tried["marks_tried"]) < 6  # stopped, not run to the horizon 3T/2 = 6


# --------------------------------------------------------------- the imaginary axis, exactly
TURN_V = [[1, 0, 0], [0, 0, Fraction(-1, 2)], [0, Fraction(1, 2), 0]]  # 1 and ±i/2
TURN_X0 = [[1, 0, 0], [Fraction(1, 2), Fraction(1, 2), 0]]


def _companion(coefficients):
    """The companion matrix of the monic x^d + c_{d-1} x^{d-1} + ... + c_0 (``[c_0, ...]``)."""
    d = len(coefficients)
    return [[1 if a == b + 1 else 0 for b in range(d - 1)] + [-coefficients[a]]
            for a in range(d)]


@pytest.mark.parametrize("V", [
    TURN_V,
    [[2, 0], [0, 0]],  # the eigenvalue 0
    _companion([-1, 0, -2, 0]),  # x^4 - 2x^2 - 1: ±i·sqrt(√2 - 1) from a quadratic factor
    _companion([1, 0, 0, 0]),  # x^4 + 1: no root on the axis, all four have |Re| = 1/√2
    _companion([1, 1, 2, 1]),  # (x^2 + 1)(x^2 + x + 1): ±i, and -1/2 ± i√3/2 off the axis
    [[1, 1], [0, -1]],
], ids=["rotation", "zero", "quartic", "x4+1", "mixed", "real"])
def test_the_exact_imaginary_axis_roots_agree_with_30_digit_eigenvalues(V):
    """Independent route: mpmath's eigenvalues at 30 digits; a root is on the axis exactly when
    its real part is below 1e-25 there (none of these is merely close)."""
    import mpmath

    with mpmath.workdps(30):
        values = mpmath.eig(mpmath.matrix([[mpmath.mpf(Fraction(v).numerator)
                                            / Fraction(v).denominator for v in row]
                                           for row in V]), left=False, right=False)
    on_axis = sorted(complex(v).imag for v in values if abs(mpmath.re(v)) < 1e-25)
    found = hyperplane_drift.imaginary_axis_roots(V)
    assert sorted(float(box.imag.mid()) for box, _ in found) == pytest.approx(on_axis, abs=1e-12)
    for box, nonzero in found:
        assert nonzero == (not box.imag.contains(0))
        assert box.real == 0


def _balls_decide_no_sign(V):
    """Without the exact axis test (the eigenvalue balls alone) the lemma was undecided: no
    eigenvalue has a certified negative real part, not all a positive one."""
    values, _, _ = acb_mat([[arb(Fraction(v).numerator) / Fraction(v).denominator
                             for v in row] for row in V]).eig(left=True, right=True)
    assert not any(v.real < 0 for v in values) and not all(v.real > 0 for v in values)


def test_a_follower_along_an_eigenvalue_on_the_imaginary_axis_turns_forever():
    """V with the eigenvalues 1, ±i/2: the balls alone decide no sign (undecided before); the
    exact test puts ±i/2 on the axis and the follower turns about its leader. Independent route:
    a 30-digit run to t = t1 + 4π + 1, against the lemma's closed form
    ψ*(z_1 - z_0) = e^{-μt} ψ*(c_1(t)), |ψ*(c_1(t)) - ψ*(c_1(t1))| ≤ |ψ*| r: the modulus stays
    ≥ η, the phase turns like e^{-μt}, and half a turn later (t + π/ω) the component has moved
    by ≥ 2η: no limit."""
    import math

    from verify.flow.simulate import simulate

    _, document = _document(TURN_V, TURN_X0)
    conclusions = document["conclusions"]
    assert check_certificate(document).valid
    _balls_decide_no_sign(TURN_V)
    assert conclusions["behaviour"] == "turns" and conclusions["drifting"] == []
    [witness] = conclusions["turning"]
    assert (witness["follower"], witness["leader"]) == (1, 0)
    assert parse_ball(witness["frequency"]).contains(arb(1) / 2)
    assert "turn" in {q["name"] for q in document["inequalities"]}
    t1, r = float(Fraction(conclusions["t1"])), float(Fraction(conclusions["r"]))
    eta = float(parse_ball(witness["eta"]).lower())
    values, left, _ = acb_mat([[arb(Fraction(v).numerator) / Fraction(v).denominator
                                for v in row] for row in TURN_V]).eig(left=True, right=True)
    j = next(j for j in range(3) if abs(complex(values[j].mid()) - 0.5j) < 1e-9)
    mu, psi = complex(values[j].mid()), np.array([complex(left[j, a].mid()) for a in range(3)])
    half_turn = math.pi / 0.5
    times = [t1 + k * 0.25 for k in range(int(2 * half_turn / 0.25) + 4)]
    traj = simulate(Instance(Model(V=TURN_V), TURN_X0), times[-1] + half_turn,
                    checkpoints=[0, *sorted([*times, *(t + half_turn for t in times)])],
                    precision=30)
    assert traj.error_estimate < 1e-20
    at = {round(float(t), 9): k for k, t in enumerate(traj.t)}
    start = psi @ (traj.x[at[round(t1, 9)], 1] - traj.x[at[round(t1, 9)], 0])  # ψ*(c_1(t1))
    for t in times:
        z = traj.z[at[round(t, 9)]]
        component = psi @ (z[1] - z[0])
        assert abs(component) >= eta
        assert abs(np.exp(mu * t) * component - start) <= np.linalg.norm(psi) * r + 1e-20
        later = traj.z[at[round(t + half_turn, 9)]]
        assert abs(psi @ (later[1] - later[0]) - component) >= 2 * eta


def test_a_simple_zero_eigenvalue_with_the_rest_positive_gives_convergence():
    """V = diag(1, 0): the follower keeps its second coordinate and converges, not to its
    leader. Independent route: a 30-digit run — z_1 - z_0 tends to (0, c(t1)_2) within r."""
    from verify.flow.simulate import simulate

    V, x0 = [[1, 0], [0, 0]], [[1, Fraction(1, 3)], [Fraction(1, 2), Fraction(1, 2)]]
    _, document = _document(V, x0)
    document = {**document, "facts": []}  # nothing drifts
    conclusions = document["conclusions"]
    assert check_certificate(document).valid
    assert conclusions["behaviour"] == "converges" and "kernel" in conclusions
    _balls_decide_no_sign(V)
    assert "followers-converge" in {q["name"] for q in document["inequalities"]}
    t1, r = float(Fraction(conclusions["t1"])), float(Fraction(conclusions["r"]))
    traj = simulate(Instance(Model(V=V), x0), 12, checkpoints=49, precision=30)
    k1 = next(k for k, t in enumerate(traj.t) if t >= t1)
    c2 = traj.x[k1, 1, 1] - traj.x[k1, 0, 1]
    for k in range(k1, len(traj.t)):
        offset = traj.z[k, 1] - traj.z[k, 0]
        assert abs(offset[1] - c2) <= r  # e^{-tV} keeps the kernel's component of c_1(t)
    assert abs(traj.z[-1, 1, 0] - traj.z[-1, 0, 0]) < 1e-4 and abs(c2) > 0.1


def test_a_turning_follower_refutes_convergence():
    out = certify_drift(_request(TURN_V, TURN_X0, ConclusionSpec("converges", {})), UNDECIDED)
    assert out.verdict is InstanceVerdict.VIOLATED and out.basis.value == "certificate"
    assert check_certificate(out.certificate["document"]).valid
    assert "turns about it forever" in out.reason and "imaginary axis" in out.reason


def test_a_tampered_turning_certificate_is_rejected():
    _, document = _document(TURN_V, TURN_X0)
    document = json.loads(json.dumps(document))
    for change in (lambda d: d["conclusions"].update(behaviour="drifts"),
                   lambda d: d["conclusions"]["turning"][0].update(frequency="1"),
                   lambda d: d["instance"]["V"][1].__setitem__(2, "-1/3")):
        assert not tampered(document, change).valid
