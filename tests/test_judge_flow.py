"""Conclusions about the flow (monotone, rate, events, predicate) against independent routes.

Closed forms used:

* ``Q = 0``: the attention is uniform, so for ``V = I`` (z-form)
  ``z_i(t) = z̄ + (z_i(0) − z̄) e^{−t}``: every distance is ``|z_i(0) − z_j(0)| e^{−t}``, the
  tokens converge at rate exactly 1 and a pair at initial distance ``D`` reaches ``δ`` at
  ``T = log(D/δ)``;
* ``V = −1, Q = K = 1`` in ``d = 1`` (x-form): ``ẋ_i = −m_i`` with ``m_i`` the mean of the
  tokens under weights ``e^{x_i x_j}``, increasing in ``x_i`` — so the diameter of ``x`` is
  non-increasing (and tends to 0: collapse-negative-identity). Tokens ``±a``:
  ``ȧ = −a tanh(a²) ≈ −a³``, so ``a ~ (2t)^{−1/2}``: a power law of exponent 1/2;
* ``V = Q = K = 1``, tokens ``±a``: ``ȧ = a tanh(a²)``, ``a ≈ γe^t`` and the attention gap
  ``P_21 = 1/(1 + e^{2a²})``, so ``log(−log P_21) ≈ log(2γ²) + 2t``: doubly-exponential rate 2.
"""

from __future__ import annotations

import math
from fractions import Fraction as F
from types import SimpleNamespace

import numpy as np
import pytest

from verify.claim import CONCLUSIONS, CheckRequest, ConclusionSpec, parse_conclusions
from verify.errors import InvalidArgument, UserFunctionError
from verify.flow.simulate import simulate
from verify.judge import Evaluation
from verify.judge._predicate import load_function
from verify.judge._quantities import quantity_series
from verify.model import Instance, Model


def _run(V, Q, K, x0, horizon, checkpoints, form="z", source=None, error_estimate=True):
    inst = Instance(Model(V=V, Q=Q, K=K, form=form), x0, name="f#0")
    claim = None if source is None else SimpleNamespace(source=str(source))
    req = CheckRequest(claim=claim, family=SimpleNamespace(name="f"), instance=inst, seed=None,
                       horizon=horizon, checkpoints=checkpoints, precision="float64",
                       parameters={})
    return req, simulate(inst, horizon, checkpoints=checkpoints, error_estimate=error_estimate)


def _judge(run, kind, **parameters):
    req, traj = run
    spec = parse_conclusions([{"type": kind, **parameters}], "f.toml")[0]
    return CONCLUSIONS[kind].judge(Evaluation(req, traj, spec))


@pytest.fixture(scope="module")
def uniform():
    """Q = 0, V = 1, tokens 0, 1, 3 (mean 4/3); checkpoint spacing 0.05."""
    return _run([[1]], [[0]], [[1]], [[0], [1], [3]], 8, 161)


@pytest.fixture(scope="module")
def collapse():
    """V = −1, Q = K = 1, x-form, d = 1."""
    return _run([[-1]], [[1]], [[1]], [[-1], [F(1, 2)], [2]], 10, 41, form="x")


def _evaluation(run, **parameters):
    return Evaluation(run[0], run[1], ConclusionSpec("monotone", parameters))


# --------------------------------------------------------------------------- quantities
def test_quantity_series_matches_closed_form_and_formula(uniform):
    ev = _evaluation(uniform)
    t = uniform[1].t
    values, errors = quantity_series(ev, "diameter")
    assert np.max(np.abs(values - 3 * np.exp(-t))) < 1e-8
    assert np.all(errors > 0) and np.max(errors) < 1e-8
    formula, _ = quantity_series(ev, "max(z) - min(z)")
    assert np.max(np.abs(formula - values)) <= 4e-16 * 3
    spread, _ = quantity_series(ev, "spread")      # max |z_i − 4/3| = (3 − 4/3) e^{−t}
    assert np.max(np.abs(spread - (5 / 3) * np.exp(-t))) < 1e-8
    with pytest.raises(InvalidArgument, match="one number"):
        quantity_series(ev, "z")


# --------------------------------------------------------------------------- monotone
def test_monotone_collapse_diameter(collapse):
    holds = _judge(collapse, "monotone", quantity="diameter", direction="nonincreasing",
                   variable="x")
    assert holds.verdict.value == "holds" and holds.margin > holds.error
    assert "41 checkpoints only" in holds.evidence["sampled"]
    wrong = _judge(collapse, "monotone", quantity="diameter", direction="nondecreasing",
                   variable="x")
    assert wrong.verdict.value == "violated" and -wrong.margin > wrong.error
    # the rescaled tokens z = e^{t} x spread out (time reversal of the V = I hull contraction)
    assert _judge(collapse, "monotone", quantity="diameter", direction="increasing",
                  variable="z").verdict.value == "holds"


def test_monotone_constant_quantity_is_inconclusive(uniform):
    # the mean token is invariant for Q = 0: every step is within its error
    result = _judge(uniform, "monotone", quantity="mean(z)", direction="nonincreasing")
    assert result.verdict.value == "inconclusive"
    assert abs(result.margin) <= result.error


def test_monotone_without_reference_run_is_inconclusive():
    run = _run([[1]], [[0]], [[1]], [[0], [1]], 2, 5, error_estimate=False)
    result = _judge(run, "monotone", quantity="diameter", direction="decreasing")
    assert result.verdict.value == "inconclusive" and "reference run" in result.reason


# --------------------------------------------------------------------------- rate
def test_rate_exponential_closed_form(uniform):
    right = _judge(uniform, "rate", law="exponential", value=1, relation="==",
                   tolerance=F(1, 100))
    assert right.verdict.value == "holds"
    assert abs(right.evidence["fitted"] - 1) < right.error + 1e-6
    # a fitted rate that contradicts the claim is a trend: violated on the fit basis, which
    # never refutes
    wrong = _judge(uniform, "rate", law="exponential", value=F(3, 2), relation="==",
                   tolerance=F(1, 100))
    assert wrong.label == "violated (fit)" and "a trend, not a certificate" in wrong.reason
    assert _judge(uniform, "rate", law="exponential", value=F(9, 10)).verdict.value == "holds"
    assert _judge(uniform, "rate", law="exponential", value=F(9, 10),
                  relation="<=").label == "violated (fit)"
    assert _judge(uniform, "rate", law="exponential", value=1, relation="==", tolerance=F(1, 100),
                  quantity="diameter").verdict.value == "holds"


def test_rate_power_law_collapse():
    run = _run([[-1]], [[1]], [[1]], [[-1], [1]], 400, 81, form="x")
    right = _judge(run, "rate", law="power-law", value=F(1, 2), relation="==",
                   tolerance=F(1, 50), variable="x")
    assert right.verdict.value == "holds"
    for wrong in (F(2, 5), F(3, 5)):
        assert _judge(run, "rate", law="power-law", value=wrong, relation="==",
                      tolerance=F(1, 50), variable="x").label == "violated (fit)"
    # an algebraic approach has no exponential rate: the end state looks like a degenerate
    # equilibrium and the local rate keeps falling — float eigenvalues and rate fits: evidence
    expo = _judge(run, "rate", law="exponential", value=F(1, 10), variable="x")
    assert expo.label == "violated (evidence)"
    assert expo.certificate["kind"] == "degenerate-equilibrium"


def test_rate_doubly_exponential_attention_gap():
    run = _run([[1]], [[1]], [[1]], [[-1], [1]], 3, 31, form="x")
    assert _judge(run, "rate", law="doubly-exponential", value=2, relation="==",
                  tolerance=F(1, 20)).verdict.value == "holds"
    assert _judge(run, "rate", law="doubly-exponential", value=1, relation="==",
                  tolerance=F(1, 20)).label == "violated (fit)"


# --------------------------------------------------------------------------- events
def test_events_order_and_times_closed_form(uniform):
    delta = 0.1   # pairs (0,1), (1,2), (0,2) at distances 1, 2, 3: T = log(10), log(20), log(30)
    exact = [math.log(10), math.log(20), math.log(30)]
    result = _judge(uniform, "events", threshold=F(1, 10), merge_order=[[1, 2], [2, 3], [1, 3]],
                    times=exact, time_tolerance=F(1, 1000))
    assert result.verdict.value == "holds"
    merges = result.evidence["merges"]
    for m, T in zip(merges, exact, strict=True):
        assert abs(m["time"] - T) < 1e-3 and m["earliest"] <= m["time"] <= m["latest"]
    assert _judge(uniform, "events", threshold=delta,
                  merge_order=[[2, 3], [1, 2]]).verdict.value == "violated"
    late = _judge(uniform, "events", threshold=delta, merge_order=[[1, 2], [2, 3]],
                  times=[exact[0] + 0.01, exact[1]], time_tolerance=F(1, 1000))
    assert late.verdict.value == "violated" and "2.31" in late.reason


def test_events_group_that_never_merges(uniform):
    # δ = 5e-4: (0,1) merges at log(2000) ≈ 7.6 < 8, (1,2) at log(4000) ≈ 8.3 > horizon 8
    pending = _judge(uniform, "events", threshold=F(1, 2000), merge_order=[[1, 2], [2, 3]])
    assert pending.verdict.value == "inconclusive" and "does not surely merge" in pending.reason
    # claimed first but provably later than a group that did merge: violated
    reversed_ = _judge(uniform, "events", threshold=F(1, 2000), merge_order=[[2, 3], [1, 2]])
    assert reversed_.verdict.value == "violated"
    bad = _judge(uniform, "events", threshold=F(1, 10), merge_order=[[1, 6], [2, 3]])
    assert bad.verdict.value == "inconclusive" and "n = 3" in bad.reason


# --------------------------------------------------------------------------- predicate
PREDICATES = '''
def below(traj, inst):
    return bool(traj.z[-1].max() < 2)

def above(traj, inst):
    return bool(traj.z[-1].max() > 2)

def margin(traj, inst):
    return 2.0 - float(traj.z[-1].max())

def pair(traj, inst):
    return (2.0 - float(traj.z[-1].max()), 1e-9)

def broken(traj, inst):
    raise RuntimeError("boom")

def words(traj, inst):
    return "yes"
'''


@pytest.fixture(scope="module")
def predicate_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conj")
    (folder / "preds.py").write_text(PREDICATES)
    return _run([[1]], [[0]], [[1]], [[0], [1], [3]], 4, 9, source=folder / "c.toml")


def test_predicate_bool_and_number(predicate_run):
    holds = _judge(predicate_run, "predicate", function="preds.py:below")
    assert holds.verdict.value == "holds" and holds.error == 0
    assert "agree" in holds.evidence["note"]
    assert _judge(predicate_run, "predicate",
                  function="preds.py:above").verdict.value == "violated"
    number = _judge(predicate_run, "predicate", function="preds.py:margin")
    exact = 2 - (4 / 3 + (5 / 3) * math.exp(-4))        # closed form of 2 − max z(4)
    assert number.verdict.value == "holds" and abs(number.margin - exact) < 1e-8
    assert 0 < number.error < 1e-8
    pair = _judge(predicate_run, "predicate", function="preds.py:pair")
    assert pair.verdict.value == "holds" and pair.error >= 1e-9


def test_predicate_failures_are_inconclusive_with_reasons(predicate_run):
    missing = _judge(predicate_run, "predicate", function="preds.py:nothing")
    assert missing.verdict.value == "inconclusive"
    assert "no function 'nothing'" in missing.reason and "below" in missing.reason
    nofile = _judge(predicate_run, "predicate", function="nowhere.py:below")
    assert nofile.verdict.value == "inconclusive" and "no file" in nofile.reason
    boom = _judge(predicate_run, "predicate", function="preds.py:broken")
    assert "RuntimeError: boom" in boom.reason
    with pytest.raises(UserFunctionError, match="returned 'yes' .str.; it must return a bool"):
        _judge(predicate_run, "predicate", function="preds.py:words")  # the file is wrong
    nomodule = _judge(predicate_run, "predicate", function="no_such_package_xyz.mod:f")
    assert nomodule.verdict.value == "inconclusive" and "could not be loaded" in nomodule.reason


def test_load_function_module_form(tmp_path, monkeypatch):
    (tmp_path / "flow_predicates_mod.py").write_text(PREDICATES)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_function("flow_predicates_mod:margin").__name__ == "margin"
    assert load_function(str(tmp_path / "flow_predicates_mod.py") + ":pair").__name__ == "pair"


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("table, where, words", [
    ({"type": "monotone", "quantity": "diameter", "direction": "down"}, "direction",
     "nonincreasing"),
    ({"type": "monotone", "quantity": "diamter", "direction": "decreasing"}, "quantity",
     "Did you mean 'diameter'"),
    ({"type": "monotone", "quantity": "diameter"}, "direction", "missing"),
    ({"type": "monotone", "quantity": "diameter", "direction": "decreasing", "variable": "y"},
     "variable", "one of z, x"),
    ({"type": "rate", "law": "exponential", "value": 1, "relation": "=="}, "tolerance",
     "relation '=='"),
    ({"type": "rate", "law": "exp", "value": 1}, "law", "power-law"),
    ({"type": "rate", "law": "exponential", "value": "fast"}, "value", "finite number"),
    ({"type": "rate", "law": "exponential", "value": 1, "tail": 2}, "tail", "(0, 1]"),
    ({"type": "events", "threshold": 0, "merge_order": [[1, 2], [2, 3]]}, "threshold", "> 0"),
    ({"type": "events", "threshold": 1, "merge_order": [[1], [2, 3]]}, "merge_order",
     "at least two distinct"),
    ({"type": "events", "threshold": 1, "merge_order": [[1, 2]]}, "merge_order",
     "no order"),
    ({"type": "events", "threshold": 1, "merge_order": [[1, 2], [2, 3]], "times": [1, 2]},
     "time_tolerance", "go together"),
    ({"type": "events", "threshold": 1, "merge_order": [[1, 2], [2, 3]], "times": [1],
      "time_tolerance": 1}, "times", "one time"),
    ({"type": "predicate", "function": "nocolon"}, "function", "package.module:name"),
    ({"type": "predicate", "function": "a.py:1x"}, "function", "package.module:name"),
    ({"type": "predicate", "function": "a.py:f", "final_state": "yes"}, "final_state",
     "true or false"),
])
def test_validation_errors(table, where, words):
    with pytest.raises(InvalidArgument, match=f"f.toml: conclusion.{where}: ") as info:
        parse_conclusions([table], "f.toml")
    assert words in str(info.value)


def test_valid_tables_parse():
    specs = parse_conclusions([
        {"type": "monotone", "quantity": "max(norm(z))", "direction": "nonincreasing"},
        {"type": "rate", "law": "power-law", "value": F(1, 2), "relation": "==",
         "tolerance": F(1, 20), "quantity": "max-norm", "variable": "x"},
        {"type": "events", "threshold": F(1, 10), "merge_order": [[1, 2]], "times": [2],
         "time_tolerance": F(1, 10)},
        {"type": "predicate", "function": "pkg.mod:name", "final_state": True},
    ], "f.toml")
    assert [s.type for s in specs] == ["monotone", "rate", "events", "predicate"]
    assert not CONCLUSIONS["predicate"].asymptotic and CONCLUSIONS["rate"].asymptotic
