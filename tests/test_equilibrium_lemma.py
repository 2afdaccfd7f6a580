"""Lemma equilibrium (verify/lemmas/equilibrium.py): Krawczyk, the logarithmic norm and the
contraction ball, against central differences, a reduced ODE and twice the digits; its
refusals; its certificate's tampering; the causal conjecture it proves."""

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import arb, ctx
from scipy.integrate import solve_ivp

from verify.enclosure import Enclosure
from verify.lemmas import check_certificate, equilibrium
from verify.lemmas._balls import CheckFailure, ball_text, parse_ball
from verify.lemmas._instance import read_instance
from verify.model import Instance, Model
from verify.proof._lemmas import instance_text, lemma_for, try_lemma
from verify.run import Budget, InlineExecutor, check_conjecture, load_conjecture

CLAIMS = Path(__file__).resolve().parent.parent / "claims"
I2 = [[1, 0], [0, 1]]


def _causal(x0, V=I2, Q=I2, beta=1):
    return Instance(Model(V=V, Q=Q, K=I2, beta=beta, form="x", normalisation="sphere",
                          mask="causal"), x0)


def _exact(inst):
    return read_instance({"instance": instance_text(inst)})


def test_the_closed_form_jacobian_agrees_with_central_differences():
    """A non-symmetric B, V = 2I, β = 3/2, causal mask, three tokens in R^3 (not on the sphere:
    the formula holds in the whole ambient space)."""
    inst = read_instance({"instance": {
        "V": [["2", "0", "0"], ["0", "2", "0"], ["0", "0", "2"]],
        "Q": [["1", "1/2", "0"], ["0", "1", "0"], ["1/3", "0", "1"]],
        "K": [["1", "0", "0"], ["0", "1", "1/4"], ["0", "0", "1"]],
        "x0": [["1", "0", "0"], ["0", "1", "0"], ["0", "0", "1"]],
        "model": {"beta": "3/2", "form": "x", "attention": "softmax", "mask": "causal",
                  "normalisation": "sphere", "heads": 1}}})
    rng = np.random.default_rng(1)
    with ctx.workprec(200):
        X = [[arb(float(v)) for v in row] for row in rng.uniform(-1, 1, (3, 3))]
        J = equilibrium.jacobian(inst, X, [1, 2])
        h = arb(2) ** -60
        for p, k in enumerate([1, 2]):
            for b in range(3):
                up = [list(r) for r in X]
                down = [list(r) for r in X]
                up[k][b] += h
                down[k][b] -= h
                Fu, Fd = equilibrium.field(inst, up), equilibrium.field(inst, down)
                for q, i in enumerate([1, 2]):
                    for a in range(3):
                        difference = (Fu[i][a] - Fd[i][a]) / (2 * h)
                        assert abs(float((difference - J[3 * q + a, 3 * p + b]).mid())) < 1e-30


def _prove(inst, marks, bits=128):
    enc = Enclosure(inst, bits=bits, tol=2.0 ** -40 if bits == 128 else 2.0 ** -56)
    why = ""
    for t in marks:
        assert enc.advance(t), enc.message
        document, why = try_lemma(equilibrium.ID, inst, enc, Fraction(t))
        if document is not None:
            return json.loads(json.dumps(document))
    raise AssertionError(why)


def _angle(theta0, times):
    """Two tokens on the circle, causal, V = Q = K = I: token 0 stays at angle 0 and token 1's
    angle solves θ' = -P₁₀ sin θ, P₁₀ = e^{cos θ}/(e^{cos θ} + e) (a reduced ODE)."""
    def rhs(t, th):
        w = math.exp(math.cos(th[0]))
        return [-w / (w + math.e) * math.sin(th[0])]
    return solve_ivp(rhs, (0, max(times)), [theta0], method="DOP853", rtol=1e-12, atol=1e-14,
                     t_eval=times).y[0]


@pytest.fixture(scope="module")
def two_tokens():
    inst = _causal([[1, 0], [Fraction(3, 5), Fraction(4, 5)]])
    return inst, _prove(inst, [Fraction(k, 2) for k in range(1, 41)])


def test_two_tokens_on_the_circle_follow_the_reduced_ode_into_the_certified_ball(two_tokens):
    """The limit box holds the frozen token (1, 0); the certified rate γ is at most the true
    one (the linearisation's -1/2), and the reduced ODE's token stays inside the bound."""
    inst, document = two_tokens
    check = check_certificate({**document, "facts": [{"fact": "limit-at-token", "token": 0}]})
    assert check.valid, check.reasons
    c = check.conclusions
    gamma = float(parse_ball(c["gamma"]).mid())
    assert 0 < gamma <= 0.5 + 1e-12
    limit = [parse_ball(v) for v in c["limits"][1]]
    assert limit[0].contains(1) and limit[1].contains(0)
    t1 = float(Fraction(c["t1"]))
    T = np.array([[float(Fraction(v)) for v in row]
                  for row in document["lemma"]["parameters"]["T"]])
    delta1 = float(parse_ball(c["delta1"]).upper())
    times = [t1, t1 + 1, t1 + 5, t1 + 20]
    for t, theta in zip(times, _angle(math.atan2(4, 3), times), strict=True):
        gap = np.array([math.cos(theta) - 1, math.sin(theta)])
        assert np.max(np.abs(np.linalg.solve(T, gap))) <= delta1 * math.exp(-gamma * (t - t1)) \
            * (1 + 1e-9)


def test_twice_the_digits_gives_the_same_limit(two_tokens):
    inst, document = two_tokens
    t1 = Fraction(document["enclosure"]["t1"])
    fine = _prove(inst, [t1], bits=256)
    with ctx.workprec(256):
        for a in range(2):
            coarse = parse_ball(document["conclusions"]["limits"][1][a])
            sharp = parse_ball(fine["conclusions"]["limits"][1][a])
            assert coarse.overlaps(sharp)


def test_the_lemma_refuses_full_attention_and_an_unstable_equilibrium():
    full = Instance(Model(V=I2, form="x", normalisation="sphere"), [[1, 0], [0, 1]])
    assert lemma_for(full.model) != equilibrium.ID
    with pytest.raises(CheckFailure, match="rotation families"):
        equilibrium.check(_exact(full), Fraction(0), None, {})
    # token 1 exactly antipodal to the frozen token 0: an equilibrium, but a repelling one
    antipodal = _causal([[1, 0], [-1, 0]])
    enc = Enclosure(antipodal)
    assert enc.advance(1)
    document, why = try_lemma(equilibrium.ID, antipodal, enc, Fraction(1))
    assert document is None and "not linearly stable" in why
    with ctx.workprec(128):
        report = equilibrium.check(_exact(antipodal), Fraction(1), enc.x_at(1), {
            "centre": [["-1", "0"]], "box": "1/1024", "radius": "1/512",
            "T": [["1", "0"], ["0", "1"]]})
    assert not report.holds and "contraction" in {q.name for q in report.failed()}


def _tampered(document, change):
    data = copy.deepcopy(document)
    data["facts"] = [{"fact": "limit-at-token", "token": 0}]
    change(data)
    return check_certificate(data)


def test_tampered_equilibrium_certificates_are_rejected(two_tokens):
    _, document = two_tokens
    assert _tampered(document, lambda d: None).valid

    def widen(data):
        ball = parse_ball(data["enclosure"]["tokens"][1][0])
        data["enclosure"]["tokens"][1][0] = ball_text(arb(ball.mid(), arb("0.1")))

    def move(data):
        data["enclosure"]["tokens"][1] = ["-1*2^0", "0*2^0"]

    def relabel(data):
        data["lemma"]["id"] = "sphere-consensus"

    def shrink(data):
        data["lemma"]["parameters"]["radius"] = "1/1000000000000"

    def other_token(data):
        data["facts"] = [{"fact": "limit-at-token", "token": 1}]

    for change in (widen, move, relabel, shrink, other_token):
        assert not _tampered(document, change).valid, change.__name__


def test_the_causal_conjecture_is_proved_on_its_draws(tmp_path):
    """claims/conjectures/causal-almost-every.toml: every token tends to x_1(0); proved on
    every draw with proofs on (by the trend alone: supported by evidence)."""
    conj = load_conjecture(CLAIMS / "conjectures" / "causal-almost-every.toml")
    run = check_conjecture(conj, out_dir=tmp_path, instances=2, seed=0,
                           executor=InlineExecutor(), instance_budget=Budget(proof=120))
    verdict = run.claim_results[0]
    assert verdict.verdict.value == "supported", verdict.reason
    assert verdict.grades["proved"] == sum(verdict.grades.values()) == 2
