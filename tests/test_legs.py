"""The Leg/Certifier protocol (verify.flow.legs) and the solvers and controller kept apart
(verify.flow.solvers): the existing legs implement it, the one leg loop hands over and falls back
as documented, and every solver reaches a closed form through the same loop."""

import math
from fractions import Fraction

import numpy as np
import pytest

from verify.flow.consensus_cap import CapCertifier, CapLeg
from verify.flow.continuation import (
    ArbHardmaxCertifier,
    ArbHardmaxLeg,
    HardmaxCertifier,
    HardmaxLeg,
)
from verify.flow.legs import Certifier, Leg, ScoredLeg, follow_leg
from verify.flow.simulate import _solve
from verify.flow.solvers import DOP853, Extrapolation, StepController
from verify.numerics import Arb, Float64


class Frozen(Leg):
    """The state at t0 for ever, checked until ``fails_at``."""

    def __init__(self, t0, y0, fails_at=math.inf):
        self.t0 = self.t_last = t0
        self.y0, self.fails_at = y0, fails_at

    def grid(self, checkpoints):
        return [(t, k) for k, t in enumerate(checkpoints) if t > self.t0]

    def check(self, t):
        if t >= self.fails_at:
            return False
        self.t_last = t
        return True

    def state(self, t):
        return self.y0.copy() if isinstance(self.y0, np.ndarray) else self.y0.mid()

    def describe(self):
        return {"kind": "frozen", "t0": float(self.t0), "t_end": float(self.t_last)}


class FreezeAfter(Certifier):
    def __init__(self, t_switch, fails_at=math.inf):
        self.t_switch, self.fails_at, self.checks = t_switch, fails_at, 0

    def certify(self, t, y, *, eigen=None):
        self.checks += 1
        return Frozen(t, y, self.fails_at) if t >= self.t_switch else None


def test_the_legs_and_certifiers_implement_the_protocol():
    assert issubclass(HardmaxLeg, ScoredLeg) and issubclass(ArbHardmaxLeg, Leg)
    assert issubclass(CapLeg, Leg) and not issubclass(CapLeg, ScoredLeg)
    for certifier in (HardmaxCertifier, ArbHardmaxCertifier, CapCertifier):
        assert issubclass(certifier, Certifier)
    assert CapCertifier.every_step and not ArbHardmaxCertifier.every_step
    with pytest.raises(TypeError):
        Leg()  # abstract: grid, check, state, describe must be given


def test_follow_leg_stops_at_the_first_failed_check():
    states = [np.zeros(1)]
    last, failed_at, nonfinite_at = follow_leg(Frozen(0.0, np.ones(1), fails_at=2.5),
                                               [0.0, 1.0, 2.0, 3.0], states)
    assert (last, failed_at, nonfinite_at) == (2, 3.0, None)
    assert len(states) == 3


def test_follow_leg_stops_at_a_non_finite_state():
    states = [np.zeros(1)]
    leg = Frozen(0.0, np.array([np.inf]))
    assert follow_leg(leg, [0.0, 1.0], states, finite=lambda y: bool(np.isfinite(y).all())) \
        == (None, None, 1.0)
    assert len(states) == 1


def test_the_reference_controller_is_tighter():
    run = StepController(rtol=1e-10, atol=1e-12, max_steps=1000)
    ref = run.tighter(1e-15)
    assert (ref.rtol, ref.atol, ref.max_steps) == (1e-15, 1e-15, 4000)
    assert run.tighter(1e-11).atol == 1e-12       # atol is never loosened
    with pytest.raises(AttributeError):
        ref.rtol = 1.0                            # frozen: a run cannot change its controller


@pytest.mark.parametrize("solver, backend", [(DOP853(), Float64()),
                                             (Extrapolation(), Float64()),
                                             (Extrapolation(), Arb(bits=128))],
                         ids=["dop853", "gbs-float64", "gbs-arb"])
def test_every_solver_hands_over_and_falls_back_through_the_one_loop(solver, backend):
    """y' = -y from y(0) = 1: frozen from the first state at t ≥ 1, its check fails at 2.5, so
    the solver takes over again from the last time that passed (t = 2, the frozen state) and
    may not switch again before t = 3. Against the closed form e^{-t}."""
    times = [Fraction(k) for k in range(5)]
    controller = StepController(rtol=1e-12, atol=1e-14, max_steps=10_000)
    fails = 2.5 if isinstance(solver, DOP853) else Fraction(5, 2)
    certifier = FreezeAfter(1, fails_at=fails)
    with backend.working_precision():
        y0 = backend.from_exact([[1]])
        states, status, message, stats, on_leg = _solve(
            solver, lambda t, y: -1 * y, backend, times, y0, controller, certifier, None)
    values = [float(backend.to_float(y)[0, 0]) for y in states]
    assert status == "success" and len(values) == 5 and on_leg == {}
    assert stats["solver"] == solver.name and certifier.checks >= 1
    info = stats["continuation"]
    assert info["fallbacks"][0] == {"at": 3.0, "restart": 2.0}
    switch = info["legs"][0]["t0"]
    assert 1 <= switch < 2 and info["t_switch"] == switch
    assert abs(values[1] - math.exp(-1)) <= 1e-10                  # integrated
    assert abs(values[2] - math.exp(-switch)) <= 1e-10             # the frozen state
    assert abs(values[3] - values[2] * math.exp(-1)) <= 1e-10      # integrated again from t = 2
