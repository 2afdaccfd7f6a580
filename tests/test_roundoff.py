"""The field round-off spot check (verify.flow.roundoff): what a float64 reference run cannot see.

Independent routes: the field evaluated in mpmath at 50 digits from the exact data (the spot check
uses python-flint arb), and a 40-digit arb run for the error the estimate must cover."""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest

import verify.flow.precision_policy
from verify.flow.fields import VectorField
from verify.flow.precision_policy import TWIN_GROWTH_LIMIT, rescaled_growth_rate, score_growth_rate
from verify.flow.roundoff import accumulated, float64_field, score_perturbation, spot_check
from verify.flow.simulate import simulate
from verify.model import Instance, Model
from verify.numerics import STORED_ULPS, Float64, estimate_bound, reachable_rtol, ulps

V = [[1, "1/3"], ["-1/5", "1/2"]]  # not symmetric: the general (non-eigen) float64 field
X0 = [["7/10", "1/10"], ["-3/10", "9/10"], ["1/7", "-2/3"]]


def mp_field(z: np.ndarray) -> list:
    """``ẋ_i = Σ_j P_ij V x_j``, ``P = softmax(<x_i, x_j>)``, at 50 digits from the exact V and the
    float64 entries of ``z`` (taken as exact); rows of mpmath numbers."""
    with mpmath.workdps(50):
        Vm = mpmath.matrix([[mpmath.mpf(mpmath.fraction(*_ratio(v))) for v in row] for row in V])
        Z = [mpmath.matrix([mpmath.mpf(float(v)) for v in row]) for row in z]
        out = []
        for zi in Z:
            scores = [sum(zi[a] * zj[a] for a in range(2)) for zj in Z]
            top = max(scores)
            weights = [mpmath.exp(s - top) for s in scores]
            total = sum(weights)
            drift = sum((w / total * (Vm * zj) for w, zj in zip(weights, Z, strict=True)),
                        mpmath.matrix([0, 0]))
            out.append([drift[0], drift[1]])
        return out


def _ratio(text):
    p, _, q = str(text).partition("/")
    return int(p), int(q or 1)


def test_spot_check_measures_the_float64_round_off_of_the_field():
    instance = Instance(Model(V=V, form="x"), X0)
    z = instance.x0_float() * 3.0  # a state that is not the exact data
    check = spot_check(instance, [0.5], [z])
    fast = float64_field(instance)(0.5, z)
    with mpmath.workdps(50):
        rows = zip(fast, mp_field(z), strict=True)
        true = float(max(abs(mpmath.mpf(float(f)) - m) for frow, mrow in rows
                         for f, m in zip(frow, mrow, strict=True)))
    assert true > 0  # float64 does round here
    assert abs(check["max_abs"][0] - true) <= 1e-25 + 1e-6 * true
    assert check["bits"] >= 53


def test_spot_check_compares_the_float64_scores_with_exact_ones():
    """The scores the spot check compares (the arb field's own, kept from its evaluation, not
    formed a second time) against ``<z_i, z_j>`` in mpmath at 50 digits of the float64 entries
    (``βQᵀK = I``): the float64 scores' round-off, at two samples of different states."""
    instance = Instance(Model(V=V, form="x"), X0)
    states = [instance.x0_float() * 3.0, instance.x0_float() * -7.0]
    check = spot_check(instance, [0.5, 1.0], states)
    for z, measured in zip(states, check["score_max_abs"], strict=True):
        with mpmath.workdps(50):
            true = float(max(abs(mpmath.mpf(float(s)) - mpmath.fsum(
                mpmath.mpf(float(a)) * mpmath.mpf(float(b)) for a, b in zip(zi, zj, strict=True)))
                for zi, srow in zip(z, z @ z.T, strict=True)
                for zj, s in zip(z, srow, strict=True)))
        assert true > 0  # float64 does round these products
        assert abs(measured - true) <= 1e-25 + 1e-6 * true


def test_accumulated_is_the_integral_of_the_larger_neighbour():
    values = accumulated([1.0, 3.0], [2.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0], until=3.5)
    assert values.tolist() == [0.0, 2.0, 7.0, 12.0, 14.5]


@pytest.fixture
def float64_reference(monkeypatch):
    """Every system counts as large: the reference run is float64, as for n²d > 20 000."""
    monkeypatch.setattr(verify.flow.precision_policy, "ARB_REFERENCE_LIMIT", 0)


def test_a_float64_reference_gets_the_spot_check_added(float64_reference):
    instance = Instance(Model(V=V), X0)
    traj = simulate(instance, 3, checkpoints=7)
    ref = traj.reference
    assert ref["backend"] == "float64"
    check = ref["field_roundoff"]
    assert len(check["times"]) == 3 and all(v >= 0 for v in check["max_abs"])
    added = accumulated(check["times"], check["max_abs"], [float(t) for t in traj.t],
                        check["until"])
    plain = np.abs(traj.state - traj.reference_run.state)
    floor = ref["rtol"] * np.max(np.abs(traj.state), axis=(1, 2)) * (traj.t > 0)  # its own
    assert np.allclose(traj.entry_error, plain + (added + floor)[:, None, None], rtol=0,
                       atol=1e-300)
    assert len(check["score_max_abs"]) == 3 and all(v >= 0 for v in check["score_max_abs"])
    # the estimate is the true error's size (a 40-digit arb run of the same instance); it is a
    # distance to a reference with an error of its own, so it may fall a little short of it
    exact = simulate(instance, 3, checkpoints=7, precision=40, error_estimate=False)
    true = np.max(np.abs(traj.state - exact.state.astype(float)), axis=(1, 2))
    estimate = np.max(traj.entry_error, axis=(1, 2))
    assert np.all(true <= estimate_bound(estimate)) and np.all(estimate <= 10 * true + 1e-15)


def test_an_arb_reference_needs_no_spot_check():
    """A rescaled run whose tokens grow like ``e^{νt}`` along a contracting direction of ``V``
    by more than ``e^3`` keeps the ``arb`` reference (the float64 route would read the error it
    adds to every entry of ``z`` through ``Ẽ(t)`` inflated by ``e^{νT}``), with no spot check."""
    model = Model(V=[[1, "1/3"], [0, -2]])                      # ν = 2: ν T = 4 at T = 2
    assert rescaled_growth_rate(model) * 2 > TWIN_GROWTH_LIMIT
    traj = simulate(Instance(model, X0), 2, checkpoints=3)
    assert traj.reference["backend"].startswith("arb")
    assert "field_roundoff" not in traj.reference


def test_several_heads_keep_the_arb_reference():
    """The spot check's score perturbation reads head 0: several heads keep ``arb``."""
    model = Model(heads=[{"V": V}, {"V": [[1, 0], [0, 1]], "Q": [[1, 0], [0, 2]]}], form="x")
    assert score_growth_rate(model) > 0 and rescaled_growth_rate(model) == 0
    traj = simulate(Instance(model, X0), 1, checkpoints=3)
    assert traj.reference["backend"].startswith("arb")


def test_an_mlp_keeps_the_arb_reference():
    """An MLP after the attention keeps ``arb``: the float64 route's coverage is not measured
    there (with ReLU the high-precision runs disagree among themselves across its kinks)."""
    model = Model(V=V, mlp={"W": [[1, 0], [0, 1]], "activation": "tanh"})
    assert rescaled_growth_rate(model) == 0
    traj = simulate(Instance(model, X0), 1, checkpoints=3)
    assert traj.reference["backend"].startswith("arb")


@pytest.mark.parametrize("form, horizon", [("z", 4), ("x", 4)])
def test_a_run_whose_scores_grow_gets_a_float64_twin_that_covers(form, horizon):
    """Scores that grow like ``e^{2μt}`` (here ``μ ≈ 0.75``: about 9 bits of growth by the
    horizon) and rescaled tokens that do not (``ν = 0``): a float64 reference from the twin plus
    the spot check. Its estimate covers the true error — a 32-digit ``arb`` run without
    continuation or symmetry, an independent route at twice the digits — within the judges'
    margin (``estimate_bound``, plus the rounding of the stored values) for the state, the scaled
    scores and the margins, and is not vacuous (at most 100 times the true error)."""
    model = Model(V=V, form=form)
    instance = Instance(model, X0)
    assert 2 * score_growth_rate(model) * horizon / np.log(2) > 8
    assert rescaled_growth_rate(model) * horizon <= TWIN_GROWTH_LIMIT
    traj = simulate(instance, horizon, checkpoints=7)
    assert traj.reference["backend"] == "float64" and "field_roundoff" in traj.reference
    truth = simulate(instance, horizon, checkpoints=7, precision=32, error_estimate=False,
                     continuation=False, symmetry="off")
    true = np.max(np.abs(traj.state - truth.state.astype(float)), axis=2)
    unit = ulps(STORED_ULPS, np.max(np.abs(traj.state), axis=(1, 2)))[:, None]
    assert np.all(true <= estimate_bound(traj.error) + unit)
    assert np.all(traj.error[1:] <= 100 * true[1:] + unit[1:])             # not vacuous
    assert np.allclose(traj.log_scale, truth.log_scale, rtol=1e-14, atol=1e-14)
    S, S_true = traj.scaled_scores, truth.scaled_scores.astype(float)
    allowance = ulps(STORED_ULPS, np.max(np.abs(S), axis=(1, 2)))[:, None, None]
    score_true = np.abs(S - S_true)
    assert np.all(score_true <= estimate_bound(traj.score_error) + allowance)
    assert np.max(traj.score_error[1:]) <= 100 * np.max(score_true[1:]) + allowance.max()
    margin_true = np.abs(traj.margins - truth.margins.astype(float))
    assert np.all(margin_true <= estimate_bound(traj.margin_error) + 2 * allowance[:, :, 0])


@pytest.mark.parametrize("form, normalisation", [("z", "none"), ("x", "none"), ("x", "pre-ln")])
def test_score_perturbation_covers_every_move_of_the_state(form, normalisation):
    """The bound against the scores of states moved by ±e in every entry (the field's own
    scores, an independent evaluation), at several times of the rescaled form's Ẽ(t)."""
    model = Model(V=V, Q=[[1, "1/2"], ["-1/4", 2]], beta="3/2", form=form,
                  normalisation=normalisation)
    instance = Instance(model, X0)
    field = VectorField(model, instance.n, Float64())
    rng = np.random.default_rng(1)
    z = instance.x0_float()
    for t in (0.0, 0.7, 2.0):
        e = 1e-3
        bound = score_perturbation(model, [t], z[None], [e])[0]
        S, L = field.scores(t, z)
        worst = np.zeros_like(S)
        for _ in range(200):
            moved = z + e * rng.choice([-1.0, 1.0], size=z.shape)
            worst = np.maximum(worst, np.abs(field.scores(t, moved)[0] - S))
        assert np.all(worst <= bound)
        assert np.max(bound) <= 20 * np.max(worst)  # and not vacuous


def test_the_added_round_off_reaches_scores_and_margins(float64_reference):
    instance = Instance(Model(V=V), X0)
    traj = simulate(instance, 3, checkpoints=7)
    ref, check = traj.reference_run, traj.reference["field_roundoff"]
    t = [float(v) for v in traj.t]
    added = accumulated(check["times"], check["max_abs"], t, check["until"])
    floor = traj.reference["rtol"] * np.max(np.abs(traj.state), axis=(1, 2)) * (traj.t > 0)
    scores = score_perturbation(instance.model, t, traj.state, added + floor)
    formed = max(check["score_max_abs"])  # the scores' own round-off, float64 against arb
    assert np.max(scores) > 0 and formed > 0
    assert check["score_error_added"] == np.max(scores) + formed
    assert np.allclose(traj.score_error, np.abs(traj.scaled_scores - ref.scaled_scores)
                       + scores + formed, rtol=0, atol=0)
    assert np.allclose(traj.margin_error, np.abs(traj.margins - ref.margins)
                       + 2 * np.max(scores, axis=2) + 2 * formed, rtol=0, atol=0)


# --------------------------------------------------------------------------- bounded scores
def _antipodal_sphere(n: int, spread: str = "1/1000000") -> Instance:
    """Two tight groups on the unit circle near ``p`` and ``−p`` (exact rational points): they
    contract, then sit near an unstable antipodal configuration and leave it — where the
    rounding of the data to float64 is amplified (no exact symmetry: the offsets differ)."""
    from fractions import Fraction

    from verify.claim._distributions import rational_sphere_point

    tokens = []
    for i in range(n):
        point = rational_sphere_point([Fraction(3, 7) + Fraction(spread) * (i + 1)])
        tokens.append([str(v if i % 2 == 0 else -v) for v in point])
    return Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"), tokens)


def test_a_sphere_run_is_checked_against_a_float64_twin():
    """Bounded scores: a float64 reference (started from the twin, 2 ulps away) plus the spot
    check, and the estimate covers the true error (a 32-digit arb run without continuation)
    within the library's safety factor — near a saddle, where the initial rounding grows."""
    instance = _antipodal_sphere(4)
    traj = simulate(instance, 40, checkpoints=9)
    assert traj.reference["backend"] == "float64" and "field_roundoff" in traj.reference
    x0 = instance.x0_float()
    moved = np.abs(traj.reference_run.state[0] - x0) / np.spacing(np.abs(x0))
    assert np.all(moved == 2.0)  # the twin: every entry 2 ulps away (none is 0 here)
    truth = simulate(instance, 40, checkpoints=9, precision=32, error_estimate=False,
                     continuation=False, symmetry="off")
    true = np.max(np.abs(traj.state - truth.state.astype(float)), axis=(1, 2))
    estimate = np.max(traj.entry_error, axis=(1, 2))
    unit = 4 * np.finfo(float).eps * np.max(np.abs(traj.state), axis=(1, 2))  # the rounding
    assert np.all(true <= estimate_bound(estimate) + unit)
    assert np.all(estimate[1:] <= 100 * true[1:] + 1e-13)  # and not vacuous


def test_the_spot_check_samples_the_state_a_certified_consensus_repeats():
    instance = Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"),
                        [["3/5", "4/5"], ["4/5", "3/5"], ["5/13", "12/13"]])
    traj = simulate(instance, 200, checkpoints=3)  # freezes long before t = 100
    (leg,) = traj.continuation["legs"]
    check = traj.reference["field_roundoff"]
    assert leg["kind"] == "cap" and check["times"] == [0.0, leg["t0"]]
    assert check["until"] == leg["t0"]


def test_arb_reference_tolerance_covers_the_conserved_scores(monkeypatch):
    """The scores ``S̃_ii = β|x_i|²`` of a sphere run: the exact flow keeps ``|x_i|² = 1``, a
    float64 run keeps it to ~1e-14 (far better than its state, ~1e-11), and an ``arb``
    reference at ``rtol = 1e-15`` lets it drift by as much; ``|run − reference|`` then misses
    the run's error there (5.6 times the estimate on this instance, #75 of
    ``benchmarks/error_coverage.py --reference arb``) unless the reference's own tolerance is in
    the estimate. Checked against a 32-digit run without continuation (an independent route)."""
    monkeypatch.setattr(verify.flow.precision_policy, "float64_reference_suffices",
                        lambda instance, horizon: False)  # the route of several heads
    model = Model(V=[["3/2", 0, 0], [0, "3/2", 0], [0, 0, "3/2"]], form="x",
                  normalisation="sphere", beta=2)
    x0 = [["-704/3449", "3072/3449", "-1401/3449"], ["224/701", "-336/701", "-573/701"],
          ["736/1461", "-1184/1461", "-437/1461"], ["224/597", "-352/597", "427/597"],
          ["-416/657", "352/657", "367/657"]]
    instance = Instance(model, x0)
    run = simulate(instance, 20, checkpoints=3)
    assert run.reference["backend"] == "arb" and run.reference["reference_tolerance_added"] > 0
    truth = simulate(instance, 20, checkpoints=3, precision=32, error_estimate=False,
                     continuation=False, symmetry="off")
    S, S_true = run.scaled_scores, truth.scaled_scores
    allowance = ulps(STORED_ULPS, np.max(np.abs(S), axis=(1, 2)))[:, None, None]
    assert np.all(np.abs(S - S_true) <= estimate_bound(run.score_error) + allowance)
    diagonal = np.abs(S - S_true)[1:, range(5), range(5)]
    assert np.max(diagonal) > 10 * allowance.max()     # the drift is there, above rounding
    true_state = np.max(np.abs(run.state - truth.state), axis=2)
    assert np.all(true_state <= estimate_bound(run.error) + 1e-15)


def test_a_symmetric_run_records_the_tolerance_its_float64_reference_reaches():
    """Kept on a symmetry's subspace, a float64 reference integrates by extrapolation, which
    raises a tolerance below ``reachable_rtol`` to it: the reference's recorded tolerance (and
    the floor added for it) is the raised one, not DOP853's ``3e-14``."""
    instance = Instance(Model(V=[[1, 0], [0, 1]]), [[1, "1/4"], [1, "-1/4"]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no "rtol below what Float64() can reach"
        traj = simulate(instance, 3, checkpoints=4, rtol=1e-12, atol=1e-14)
    assert traj.symmetry is not None
    assert traj.reference["backend"] == "float64"
    assert traj.reference["rtol"] == reachable_rtol(Float64()) > 3e-14


def test_the_arb_reference_is_far_more_accurate_than_the_run(monkeypatch):
    """The ``arb`` reference of a float64 run must be far more accurate than the run: its
    distance to the run is the error estimate. Here (``benchmarks/error_coverage.py --set growth``
    draw #48: ``z`` form, ``V`` with eigenvalues ``0.22 ± 0.41i``, ``β = 2``, ``μT = 3.5``,
    ``T = 16``) token 5's attention switches within ``~10⁻⁴`` of time, several times between
    ``t = 13.5`` and ``13.71``. ODEX accepts an extrapolation step at row ``k − 1`` on one
    estimate. One step of ``H = 0.046`` ended inside such a switch and was accepted with estimates
    (rows 2–4) 1e9, 8e4, 0.59 tolerances and a local error of ``1.2·10⁻⁴``. A step with the same
    pattern elsewhere had ``3·10⁻²⁰``, so no single estimate tells them apart. The reference's
    own error at ``t = 16`` was then ``3.3·10⁻¹⁰``, and the estimate missed the true score error
    10.9 times. Since row ``k − 1`` also needs row ``k − 2`` within the tolerance (or itself at
    the round-off floor; verify/numerics/_extrapolation.py), it is ``6·10⁻¹⁴``, with 3–5 % more
    evaluations. Independent route: float64 DOP853 at ``rtol = 10⁻¹³`` without continuation
    (within ``7.6·10⁻¹²`` of a 32-digit ``arb`` run at every checkpoint; the bound 3e-11 is
    that route's own error with a margin, not the reference's). The ``arb`` route is forced:
    this run (``ν = 0``) gets the float64 twin, but runs with ``ν·T > 3``, several heads or an
    MLP keep ``arb``."""
    monkeypatch.setattr(verify.flow.precision_policy, "float64_reference_suffices",
                        lambda instance, horizon: False)
    model = Model(V=[["47/64", "29/32"], ["-31/64", "-19/64"]], beta=2)
    x0 = [["11/32", "37/64"], ["3/4", "-27/64"], ["-9/16", "51/64"], ["-51/64", "9/64"],
          ["-31/32", "-51/64"]]
    instance = Instance(model, x0)
    traj = simulate(instance, 16, checkpoints=7)
    assert traj.reference["backend"].startswith("arb")
    check = simulate(instance, 16, checkpoints=7, precision="float64", rtol=1e-13, atol=1e-15,
                     error_estimate=False, continuation=False, symmetry="off")
    assert check.success
    own_error = np.abs(traj.reference_run.state.astype(float) - check.state)
    assert np.max(own_error) < 3e-11
