"""Certified consensus on the sphere (verify.flow.consensus_cap): the cap lemma, its bound, and runs
that stop integrating once it holds.

Independent routes: the lemma against runs that never use it (``continuation=False``) and
against a run whose V breaks its hypothesis; the arb bound against mpmath at 60 digits; the
frozen run against direct integration, to its own error estimate."""

from __future__ import annotations

import math
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

from verify.claim import CheckRequest, ConclusionSpec
from verify.flow.consensus_cap import CAP_FACTOR, cap_bound, cap_unavailable, certify_cap
from verify.flow.simulate import entry_differences, simulate
from verify.judge import Evaluation
from verify.judge._quantities import quantity_or_reason, quantity_series
from verify.model import Instance, Model
from verify.numerics import Arb, estimate_bound, integrate_extrapolation


def tokens_in_cap(n: int, d: int, radius: float, seed: int) -> np.ndarray:
    """``n`` unit vectors within angle ``radius`` of ``e_1`` (random directions)."""
    rng = np.random.default_rng(seed)
    tilt = rng.standard_normal((n, d))
    tilt[:, 0] = 0.0
    tilt /= np.linalg.norm(tilt, axis=1, keepdims=True)
    angle = radius * rng.uniform(0.2, 1.0, n)
    out = np.cos(angle)[:, None] * np.eye(d)[0] + np.sin(angle)[:, None] * tilt
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def sphere_model(V, beta=1, **extra) -> Model:
    return Model(V=V, form="x", normalisation="sphere", beta=beta, **extra)


@pytest.mark.parametrize("V, Q, beta", [
    ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], None, 1),
    ([[3, 0, 0], [0, 3, 0], [0, 0, 3]], [[1, 2, 0], [0, -1, 1], [1, 0, 3]], 4),  # any Q, K, β
])
def test_a_cap_holding_every_token_holds_them_later(V, Q, beta):
    """The lemma on runs that do not use it: the cap of angle 1.2 around e_1 at t = 0 still
    holds every token at every checkpoint (and the run gets closer than at the start)."""
    x0 = tokens_in_cap(9, 3, 1.2, seed=2)
    traj = simulate(Instance(sphere_model(V, beta, Q=Q), x0), 8, checkpoints=33,
                    error_estimate=False, continuation=False)
    lowest = [float(np.min(x @ np.eye(3)[0] / np.linalg.norm(x, axis=1))) for x in traj.state]
    assert min(lowest) >= math.cos(1.2) - 1e-9
    assert cap_unavailable(traj_model := Instance(sphere_model(V, beta, Q=Q), x0).model) is None
    assert traj_model.normalisation == "sphere"


def test_without_its_hypothesis_tokens_leave_the_cap():
    """A rotation in V (not a multiple of I) carries the tokens out of the cap: the lemma needs
    its hypothesis, and cap_unavailable refuses such a model."""
    V = [[0, -3, 0], [3, 0, 0], [0, 0, 0]]
    x0 = tokens_in_cap(6, 3, 0.3, seed=1)
    traj = simulate(Instance(sphere_model(V), x0), 2, checkpoints=21, error_estimate=False,
                    continuation=False)
    lowest = min(float(np.min(x @ np.eye(3)[0] / np.linalg.norm(x, axis=1)))
                 for x in traj.state)
    assert lowest < math.cos(0.3) - 0.1
    assert "not a nonnegative multiple of the identity" in cap_unavailable(sphere_model(V))
    assert cap_unavailable(Model(V=[[1, 0], [0, 1]])) is not None  # not on the sphere


def test_the_bound_covers_the_exact_chord_diameter():
    """cap_bound (float64 and arb) against the exact largest distance to the normalised mean,
    twice, computed in mpmath at 60 digits from the same float entries."""
    x = tokens_in_cap(7, 4, 1e-6, seed=3) * np.linspace(0.5, 2.0, 7)[:, None]  # not unit rows
    with mpmath.workdps(60):
        rows = [[mpmath.mpf(float(v)) for v in row] for row in x]
        units = [[v / mpmath.sqrt(sum(u * u for u in row)) for v in row] for row in rows]
        mean = [sum(u[a] for u in units) / len(units) for a in range(4)]
        size = mpmath.sqrt(sum(v * v for v in mean))
        exact = 2 * max(mpmath.sqrt(sum((u[a] - mean[a] / size) ** 2 for a in range(4)))
                        for u in units)
    backend = Arb(bits=200)
    with backend.working_precision():
        balls = cap_bound(backend.from_float(x))
    floats = cap_bound(x)
    assert float(exact) <= balls <= float(exact) * (1 + 1e-12)
    assert float(exact) <= floats <= float(exact) + 1e-14
    assert cap_bound(np.array([[1.0, 0.0], [-1.0, 0.0]])) == math.inf  # no hemisphere


def test_the_arb_bound_resolves_chords_far_below_float64():
    """Tokens 1e-25 apart, in balls at 200 bits: the bound follows the chord (a float64 centre
    put a floor of ~4e-16 under it, so a 20-digit run could never freeze at consensus)."""
    backend = Arb(bits=200)
    with backend.working_precision():
        from flint import arb, arb_mat

        base = [arb(1) / 7, arb(3).sqrt() / 7, arb(45).sqrt() / 7]  # unit, not a float
        shift = [arb(10) ** -25 * c for c in (1, -2, 1)]
        x = arb_mat([base, [b + s for b, s in zip(base, shift, strict=True)]])
        bound = cap_bound(x)
    assert 1e-26 < bound < 1e-24


def test_a_sphere_run_stops_integrating_at_consensus_and_says_by_how_much():
    """Continuation on (the default) against continuation off, to T = 60: the run switches once
    the chord is below CAP_FACTOR·atol, repeats its state, and the difference to the direct run
    is within the error estimate, which carries the bound."""
    x0 = tokens_in_cap(8, 3, 1.4, seed=4)
    inst = Instance(sphere_model([[1, 0, 0], [0, 1, 0], [0, 0, 1]]), x0)
    frozen = simulate(inst, 60, checkpoints=13)
    direct = simulate(inst, 60, checkpoints=13, continuation=False, precision=25,
                      error_estimate=False)  # 25 digits: its own error is negligible here
    (leg,) = frozen.continuation["legs"]
    assert leg["kind"] == "cap" and leg["bound"] <= CAP_FACTOR * 1e-12
    after = [k for k, t in enumerate(frozen.t) if float(t) > leg["t0"]]
    assert len(after) >= 5
    assert all(np.array_equal(frozen.state[k], frozen.state[after[0]]) for k in after)
    assert np.all(frozen.error[after] >= leg["bound"])
    # the estimate is a distance to a reference with an error of its own (1.5e-14 here, against
    # 2.4e-12 estimated before the switch): the true error may exceed it by that share
    true = np.abs(frozen.state - direct.state.astype(float))
    assert np.all(true <= 1.5 * frozen.entry_error)
    assert np.all(true[after] <= frozen.entry_error[after])  # after it, the bound dominates
    (ref_leg,) = frozen.reference["stats"]["continuation"]["legs"]
    # the arb reference stopped too: at the run's t0, inheriting its certificate (or before,
    # on its own), with its own chord added to the estimate
    assert ref_leg["kind"] == "cap" and ref_leg["t0"] <= leg["t0"]
    assert ref_leg.get("inherited", False) == (ref_leg["t0"] == leg["t0"])
    # one cap, the reference's (the exact motion after its freeze, which |run − ref| cannot
    # see; the run's chord bounds the same motion a second time), widened by 2√d·max|run − ref|
    # (simulate._cap_bounds' lemma), after the reference's t0 and nowhere else
    diff = entry_differences(frozen, frozen.reference_run, frozen.reference["bits"])
    widen = 2 * math.sqrt(frozen.d) * np.max(diff, axis=(1, 2))
    ref_after = np.array([float(t) > ref_leg["t0"] for t in frozen.t])
    assert np.allclose(frozen.repeated_error[ref_after], ref_leg["bound"] + widen[ref_after],
                       rtol=1e-12, atol=0)
    assert np.all(frozen.repeated_error[~ref_after] == 0)
    assert frozen.reference["consensus_cap_added"] == np.max(frozen.repeated_error)


def test_an_arb_run_can_switch_between_checkpoints():
    """integrate_extrapolation with switch_each_step: the switch sees accepted steps between
    checkpoints, and the result keeps only the checkpoints reached."""
    backend = Arb(bits=80)
    seen = []

    def switch(t, y):
        seen.append(t)
        return "taken" if t > 1 else None

    with backend.working_precision():
        y0 = backend.from_float(np.array([[1.0]]))
        result = integrate_extrapolation(lambda t, y: y * (-1), [0, 10], y0, backend=backend,
                                         rtol=1e-12, atol=1e-12, switch=switch,
                                         switch_each_step=True)
    assert result.status == "switched" and result.switch == "taken"
    assert len(result.ys) == 1 and 1 < seen[-1] < 10


def test_certify_cap_only_below_the_threshold():
    x = tokens_in_cap(5, 3, 1e-7, seed=5)
    assert certify_cap(2.0, x, atol=1e-12) is None       # chord ~1e-7 > 100·1e-12
    leg = certify_cap(2.0, x, atol=1e-8)
    assert leg is not None and leg.describe()["kind"] == "cap"
    assert [k for _, k in leg.grid([0.0, 1.0, 2.0, 3.0, 4.0])] == [3, 4]


def test_a_quantity_read_on_a_repeated_state_carries_the_cap_bound():
    """The second route cannot see a repeated state (run and reference both repeat theirs): the
    diameter's error after the switch must still cover the diameter of a 25-digit run that never
    switches, and a formula quantity (no known Lipschitz constant) has no error bound there."""
    x0 = tokens_in_cap(3, 2, 1.0, seed=1)
    inst = Instance(sphere_model([[1, 0], [0, 1]]), x0, name="f#0")
    frozen = simulate(inst, 60, checkpoints=13)
    direct = simulate(inst, 60, checkpoints=13, continuation=False, precision=25,
                      error_estimate=False)
    (leg,) = frozen.continuation["legs"]
    after = [k for k, t in enumerate(frozen.t) if float(t) > leg["t0"]]
    assert after
    request = CheckRequest(claim=None, family=SimpleNamespace(name="f"), instance=inst,
                           seed=None, horizon=60, checkpoints=13, precision="float64",
                           parameters={})
    evaluation = Evaluation(request, frozen, ConclusionSpec("monotone", {}))
    values, errors = quantity_series(evaluation, "diameter", "x")
    truth = [max(np.linalg.norm(a - b) for a in p for b in p)
             for p in direct.state.astype(float)]
    assert np.all(np.abs(values - truth) <= estimate_bound(errors))  # an estimate, after κ
    assert np.all(np.abs(values - truth)[after] <= errors[after])  # the cap bound alone
    assert np.all(errors[after] >= 2 * frozen.repeated_error[after])  # the bound is carried
    _, _, reason = quantity_or_reason(evaluation, "max(x)", "x")
    assert "no error bound where the run repeats its state" in reason
