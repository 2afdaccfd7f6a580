"""Mutation tests of the predictions read off a run (issue: "every verdict says what it rests
on"): a prediction is computed once, at the first checkpoint t₁ where the leader map is
certified, and reused at the horizon and at the re-check — never read at the end of the run it
is compared with. Each test runs a claim on an instance where it holds, then on the same run
with every token moved after t₁ (the run and its reference run alike, so the error estimates
are unchanged and the leader map at t₁ is the same): the end now differs from the prediction
made at t₁, and the claim must not hold. A prediction read at the end would follow the moved
tokens and hold.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import verify.flow.simulate
import verify.judge._engine
from verify.claim import CheckRequest, parse_claim
from verify.judge import judge_request
from verify.predict._leaders import _first_certified

SHIFT = 0.05  # far beyond every error estimate, small against the configurations


def _judge(conclusion, V, x0, horizon, **family):
    claim = parse_claim({
        "id": "mutation", "label": "Test", "kind": "theorem", "expected": "holds",
        "statement": "test", "conclusion": conclusion,
        "parameters": {"max_horizon": int(Fraction(3, 2) * horizon)},
        "families": [{"name": "f", "kind": "explicit", "V": V, "x0": x0, "horizon": horizon,
                      "checkpoints": 4 * horizon + 1, **family}]}, "<test>")
    fam = claim.families[0]
    request = CheckRequest(claim, fam, fam.instance(0), None, fam.horizon, fam.checkpoints,
                           fam.precision, dict(claim.parameters))
    return judge_request(request)


def _moved_after_t1(monkeypatch):
    """``simulate`` as used by the engine, with every token moved by SHIFT (each coordinate)
    at the checkpoints after the first certified time t₁; returns the list of t₁ seen."""
    real, seen = verify.flow.simulate.simulate, []

    def moved(instance, horizon, **kw):
        traj = real(instance, horizon, **kw)
        found = _first_certified(instance, traj)
        assert found is not None, "no certified leader map: nothing to mutate"
        seen.append(found.time)
        after = traj.t > found.time
        for run in (traj, traj.reference_run):
            run.state = run.state.copy()
            run.state[after] += SHIFT
            if run.x_state is not None:
                run.x_state = run.x_state.copy()
                run.x_state[after] = np.nan  # x is not judged here
        return traj

    monkeypatch.setattr(verify.judge._engine, "simulate", moved)  # where the engine reads it
    return seen


POLYTOPE = ([[1, 0], [0, 1]], [[2, 0], [0, 2], ["3/2", "1/2"], ["-1", "1/4"]], 8)
CASES = {
    "polytope-S": ({"type": "converges", "to": {"predict": "polytope-S"}}, *POLYTOPE),
    "polytope-vertices": ({"type": "converges", "to": {"predict": "polytope-vertices"}},
                          *POLYTOPE),
    "leader-targets": ({"type": "limit", "equals": {"predict": "leader-targets"}}, *POLYTOPE),
    "hyperplanes-a0b": ({"type": "approach", "hyperplanes": {"predict": "hyperplanes-a0b"}},
                        [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]],
                        [["9/10", "1/5"], ["-7/10", "3/5"], ["1/2", "-4/5"], ["-3/10", "-1/2"],
                         ["1/10", "7/10"]], 6),
    "subspace-K": ({"type": "approach", "boundary": {"predict": "subspace-K"},
                    "functional": {"predict": "F-coordinates"}},
                   [[1, 0, 0], [0, 1, 0], [0, 0, "-1/2"]],
                   [["1", "0", "1/2"], ["0", "1", "-1/2"], ["-1", "1/5", "1"],
                    ["1/2", "-1", "0"]], 8),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_prediction_read_at_t1_catches_an_end_that_moved(name, monkeypatch):
    conclusion, V, x0, horizon = CASES[name]
    honest = _judge(conclusion, V, x0, horizon)
    assert honest.verdict.value == "holds", honest.reason
    assert float(honest.evidence["read_at"]) < horizon  # read at t₁ < T, not at the end
    assert honest.evidence["bound_to_infinity"] is (V == [[1, 0], [0, 1]])  # the V = λI lemma
    seen = _moved_after_t1(monkeypatch)
    mutated = _judge(conclusion, V, x0, horizon)
    assert seen and all(t1 < horizon for t1 in seen)
    assert mutated.verdict.value != "holds", mutated.reason
