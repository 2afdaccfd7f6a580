"""Resumed runs (``simulate(..., resume=trajectory)``) and the engine's horizon extensions that
use them: a run continued from its end, with its reference continued from its own end, agrees
with a run from 0 and with the truth (a closed form, or a run at twice the digits) within the
error estimates; never bitwise, since the step sequences differ."""

from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import expm

from verify.claim import CheckRequest, parse_claim
from verify.errors import InvalidArgument
from verify.flow.simulate import float64_resolution_ends, simulate
from verify.judge import _engine
from verify.judge._engine import judge_request
from verify.model import Instance, Model
from verify.numerics import estimate_bound

TOKENS = [["9/10", "1/5"], ["-7/10", "3/5"], ["1/2", "-4/5"], ["-3/10", "-1/2"]]


def _grid(T, count):
    return [Fraction(T) * k / (count - 1) for k in range(count)]


def _continued(inst, T1, T2, count=9, **kwargs):
    """The run to ``T1``, continued to ``T2`` (same spacing), and the run from 0 to ``T2``."""
    first = _grid(T1, count)
    step = first[1]
    full = [*first]
    while full[-1] < T2:
        full.append(full[-1] + step)
    short = simulate(inst, T1, checkpoints=first, **kwargs)
    resumed = simulate(inst, T2, checkpoints=full, resume=short, **kwargs)
    whole = simulate(inst, T2, checkpoints=full, **kwargs)
    return short, resumed, whole


def _within(run, truth, extra=0.0):
    """``|run − truth| ≤ estimate_bound(run's error) + extra`` entrywise, a few ulps allowed."""
    ulps = 8 * np.finfo(float).eps * np.abs(truth)
    return np.abs(run.state - truth) <= estimate_bound(run.entry_error) + extra + ulps


def test_a_linear_flow_continued_matches_its_closed_form():
    # n = 1 in the token form: the attention is 1, so x' = V x and x(t) = e^{tV} x(0)
    V = [[1, 2], [-1, "1/2"]]
    inst = Instance(Model(V=V, form="x"), [["3/5", "-4/5"]])
    short, resumed, whole = _continued(inst, 2, 5)
    assert resumed.success and resumed.stats["resumed_at"] == [2.0]
    Vf = np.array([[1, 2], [-1, 0.5]])
    exact = np.array([[np.array([0.6, -0.8]) @ expm(float(t) * Vf).T] for t in resumed.times])
    assert np.all(_within(resumed, exact))
    assert np.all(_within(whole, exact))
    # the part before T1 is the short run's record itself
    assert np.array_equal(resumed.state[:len(short.times)], short.state)


@pytest.mark.parametrize("precision", ["float64", "auto"])
def test_a_resumed_nonlinear_run_agrees_with_a_run_from_zero(precision):
    inst = Instance(Model(V=[[1, "1/3"], ["1/3", "1/2"]]), TOKENS)
    _, resumed, whole = _continued(inst, 2, 5, precision=precision, symmetry="off",
                                   continuation=False)
    assert resumed.success and whole.success
    gap = np.abs(resumed.state - whole.state)
    both = estimate_bound(resumed.entry_error + whole.entry_error)
    assert np.all(gap <= both + 8 * np.finfo(float).eps * np.abs(whole.state))
    # the reference was continued from its own end, not restarted
    assert resumed.reference_run.stats["resumed_at"] == [2.0]
    assert resumed.reference_run.stats["steps"] < 2 * whole.reference_run.stats["steps"]


@pytest.mark.parametrize("precision, twice", [("float64", 32), ("auto", 40)])
def test_the_error_estimate_of_a_resumed_run_covers_the_truth(precision, twice):
    # the truth: a run from 0 at twice the digits (float64: 16, "auto": 20)
    inst = Instance(Model(V=[["3/2", "1/2"], ["-1/2", "1/4"]]), TOKENS)
    short = simulate(inst, 2, checkpoints=_grid(2, 5), precision=precision, symmetry="off",
                     continuation=False)
    later = _grid(4, 9)
    resumed = simulate(inst, 4, checkpoints=later, resume=short, precision=precision,
                       symmetry="off", continuation=False)
    truth = simulate(inst, 4, checkpoints=later, precision=twice, symmetry="off",
                     continuation=False, error_estimate=False)
    gap = np.array([[[abs(Fraction(a) - Fraction(b)) for a, b in zip(r, q, strict=True)]
                     for r, q in zip(run, ref, strict=True)]
                    for run, ref in zip(_text(resumed), _text(truth), strict=True)], dtype=float)
    assert np.all(gap <= estimate_bound(resumed.entry_error) + 1e-300)
    assert np.all(resumed.entry_error[1:] > 0)


def _text(run):
    return run.state_text if run.state_text is not None else run.state.astype(object)


def test_a_certified_leg_is_carried_over_and_checked_on():
    # V = 2I in the rescaled form: the hardmax continuation takes over at t ≈ 3.8 and, resumed,
    # goes on from its last check (no integration step after the switch)
    inst = Instance(Model(V=[[2, 0], [0, 2]]), [[1, 0], [0, 1], ["1/2", "1/3"]])
    short, resumed, whole = _continued(inst, 6, 12, symmetry="off")
    legs = short.continuation["legs"]
    assert legs and legs[0]["kind"] == "hardmax" and legs[0]["t0"] < 6
    again = resumed.continuation["legs"]
    assert len(again) == 1 and again[0]["t0"] == legs[0]["t0"] and again[0]["t_end"] == 12
    assert resumed.stats["steps"] == short.stats["steps"]
    assert np.all(np.abs(resumed.state - whole.state)
                  <= estimate_bound(resumed.entry_error + whole.entry_error) + 1e-15)
    # the short run is left as it was: continued again, it gives the same run
    again = simulate(inst, 12, checkpoints=list(resumed.times), resume=short, symmetry="off")
    assert np.array_equal(again.state, resumed.state)
    assert again.continuation["legs"] == resumed.continuation["legs"]
    assert short.continuation["legs"][0]["t_end"] == 6


def test_a_frozen_consensus_stays_frozen_and_its_reference_inherits_on():
    sphere = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere")
    inst = Instance(sphere, [[1, 0], [0, 1], ["3/5", "4/5"]])
    short, resumed, whole = _continued(inst, 40, 80)
    assert short.continuation["legs"][0]["kind"] == "cap"
    assert resumed.stats["steps"] == short.stats["steps"]
    ref_legs = resumed.reference_run.continuation["legs"]
    assert ref_legs and ref_legs[-1]["kind"] == "cap"
    assert np.all(_within(resumed, whole.state, extra=estimate_bound(whole.entry_error)))


def test_a_float64_run_continued_in_arbitrary_precision():
    inst = Instance(Model(V=[[1, "1/3"], ["1/3", "1/2"]]), TOKENS)
    short = simulate(inst, 2, checkpoints=_grid(2, 5), symmetry="off", continuation=False)
    full = _grid(4, 9)
    resumed = simulate(inst, 4, checkpoints=full, resume=short, precision="auto",
                       symmetry="off", continuation=False)
    truth = simulate(inst, 4, checkpoints=full, precision=32, symmetry="off",
                     continuation=False, error_estimate=False)
    assert resumed.success and resumed.precision["backend"] == "arb"
    assert resumed.stats["solver"] == "GraggBulirschStoer"
    assert np.all(_within(resumed, truth.state))


def test_discrete_layers_continue_from_the_layer_reached():
    inst = Instance(Model(V=[[1, 0], [0, "1/2"]], form="discrete", h="1/4"), TOKENS)
    _, resumed, whole = _continued(inst, 1, 3, count=5)
    assert np.allclose(resumed.state, whole.state, rtol=1e-13, atol=0)


def test_what_cannot_be_resumed_is_refused_with_its_reason():
    inst = Instance(Model(V=[[1, 0], [0, 1]]), TOKENS)
    run = simulate(inst, 2, checkpoints=_grid(2, 5))
    assert run.until(1).resume_point is None
    with pytest.raises(InvalidArgument, match="cannot be continued"):
        simulate(inst, 3, checkpoints=_grid(3, 7), resume=run.until(1))
    with pytest.raises(InvalidArgument, match="must begin with"):
        simulate(inst, 3, checkpoints=_grid(3, 4), resume=run)
    other = Instance(Model(V=[[1, 0], [0, 1]]), TOKENS[::-1])
    with pytest.raises(InvalidArgument, match="another instance"):
        simulate(other, 3, checkpoints=[*run.times, Fraction(5, 2), Fraction(3)], resume=run)


def test_the_float64_resolution_is_read_off_the_decay_of_the_margins():
    inst = Instance(Model(V=[[1, 0], [0, 1]]), TOKENS)
    run = simulate(inst, 3, checkpoints=7, continuation=False)
    ends = float64_resolution_ends(run, inst)
    # by hand: each margin's decay rate over the last third (t = 2 to 3), continued to the
    # resolution n·eps·max|S̃|
    now, before = run.margins[-1], run.margins[4]
    floor = 4 * np.finfo(float).eps * np.abs(run.scaled_scores[-1]).max()
    rate = np.log(before / now)
    times = [3 + np.log(m / floor) / r for m, r in zip(now, rate, strict=True)
             if m > floor and r > 0]
    assert (ends is None and not times) or ends == pytest.approx(min(times))
    assert float64_resolution_ends(run.until(2), inst) is None  # not resumable


# -- the engine ------------------------------------------------------------------------------
CLAIM = {"id": "toy", "label": "Remark 0", "kind": "remark", "expected": "holds",
         "statement": "Consensus.", "conclusion": {"type": "consensus", "variable": "x"},
         "families": [{"name": "pair", "kind": "explicit", "V": [[1, 0], [0, 1]],
                       "x0": [[1, 0], ["-4/5", "3/5"]],
                       "model": {"form": "x", "normalisation": "sphere"}, "horizon": 2}]}


def _request():
    claim = parse_claim(CLAIM, "<doc>")
    family = claim.families[0]
    return CheckRequest(claim, family, family.instance(0), None, family.horizon, 9, "float64")


def _spy(monkeypatch, fail_float64_extension=False):
    calls, real = [], _engine.simulate

    def spy(instance, horizon, **kwargs):
        calls.append((Fraction(horizon), kwargs.get("resume") is not None,
                      kwargs["precision"]))
        traj = real(instance, horizon, **kwargs)
        if fail_float64_extension and kwargs.get("resume") is not None \
                and kwargs["precision"] == "float64":
            traj.status, traj.message = "step_failure", "DOP853 failed (test)"
        return traj

    monkeypatch.setattr(_engine, "simulate", spy)
    return calls


def test_extensions_continue_the_previous_run(monkeypatch):
    calls = _spy(monkeypatch)
    result = judge_request(_request())
    assert [h["horizon"] for h in result.evidence["horizons"]] == ["2", "4", "16/3"]
    # 2 → 4 doubles (its checkpoints are among the first run's): continued; 16/3 (cut at the
    # budget 8) puts checkpoints at multiples of 2/3, which the run to 6 lacks: from 0
    assert [(str(h), resumed) for h, resumed, _ in calls] == [("3", False), ("6", True),
                                                              ("8", False)]


def test_an_extension_is_judged_on_the_checkpoints_of_a_run_from_zero():
    request = _request()
    first, _ = _engine._simulate(request, Fraction(2), Fraction(3))
    doubled, _ = _engine._simulate(request, Fraction(4), Fraction(6), first)
    assert doubled.times == _engine.checkpoint_grid(Fraction(4), 9, Fraction(6))
    assert doubled.stats["resumed_at"] == [3.0] and doubled.resume_point is not None
    aimed, _ = _engine._simulate(request, Fraction(16, 3), Fraction(8), doubled)
    assert aimed.times == _engine.checkpoint_grid(Fraction(16, 3), 9, Fraction(8))
    assert "resumed_at" not in aimed.stats


def test_a_failed_float64_extension_is_made_again_in_arbitrary_precision_from_zero(
        monkeypatch):
    calls = _spy(monkeypatch, fail_float64_extension=True)
    result = judge_request(_request())
    # continued from the float64 state, the arb run would carry float64's error, amplified
    assert (Fraction(6), False, "auto") in calls
    assert not [c for c in calls if c[1] and c[2] == "auto"]
    second = result.evidence["horizons"][1]
    assert second["integration"] == ("float64 continued from t = 3 (step_failure: DOP853 "
                                     "failed (test)), then arbitrary precision from t = 0")


def test_a_hopeless_extension_says_what_was_tried(monkeypatch):
    calls = _spy(monkeypatch, fail_float64_extension=True)
    monkeypatch.setattr(_engine, "remaining_wall_seconds", lambda: 5.0)
    monkeypatch.setattr(_engine, "_arb_seconds", lambda request, previous, start, run_to: 500.0)
    result = judge_request(_request())
    assert "auto" not in [p for _, _, p in calls]
    assert "float64 continued from t = 3" in result.reason
    assert "arbitrary precision would need ≈ 500 s, 5 s of the instance's budget remain" \
        in result.reason
