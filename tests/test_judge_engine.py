"""The judging engine's rules for statements about t -> infinity (issue: "asymptotic verdicts
that a finite run can actually support").

* metastable configurations with known truth (the reduced two-token angle ODE on the circle,
  integrated here by SciPy as an independent route): never refuted; supported when the horizon
  budget reaches the merge; inconclusive, saying it sits near an unstable equilibrium, when not;
* known-false asymptotic statements of each kind are violated, with their certificate named and
  its basis: refuted only on a rigorous one (exact linear flow, exact invariant set); the
  leader map read off the run is an estimate, a degenerate equilibrium evidence;
* the engine itself: a violation on a weak basis is reported as such and never refutes, a
  hold must survive the re-check at 3/2 of the horizon.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from verify.claim import (
    CheckRequest,
    InstanceVerdict,
    effective_verdict,
    load_claim,
    parse_claim,
    register_conclusion,
)
from verify.flow.simulate import simulate
from verify.judge import decide, inconclusive, judge_request
from verify.judge._shared import COMMON_KEYS
from verify.model import Instance, Model

CIRCLE = {"form": "x", "normalisation": "sphere"}


def _claim(conclusions, family, hypotheses=(), parameters=None):
    data = {"id": "t", "label": "Test", "kind": "conjecture", "expected": "open",
            "statement": "test", "hypotheses": list(hypotheses),
            "conclusion": conclusions, "families": [family]}
    if parameters:
        data["parameters"] = parameters
    return parse_claim(data, "<test>")


def _judge(conclusions, family, **kw):
    claim = _claim(conclusions, family, **kw)
    fam = claim.families[0]
    request = CheckRequest(claim, fam, fam.instance(0), None, fam.horizon, fam.checkpoints,
                           fam.precision, dict(claim.parameters))
    return judge_request(request)


def _pair(beta, angle, horizon, **kw):
    """Two tokens on the circle at angles 0 and pi - angle (an exact rational point)."""
    u = Fraction(math.tan((math.pi - angle) / 2)).limit_denominator(10**9)
    point = [str((1 - u * u) / (1 + u * u)), str(2 * u / (1 + u * u))]
    family = {"name": "pair", "kind": "explicit", "V": [[1, 0], [0, 1]],
              "x0": [[1, 0], point], "model": dict(CIRCLE, beta=beta), "horizon": horizon,
              "checkpoints": 41}
    return _judge({"type": "consensus"}, family, **kw), point


def _merge_time(beta, phi0, threshold=1e-6):
    """The reduced angle ODE dphi/dt = -2 e^{b cos phi} sin phi / (e^b + e^{b cos phi})."""
    from scipy.integrate import solve_ivp

    def rhs(t, phi):
        c = math.cos(phi[0])
        return [-2 * math.exp(beta * c) * math.sin(phi[0]) / (math.exp(beta) +
                                                             math.exp(beta * c))]

    event = lambda t, phi: phi[0] - threshold  # noqa: E731
    event.terminal = True
    sol = solve_ivp(rhs, (0, 1e5), [phi0], method="DOP853", rtol=1e-11, atol=1e-14,
                    events=event)
    return float(sol.t_events[0][0])


@pytest.fixture(scope="module")
def two_token_case():
    """beta = 3 from pi - 1e-3: the unstable rate 2e^{-b}/(e^b + e^{-b}) ≈ 0.00495 makes the
    pair sit near the antipodal saddle until t ≈ 1400."""
    phi0 = math.pi - 1e-3
    return phi0, _merge_time(3, phi0)


def test_two_token_metastable_pair_is_never_refuted(two_token_case):
    phi0, merge = two_token_case
    assert 1000 < merge < 2000
    # default budget: 4 x 100 = 400 < merge: inconclusive, and it says why
    result, _ = _pair(3, math.pi - phi0, 100)
    assert result.verdict.value == "inconclusive"
    assert "unstable" in result.reason and "max_horizon" in result.reason
    assert result.evidence["horizons"][0]["end_state"] == "metastable"


def test_two_token_metastable_pair_is_supported_when_the_budget_reaches_the_merge(
        two_token_case):
    phi0, merge = two_token_case
    result, _ = _pair(3, math.pi - phi0, 100, parameters={"max_horizon": 4000})
    assert result.verdict.value == "holds"
    horizons = [Fraction(h["horizon"]) for h in result.evidence["horizons"]]
    # the extension is aimed past the escape from the saddle (ln(1/eps)/r), not doubled blindly
    assert len(horizons) == 2 and horizons[1] > merge


def test_three_tokens_escaping_slowly_are_never_refuted():
    """The issue's case: post-LN circle, beta = 3, (1, 0), (391/409, 120/409) and the point at
    angle pi - 1e-3; the truth (D below 1e-11 from t = 400) is reached only with a budget."""
    family = {"name": "three", "kind": "explicit", "V": [[1, 0], [0, 1]],
              "x0": [[1, 0], ["391/409", "120/409"], ["-3999999/4000001", "4000/4000001"]],
              "model": dict(CIRCLE, beta=3), "horizon": 60}
    short = _judge({"type": "consensus"}, family)
    assert short.verdict.value == "inconclusive" and "not a certificate" in short.reason
    long = _judge({"type": "consensus"}, family, parameters={"max_horizon": 600})
    assert long.verdict.value == "holds"


# --------------------------------------------------------------------------- certified refutations
def _leaders_case():
    return {"name": "three", "kind": "explicit", "V": [[1, 0], [0, 1]],
            "x0": [[2, 0], [0, 2], ["3/2", "1/2"]], "horizon": 8, "checkpoints": 17}


@pytest.mark.parametrize("conclusion, kind", [
    ({"type": "limit", "equals": "x0"}, "hardmax-leader-map"),            # wrong limit
    ({"type": "clusters", "equal": 3}, "hardmax-leader-map"),             # wrong cluster count
    ({"type": "consensus"}, "hardmax-leader-map"),
])
def test_known_false_limits_are_violated_on_the_leader_map_never_refuted(conclusion, kind):
    """The leader-map lemma is rigorous, but its hypotheses are read off the run: an estimate,
    so the violation is reported, with its certificate, and cannot refute."""
    result = _judge(conclusion, _leaders_case())
    assert result.label == "violated (estimate)" and result.certificate["kind"] == kind
    assert effective_verdict(result)[0] is InstanceVerdict.INCONCLUSIVE


def test_exponential_rate_claimed_for_an_algebraic_collapse_is_violated_on_evidence():
    """The degenerate equilibrium is a two-window rate fit on float eigenvalues: evidence."""
    family = {"name": "collapse", "kind": "explicit", "V": [[-1, 0], [0, -1]],
              "x0": [[1, 0], [0, 1], [-1, "1/2"]], "model": {"form": "x"}, "horizon": 80,
              "checkpoints": 41}
    result = _judge({"type": "rate", "law": "exponential", "value": "1/10", "variable": "x"},
                    family)
    assert result.label == "violated (evidence)"
    assert result.certificate["kind"] == "degenerate-equilibrium"
    assert effective_verdict(result)[0] is InstanceVerdict.INCONCLUSIVE


def test_convergence_claimed_for_a_rotating_token_is_refuted():
    family = {"name": "spin", "kind": "explicit", "V": [[0, -1], [1, 0]], "x0": [[1, 0]],
              "model": {"form": "x"}, "horizon": 10}
    result = _judge({"type": "converges"}, family)
    assert result.label == "violated (certificate)"
    assert result.certificate["kind"] == "linear-flow"


def test_consensus_of_an_exactly_antipodal_pair_is_refuted_by_its_invariant_set():
    family = {"name": "antipodal", "kind": "explicit", "V": [[1, 0], [0, 1]],
              "x0": [[1, 0], [-1, 0]], "model": CIRCLE, "horizon": 10}
    result = _judge({"type": "consensus"}, family)
    assert result.label == "violated (certificate)"
    assert result.certificate["kind"] == "invariant-point"
    assert result.certificate["basis"] == "certificate"


# --------------------------------------------------------------------------- the engine's rules
@register_conclusion("test-violated-without-certificate", summary="test", needs="test",
                     asymptotic=True)
def _always_violated(ev):
    return decide(ev.request, -1.0, 0.0, "a trend read as a violation", unit="test",
                  basis="fit")


@register_conclusion("test-holds-only-early", summary="test", needs="test", asymptotic=True)
def _holds_early(ev):
    early = ev.trajectory.times[-1] <= ev.request.horizon
    return decide(ev.request, 1.0 if early else -1.0, 0.1, "holds before T only", unit="test",
                  basis="estimate")


def test_a_violation_without_certificate_is_evidence_not_a_refutation():
    family = dict(_leaders_case(), horizon=2, checkpoints=5)
    result = _judge({"type": "test-violated-without-certificate"}, family,
                    parameters={"max_horizon": 3})
    assert result.label == "violated (fit)"
    assert effective_verdict(result)[0] is InstanceVerdict.INCONCLUSIVE
    assert "evidence, not a violation" in result.reason


def test_a_hold_must_survive_the_recheck_at_a_longer_horizon():
    family = dict(_leaders_case(), horizon=2, checkpoints=5)
    result = _judge({"type": "test-holds-only-early"}, family, parameters={"max_horizon": 3})
    assert result.label == "violated (estimate)"  # at the re-check: never a hold, no refutation
    assert effective_verdict(result)[0] is InstanceVerdict.INCONCLUSIVE
    assert [h["re_check"] for h in result.evidence["horizons"]] == ["3"]


def test_a_hold_names_both_horizons():
    result = _judge({"type": "clusters", "equal": 2}, _leaders_case())
    assert result.verdict.value == "holds"
    assert "at t = 8 and at the re-check t = 12" in result.reason
    assert np.isfinite(result.error)


def test_a_failed_extension_keeps_the_last_horizon_judged(monkeypatch):
    import verify.judge._engine as engine

    real, calls = engine._simulate, []

    def fail_after_first(request, horizon, run_to, fallback):
        calls.append(run_to)
        if len(calls) == 1:
            return real(request, horizon, run_to, fallback)
        return None, engine.inconclusive(request, "the integration failed (stalled)")

    monkeypatch.setattr(engine, "_simulate", fail_after_first)
    family = dict(_leaders_case(), horizon=2, checkpoints=5)
    result = _judge({"type": "test-violated-without-certificate"}, family)
    assert len(calls) == 2 and calls[0] == 3  # the extension was tried, and failed
    assert result.label == "violated (fit)"
    assert "evidence, not a violation" in result.reason  # the verdict at t = 2 and 3 stands
    assert "extending the horizon stopped here: the integration failed" in result.reason
    assert [h["horizon"] for h in result.evidence["horizons"]] == ["2"]


def test_a_slow_inward_spiral_is_not_refuted_by_the_linear_flow():
    """Eigenvalues -1e-10 ± i: the token spirals in (converges), far too slowly to see; the
    exact local minimal polynomial says so, where a float tolerance would call it a rotation."""
    family = {"name": "spiral", "kind": "explicit", "x0": [[1, 0]], "model": {"form": "x"},
              "V": [["-1/10000000000", -1], [1, "-1/10000000000"]], "horizon": 10}
    result = _judge({"type": "converges"}, family)
    assert result.verdict.value == "inconclusive" and result.certificate is None


def test_a_variant_no_certificate_covers_is_judged_at_its_horizon_only():
    """The rescaled form with an MLP has no certificate of its end: a longer run could never
    refute, so an undecided instance is not extended (unless the claim sets max_horizon)."""
    family = dict(_leaders_case(), horizon=2, checkpoints=5,
                  model={"mlp": {"W": [[1, 0], [0, 1]], "activation": "tanh"}})
    result = _judge({"type": "test-violated-without-certificate"}, family)
    assert result.label == "violated (fit)"
    assert effective_verdict(result)[0] is InstanceVerdict.INCONCLUSIVE
    assert [h["horizon"] for h in result.evidence["horizons"]] == ["2"]
    assert "the horizon is not extended" in result.reason and "an MLP" in result.reason
    longer = _judge({"type": "test-violated-without-certificate"}, family,
                    parameters={"max_horizon": 6})
    assert [h["horizon"] for h in longer.evidence["horizons"]] == ["2", "4"]


# ------------------------------------------------------------- tokens float64 cannot store
@register_conclusion("test-undecided", summary="test", needs="test", asymptotic=True,
                     keys=dict(COMMON_KEYS))
def _undecided(ev):
    return inconclusive(ev.request, "never decided on a finite run")


@register_conclusion("test-weakly-violated", summary="test", needs="test", asymptotic=True,
                     keys=dict(COMMON_KEYS))
def _weakly_violated(ev):
    return decide(ev.request, -1.0, 0.0, "a trend read as a violation", unit="test",
                  basis="fit")


#: V = S diag(1, -3) S^-1, S = [[1, 1], [0, 1]]: the rescaled tokens that follow the leader
#: (2, 0) drift along the eigenvector (1, 1) of -3 like e^{3t}, which the left eigenvector
#: (1, -1)/sqrt 2 of 1 annihilates, so W z_i stays bounded while z_i grows.
DRIFT = {"name": "drift", "kind": "explicit", "V": [[1, -4], [0, -3]],
         "x0": [[2, 0], [1, "1/2"], ["1/2", -1]], "horizon": 6, "checkpoints": 25}
LEFT_ROWS = {"predict": "positive-left-rows"}


def test_tokens_float64_cannot_store_stop_the_horizon_with_the_reason():
    """An undecided part that reads W z_i: the ulp of the drifting z_i (like e^{3t}, the
    eigenvalue -3), through W, over |W z| is past 1 at the end of the run to 18, so a float64
    run judged beyond 18 cannot decide, and it is not made (the next test checks that premise
    in 40 digits). The same tokens read without W keep their digits (R <= eps): extended."""
    result = _judge({"type": "test-undecided", "functional": LEFT_ROWS}, DRIFT)
    assert [h["horizon"] for h in result.evidence["horizons"]] == ["6", "12"]
    assert "the horizon is not extended: float64 no longer resolves the tokens" in result.reason
    said = result.reason.split("conclusion (test-undecided): ")[1]
    now, at, before, since = (float(said.split(" ")[k].rstrip(":,")) for k in (0, 4, 7, 11))
    assert 1 <= now and before <= now and (at, since) == (18, 12)  # the last third of [0, 18]
    plain = _judge({"type": "test-undecided"}, DRIFT)
    assert [h["horizon"] for h in plain.evidence["horizons"]] == ["6", "12", "16"]
    assert "not extended" not in plain.reason


def test_float64_rounding_leaves_the_drifting_tokens_no_digit_where_the_ladder_stops():
    """The rule's premise by an independent route: the tokens at t = 18 (where it stops) in
    40-digit arithmetic, rounded to float64 and projected exactly, lose W z_i of the followers
    entirely."""
    run = simulate(Instance(Model(V=DRIFT["V"]), DRIFT["x0"]), 18, checkpoints=[0, 18],
                   precision=40, error_estimate=False)
    z = [[Fraction(Decimal(c)) for c in token] for token in run.state_text[-1]]
    exact = [a - b for a, b in z]                                # sqrt 2 · W z_i
    stored = [Fraction(float(a)) - Fraction(float(b)) for a, b in z]
    size = max(abs(q) for q in exact)
    lost = max(abs(s - q) for s, q in zip(stored, exact, strict=True))
    assert lost >= size / 2, (float(lost), float(size))


def test_a_weak_violation_on_tokens_float64_cannot_store_is_still_extended():
    """A violation on a fit waits for a certificate: the rule leaves it to the ladder."""
    result = _judge({"type": "test-weakly-violated", "functional": LEFT_ROWS}, DRIFT)
    assert [h["horizon"] for h in result.evidence["horizons"]] == ["6", "12", "16"]


def test_an_instance_decided_only_at_the_longest_horizon_is_still_extended():
    """polytope-subspace's origin-in-interior: D(t) -> 0 reaches its floor only in the run to
    4T (its F-coordinates keep their digits, R ~ 1e-14): every extension is made."""
    claim = load_claim(Path(__file__).parents[1] / "claims" / "polytope-subspace.toml")
    family = claim.family("origin-in-interior")
    request = CheckRequest(claim, family, family.instance(0), None, family.horizon,
                           family.checkpoints, family.precision, dict(claim.parameters))
    result = judge_request(request)
    assert result.verdict is InstanceVerdict.HOLDS
    assert [h["verdict"] for h in result.evidence["horizons"]] == ["inconclusive",
                                                                   "inconclusive", "holds"]


# --------------------------------------------------------------------------- a field with kinks
@register_conclusion("test-holds-on-the-estimate", summary="test", needs="test",
                     asymptotic=False)
def _holds_on_the_estimate(ev):
    return decide(ev.request, 1.0, ev.trajectory.error_estimate or 0.0, "a margin read off the "
                  "run", unit="test", basis="estimate")


@register_conclusion("test-holds-exactly", summary="test", needs="test", asymptotic=False)
def _holds_exactly(ev):
    return decide(ev.request, 1.0, 0.0, "an exact fact of the data", unit="test", basis="exact")


def _mlp_case(activation):
    return {"name": "mlp", "kind": "explicit", "V": [["0.6", "0.8"], ["0.6", "0.6"]],
            "x0": [[1, 0], ["-1/2", "1/4"], ["1/3", "-1"]], "horizon": 1, "checkpoints": 5,
            "model": {"mlp": {"W": [[1, 0], [0, 1]], "activation": activation}}}


def test_a_relu_mlp_run_decides_nothing_on_its_error_estimate():
    """ReLU makes the field only piecewise smooth: the reference extrapolates across its kinks
    and its estimate has no measured coverage, so a part decided on the estimate is undecided,
    saying why, and no reference run is made; an exact part is unaffected."""
    relu = _judge([{"type": "test-holds-on-the-estimate"}, {"type": "test-holds-exactly"}],
                  _mlp_case("relu"))
    assert relu.verdict is InstanceVerdict.INCONCLUSIVE
    estimated, exact = relu.evidence["parts"]
    assert estimated["verdict"] == "inconclusive" and estimated["basis"] == "estimate"
    assert "field with kinks (ReLU MLP) has no measured coverage" in estimated["reason"]
    assert (exact["verdict"], exact["basis"]) == ("holds", "exact")
    assert relu.evidence["error_estimate"] is None and "no_error_estimate" in relu.evidence


def test_a_tanh_mlp_run_keeps_its_error_estimate_and_its_decisions():
    tanh = _judge([{"type": "test-holds-on-the-estimate"}, {"type": "test-holds-exactly"}],
                  _mlp_case("tanh"))
    assert tanh.label == "holds (estimate)"
    assert 0 < tanh.evidence["error_estimate"] < 1e-6 and "no_error_estimate" not in tanh.evidence


def test_the_monotone_coordinates_of_a_relu_mlp_are_undecided_and_say_why():
    """The §12 claim's ReLU, W = I part (every coordinate non-decreasing) was *holds (estimate)*
    on margins of 2e-10 against an estimate that is not trustworthy there."""
    claim = load_claim(Path(__file__).parents[1] / "claims" / "mlp.toml")
    family = next(f for f in claim.families if f.name == "relu-identity")
    request = CheckRequest(claim, family, family.instance(1), None, family.horizon,
                           family.checkpoints, family.precision, dict(claim.parameters))
    result = judge_request(request)
    judged = [p for p in result.evidence["parts"] if p["verdict"] != "out-of-scope"]
    assert len(judged) == 2 and result.verdict is InstanceVerdict.INCONCLUSIVE
    assert all(p["verdict"] == "inconclusive" and "no measured coverage" in p["reason"]
               for p in judged)
