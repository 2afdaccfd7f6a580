"""Simulations: float64 against arbitrary precision, long horizons, invariant sets, persistence."""

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import arb, ctx

import verify.flow.precision_policy as policy
import verify.flow.simulate as simulate_module
from verify.cli import main
from verify.flow.consensus_cap import CAP_FACTOR
from verify.flow.precision_policy import REFERENCE_EXTRA_BITS, bits_schedule, working_bits
from verify.flow.simulate import simulate
from verify.flow.trajectory import load_trajectory
from verify.model import Instance, Model
from verify.numerics import Arb, estimate_bound

IDENTITY3 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


@pytest.fixture(scope="module")
def cube_12():
    rng = np.random.default_rng(32)
    return Instance(Model(V=IDENTITY3), rng.uniform(-1, 1, size=(12, 3)))


def test_float64_agrees_with_arb_to_its_error_estimate(cube_12):
    """n = 12, d = 3, V = Q = K = I, T = 10: the float64 run, its error estimate, and an
    independent 30-digit run agree — the estimate covers the true float64 error. (n = 32 tested
    the same thing at 7 times the cost of the arb run, which grows like n².)"""
    fast = simulate(cube_12, 10, checkpoints=11)
    assert fast.success and fast.error is not None
    slow = simulate(cube_12, 10, checkpoints=11, precision=30, rtol=1e-20, atol=1e-20,
                    error_estimate=False)
    true_error = np.max(np.abs(fast.state - slow.state), axis=2)  # slow is exact to float64
    assert np.all(true_error <= estimate_bound(fast.error) + 1e-15)
    assert fast.error_estimate < 1e-8  # rtol 1e-10 gives an honest ~1e-10 run


def test_reference_bits_follow_the_growth_of_the_scores(monkeypatch):
    """The arb reference of a float64 run whose scores grow (``V = I``: ``e^{2t}``, 58 bits more
    at ``T = 20`` than at 0) takes each step at the bits :func:`bits_schedule` gives for its end
    (99 at the start): its error estimate agrees with that of a reference at the horizon's bits
    throughout (an independent route: other bits, every step) to the reference's tolerance."""
    # the arb route (this run would get the float64 twin: ν = 0, the tokens do not grow)
    monkeypatch.setattr(policy, "float64_reference_suffices", lambda instance, horizon: False)
    rng = np.random.default_rng(5)
    inst = Instance(Model(V=[[1, 0], [0, 1]]), rng.uniform(-1, 1, size=(4, 2)))
    scheduled = simulate(inst, 20, checkpoints=11, symmetry="off")
    bits = scheduled.reference["bits"]
    assert bits == working_bits(inst, 20) and bits_schedule(inst)(0.0) <= bits - 55
    plain = policy.reference_settings

    def fixed_bits(*args):
        backend, rtol = plain(*args)
        return Arb(bits=backend.bits), rtol

    monkeypatch.setattr(simulate_module, "reference_settings", fixed_bits)
    fixed = simulate(inst, 20, checkpoints=11, symmetry="off")
    assert fixed.reference["bits"] == bits
    scale = np.max(np.abs(fixed.state), axis=(1, 2))[:, None]
    assert np.all(np.abs(scheduled.error - fixed.error) <= 10 * fixed.reference["rtol"] * scale)
    assert np.all(np.abs(scheduled.score_error - fixed.score_error)
                  <= 10 * fixed.reference["rtol"] * np.max(np.abs(fixed.scaled_scores)))


def test_arb_agrees_with_itself_at_doubled_precision():
    """The reference of an arb run has the bits its tolerance rtol^1.25 needs (the rule that
    gives the run its bits), at least REFERENCE_EXTRA_BITS more than the run's; the estimate
    covers the true error, measured against a run at twice the digits (an independent route:
    other bits, other steps)."""
    rng = np.random.default_rng(8)
    inst = Instance(Model(V=IDENTITY3), rng.uniform(-1, 1, size=(8, 3)))
    traj = simulate(inst, 10, checkpoints=6, precision=42, rtol=1e-35, atol=1e-35)
    ref_digits = -np.log10(traj.reference["rtol"])
    assert ref_digits == pytest.approx(1.25 * 35)
    assert traj.reference["bits"] == max(working_bits(inst, 10, digits=ref_digits),
                                         traj.precision["bits"] + REFERENCE_EXTRA_BITS)
    assert traj.digits.min() >= 30
    truth = simulate(inst, 10, checkpoints=6, precision=84, error_estimate=False,
                     continuation=False)
    with ctx.workprec(2 * truth.precision["bits"]):
        true_error = np.vectorize(lambda a, b: float(abs(arb(str(a)) - arb(str(b))).mid()))(
            traj.state_text, truth.state_text).max(axis=2)
    assert np.all(true_error <= estimate_bound(traj.error) + 1e-40)
    # the recorded decimal strings carry those digits
    assert len(traj.state_text[-1, 0, 0].lstrip("-").replace(".", "")) >= 40


LAMBDA_6_7 = [["6.7", "0.3", 0], ["0.3", 1, 0], [0, 0, -2]]  # λ_1 ≈ 6.72


@pytest.mark.parametrize("V, T", [(IDENTITY3, 30), (LAMBDA_6_7, 15)])
def test_long_horizon_in_arbitrary_precision(V, T):
    """Scores grow like e^{2 λ_1 t} (e^{60}, e^{201}): no overflow, no NaN, P stochastic, and the
    score gaps that decide the hardmax agree with a run at doubled precision."""
    rng = np.random.default_rng(11)
    inst = Instance(Model(V=V), rng.uniform(-1, 1, size=(6, 3)))
    traj = simulate(inst, T, checkpoints=T + 1, precision="auto")
    assert traj.success and traj.precision["bits"] == working_bits(inst, T)
    mu = float(traj.log_scale[-1]) / (2 * T)  # the growth the bits were chosen for, measured
    assert working_bits(inst, T) - working_bits(inst, 0) == pytest.approx(
        2 * mu * T / np.log(2), abs=1)
    assert np.all(np.isfinite(traj.z)) and np.all(np.isfinite(traj.attention))
    assert np.allclose(traj.attention.sum(axis=2), 1.0, atol=1e-15)
    # every margin the run resolves (above its 20 digits) agrees with the reference to 10
    # digits; the tokens merge onto one leader, so the last margins are at the run's round-off
    # (margin error ≈ margin, as it should say), whatever their sign
    resolved = np.isfinite(traj.margins) & (np.abs(traj.margins) > 1e-20)
    assert resolved[: T // 3].all()
    relative = traj.margin_error[resolved] / np.abs(traj.margins[resolved])
    assert np.all(relative < 1e-10)
    assert traj.digits.min() > 10


def test_float64_stall_is_detected_instead_of_crawling():
    """V = -10^6 I: the explicit integrator's step is bounded by stability (~3.3e-6, whatever the
    round-off), so 20 000 steps cannot reach T = 1; the run says so after one stall window
    instead of spending its whole budget. (Not a float64-chaos case: it is the same on every
    CPU.)"""
    inst = Instance(Model(V=[[-10**6, 0], [0, -10**6]], form="x"),
                    [[1, 0], [0, 1], ["1/2", "1/3"]])
    traj = simulate(inst, 1, checkpoints=3, error_estimate=False, max_steps=20_000)
    assert traj.status == "stalled"
    assert traj.stats["steps"] < 20_000
    assert "max_steps=20000 cannot reach T=1" in traj.message


@pytest.mark.parametrize("normalisation", ["sphere", "pre-ln"])
def test_bits_stay_constant_where_nothing_grows(normalisation):
    """Post-LN and pre-LN attention read unit vectors: the scores stay below β‖QᵀK‖ for all
    time, so the working precision and the reference's do not depend on T (they grew by
    2 μ T / ln 2 bits, ~29 000 at T = 10^4, before). V = I/100 keeps the run short: its slowest
    rates are ~1/100, so explicit steps may be long once the tokens have settled."""
    x0 = [[1, 0], [0, 1], ["-3/5", "4/5"]]  # exactly on the unit circle
    inst = Instance(Model(V=[["0.01", 0], [0, "0.01"]], form="x", normalisation=normalisation,
                          beta=4), x0)
    runs = [simulate(inst, T, checkpoints=3, precision="auto", rtol=1e-14, atol=1e-14)
            for T in (10, 10_000)]
    assert all(run.success and run.reference["status"] == "success" for run in runs)
    bits = working_bits(inst, 1)
    assert runs[0].precision["bits"] == runs[1].precision["bits"] == bits < 110
    # the reference's rtol 1e-14^1.25 needs fewer bits than the run's 20 digits: it gets more
    ref_bits = max(working_bits(inst, 1, digits=1.25 * 14), bits + REFERENCE_EXTRA_BITS)
    assert runs[0].reference["bits"] == runs[1].reference["bits"] == ref_bits
    run = runs[1]
    assert run.reference["stats"]["accepted"] < 500  # steps grow on the slow phase
    # Once every token lies in a cap of chord diameter 2ρ ≤ CAP_FACTOR·atol (1e-12 here) the run
    # stops at the first accepted step that meets it (verify.flow.consensus_cap), the reference
    # inherits the freeze, and the estimate adds the reference's bound (one cap: simulate.
    # _cap_bounds' lemma): ~12 digits by design, more or fewer with where that step falls
    # (t0 = 4837: 11.99 digits, the true error 0.47 of the estimate; 11.70 and 0.24 when both
    # caps were added). So: > 12 digits where the run was integrated; after the freeze an
    # estimate within that design bound that covers the error against a 32-digit run.
    frozen = (np.zeros(len(run.t), bool) if run.repeated_error is None
              else run.repeated_error > 0)
    assert np.all(run.digits[~frozen] > 12)
    if np.any(frozen):  # the sphere (a consensus cap); pre-LN has none
        # the design bound: the reference's cap ≤ CAP_FACTOR·atol (the freeze criterion);
        # simulate widens it by 2√d·|run − ref| at the freeze (1.3e-13 here)
        cap = simulate_module._cap_bounds(run.reference_run)
        assert np.all(cap[frozen] <= CAP_FACTOR * 1e-14)
        assert np.all(run.repeated_error[frozen] >= cap[frozen])
        truth = simulate(inst, 10_000, checkpoints=3, precision=32, error_estimate=False)
        true_error = np.linalg.norm(run.state - truth.state.astype(float), axis=2)
        assert np.all(true_error[frozen] <= run.error[frozen])


@pytest.mark.parametrize("precision", ["float64", 30])
def test_symmetric_configuration_stays_exactly_on_invariant_subspace(precision):
    """Remark closing §7: x_{1,2}(0) = (1, ±ε). The symmetry diag(1, −1) with the swap is found
    exactly and the run stays on {z_2 = diag(1, −1) z_1} bit for bit, to T = 20."""
    eps = Fraction(1, 8)
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, eps], [1, -eps], [0, 0]])
    traj = simulate(inst, 20, checkpoints=21, precision=precision)
    assert traj.symmetry["stayed_on_fixed_subspace"] is True
    assert "diag(1,-1)" in traj.symmetry["description"]
    z = traj.state_text if traj.state_text is not None else traj.state
    for frame in z:
        assert frame[0][0] == frame[1][0]
        assert frame[0][1] == (frame[1][1][1:] if isinstance(frame[1][1], str) else -frame[1][1])
        assert float(frame[2][1]) == 0.0  # the origin token stays on the symmetry axis


def test_discrete_layers_match_direct_recursion():
    inst = Instance(Model(V=[[1, "0.5"], [0, -1]], form="discrete", h="0.1"),
                    [[1, 0], [0, 1], ["-0.5", "0.25"]])
    traj = simulate(inst, 2, checkpoints=3, error_estimate=False)
    x = inst.x0_float()
    V = np.array([[1, 0.5], [0, -1]])
    for _ in range(20):
        S = x @ x.T
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        x = x + 0.1 * P @ x @ V.T
    assert np.allclose(traj.x[-1], x, rtol=1e-14)
    R = np.eye(2) + 0.1 * V
    assert np.allclose(traj.z[-1], x @ np.linalg.matrix_power(np.linalg.inv(R), 20).T)
    with pytest.raises(ValueError, match="whole number of layers"):
        simulate(inst, "0.25", checkpoints=2)


VARIANTS = {
    # hardmax: a follower moving straight to its leader, argmax never switching (at a switch the
    # field is discontinuous and two integrators may legitimately part ways)
    "hardmax": dict(attention="hardmax", V=[[1, 0], [0, 1]], x0=[[2, 0], [1, "0.5"], [0, 3]]),
    # unnormalised weights grow without bound for expanding V: take a contracting one
    "unnormalised": dict(attention="unnormalised", form="x", V=[[-1, 0], [0, "-0.5"]]),
    "causal": dict(mask="causal"),
    "beta": dict(beta="2.5"),
    "sphere": dict(form="x", normalisation="sphere"),
    "pre-ln": dict(form="x", normalisation="pre-ln"),
    "mlp-tanh": dict(mlp={"W": [[1, 0], [0, 1]], "activation": "tanh"}),
    "mlp-relu-x": dict(form="x", mlp={"W": [[1, "0.5"], [0, 1]], "activation": "relu",
                                      "bias": ["0.1", 0]}),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_variants_float64_and_arb_agree(name):
    """Every member of the model family runs in both arithmetics, and they agree."""
    kwargs = dict(VARIANTS[name])
    x0 = kwargs.pop("x0", [["0.6", "0.8"], ["-0.8", "0.6"], [1, 0]])
    kwargs.setdefault("V", [[1, "0.25"], ["0.25", "0.5"]])
    inst = Instance(Model(**kwargs), x0)
    fast = simulate(inst, 2, checkpoints=3, error_estimate=False, rtol=1e-12, atol=1e-12)
    slow = simulate(inst, 2, checkpoints=3, precision=25, error_estimate=False)
    assert fast.success and slow.success
    assert np.allclose(fast.state, slow.state, rtol=1e-9, atol=1e-9)
    if name == "sphere":
        assert np.allclose(np.linalg.norm(slow.x[-1], axis=1), 1.0, atol=1e-15)


def test_several_heads():
    heads = [{"V": [[1, 0], [0, 1]]}, {"V": [[0, -1], [1, 0]], "Q": [["0.5", 0], [0, 1]]}]
    inst = Instance(Model(heads=heads, form="x"), [[1, 0], [0, 1], ["0.5", "-0.5"]])
    fast = simulate(inst, 1, checkpoints=3, rtol=1e-12, atol=1e-12)
    slow = simulate(inst, 1, checkpoints=3, precision=25, error_estimate=False)
    assert np.allclose(fast.state, slow.state, rtol=1e-9)
    assert fast.z is None  # no rescaled form with several heads


def test_trajectory_round_trip(tmp_path):
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, "0.3"], [0, 1]])
    for precision in ("float64", 25):
        traj = simulate(inst, 2, checkpoints=5, precision=precision)
        path = traj.save(tmp_path / f"run-{precision}.npz")
        again = load_trajectory(path)
        assert again.times == traj.times and again.precision == traj.precision
        assert np.array_equal(again.state, traj.state) and np.array_equal(again.error, traj.error)
        if traj.state_text is not None:  # high precision: the decimal strings, losslessly
            assert np.array_equal(again.state_text, traj.state_text)
            saved = ctx.prec
            ctx.prec = traj.precision["bits"]
            try:
                assert arb(str(again.state_text[-1, 0, 1])).rel_accuracy_bits() > 60
            finally:
                ctx.prec = saved


def test_cli_simulate(capsys, tmp_path):
    assert main(["simulate", "claims/examples/polytope-identity.toml", "--horizon", "4"]) == 0
    out = capsys.readouterr().out
    assert "clusters of final z" in out and "agreeing digits" in out
    assert "spectral class: V = I" in out
    # V = I: the leader-map lemma carries the hardmax at t = 4 to every later time
    assert "leaders at t = 4" in out and "Boolean limit of P" in out and "rank" in out
    assert main(["simulate", "claims/examples/hyperplanes-2d.toml", "--json",
                 "--no-error-estimate", "--save", str(tmp_path / "t.npz")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["hardmax"]["decided"] is False  # no error estimate: nothing certified
    assert summary["n"] == 20 and len(summary["final_attention"]) == 20
    assert load_trajectory(tmp_path / "t.npz").n == 20


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_cli_simulate_says_a_kinked_field_s_estimate_is_not_a_bound(activation, capsys, tmp_path):
    path = tmp_path / "mlp.toml"
    path.write_text(f'''name = "mlp"
[model]
V = [["1", "0"], ["0", "1"]]
form = "z"
mlp = {{ W = [["1", "0"], ["0", "1"]], activation = "{activation}" }}
[tokens]
x0 = [["1", "0"], ["0", "1"], ["-1", "1/2"]]
[simulation]
horizon = "1"
''')
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("error estimate: not a bound here — the field has kinks" in out) == (
        activation == "relu")
    assert main(["simulate", str(path), "--json"]) == 0
    note = json.loads(capsys.readouterr().out)["estimate_coverage"]
    assert (note is not None and "coverage is not measured" in note) == (activation == "relu")


SPECTRAL_ASIDE = """
import multiprocessing, sys
from verify.analysis.summary import spectral_reading, spectral_reading_aside
from verify.model.instance_file import load_instance_file
loaded = load_instance_file(sys.argv[1])
print("before", end=" ")  # in the buffer at the fork: printed once (multiprocessing flushes)
with spectral_reading_aside(loaded) as reading:
    workers = multiprocessing.active_children()
    if sys.argv[2] == "kill":
        for worker in workers:
            worker.kill()
    line = reading()
print(len(workers), len(multiprocessing.active_children()), line == spectral_reading(loaded))
"""


@pytest.mark.parametrize("kill", ["keep", "kill"])
def test_spectral_class_is_computed_beside_the_run(kill):
    """`verify simulate` forks a worker for the summary's exact spectral class before the run
    (in a fresh process: one thread, so a fork is safe) and stops it after; the line is the
    one computed in the process, also when the worker is killed (it is computed again)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SPECTRAL_ASIDE,
                           "claims/examples/two-tokens-symmetric.toml", kill],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["before", "1", "0", "True"]
    assert done.stderr == ""


@pytest.mark.parametrize("seed", range(6))
def test_position_clusters_are_scipy_single_linkage(seed):
    """The summary's groups of final tokens (connected components of the pairs within the
    tolerance) against an independent route: SciPy's single-linkage tree cut at the same
    distance, on tokens drawn around a few centres with tolerances on either side of the gaps."""
    from scipy.cluster.hierarchy import fcluster, linkage

    from verify.analysis.summary import position_clusters

    rng = np.random.default_rng(seed)
    n, d = rng.integers(2, 40), rng.integers(1, 6)
    centres = rng.standard_normal((rng.integers(1, 6), d))
    points = centres[rng.integers(0, len(centres), n)] + 10.0 ** -rng.integers(2, 9) \
        * rng.standard_normal((n, d))
    for tolerance in (1e-9, 1e-6, 1e-3, 0.5, 3.0):
        labels = fcluster(linkage(points, method="single"), t=tolerance, criterion="distance")
        expected = sorted(sorted(np.flatnonzero(labels == label).tolist())
                          for label in set(labels))
        assert position_clusters(points, tolerance) == expected
    assert position_clusters(points[:1], 1e-3) == [[0]]


START_UP = """
import atexit, sys
WATCH = ("scipy", "sympy", "networkx", "matplotlib", "verify.flow.simulate",
         "verify.analysis.summary", "verify.exact.spectral")
atexit.register(lambda: print("loaded:", *[m for m in WATCH if m in sys.modules],
                              file=sys.stderr))
from verify.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _loaded_at_exit(*args: str) -> list[str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", START_UP, *args], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode in (0, 2), done.stderr
    return done.stderr.splitlines()[-1].split()[1:]


def test_start_up_imports_only_what_the_command_uses():
    """Start-up (issue 26: `verify simulate` within a second of the library call): `--help`
    loads none of the heavy modules; `simulate` of an arb run loads no SciPy (the summary's
    clusters need none), and the exact spectral class (SymPy) is left to the worker forked
    beside the run."""
    assert _loaded_at_exit("--help") == []
    assert _loaded_at_exit("simulate", "--help") == []
    loaded = _loaded_at_exit("simulate", "claims/examples/two-tokens-symmetric.toml",
                             "--horizon", "1", "--checkpoints", "3")
    assert "verify.flow.simulate" in loaded and "verify.analysis.summary" in loaded
    assert not {"scipy", "sympy", "matplotlib", "verify.exact.spectral"} & set(loaded)


def test_cli_errors(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nV = [[1, 0]]\n[tokens]\nx0 = [[1, 0]]\n")
    assert main(["simulate", str(bad)]) == 2
    assert "bad.toml: [model]: Expected V square" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "missing.toml")]) == 2
    with pytest.raises(SystemExit) as stop:
        main(["simulate", "x.toml", "--precision", "lots"])
    assert stop.value.code == 2


def test_unstable_invariant_point_does_not_stall_the_integrator():
    """The centre of a centred square is an exact but unstable equilibrium (its scores tie). The
    reduced field keeps round-off out of the unstable direction, whose rate grows like e^{2t}:
    without it the step size collapsed (45 358 steps to T = 10, measured)."""
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 1], [-1, 1], [1, -1], [-1, -1], [0, 0]])
    traj = simulate(inst, 10, checkpoints=11)
    assert traj.success and traj.symmetry["stayed_on_fixed_subspace"]
    assert traj.stats["accepted"] < 200
    assert np.all(traj.state[:, 4, :] == 0.0)  # the centre never moves


LARGE_EXAMPLES = ("high-dimension",)  # checked by tests/test_continuation.py, without the CLI


@pytest.mark.parametrize("path", [p for p in sorted(Path(__file__).resolve().parent.parent.glob(
    "claims/examples/*.toml")) if p.stem not in LARGE_EXAMPLES], ids=lambda p: p.stem)
def test_bundled_examples_simulate(path, capsys):
    """Every bundled instance file loads and runs (short horizon) with a clean summary."""
    assert main(["simulate", str(path), "--horizon", "1", "--checkpoints", "3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["run"]["status"] == "success" and summary["spectral_class"]


@pytest.mark.parametrize("precision", ["float64", 30])
def test_wall_clock_budget_ends_with_an_honest_partial_result(precision):
    """budget=0: the run stops at its first step with status 'budget', keeps the checkpoints it
    reached (only t = 0) and says why; progress lines go to the given sink."""
    inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], ["1/2", "1/3"]])
    lines = []
    traj = simulate(inst, 5, checkpoints=6, precision=precision, budget=0.0,
                    progress=lines.append)
    assert traj.status == "budget" and not traj.success
    assert "wall-clock budget of 0 s used up" in traj.message
    assert [str(t) for t in traj.times] == ["0"]


@pytest.mark.parametrize("normalisation", ["sphere", "pre-ln"])
def test_normalised_runs_keep_constant_bits_to_t_1e4(normalisation):
    """On the sphere (and with pre-LN) the scores stay bounded, so the working precision does not
    grow with T (asserted on the chosen bits, not on a time); without normalisation it must."""
    x0 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    bounded = Instance(Model(V=IDENTITY3, form="x", normalisation=normalisation, beta=4), x0)
    assert working_bits(bounded, 10) == working_bits(bounded, 10**4) == working_bits(bounded,
                                                                                    10**5)
    growing = Instance(Model(V=IDENTITY3), x0)
    assert working_bits(growing, 10**4) > 100 * working_bits(growing, 10)


@pytest.mark.parametrize("digits", [20, 40, 60])
def test_a_digits_request_returns_that_many_correct_digits(digits):
    """One token under V = diag(1, -1/2): x(t) = e^{tV} x(0) exactly (its attention is 1).
    Against the closed form at 100 digits, every entry has at least the requested digits, and
    the reported digits do not exceed the true ones."""
    import mpmath

    inst = Instance(Model(V=[[1, 0], [0, "-1/2"]], form="x"), [["1/3", "2/7"]])
    traj = simulate(inst, 3, checkpoints=4, precision=digits)
    with mpmath.workdps(100):
        exact = [mpmath.mpf(1) / 3 * mpmath.exp(3), mpmath.mpf(2) / 7 * mpmath.exp(-1.5)]
        true = min(float(-mpmath.log10(abs(mpmath.mpf(v) - e) / abs(e)))
                   for v, e in zip(traj.state_text[-1][0], exact, strict=True))
    assert true >= digits
    assert float(traj.digits[-1]) <= true + 0.1  # the estimate claims no more than is true


def test_digits_per_entry_see_a_small_coordinate_and_never_exceed_the_truth():
    """V = diag(1, -2), T = 8, one token: x_1 grows like e^t while x_2 decays like e^{-2t}; in
    float64 the normwise digits (relative to the largest entry) overstate the small coordinate,
    the per-entry digits do not, and neither exceeds the true digits of its entry."""
    import mpmath

    inst = Instance(Model(V=[[1, 0], [0, -2]], form="x"), [["1/3", "2/7"]])
    traj = simulate(inst, 8, checkpoints=5)
    exact = [mpmath.mpf(1) / 3 * mpmath.exp(8), mpmath.mpf(2) / 7 * mpmath.exp(-16)]
    true = [float(-mpmath.log10(abs(mpmath.mpf(float(v)) - e) / abs(e)))
            for v, e in zip(traj.state[-1][0], exact, strict=True)]
    per_entry = traj.digits_per_entry[-1][0]
    assert all(p <= t + 0.3 for p, t in zip(per_entry, true, strict=True))
    assert float(traj.digits[-1]) > per_entry[1] + 1  # the normwise figure overstates x_2
    again = simulate(inst, 8, checkpoints=5, precision=30)  # a digits request holds normwise;
    assert float(again.digits[-1]) >= 30  # the per-entry figure tells the small coordinate apart
    assert again.digits_per_entry[-1][0][1] < float(again.digits[-1])


def test_cli_simulate_stops_on_ctrl_c_with_the_checkpoints_reached(capsys, tmp_path, monkeypatch):
    """The first SIGINT ends the run at its next step (status 'interrupted', exit 1) and the
    summary and --save keep what was reached; the previous handler is back afterwards."""
    import os
    import signal

    from verify.numerics._monitor import RunMonitor

    check = RunMonitor.check

    def interrupt_at_step_5(self, t, steps):
        if steps == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return check(self, t, steps)

    monkeypatch.setattr(RunMonitor, "check", interrupt_at_step_5)
    before = signal.getsignal(signal.SIGINT)
    path = tmp_path / "partial.npz"
    code = main(["simulate", "claims/examples/polytope-identity.toml", "--json", "--save",
                 str(path)])
    summary = json.loads(capsys.readouterr().out)
    assert code == 1 and summary["run"]["status"] == "interrupted"
    assert "SIGINT" in summary["run"]["message"]
    assert summary["hardmax"]["reason"].startswith("no error estimate: the run stopped before T")
    saved = load_trajectory(path)
    assert saved.status == "interrupted" and float(saved.t[-1]) < 10
    assert signal.getsignal(signal.SIGINT) is before


def test_cli_simulate_budget(capsys):
    assert main(["simulate", "claims/examples/high-dimension.toml", "--budget", "0.01"]) == 1
    out = capsys.readouterr().out
    assert "status: budget — wall-clock budget of 0.01 s used up" in out
    assert "error estimate: not computed (the run stopped before T (budget)" in out
    assert main(["simulate", "claims/examples/high-dimension.toml", "--budget", "-1"]) == 2
    assert "--budget=-1.0 must be a positive number of seconds" in capsys.readouterr().err


def test_simulate_reads_the_leaders_the_judge_reads_on_a_causal_model(tmp_path, capsys):
    """The summary's hardmax reading uses the model's mask (it dropped it: on a causal model it
    printed leaders [3] where the judge finds [0, 1, 3]), and the judge's rule for a leader."""
    from types import SimpleNamespace

    from verify.claim import CheckRequest
    from verify.judge._attention import judge_attention
    from verify.predict._evaluation import Evaluation
    from verify.vocabulary.conclusions import ConclusionSpec

    x0 = [["1", "0"], ["0", "1"], ["-1", "1/2"], ["3/2", "1"]]
    path = tmp_path / "causal.toml"
    path.write_text('name = "causal"\n[model]\nV = [[1, 0], [0, 1]]\nmask = "causal"\n'
                    f'[tokens]\nx0 = {json.dumps(x0)}\n[simulation]\nhorizon = 4\n'
                    'checkpoints = 9\n', encoding="utf-8")
    assert main(["simulate", str(path), "--json"]) == 0
    reading = json.loads(capsys.readouterr().out)["hardmax"]
    inst = Instance(Model(V=[[1, 0], [0, 1]], mask="causal"), x0, name="causal#0")
    request = CheckRequest(None, SimpleNamespace(name="causal"), inst, None, 4, 9, "float64")
    traj = simulate(inst, 4, checkpoints=9)
    judged = judge_attention(Evaluation(request, traj, ConclusionSpec(
        "attention", {"rank_at_most": 4, "tail_fraction": 1 / 9})))
    assert reading["leaders"] == [i - 1 for i in judged.evidence["leaders"]]
    assert 0 in reading["leaders"]  # the first token sees only itself: a leader
    assert reading["limit"] is False  # a mask: no lemma, the attention at t = 4
    main(["simulate", str(path)])
    out = capsys.readouterr().out
    assert "attention at t = 4, rounded to its hardmax" in out and "Boolean limit" not in out


def test_the_summary_reads_the_leaders_a_certified_continuation_carries():
    """Issue 26's 128×128 run printed "leaders: []" with every row undecided although its
    continuation certified the leaders from t = 1.02: a leg covering the last checkpoint gives
    the leaders, even where the reference run does not resolve the scores."""
    from verify.analysis.summary import attention_reading

    tokens = [["9/10", "1/5"], ["-7/10", "3/5"], ["1/2", "-4/5"], ["-3/10", "-1/2"],
              ["1/10", "7/10"]]
    traj = simulate(Instance(Model(V=[[1, 0], [0, "-1/2"]]), tokens), 10, checkpoints=21,
                    symmetry="off")
    leg = traj.continuation["legs"][-1]
    assert leg["kind"] == "hardmax" and leg["t_end"] >= 10
    traj.score_error = np.full_like(traj.score_error, 1.0)  # scores no longer resolved
    reading = attention_reading(traj)
    assert reading["leaders"] == leg["leaders"] and not reading["undecided"]
    assert reading["certified_by"].startswith("the hardmax continuation")
    assert reading["limit"] is False  # V is not λI: certified on [t0, T], not a limit


def test_the_summary_prints_the_certified_attention_not_a_tie_of_rounded_scores():
    """Issue 26: the 128×128 run's summary printed a final attention of ~1/64 per row (its
    scores, recomputed from the state rounded to float64, tie across each cluster) beside the
    leaders its continuation certified. Where a leg covers T the summary's attention is the
    leg's 0/1 weights; where float64 still resolves the scores it is the run's, bit for bit."""
    from verify.analysis.summary import final_attention, format_summary, simulation_summary
    from verify.model.instance_file import InstanceFile

    tokens = [["9/10", "1/5"], ["-7/10", "3/5"], ["1/2", "-4/5"], ["-3/10", "-1/2"],
              ["1/10", "7/10"]]
    instance = Instance(Model(V=[[1, 0], [0, "-1/2"]]), tokens)
    traj = simulate(instance, 10, checkpoints=21, symmetry="off")
    leg = traj.continuation["legs"][-1]
    weights, how = final_attention(traj)
    assert np.array_equal(weights, traj.attention[-1])  # two routes, one matrix
    assert how.startswith("certified 0/1 by the hardmax continuation")
    traj.attention[-1] = 1 / traj.n  # the rounded state's tie
    weights, _ = final_attention(traj)
    assert weights.tolist() == [[float(j == leg["leader_of"][i]) for j in range(traj.n)]
                                for i in range(traj.n)]
    summary = simulation_summary(InstanceFile(instance, {}, "example"), traj, 1e-3, lambda: "")
    assert summary["final_attention"] == weights.tolist()
    assert "(certified 0/1 by the hardmax continuation" in format_summary(summary)
    early = simulate(instance, 5, checkpoints=11, symmetry="off")  # before the switch
    assert all(leg["t_end"] < 5 or leg["t0"] > 5 for leg in early.continuation.get("legs", []))
    weights, how = final_attention(early)
    assert how is None and np.array_equal(weights, early.attention[-1])
