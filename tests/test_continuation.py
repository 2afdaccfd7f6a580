"""The certified hardmax continuation of ``simulate`` (verify.flow.continuation) against direct
integration: the same trajectory to within the error estimates, no switch where a margin is tied,
a fallback where a certified margin closes. Assertions are on certified quantities and error
bounds, never on exact floats."""

import numpy as np
import pytest

from verify.flow.simulate import simulate
from verify.flow.trajectory import load_trajectory
from verify.model import Instance, Model
from verify.numerics import estimate_bound

TOKENS = [["9/10", "1/5"], ["-7/10", "3/5"], ["1/2", "-4/5"], ["-3/10", "-1/2"], ["1/10", "7/10"]]


def _pair(inst, T, checkpoints, **kwargs):
    on = simulate(inst, T, checkpoints=checkpoints, symmetry="off", **kwargs)
    off = simulate(inst, T, checkpoints=checkpoints, symmetry="off", continuation=False,
                   **kwargs)
    return on, off


def _assert_agree(on, off):
    assert on.success and off.success
    bound = estimate_bound(on.error + off.error) + 4 * np.finfo(float).eps * np.abs(
        off.state).max(axis=2)
    assert np.all(np.abs(on.state - off.state).max(axis=2) <= bound)


@pytest.mark.parametrize("V", [
    [[1, 0], [0, "-1/2"]],                                 # z diverges along e_2
    [["0.64709742", "0.81911926"], ["0.61210449", "0.63263484"]],  # the paper's 2-D triple
    [[1, 1], [0, 1]],                                      # defective: expm, Jordan scores
], ids=["diag-1,-1/2", "hyperplanes-2d", "jordan"])
def test_continuation_matches_direct_integration(V):
    """Tight tolerance: continuation and direct DOP853 agree to their error estimates at every
    checkpoint (the estimates come from an arb reference that integrates all the way); the
    post-switch attention is the 0/1 leader map and the a-priori state error is confirmed."""
    inst = Instance(Model(V=V), TOKENS)
    on, off = _pair(inst, 8, 17, rtol=1e-12, atol=1e-14)
    info = on.continuation
    assert info["t_switch"] is not None and info["t_switch"] < 8
    assert off.continuation is None
    assert all(leg["state_error_confirmed"] for leg in info["legs"])
    _assert_agree(on, off)
    assert on.digits.min() > 8
    after = on.t > info["t_switch"]
    A = on.attention[after]
    assert np.all((A == 0) | (A == 1)) and np.all(A.sum(axis=2) == 1)
    leaders = info["legs"][-1]["leaders"]
    assert set(np.argmax(A[-1], axis=1)) == set(leaders)
    # x from the closed form agrees with x from the direct run (relative to its size)
    rel = np.abs(on.x - off.x).max() / np.abs(off.x).max()
    assert rel < 1e-8
    # the judges' score radius stays meaningful after the switch
    assert np.all(np.isfinite(on.score_radius(-1)))


def test_margin_within_its_error_bound_is_not_certified():
    """Token 3 leans towards token 1 by 10^-6: at t = 10 its scaled margin e^{20}·2·10^-6 ≈ 970
    passes the 746 threshold, but with the state known to ~10^-2 (rtol = 10^-4) the margin is
    within its error bound: no switch. Known to ~10^-12 it is certified."""
    from verify.flow.continuation import HardmaxCertifier
    from verify.flow.fields import VectorField
    from verify.numerics import Float64

    field = VectorField(Model(V=[[1, 0], [0, 1]]), 3, Float64())
    z = np.array([[1.0, 1.0], [-1.0, 1.0], [1e-6, 0.5]])
    assert HardmaxCertifier(field, rtol=1e-4, atol=1e-6).certify(10.0, z) is None
    leg = HardmaxCertifier(field, rtol=1e-14, atol=1e-16).certify(10.0, z)
    assert leg is not None and leg.leaders.tolist() == [0, 1, 0]
    assert HardmaxCertifier(field, rtol=1e-14, atol=1e-16).certify(9.0, z) is None  # e^18: 131


def test_nearly_tied_data_switch_late_and_agree():
    """Nearly tied initial data (10^-9 off the invariant line) delay the hardmax onset: the
    switch comes only once the margin is certified, and the result is the direct run's (or, when
    the reference run contradicts the state error the switch assumed, the run is the direct
    run)."""
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 1], [-1, 1], ["1/1000000000", "1/2"]])
    on, off = _pair(inst, 12, 25, rtol=1e-12, atol=1e-14)
    info = on.continuation
    if info is None:
        assert on.stats["continuation_rejected"]["t_switch"] > 0
    elif info["t_switch"] is not None:  # certified: the margin of row 3 was above 746 e^{-L}
        k = int(np.searchsorted(on.t, info["t_switch"]))
        assert np.all(on.log_scale[k:] + np.log(on.margins[k:, 2]) >= np.log(746) - 1e-9)
    _assert_agree(on, off)


def test_margin_that_closes_falls_back_to_integration():
    """A rotating V (complex eigenvalues 1 ± 0.65i): a certified margin comes back below the
    hardmax threshold, the run falls back to DOP853 from the last checked time, is certified
    again later, and agrees with the direct run to the error estimates."""
    inst = Instance(Model(V=[[1, "7/10"], ["-3/5", 1]]),
                    [["-9/50", "22/25"], ["-11/20", "-39/100"], ["9/10", "-71/100"],
                     ["1/25", "-7/25"], ["73/100", "-21/25"]])
    on, off = _pair(inst, 8, 17)
    info = on.continuation
    assert info["fallbacks"], info
    fallback = info["fallbacks"][0]
    first = info["legs"][0]
    assert first["t0"] <= fallback["restart"] < fallback["at"]
    assert first["t_end"] == fallback["restart"]
    _assert_agree(on, off)


def test_continuation_is_recorded_and_saved(tmp_path):
    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]]), TOKENS)
    traj = simulate(inst, 8, checkpoints=9, error_estimate=False)
    path = traj.save(tmp_path / "run.npz")
    back = load_trajectory(path)
    assert back.continuation["t_switch"] == traj.continuation["t_switch"]
    assert traj.summary()["stats"]["continuation"]["legs"]


def test_high_dimension_example_is_the_benchmark_recipe():
    """claims/examples/high-dimension.toml holds the benchmark's V (seed 0) at its exact binary
    values, and a short float64 run of it integrates in eigen-coordinates."""
    import importlib.util
    from pathlib import Path

    from verify.exact.inputs import as_float_array
    from verify.model.instance_file import load_instance_file

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("high_dimension",
                                                  root / "benchmarks" / "high_dimension.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    loaded = load_instance_file(root / "claims" / "examples" / "high-dimension.toml")
    inst = loaded.instance
    V, _, _ = bench.make_setup(128, 128, 0)
    assert (inst.n, inst.d) == (128, 128)
    # V is regenerated through LAPACK (eigh), whose round-off depends on the BLAS kernel: the
    # file's V agrees with it to the backward error of eigh and of the product, d·ε·‖V‖₂
    bound = inst.d * np.finfo(float).eps * np.linalg.norm(V, 2)
    assert np.abs(as_float_array(inst.model.V) - V).max() <= bound
    assert all(float(v) == v for v in inst.model.V.flat[:50])  # exact binary values
    assert loaded.simulation["horizon"] == 15
    traj = simulate(inst, "1/10", checkpoints=3, error_estimate=False)
    assert traj.success and traj.stats["coordinates"] == "eigen"


# -- the same continuation in arb ---------------------------------------------------------------
def _assert_agree_arb(on, off):
    """Agreement measured at the runs' bits (float64 would round it away), within the error
    estimates of both runs."""
    from verify.flow.simulate import entry_differences

    assert on.success and off.success
    gap = entry_differences(on, off, on.precision["bits"]).max(axis=2)
    assert np.all(gap <= estimate_bound(on.error + off.error) + 1e-40)


def test_arb_continuation_matches_direct_integration():
    """An arb run (30 digits) switches to the closed form once every gap ball clears the
    threshold, keeps the leader map certified to T, and agrees with the arb run that integrates
    all the way to the error estimates; the a-priori state error is confirmed."""
    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]]), TOKENS)
    on, off = _pair(inst, 10, 11, precision=30)
    info = on.continuation
    assert info["t_switch"] is not None and info["t_switch"] < 10 and not info["fallbacks"]
    assert all(leg["backend"] == "arb" and leg["state_error_confirmed"] for leg in info["legs"])
    assert off.continuation is None
    _assert_agree_arb(on, off)
    assert on.digits.min() > 20


def test_arb_margin_within_its_error_bound_is_not_certified():
    """As for float64: token 3 leans towards token 1 by 10^-6; known to ~10^-2 the gap ball
    contains 0 and nothing is certified, known to ~10^-20 it is (at t = 10: e^{20}·2·10^-6 is
    above the arb threshold for 100 bits, ≈ 120)."""
    from verify.flow.continuation import certify_arb, log_arb_threshold
    from verify.flow.fields import VectorField
    from verify.numerics import Arb

    backend = Arb(bits=100)
    with backend.working_precision():
        field = VectorField(Model(V=[[1, 0], [0, 1]]), 3, backend)
        z = backend.from_exact([[1, 1], [-1, 1], ["1/1000000", "1/2"]])
        assert certify_arb(field, 10, z, rtol=1e-4, atol=1e-6) is None
        leg = certify_arb(field, 10, z, rtol=1e-22, atol=1e-24)
        assert leg is not None and leg.leaders == [0, 1, 0]
        assert 20 + np.log(2e-6) > log_arb_threshold(100, 3) > 16 + np.log(2e-6)
        assert certify_arb(field, 8, z, rtol=1e-22, atol=1e-24) is None  # e^16·2e-6 ≈ 18


def test_arb_margin_that_closes_falls_back_to_integration():
    """The rotating V of the float64 test, in arb: the run falls back where a certified
    margin closes, is certified again later, and agrees with the direct arb run (arb is
    deterministic: no round-off decides whether the fallback happens)."""
    inst = Instance(Model(V=[[1, "7/10"], ["-3/5", 1]]),
                    [["-9/50", "22/25"], ["-11/20", "-39/100"], ["9/10", "-71/100"],
                     ["1/25", "-7/25"], ["73/100", "-21/25"]])
    on, off = _pair(inst, 8, 17, precision=20)
    info = on.continuation
    assert len(info["legs"]) == 2 and len(info["fallbacks"]) == 1, info
    fallback, first = info["fallbacks"][0], info["legs"][0]
    assert first["t0"] <= fallback["restart"] < fallback["at"] <= info["legs"][1]["t0"]
    _assert_agree_arb(on, off)


# -- a continuation whose assumed state error the reference run contradicts -------------------
def test_a_contradicted_continuation_is_made_again_without_it(monkeypatch):
    """The switch assumes a state error; when the reference run shows more (and more than its
    checks tolerate, over κ), nothing after the switch is certified: the run is made again
    without the continuation."""
    import verify.flow.continuation
    import verify.flow.simulate

    monkeypatch.setattr(verify.flow.continuation, "STATE_SAFETY", 1e-9)  # an assumption too small
    monkeypatch.setattr(verify.flow.simulate, "ESTIMATE_SAFETY", 1e30)   # and no room counted
    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]]), TOKENS)
    traj = simulate(inst, 8, checkpoints=17, symmetry="off")
    assert traj.success and traj.stats["continuation_rejected"]["t_switch"] > 0
    assert traj.continuation is None
    plain = simulate(inst, 8, checkpoints=17, symmetry="off", continuation=False)
    assert np.array_equal(traj.state, plain.state)


def test_a_switch_is_confirmed_by_the_state_error_its_checks_tolerate(monkeypatch):
    """An a-priori state error far too small, but checks with room to spare: the switch is
    confirmed by the error every check tolerated (over κ), and that tolerated error is the
    one at which a check of the leg turns (the check itself at 0.999× passes, at 1.001× not)."""
    import verify.flow.continuation
    from verify.flow.continuation import HardmaxCertifier, HardmaxLeg
    from verify.flow.fields import VectorField
    from verify.numerics import ESTIMATE_SAFETY, Float64

    monkeypatch.setattr(verify.flow.continuation, "STATE_SAFETY", 1e-9)
    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]]), TOKENS)
    traj = simulate(inst, 8, checkpoints=17, symmetry="off")
    leg = traj.continuation["legs"][0]
    assert "continuation_rejected" not in traj.stats and leg["state_error_confirmed"]
    assert leg["state_error_seen"] > leg["state_error_assumed"] / np.sqrt(2)
    assert ESTIMATE_SAFETY * leg["state_error_seen"] <= leg["state_error_tolerated"] / np.sqrt(2)

    field = VectorField(inst.model, 5, Float64())
    certifier = HardmaxCertifier(field, rtol=1e-10, atol=1e-12)
    z0, t0, t = traj.z[-1], float(traj.t[-1]), float(traj.t[-1]) + 1.0  # from a state on the leg
    leaders = np.array(leg["leader_of"])
    probe = HardmaxLeg(certifier, t0, z0, leaders, 1e-10)
    assert probe.check(t)
    tolerated = probe.tolerated_error(*probe.gaps(t)[::2])
    assert 1e-10 < tolerated < np.inf
    assert HardmaxLeg(certifier, t0, z0, leaders, 0.999 * tolerated).check(t)
    assert not HardmaxLeg(certifier, t0, z0, leaders, 1.001 * tolerated).check(t)


def test_a_contradicted_continuation_that_cannot_be_redone_has_no_error_after_the_switch():
    from verify.flow.simulate import _without_continuation

    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]]), TOKENS)
    traj = simulate(inst, 8, checkpoints=17, symmetry="off")
    t0 = traj.continuation["t_switch"]
    failed = simulate(inst, 8, checkpoints=17, max_steps=3, error_estimate=False,
                      continuation=False)
    assert not failed.success
    out = _without_continuation(traj, t0, lambda: failed)
    after = traj.t > t0
    assert np.all(np.isinf(out.error[after])) and np.all(np.isfinite(out.error[~after]))
    assert np.all(np.isnan(out.reference_run.state[after]))
    assert out.stats["continuation_rejected"]["error_after_switch"] == "inf"
