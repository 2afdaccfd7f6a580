"""The good-triple trapping lemma (verify.lemmas.good_triple): its sharper statement holds
earlier than the first version and what it certifies for all t ≥ t1 is true (independent
route: float64 runs of the integrator at rtol 1e-12); the first version's certificates stay
valid; tampered certificates are rejected; the norm is exact at 0."""

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from certificate_helpers import assert_accepted, shifted_ball, tampered
from flint import arb, arb_mat

from verify.claim import load_claim
from verify.enclosure import Enclosure
from verify.flow.simulate import simulate
from verify.lemmas import check_certificate, check_file, good_triple
from verify.lemmas._balls import parse_ball
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof._lemmas import try_lemma

CLAIMS = Path(__file__).resolve().parent.parent / "claims"
OLD = Path(__file__).resolve().parent / "data" / "certificates"
IDENTITY = [["1", "0"], ["0", "1"]]


def _instance(V, x0):
    """The checker's instance (exact rationals) of the plain rescaled model, Q = K = I."""
    d = len(V)
    eye = [["1" if a == b else "0" for b in range(d)] for a in range(d)]
    return read_instance({"instance": {
        "V": [[str(v) for v in row] for row in V], "Q": eye, "K": eye,
        "x0": [[str(v) for v in row] for row in x0],
        "model": {"form": "z", "beta": "1", "attention": "softmax", "mask": "full",
                  "normalisation": "none"}}})


def _run(instance, horizon: float, checkpoints: int = 81):
    """Independent route: a float64 run of the integrator (DOP853 at rtol 1e-12, not the
    enclosure, not the lemma) at ``checkpoints`` times of [0, horizon]: the times, the tokens z
    and φ1*(z_i(t))."""
    traj = simulate(instance, horizon, checkpoints=checkpoints, rtol=1e-12, atol=1e-14,
                    error_estimate=False)
    V = np.array(instance.model.V, dtype=float)
    values, left = np.linalg.eig(V.T)
    phi_star = left[:, np.argmax(values.real)].real
    ev, right = np.linalg.eig(V)
    phi = right[:, np.argmax(ev.real)].real
    phi_star = phi_star / (phi_star @ phi)
    times = np.asarray(traj.times, dtype=float)
    z = np.array([np.asarray(state, dtype=float) for state in traj.tokens("z")])
    return times, z, z @ phi_star


def _check_trap(conclusions, alpha, slack=1e-12):
    """The lemma's conclusions against a run's φ1*(z_i(t)), t ≥ t1: each side keeps its bound,
    the tokens held at 0 stay there, and at the end every side is close to one value within
    its ``limit_within`` (the run's horizon is finite: 'close', not 'equal')."""
    for name, sign in (("plus", 1), ("minus", -1)):
        side = conclusions["sides"].get(name)
        if side is None:
            continue
        mu = float(Fraction(side["mu"]))
        tokens = side["tokens"]
        assert (sign * alpha[:, tokens] >= mu - slack).all()
        low, high = (float(parse_ball(v).mid()) for v in side["limit_within"])
        end = sign * alpha[-1, tokens]
        assert end.max() - end.min() < 1e-3 and low - slack <= end.min() <= high + slack
    assert np.abs(alpha[:, conclusions["zero"]]).max(initial=0) < 1e-12


# ------------------------------------------------------------------ the norm (a known defect)
def test_the_norm_is_exact_at_zero_and_the_margins_are_finite():
    """V = diag(1, 0): tokens on the φ1 axis have π_W x = 0, every component a ball around 0.
    ``x * x`` on such a ball contains negative numbers, and its square root was NaN: every
    margin NaN, nothing proved. Independent route: the exact tokens at t1 = 0 — the flow keeps
    them on the axis, where α_1 - α_0 is a two-token consensus that never changes sign."""
    inst = _instance([[1, 0], [0, 0]], [[4, 0], [-3, 0]])
    tiny = arb(0, 2.0 ** -100)
    z = arb_mat([[arb(4) + tiny, tiny], [arb(-3) + tiny, tiny]])
    report = good_triple.check(inst, Fraction(0), z, [], {"T": IDENTITY, "mu_plus": "3",
                                                          "mu_minus": "2"})
    assert all(q.margin.is_finite() for q in report.inequalities)
    assert report.holds, [(q.name, q.margin) for q in report.failed()]
    assert good_triple._norm([tiny, tiny]) < 2.0 ** -98


# ------------------------------------------------------------------------ a side of every token
def test_a_side_holding_every_token_needs_no_dominance():
    """Two tokens, both with φ1* > 0 (V = diag(1, -1/2)): the minimum of φ1* never decreases,
    so they stay above μ whatever their scores; the first version required
    G = c μ² - K1 - K2 > 0, here 1/16 - U0(...) < 0 (U0 = 5). Independent route: a float64
    run to t = 12: both stay ≥ μ and meet at one value within the limits' bounds."""
    V, x0 = [[1, 0], [0, Fraction(-1, 2)]], [[1, 5], [Fraction(1, 2), -5]]
    inst = _instance(V, x0)
    report = good_triple.check(inst, Fraction(0), arb_mat([[1, 5], [0.5, -5]]), [],
                               {"T": IDENTITY, "mu_plus": "1/4"})
    assert report.holds and [q.name for q in report.inequalities] == [
        "good-triple", "spectral-gap", "trap-plus"]
    assert report.conclusions["plus"] == [0, 1] and report.conclusions["minus"] == []
    _, _, alpha = _run(Instance(Model(V=V), x0), 12)
    _check_trap(report.conclusions, alpha)


def test_a_token_moved_to_the_other_side_brings_the_dominance_back():
    inst = _instance([[1, 0], [0, Fraction(-1, 2)]], [[1, 5], [Fraction(-1, 2), -5]])
    report = good_triple.check(inst, Fraction(0), arb_mat([[1, 5], [-0.5, -5]]), [],
                               {"T": IDENTITY, "mu_plus": "1/4", "mu_minus": "1/4"})
    assert {"dominance-plus", "dominance-minus"} <= {q.name for q in report.failed()}


def test_mu_must_be_positive():
    """A negative μ made the first version's dominance c μ² large and its trap trivial, and
    certified nothing (its proof needs α_i ≥ μ > 0): rejected."""
    inst = _instance([[1, 0], [0, Fraction(-1, 2)]], [[1, 5], [Fraction(-1, 2), -5]])
    with pytest.raises(good_triple.CheckFailure, match="must be positive"):
        good_triple.check(inst, Fraction(0), arb_mat([[1, 5], [-0.5, -5]]), [],
                          {"T": IDENTITY, "mu_plus": "-100", "mu_minus": "1/4"})


# --------------------------------------------------------------- both sides, per pair, earlier
def test_the_dominance_uses_both_trapped_sides():
    """V = diag(1, 0), one token per side at φ1* = ±2 with the same second coordinate 6/5: the
    score gap's dominant term is c μ+(μ+ + μ-) = 2μ² (holds, the trap too); with μ- nearly 0 (a
    valid but weaker choice) only c μ+² is left, below the quadratic term κ3 â(â + â) = 2√2
    (6/5)². Independent route: a float64 run to t = 8 keeps both sides and meets the bounds."""
    V, x0 = [[1, 0], [0, 0]], [[2, Fraction(6, 5)], [-2, Fraction(6, 5)]]
    inst = _instance(V, x0)
    z = arb_mat([[2, arb(6) / 5], [-2, arb(6) / 5]])
    strong = good_triple.check(inst, Fraction(0), z, [], {"T": IDENTITY, "mu_plus": "7/4",
                                                          "mu_minus": "7/4"})
    weak = good_triple.check(inst, Fraction(0), z, [], {"T": IDENTITY, "mu_plus": "7/4",
                                                        "mu_minus": "1/1024"})
    assert strong.holds, [(q.name, q.margin) for q in strong.failed()]
    assert "dominance-plus" in {q.name for q in weak.failed()}
    _, _, alpha = _run(Instance(Model(V=V), x0), 8)
    _check_trap(strong.conclusions, alpha)


@pytest.fixture(scope="module")
def symmetric_middle():
    """hyperplanes' symmetric-middle#0 (V = diag(2, 1), the middle tokens held at 0 by the
    symmetry): the prover's certificate at the first mark where the lemma holds on the 128-bit
    enclosure (the first version held from t1 = 2), and a float64 run to t = 8."""
    claim = load_claim(CLAIMS / "hyperplanes.toml")
    instance = claim.family("symmetric-middle").instance(0)
    enclosure = Enclosure(instance)
    for t1 in (Fraction(1), Fraction(3, 2), Fraction(2)):
        assert enclosure.advance(t1)
        document, why = try_lemma(good_triple.ID, instance, enclosure, t1)
        if document is not None:
            return instance, json.loads(json.dumps(document)), _run(instance, 8, 33)
    raise AssertionError(why)


def test_the_sharper_lemma_proves_symmetric_middle_earlier_and_a_run_agrees(symmetric_middle):
    instance, document, (times, _, alpha) = symmetric_middle
    result = check_certificate(document)
    assert result.valid, result.reasons
    t1 = Fraction(document["enclosure"]["t1"])
    assert t1 == Fraction(3, 2)
    conclusions = result.conclusions
    assert (conclusions["plus"], conclusions["minus"], conclusions["zero"]) == \
        ([0, 3], [1, 4], [2, 5])
    _check_trap(conclusions, alpha[times >= float(t1)])


def test_the_score_gaps_grow_like_the_lemma_says(symmetric_middle):
    """Independent route for step (2): along the run, every score gap S_ii - S_ij of a token of
    T_± over an outsider is ≥ G± e^{2λ1 (t - t1)} (G± the certificate's margin; x = e^{tV} z
    with V = diag(2, 1), Q = K = I)."""
    instance, document, (times, z, _) = symmetric_middle
    t1 = float(Fraction(document["enclosure"]["t1"]))
    margins = {q["name"]: float(parse_ball(q["margin"]).lower())
               for q in document["inequalities"]}
    sides = document["conclusions"]["sides"]
    for t, state in zip(times, z, strict=True):
        if t < t1:
            continue
        x = state * np.exp(np.array([2.0, 1.0]) * t)
        S = x @ x.T
        for name in ("plus", "minus"):
            members = sides[name]["tokens"]
            others = [j for j in range(instance.n) if j not in members]
            gap = min(S[i, i] - S[i, j] for i in members for j in others)
            assert gap >= margins[f"dominance-{name}"] * math.exp(4 * (t - t1)) * (1 - 1e-9)


# --------------------------------------------------------------- the first version's certificates
@pytest.mark.parametrize("name", ["hyperplanes-paper-2d-0.json",
                                  "hyperplanes-symmetric-middle-0.json"])
def test_the_first_versions_certificates_stay_valid_with_margins_at_least_theirs(name):
    """Certificates written by the first version (the s5 suite run): the sharper lemma accepts
    them, and each recomputed margin is at least the stated one."""
    data = json.loads((OLD / name).read_text(encoding="utf-8"))
    result = check_file(OLD / name)
    assert result.valid, result.reasons
    stated = {q["name"]: parse_ball(q["margin"]) for q in data["inequalities"]}
    for q in result.inequalities:
        assert q.margin.lower() >= stated[q.name].lower()
    old = {q: stated[q] for q in stated if q.startswith("dominance-")}
    new = {q.name: q.margin for q in result.inequalities if q.name in old}
    assert all(new[q] > old[q] for q in old)  # strictly sharper on both


# ------------------------------------------------------------------------------- tampering
def test_the_certificate_is_accepted_as_a_file(symmetric_middle, tmp_path):
    assert_accepted(symmetric_middle[1], tmp_path)


def test_a_widened_ball_is_rejected(symmetric_middle):
    def widen(data):
        data["enclosure"]["tokens"][0][1] = shifted_ball(data["enclosure"]["tokens"][0][1],
                                                         "0.5", widen=True)
    assert not tampered(symmetric_middle[1], widen).valid


def test_a_moved_token_is_rejected(symmetric_middle):
    """The token of the largest φ1* (= its first coordinate) moved: the bound of b changes."""
    tokens = symmetric_middle[1]["enclosure"]["tokens"]
    top = max(range(len(tokens)), key=lambda i: float(parse_ball(tokens[i][0]).mid()))

    def move(data):
        data["enclosure"]["tokens"][top][0] = shifted_ball(tokens[top][0], "1e-6")
    assert not tampered(symmetric_middle[1], move).valid


@pytest.mark.parametrize("change", [
    lambda d: d["inequalities"][2].update(margin=shifted_ball(d["inequalities"][2]["margin"],
                                                              "1")),
    lambda d: d["lemma"]["parameters"].update(mu_plus="1"),
    lambda d: d["lemma"]["parameters"].update(mu_plus="-1"),
    lambda d: d["lemma"]["parameters"].update(zero=[]),
    lambda d: d["conclusions"]["sides"]["plus"].update(mu="1/2"),
    lambda d: d["enclosure"].update(t1="1"),
], ids=["raised-margin", "mu", "negative-mu", "no-zero", "conclusion", "t1"])
def test_other_tampering_is_rejected(symmetric_middle, change):
    assert not tampered(symmetric_middle[1], change).valid
