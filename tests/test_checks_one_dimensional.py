"""Checks of Theorem 2.1, its lemmas, the higher-dimensional remark, well-posedness and
Remark 3.4 (verify.checks.one_dimensional): claim files, verdicts on small instances, and
deliberately wrong predictions or out-of-regime instances that must not hold."""

from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

import verify.checks.one_dimensional as od
import verify.exact.escape as escape
from verify.claim import CheckRequest, check_hypotheses, get_check, load_claim
from verify.model import Instance, Model
from verify.simulate import simulate

CLAIMS = Path(__file__).resolve().parents[1] / "claims"
IDS = ["boolean-1d", "order-preserved", "distances-nondecreasing", "escape-threshold",
       "one-bounded-token", "higherdim-remark", "wellposed", "discrete-rescaling"]


def run(check, V, x0, horizon, *, checkpoints=25, precision="float64", kind="explicit",
        parameters=None, **model):
    inst = Instance(Model(V=V, **model), x0, name="t#0")
    request = CheckRequest(claim=None, family=SimpleNamespace(name="t", kind=kind),
                           instance=inst, seed=0, horizon=Fraction(horizon),
                           checkpoints=checkpoints, precision=precision,
                           parameters=parameters or {})
    return get_check(check)(request)


@pytest.mark.parametrize("claim_id", IDS)
def test_claim_files_load(claim_id):
    claim = load_claim(CLAIMS / f"{claim_id}.toml")
    assert claim.id == claim_id and claim.expected == "holds"
    get_check(claim.check)  # registered
    for family in claim.families:
        assert family.instances(count=1)


# ------------------------------------------------------------------ Theorem 2.1
def test_boolean_1d_generic_and_symmetric():
    generic = run("boolean_1d_limit", [[1]], [[-0.9], [-0.2], [0.3], [0.8]], 8, checkpoints=33,
                  kind="random", parameters={"generic_rank": True})
    assert generic.verdict.value == "holds"
    assert generic.evidence["rank"] in (1, 2) and generic.evidence["free_rows"] == []
    assert all(r["target"] in (0, 3) for r in generic.evidence["rows"])  # the extreme tokens
    symmetric = run("boolean_1d_limit", [[1]], [[-1], [0], [1]], 6, parameters={
        "generic_rank": True})                       # explicit family: theorem only
    assert symmetric.verdict.value == "holds"
    assert symmetric.evidence["free_rows"] == [1]    # the token at 0 attends uniformly
    assert symmetric.evidence["P_star"][1] == pytest.approx([1 / 3] * 3, abs=1e-9)


def test_boolean_1d_generic_sentence_fails_on_the_exceptional_datum():
    """Exact symmetric data are the measure-zero exception: claimed generic, they violate."""
    r = run("boolean_1d_limit", [[1]], [[-1], [0], [1]], 6, kind="random",
            parameters={"generic_rank": True})
    assert r.verdict.value == "violated"


def test_boolean_1d_out_of_regime_is_not_supported():
    """V < 0: tokens collapse and P(t) tends to the uniform matrix, not to e_1/e_n rows."""
    r = run("boolean_1d_limit", [[-1]], [[-1], [0.5], [1]], 6)
    assert r.verdict.value != "holds"


def test_row_log_gaps_match_the_attention_where_float64_resolves_it():
    traj = simulate(Instance(Model(V=[[1]]), [[-1], [0.25], [1]]), 2, checkpoints=5)
    for i in range(3):
        target = int(np.argmax(traj.scaled_scores[-1, i]))
        logs, errors = od.row_log_gaps(traj, i, target)
        others = [j for j in range(3) if j != target]      # entries with relative accuracy
        direct = np.log(traj.attention[:, i, others].sum(axis=1))
        assert np.allclose(logs, direct, rtol=1e-9, atol=1e-12)
        assert np.all(errors < 1e-6)


def test_one_bounded_token():
    r = run("one_bounded_token", [[1]], [[-2], [-1], [0], [1], [2]], 6)
    assert r.verdict.value == "holds"
    assert r.evidence["bounded_token"]["token"] == 2  # exactly 0, kept exactly by symmetry
    assert run("one_bounded_token", [[1]], [[-1], [-0.5], [0.25], [1]], 10,
               checkpoints=41).verdict.value == "holds"
    # V = -1: the tokens collapse, z = e^{t} x diverges: no γ can be confirmed.
    assert run("one_bounded_token", [[-1]], [[-1], [1]], 6).verdict.value != "holds"


# ------------------------------------------------------------------ escape threshold
def test_escape_threshold_value_solves_the_equation():
    for n in (1, 3, 7):
        with mpmath.workdps(40):
            a = mpmath.mpf(escape.escape_threshold_value(n, 35))
            assert abs(a * a - n * n * mpmath.exp(-a * a)) < mpmath.mpf(10) ** -30
    a3 = Fraction(escape.escape_threshold_value(3, 30))
    assert escape.above_escape_threshold(a3 + Fraction(1, 10**20), 3) is True
    assert escape.above_escape_threshold(a3 - Fraction(1, 10**20), 3) is False
    inside = Instance(Model(V=[[1]]), [[-1], [0], [1]])
    assert check_hypotheses(["above_escape_threshold"], inside).holds is False


def test_escape_threshold_holds_and_is_not_faked():
    r = run("escape_threshold", [[1]], [[-1], ["11/10"]], 8, checkpoints=33)
    assert r.verdict.value == "holds" and r.evidence["sides"][0]["gamma"] > 0
    # V = -1 (out of the lemma's regime): x_n decays, e^{-t}x_n is not what is fitted → no.
    assert run("escape_threshold", [[-1]], [[-1], ["11/10"]], 6).verdict.value != "holds"


# ------------------------------------------------------------------ monotone quantities
def _corrupt(monkeypatch, change):
    """Make the check see a trajectory modified by ``change(z)`` (a planted violation)."""
    def fake(instance, horizon, **options):
        traj = simulate(instance, horizon, **options)
        change(traj.state)
        return traj
    monkeypatch.setattr(od, "simulate", fake)


def test_order_preserved(monkeypatch):
    assert run("order_preserved", [[1]], [[-1], [0.3], [0.31], [1]], 6).verdict.value == "holds"

    def swap(z):
        z[-1, 1], z[-1, 2] = z[-1, 2].copy(), z[-1, 1].copy()
    _corrupt(monkeypatch, swap)
    assert run("order_preserved", [[1]], [[-1], [0.3], [0.31], [1]], 6).verdict.value == \
        "violated"


def test_distances_nondecreasing(monkeypatch):
    x0 = [[-1, 0.2], [0.5, 0.5], [0.1, -0.7], [0.9, -0.1]]
    r = run("distances_nondecreasing", [[1, 0], [0, 1]], x0, 5, checkpoints=21)
    assert r.verdict.value == "holds"
    assert r.evidence["derivative_sign_certified"] == r.evidence["derivative_checks"]

    def shrink(z):
        z[10:, 0] = z[10:, 0] * 0.5 + z[10:, 1] * 0.5   # token 0 jumps towards token 1
    _corrupt(monkeypatch, shrink)
    r = run("distances_nondecreasing", [[1, 0], [0, 1]], x0, 5, checkpoints=21)
    assert r.verdict.value == "violated"


def test_pair_derivative_ball_matches_the_vector_field():
    """Independent route: <x_i − x_j, ẋ_i − ẋ_j> from the float64 field, at t where it is O(1)."""
    from flint import ctx

    z = np.array([[-1.0, 0.2], [0.5, 0.5], [0.1, -0.7]])
    t = 0.3
    x = np.exp(t) * z
    S = x @ x.T
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    xdot = P @ x
    old = ctx.prec
    try:
        ctx.prec = 128
        for i, j in ((0, 1), (0, 2), (1, 2)):
            ball = od.pair_derivative_ball(z, np.zeros(3), t, i, j)
            direct = float((x[i] - x[j]) @ (xdot[i] - xdot[j])) / np.exp(2 * t)
            assert float(ball.mid()) == pytest.approx(direct, rel=1e-12)
    finally:
        ctx.prec = old


# ------------------------------------------------------------------ remark, §6, Remark 3.4
def test_higherdim_remark_and_a_wrong_reading():
    x0 = [[1, "1/2"], [1, "-1/2"]]
    r = run("higherdim_remark", [[1, 0], [0, 1]], x0, 8, checkpoints=33, precision=30)
    assert r.verdict.value == "holds"
    ev = r.evidence
    assert ev["separation"] > ev["separation_error"] and ev["rate"] == pytest.approx(2, abs=1e-6)
    # separation ≈ 5.5 × ε e^{-1/(2ε²)}: demanding agreement to a factor 10^{0.5} must fail.
    wrong = run("higherdim_remark", [[1, 0], [0, 1]], x0, 8, checkpoints=33, precision=30,
                parameters={"decades": Fraction(1, 2)})
    assert wrong.verdict.value == "violated"


def test_wellposed_bounds():
    r = run("wellposed_bounds", [[1, "1/2"], [0, -1]], [[0.5, 0.1], [-0.3, 0.4], [0.2, -0.6]],
            1, checkpoints=6, K=[[1, 0.3], [-0.2, 0.8]])
    assert r.verdict.value == "holds"
    # one token: X[μ] ≡ V y is constant, so its gradient is exactly 0 and |X| = |V y|.
    one = run("wellposed_bounds", [[2, 0], [0, 1]], [[0.6, 0.8]], 1, checkpoints=6)
    assert one.evidence["gradient_max"] == 0
    assert one.evidence["field_max"] == pytest.approx(np.hypot(1.2, 0.8), rel=1e-15)


def test_discrete_rescaling_is_exact():
    r = run("discrete_rescaling_exact", [[1, "1/2"], ["-1/3", 2]],
            [[1, 0], ["1/2", "1/3"], [-1, 2]], "2/5", form="discrete", h="1/10")
    assert r.verdict.value == "holds" and r.margin == 0 and r.error == 0
    assert r.evidence["max_difference"] == "0"
